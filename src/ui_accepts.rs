//! The web UI's table of what it may pass to the command line ([`ui::Accepts`]), derived from
//! the registry of measuring commands and their clap definitions ([`ui::CommandRule::from_clap`]:
//! a flag that names a file, a socket or a command is refused), and the run form's fields each
//! command takes, judged as the UI's child judges them: parsed and checked as on the command
//! line ([`MeasuringArgs::check`](crate::measuring::MeasuringArgs::check)), so the page shows
//! no field the command refuses (`rr -R`) nor hides one it takes. tests/registry.rs walks
//! every argument.

use clap::{CommandFactory, Parser};
use plan::Measuring;
use ui::{Accepts, CommandRule};

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
            let (names, options, summary) = (kind.ui_names(), kind.ui_options(), kind.summary());
            Some(CommandRule::from_clap(command, names, options, summary))
        })
        .collect();
    let kinds = (wire::spec::KINDS.iter())
        .map(|row| ui::RecordKind {
            name: row.name.to_string(),
            family: row.family.as_str().to_string(),
        })
        .collect();
    Accepts { commands, kinds }.with_fields(|words| {
        let line = std::iter::once("linerate").chain(words.iter().map(String::as_str));
        MeasuringCli::try_parse_from(line).is_ok_and(|cli| cli.command.check().is_ok())
    })
}
