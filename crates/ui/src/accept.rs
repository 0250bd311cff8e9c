//! What the UI may hand to the command line: [`Accepts`], the measuring commands and every
//! flag each one takes, each flag [`Allowed`](FlagRule::Allowed) or
//! [`Local`](FlagRule::Local) (it names a file, socket or command of the UI's host). The
//! binary builds it from its own clap definitions and the registry of measuring commands (a
//! test there walks every argument), so a new flag that takes a path or runs a command is
//! refused here without a line of this crate changing; the UI runs the same binary, so a flag
//! the table lacks is one the command line does not know either and refuses itself.

use std::collections::BTreeMap;

/// What may be done with one flag from the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagRule {
    /// Passed on as given.
    Allowed {
        /// Whether it takes a value (a short flag's cluster ends at it).
        takes_value: bool,
    },
    /// It names a file, local socket or command of the UI's host: refused.
    Local,
}

/// One measuring command as the UI takes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandRule {
    /// The names a request's `kind` gives it by (the command's first).
    pub names: Vec<String>,
    /// Whether the options form takes it (a sweep only comes as words).
    pub options: bool,
    /// Its subcommands the UI refuses whole (`sweep knob`, which needs a command to run).
    pub refused_subcommands: Vec<String>,
    /// Its flags (with those of its subcommands), by spelling: `--time`, `-t`, aliases too.
    pub flags: BTreeMap<String, FlagRule>,
}

/// The measuring commands the UI runs and their flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accepts {
    /// In the order the UI lists them.
    pub commands: Vec<CommandRule>,
    /// The kinds a stored run may be of (`tcp_stream`, …), for queries that name one.
    pub kinds: Vec<String>,
}

impl Accepts {
    /// The command named `word` (its command-line name).
    pub fn command(&self, word: &str) -> Option<&CommandRule> {
        self.commands
            .iter()
            .find(|c| c.names.first().is_some_and(|n| n == word))
    }

    /// The command a request's `kind` names (`tcp` or `tcp_stream`), in the options form.
    pub fn by_kind(&self, kind: &str) -> Option<&CommandRule> {
        self.commands
            .iter()
            .find(|c| c.options && c.names.iter().any(|n| n == kind))
    }

    /// How `flag` (`--chart`, `-t`) is taken anywhere in the measuring commands: `Local`
    /// where any command has it so (words after `--` are another command's), else allowed
    /// where some command has it, `None` where none knows it.
    pub fn anywhere(&self, flag: &str) -> Option<FlagRule> {
        let mut rules = self.commands.iter().filter_map(|c| c.flags.get(flag));
        let first = *rules.next()?;
        Some(
            std::iter::once(first)
                .chain(rules.copied())
                .find(|r| *r == FlagRule::Local)
                .unwrap_or(first),
        )
    }

    /// The command names, comma-separated, for messages (`only_options`: those the options
    /// form takes).
    pub fn list(&self, only_options: bool) -> String {
        let names: Vec<&str> = self
            .commands
            .iter()
            .filter(|c| c.options || !only_options)
            .filter_map(|c| c.names.first().map(String::as_str))
            .collect();
        names.join(", ")
    }
}
