//! `linerate ui` (crates/ui) with this command line as its [`ui::Launcher`]: a test started
//! from the page is parsed by [`Cli`], checked, run and stored as `linerate tcp …` would be.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::{Context, Result};
use clap::Parser;
use engine::Signal;
use ui::{Finished, LaunchError as Failed, PreparedTest};

use crate::cli::{usage_error_line, Cli, Command};

/// `linerate ui`.
#[derive(Debug, clap::Args)]
pub struct UiArgs {
    /// Where to serve the UI; an address beyond loopback needs --ui-key.
    #[arg(long, value_name = "ADDR:PORT", default_value = ui::DEFAULT_LISTEN)]
    pub listen: String,
    /// Results database to list and store tests in (default: as the test commands').
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// File with the key every request must carry (one word, 16+ characters, chmod 600).
    #[arg(long, value_name = "FILE")]
    pub ui_key: Option<PathBuf>,
}

/// `linerate ui`: prints the URL, serves until Ctrl-C (running tests are stopped and stored).
pub fn ui(args: &UiArgs, interrupt: Signal) -> Result<ExitCode> {
    let db = crate::store_args::resolve_db(args.db.as_deref())?;
    let server = ui::Server::bind(&args.listen, args.ui_key.as_deref())?;
    println!("{}", server.url());
    server.serve(db, Arc::new(CliLauncher), interrupt)?;
    Ok(ExitCode::SUCCESS)
}

struct CliLauncher;

impl ui::Launcher for CliLauncher {
    fn prepare(&self, words: &[String]) -> Result<PreparedTest, Failed> {
        let argv = std::iter::once("linerate").chain(words.iter().map(String::as_str));
        let cli = Cli::try_parse_from(argv).map_err(|e| Failed(usage_error_line(&e)))?;
        let (plan, common, unix) = match &cli.command {
            Command::Tcp(a) => (a.plan(), &a.common, a.unix.as_deref()),
            Command::Udp(a) => (a.plan(), &a.common, None),
            Command::Rr(a) => (a.plan(false), &a.common, None),
            Command::Crr(a) => (a.plan(true), &a.common, None),
            _ => return Err(Failed("the UI runs tcp, udp, rr and crr tests".into())),
        };
        let ready = || -> Result<PreparedTest> {
            let plan = plan?;
            let mut store = common.store.open()?.context("--no-store")?;
            let reached = crate::reach::target_for(&plan, common, unix)?;
            Ok(Box::new(move |stop, progress| {
                let config = reached.config(plan.spec, stop);
                let record =
                    session::client::run(&config, progress).map_err(|e| Failed(e.to_string()))?;
                let run_id = store.save(&record).map_err(|e| Failed(format!("{e:#}")))?;
                Ok(Finished { record, run_id })
            }))
        };
        ready().map_err(|e| Failed(format!("{e:#}")))
    }
}
