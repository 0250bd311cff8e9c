//! The web UI's table of what it may pass to the command line ([`ui::Accepts`]), derived from
//! the registry of measuring commands and their clap definitions: every flag of every
//! measuring command (and of its subcommands) by each spelling, refused where its value hint
//! says it names a file, a directory, a socket path or a command ([`is_local`]); a
//! subcommand that needs such a flag (`sweep knob --pre`) is refused whole. A flag's path or
//! command nature is declared where it is defined (a `PathBuf` value is a path to clap; a
//! command is `value_hint = CommandString`), and a test here walks every argument.

use std::collections::BTreeMap;

use clap::{Arg, CommandFactory, ValueHint};
use plan::Measuring;
use ui::{Accepts, CommandRule, FlagRule};

use crate::measuring::MeasuringCli;

/// The table for `linerate ui`.
pub fn accepts() -> Accepts {
    let mut cli = MeasuringCli::command();
    // Built, every argument has its value parser (unbuilt, clap reports a path for any).
    cli.build();
    let commands = Measuring::ALL
        .into_iter()
        .filter_map(|kind| {
            let command = cli.find_subcommand(kind.as_str())?;
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
            Some(CommandRule {
                names: kind.ui_names().map(str::to_string).collect(),
                options: kind.ui_options(),
                refused_subcommands,
                flags,
            })
        })
        .collect();
    let kinds = wire::TestKind::ALL.map(|k| k.as_str().to_string()).to_vec();
    Accepts { commands, kinds }
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
