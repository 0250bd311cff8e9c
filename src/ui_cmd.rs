//! `linerate ui` (crates/ui): binds, prints the URL and serves; each test started from the page
//! runs as a child process of this same binary, so it is parsed, checked, run and stored
//! exactly as `linerate tcp …` would be.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use engine::Signal;

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
    let exe = std::env::current_exe().context("cannot find linerate's own executable")?;
    let server = ui::Server::bind(&args.listen, args.ui_key.as_deref())?;
    println!("{}", server.url());
    server.serve(db, exe, interrupt)?;
    Ok(ExitCode::SUCCESS)
}
