//! `linerate ui` (crates/ui): binds, prints the URL and serves; each test started from the page
//! runs as a child process of this same binary, so it is parsed, checked, run and stored
//! exactly as `linerate tcp …` would be. The key those tests prove to servers with keys is
//! the UI's own `--auth-key`, checked here at start; a request can never name a key file.

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
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// File with the key every request must carry (one word, 16+ characters, chmod 600).
    #[arg(long, value_name = "FILE")]
    pub ui_key: Option<PathBuf>,
    /// Key file (NAME SECRET, from `linerate keygen`) the tests started from the UI prove to
    /// servers with --auth-keys; read and checked now, as the test commands' --auth-key.
    #[arg(long, value_name = "FILE", env = "LINERATE_AUTH_KEY")]
    pub auth_key: Option<PathBuf>,
}

/// `linerate ui`: prints the URL, serves until Ctrl-C (running tests are stopped and stored).
pub fn ui(args: &UiArgs, interrupt: Signal) -> Result<ExitCode> {
    let db = crate::store_args::resolve_db(args.db.as_deref())?;
    let exe = std::env::current_exe().context("cannot find linerate's own executable")?;
    let auth_key = match &args.auth_key {
        Some(path) => {
            session::auth::ClientKey::load(path).map_err(|e| anyhow::anyhow!("--auth-key: {e}"))?;
            // The tests run from the UI's directory too, but an absolute path says which file.
            Some(std::path::absolute(path).context("--auth-key: cannot resolve its path")?)
        }
        None => None,
    };
    let mut server = ui::Server::bind(&args.listen, args.ui_key.as_deref())?;
    server.auth_key = auth_key;
    server.accepts = crate::ui_accepts::accepts();
    println!("{}", server.url());
    server.serve(db, exe, interrupt)?;
    Ok(ExitCode::SUCCESS)
}
