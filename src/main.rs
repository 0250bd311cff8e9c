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
use linerate::shutdown;

/// Parses the command line. Help and version print as clap formats them; usage errors become
/// one line naming the input, like every other error (iperf3's `-c HOST`: linerate's command).
fn parse() -> anyhow::Result<Result<Cli, ExitCode>> {
    use clap::error::ErrorKind;
    if let Some(line) = session::iperf3::spelling::suggestion(std::env::args_os().skip(1)) {
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
    let outcome = match &cli.command {
        Command::Serve(args) => {
            linerate::serve_cmd::serve(args, interrupt)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Keygen { name } => {
            println!("{}", linerate::serve_cmd::keygen(name)?);
            return Ok(ExitCode::SUCCESS);
        }
        Command::Measuring(m) => m.run(interrupt)?,
        Command::Plan(args) => linerate::plan_cmd::plan(args, interrupt)?,
        Command::Ui(args) => return linerate::ui_cmd::ui(args, interrupt),
        Command::Runs(args) => {
            linerate::store_cmd::runs(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Show(args) => {
            linerate::store_cmd::show(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Compare(args) => {
            linerate::report_cmd::compare(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Check(args) => return linerate::check_cmd::run(args),
        Command::Trend(args) => {
            linerate::trend_cmd::run(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Report(args) => {
            linerate::report_cmd::report(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Chart(args) => {
            linerate::report_cmd::chart(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Export(args) => {
            linerate::report_cmd::export(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Import(args) => {
            linerate::store_cmd::import(args)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Completions { shell } => {
            linerate::docs_gen::completions(*shell, &mut std::io::stdout());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Man => {
            linerate::docs_gen::man_page(&mut std::io::stdout())?;
            return Ok(ExitCode::SUCCESS);
        }
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
