//! What the UI may hand to the command line: [`Accepts`], the measuring commands and every
//! flag each one takes, each flag [`Allowed`](FlagRule::Allowed) or
//! [`Local`](FlagRule::Local) (it names a file, socket or command of the UI's host), and the
//! run form's fields each one takes (`crate::form`). The binary builds it from its own clap
//! definitions ([`CommandRule::from_clap`]) and the registry of measuring commands (a test
//! there walks every argument), so a new flag that takes a path or runs a command is refused
//! here without a line of this crate changing; the UI runs the same binary, so a flag the
//! table lacks is one the command line does not know either and refuses itself. A flag's path
//! or command nature is declared where it is defined (a `PathBuf` value is a path to clap; a
//! command is `value_hint = CommandString`).

use std::collections::BTreeMap;

use clap::{Arg, ValueHint};

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
    /// What it measures, in a few words: the page's choice of test shows it by the name.
    pub summary: String,
    /// Its subcommands the UI refuses whole (`sweep knob`, which needs a command to run).
    pub refused_subcommands: Vec<String>,
    /// Its flags (with those of its subcommands), by spelling: `--time`, `-t`, aliases too.
    pub flags: BTreeMap<String, FlagRule>,
    /// The run form's fields it takes (`crate::form::FIELDS`' names), in the form's order:
    /// what `GET /api/kinds` tells the page to show.
    pub fields: Vec<String>,
}

impl CommandRule {
    /// The rule of clap's `command` (built, so every argument has its value parser), named
    /// `names` and said in a few words by `summary`: every flag of it and its subcommands by each spelling, refused where
    /// [`is_local`]; a subcommand that needs such a flag (`sweep knob --pre`) is refused whole.
    /// No fields yet ([`Accepts::with_fields`] finds them).
    pub fn from_clap(
        command: &clap::Command,
        names: impl IntoIterator<Item = &'static str>,
        options: bool,
        summary: &str,
    ) -> CommandRule {
        let refused_subcommands = command
            .get_subcommands()
            .filter(|s| {
                s.get_arguments()
                    .any(|a| a.is_required_set() && is_local(a))
            })
            .map(|s| s.get_name().to_string())
            .collect();
        let mut flags = BTreeMap::new();
        flags_of(command, &mut flags);
        CommandRule {
            names: names.into_iter().map(String::from).collect(),
            options,
            summary: summary.to_string(),
            refused_subcommands,
            flags,
            fields: Vec::new(),
        }
    }
}

/// Whether `arg`'s value names something of the host it runs on: a file, directory or
/// socket path, or a command.
pub fn is_local(arg: &Arg) -> bool {
    matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath
            | ValueHint::FilePath
            | ValueHint::DirPath
            | ValueHint::ExecutablePath
            | ValueHint::CommandName
            | ValueHint::CommandString
            | ValueHint::CommandWithArguments
    )
}

/// Every spelling of every flag of `command` and its subcommands; where one spelling is a
/// path in one place and not in another, the path wins.
fn flags_of(command: &clap::Command, flags: &mut BTreeMap<String, FlagRule>) {
    for arg in command.get_arguments() {
        let rule = match is_local(arg) {
            true => FlagRule::Local,
            false => FlagRule::Allowed {
                takes_value: arg.get_action().takes_values(),
            },
        };
        let longs = arg
            .get_long()
            .into_iter()
            .chain(arg.get_all_aliases().unwrap_or_default());
        let shorts = arg
            .get_short()
            .into_iter()
            .chain(arg.get_all_short_aliases().unwrap_or_default());
        let spellings = longs
            .map(|l| format!("--{l}"))
            .chain(shorts.map(|s| format!("-{s}")));
        for spelling in spellings {
            let kept = flags.entry(spelling).or_insert(rule);
            if rule == FlagRule::Local {
                *kept = rule;
            }
        }
    }
    for sub in command.get_subcommands() {
        flags_of(sub, flags);
    }
}

/// The measuring commands the UI runs and their flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accepts {
    /// In the order the UI lists them.
    pub commands: Vec<CommandRule>,
    /// The kinds a stored run may be of (`tcp_stream`, …), for queries that name one.
    pub kinds: Vec<RecordKind>,
}

/// A kind a stored run may be of, as the page filters and charts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordKind {
    /// Its name in a record and in `--kind`: `tcp_stream`.
    pub name: String,
    /// Its family of figures: `stream`, `datagram` or `transaction`.
    pub family: String,
}

impl Accepts {
    /// The stored kinds' names, for `--kind`'s check.
    pub fn kind_names(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.name.clone()).collect()
    }

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
