//! The `linerate` binary: parse, dispatch, map errors to exit codes. Everything else lives in
//! the library (`src/lib.rs`).
//!
//! Exit codes: 0 success (and a closed stdout pipe), 2 an error, 130 interrupted by Ctrl-C
//! (after printing the partial summary).

use std::process::ExitCode;

use clap::Parser;
use linerate::cli::{Cli, Command};
use linerate::{commands, shutdown};

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let interrupt = shutdown::on_interrupt()?;
    match &cli.command {
        Command::Serve(args) => {
            commands::serve(args, interrupt)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tcp(args) => {
            let outcome = commands::tcp(args, interrupt)?;
            Ok(if outcome.record.summary.interrupted {
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("linerate: {err:#}");
            ExitCode::from(2)
        }
    }
}
