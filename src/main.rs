//! The `linerate` binary: parse, dispatch, map errors to exit codes. Everything else lives in
//! the library (`src/lib.rs`).
//!
//! Exit codes: 0 success (and a closed stdout pipe), 1 a regression (`check`, `plan
//! --check-against`), 2 an error, 3 incomplete: the server went away mid-test (after printing
//! and storing the client's own figures), 130 interrupted by Ctrl-C (after printing the
//! partial summary).

use std::process::ExitCode;

use clap::Parser;
use linerate::cli::{Cli, Command};
use linerate::{commands, shutdown};

/// Parses the command line. Help and version print as clap formats them; usage errors become
/// one line naming the input, like every other error (iperf3's `-c HOST`: linerate's command).
fn parse() -> anyhow::Result<Result<Cli, ExitCode>> {
    use clap::error::ErrorKind;
    if let Some(line) = iperf3::spelling::suggestion(std::env::args_os().skip(1)) {
        eprintln!("{line}");
        return Ok(Err(ExitCode::from(2)));
    }
    match Cli::try_parse() {
        Ok(cli) => Ok(Ok(cli)),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            e.print()?;
            Ok(Err(ExitCode::SUCCESS))
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            e.print()?;
            Ok(Err(ExitCode::from(2)))
        }
        Err(e) => {
            let line = linerate::cli::usage_error_line(&e);
            anyhow::bail!("{line} (see linerate --help)")
        }
    }
}

/// Raises the open-files limit to its hard maximum: `--flows 10000` needs a socket per flow.
fn raise_file_limit() {
    // SAFETY: getrlimit/setrlimit on a valid struct; failure leaves the limit as it was.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = match parse()? {
        Ok(cli) => cli,
        Err(code) => return Ok(code),
    };
    raise_file_limit();
    let interrupt = shutdown::on_interrupt(!matches!(cli.command, Command::Serve(_)))?;
    // A command that measures nothing ends as a success once it returns.
    let done = |r: anyhow::Result<()>| r.map(|()| commands::RunOutcome::default());
    let outcome = match &cli.command {
        Command::Serve(args) => done(linerate::serve_cmd::serve(args, interrupt))?,
        Command::Keygen { name } => {
            done(linerate::serve_cmd::keygen(name).map(|key| println!("{key}")))?
        }
        Command::Measuring(m) => m.command().run(interrupt)?,
        Command::Plan(args) => linerate::plan_cmd::plan(args, interrupt)?,
        Command::Ui(args) => return linerate::ui_cmd::ui(args, interrupt),
        Command::Runs(args) => done(linerate::store_cmd::runs(args))?,
        Command::Show(args) => done(linerate::store_cmd::show(args))?,
        Command::Compare(args) => done(linerate::report_cmd::compare(args))?,
        Command::Check(args) => return linerate::check_cmd::run(args),
        Command::Trend(args) => done(linerate::trend_cmd::run(args))?,
        Command::Report(args) => done(linerate::report_cmd::report(args))?,
        Command::Chart(args) => done(linerate::report_cmd::chart(args))?,
        Command::Export(args) => done(linerate::report_cmd::export(args))?,
        Command::Import(args) => done(linerate::store_cmd::import(args))?,
        Command::Completions { shell } => {
            linerate::docs_gen::completions(*shell, &mut std::io::stdout());
            commands::RunOutcome::default()
        }
        Command::Man => done(Ok(linerate::docs_gen::man_page(&mut std::io::stdout())?))?,
    };
    Ok(if outcome.interrupted {
        ExitCode::from(130)
    } else if outcome.incomplete {
        ExitCode::from(3)
    } else if outcome.regressed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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
