//! linerate's live web UI (`linerate ui`): an HTTP server on axum that serves the page and the
//! JSON API of docs/API.md: the stored runs, and tests started from the page and watched live.
//!
//! Layout: [`serve`] runs the server until its shutdown signal; `api` holds the handlers,
//! `request` turns a test's JSON into command-line words, `child` runs them as a child process
//! of the linerate binary (which parses, checks, runs and stores the test exactly as on the
//! command line, writing its events with `--json-stream`), `stream` reads those events,
//! `registry` keeps the running and recently finished tests with their bounded `log`s,
//! `events` streams them as Server-Sent Events, `form` says which of the page's run-form fields
//! each command takes, `tools` answers comparisons and reports
//! through `linerate compare` and `linerate report`, `guard` checks the key and where requests
//! come from, `assets` is the page, embedded in the binary. [`metrics`] is a separate small
//! endpoint on the same HTTP stack: `serve --metrics`, the server's counters for a scraper.
//! Both accept through [`bounded`]: a cap on connections and a deadline on each request, before
//! anything else (the key included) is looked at.
//!
//! Invariants: the UI listens on loopback unless it has a key; at most [`POLICY`]'s
//! connections are open at once, the oldest still waiting for its request giving way to a
//! newcomer, and each request's head and body arrive within its deadline (from the accept, or
//! from the end of the last answer) or the connection is closed; at most
//! [`Limits::max_running`] tests run at once; a test stopped from the page (or by the UI's
//! own shutdown) gets SIGINT, as Ctrl-C, and keeps and stores what it measured; every child
//! is reaped; nothing here formats a measurement (the page does, from the JSON).

pub mod accept;
mod api;
mod assets;
pub mod bounded;
mod child;
mod error;
mod events;
pub mod form;
mod guard;
mod log;
pub mod metrics;
mod registry;
mod request;
mod stream;
mod tools;

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ::events::Signal;
use results::store::StoreLocation;

pub use accept::{Accepts, CommandRule, FlagRule, RecordKind};
pub use error::{ApiError, UiError};
pub use guard::is_loopback_host;
pub use registry::Limits;
pub use request::{words, RequestError, SOURCE_TAG};

/// The UI's connections: at most 64 open, the oldest still waiting for its request giving way
/// to a newcomer; each request (head and body) within 5 s of the accept or of the end of the
/// connection's last answer. An answer (a test's event stream) is not cut.
pub const POLICY: bounded::Policy = bounded::Policy {
    slots: 64,
    deadline: Duration::from_secs(5),
    whole_life: false,
    max_read: None,
};

/// The default `--listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// A bound UI, not serving yet: [`Server::url`] to print, then [`Server::serve`].
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    key: Option<String>,
    /// How many tests it runs and keeps.
    pub limits: Limits,
    /// The key file its tests prove to servers with keys (`linerate ui --auth-key`).
    pub auth_key: Option<PathBuf>,
    /// The commands and flags its tests may use (none until the binary gives its table).
    pub accepts: Accepts,
}

impl Server {
    /// Binds `listen` (`--listen`) with the key in `key_file` (`--ui-key`), refusing an
    /// address beyond loopback without one.
    pub fn bind(listen: &str, key_file: Option<&Path>) -> Result<Server, UiError> {
        let key = key_file.map(read_key).transpose()?;
        let listener = bind(listen, key.is_some())?;
        Ok(Server {
            listener,
            key,
            limits: Limits::default(),
            auth_key: None,
            accepts: Accepts::default(),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, UiError> {
        self.listener.local_addr().map_err(|source| UiError::Io {
            context: "the listening socket".into(),
            source,
        })
    }

    /// The URL to open (with the key, if there is one).
    pub fn url(&self) -> String {
        match self.local_addr() {
            Ok(addr) => url(addr, self.key.as_deref()),
            Err(_) => "(no address)".into(),
        }
    }

    /// Serves until `shutdown`, listing `db` and running its tests (stored there) with `exe`,
    /// the linerate binary.
    pub fn serve(self, db: StoreLocation, exe: PathBuf, shutdown: Signal) -> Result<(), UiError> {
        let config = UiConfig {
            db,
            exe,
            key: self.key,
            limits: self.limits,
            auth_key: self.auth_key,
            accepts: self.accepts,
        };
        serve(self.listener, config, shutdown)
    }
}

/// What one UI serves.
#[derive(Debug, Clone)]
pub struct UiConfig {
    /// The results store it lists and stores its tests in.
    pub db: StoreLocation,
    /// The linerate binary its tests run as (`std::env::current_exe()`).
    pub exe: PathBuf,
    /// The key requests must carry (`--ui-key`); `None`: loopback only.
    pub key: Option<String>,
    /// How many tests it runs and keeps.
    pub limits: Limits,
    /// The key file its tests prove to servers with keys (`--auth-key`); `None`: no key.
    pub auth_key: Option<PathBuf>,
    /// The commands and flags its tests may use.
    pub accepts: Accepts,
}

/// Binds `--listen`; an address that is not loopback needs a key (`keyed`).
pub fn bind(listen: &str, keyed: bool) -> Result<TcpListener, UiError> {
    let addr: SocketAddr = listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| UiError::Listen {
            given: listen.to_string(),
        })?;
    if !addr.ip().is_loopback() && !keyed {
        return Err(UiError::NeedsKey {
            given: listen.to_string(),
        });
    }
    TcpListener::bind(addr).map_err(|source| UiError::Io {
        context: format!("--listen {listen}: cannot listen there"),
        source,
    })
}

/// Reads a `--ui-key` file: one word of at least 16 characters (no spaces, `;`, `,`, quotes or
/// backslashes, as it travels in a cookie), in a file only its owner can read.
pub fn read_key(path: &Path) -> Result<String, UiError> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |why: String| UiError::Key {
        path: path.display().to_string(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(fail(
            "group or others may read it; chmod 600 it, it is a secret".into(),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let key = text.trim();
    let fits = |c: char| c.is_ascii_graphic() && !matches!(c, ';' | ',' | '"' | '\\');
    if key.chars().count() < 16 || !key.chars().all(fits) {
        return Err(fail(
            "give one word of at least 16 characters (letters, digits, punctuation; no spaces), e.g. from `head -c 24 /dev/urandom | base64`".into(),
        ));
    }
    Ok(key.to_string())
}

/// The URL to open: the page at `addr`, with the key when there is one.
pub fn url(addr: SocketAddr, key: Option<&str>) -> String {
    let base = format!("http://{addr}/");
    match key {
        None => base,
        Some(key) => {
            let escaped: String = key
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        char::from(b).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("{base}?key={escaped}")
        }
    }
}

/// Serves the UI on `listener` until `shutdown` is raised; then stops the running tests (their
/// partial runs are stored) and waits for them (killing one that has not ended after
/// [`Limits::stop_grace`]).
pub fn serve(listener: TcpListener, config: UiConfig, shutdown: Signal) -> Result<(), UiError> {
    let io = |context: &str| {
        let context = context.to_string();
        move |source| UiError::Io { context, source }
    };
    let shared = Arc::new(api::Shared {
        db: config.db,
        registry: registry::Registry::new(config.limits).with_key(config.auth_key),
        exe: config.exe,
        accepts: config.accepts,
        tools: Arc::new(tokio::sync::Semaphore::new(tools::MAX_AT_ONCE)),
    });
    let guard = Arc::new(guard::Guard { key: config.key });
    let app = api::routes()
        .merge(assets::routes())
        .fallback(assets::not_found)
        .with_state(Arc::clone(&shared))
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
        .layer(axum::middleware::from_fn(bounded::track))
        .into_make_service_with_connect_info::<bounded::Handle>();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(io("cannot start the HTTP server's threads"))?;
    listener
        .set_nonblocking(true)
        .map_err(io("the listening socket"))?;
    bounded::deepen_backlog(&listener).map_err(io("the listening socket"))?;
    let stopping = Arc::clone(&shared);
    runtime.block_on(async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(io("the listening socket"))?;
        let stop = async move {
            while !shutdown.is_raised() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // Running tests end (and their event streams with them), so the server can close.
            let _ = tokio::task::spawn_blocking(move || stopping.registry.stop_all()).await;
        };
        axum::serve(bounded::Bounded::new(listener, POLICY), app)
            .with_graceful_shutdown(stop)
            .await
            .map_err(io("serving the UI"))
    })?;
    shared.registry.stop_all();
    Ok(())
}
