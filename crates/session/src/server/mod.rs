//! The server: accepts control and data connections on one listener, runs each client's
//! session on its own threads, and keeps serving whatever one client does.
//!
//! Every connection first exchanges hellos, then says what it is: `Start` opens a session,
//! `Attach` hands a data connection to a waiting session through the [`Sessions`] registry
//! (passed in, not global). A connection that stays silent is dropped after the handshake
//! timeout without holding up anyone else; the only refusal for load is more than
//! `max_sessions` tests running at once.

mod error;
mod running;
mod setup;
mod streams;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::{Conn, Listener, Signal};
use wire::msg::ServerInfo;
use wire::spec::SpecLimits;
use wire::{ClientMsg, ServerMsg, TestSpec, WireError};

use crate::control::{exchange_hello, recv, send, HANDSHAKE_TIMEOUT};

pub use error::SessionError;
pub use running::{listen_tcp, ServerThread};

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Limits on what a client may ask for.
    pub limits: SpecLimits,
    /// Tests that may run at once.
    pub max_sessions: usize,
    /// Wait for a silent peer during setup.
    pub handshake_timeout: Duration,
    /// Exit after the first session ends.
    pub one_off: bool,
    /// Longest wait for streams to drain after `Stop`.
    pub drain_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            limits: SpecLimits::default(),
            max_sessions: 16,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            one_off: false,
            drain_timeout: Duration::from_secs(10),
        }
    }
}

/// Where the server reports what happens (stderr in the binary, a buffer in tests).
pub type Log = Arc<dyn Fn(String) + Send + Sync>;

/// Sessions waiting for data connections, by cookie.
#[derive(Default)]
struct Sessions {
    waiting: Mutex<HashMap<u64, SyncSender<(u16, Conn)>>>,
    running: AtomicUsize,
}

struct Shared {
    config: ServerConfig,
    sessions: Sessions,
    log: Log,
    shutdown: Signal,
    info: ServerInfo,
    finished: Signal,
}

/// Serves until `shutdown` is raised (or, with `one_off`, after one session).
pub fn serve(listener: Listener, shutdown: Signal, config: ServerConfig, log: Log) {
    let shared = Arc::new(Shared {
        info: server_info(),
        config,
        sessions: Sessions::default(),
        log,
        shutdown,
        finished: Signal::new(),
    });
    if let Err(e) = listener.set_nonblocking(true) {
        (shared.log)(format!("cannot poll listener: {e}"));
        return;
    }
    let done =
        || shared.shutdown.is_raised() || (shared.config.one_off && shared.finished.is_raised());
    while !done() {
        if !wait_readable(listener.as_raw_fd(), 200) {
            continue;
        }
        match listener.accept() {
            Ok(conn) => {
                let for_thread = Arc::clone(&shared);
                let spawned = std::thread::Builder::new()
                    .name("lr-conn".into())
                    .spawn(move || handle_connection(conn, &for_thread));
                if let Err(e) = spawned {
                    (shared.log)(format!("cannot start a thread for a connection: {e}"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                (shared.log)(format!("accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn wait_readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, count 1.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) > 0 }
}

fn server_info() -> ServerInfo {
    ServerInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cores: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
    }
}

fn handle_connection(mut conn: Conn, shared: &Shared) {
    let peer = conn.peer();
    let timeout = shared.config.handshake_timeout;
    let first = conn
        .set_nonblocking(false)
        .map_err(WireError::from)
        .and_then(|_| exchange_hello(&mut conn, timeout))
        .and_then(|_| recv::<ClientMsg>(&mut conn, timeout));
    match first {
        Ok(ClientMsg::Start { spec }) => run_session(conn, spec, shared, &peer),
        Ok(ClientMsg::Attach { session, stream }) => attach(conn, session, stream, shared, &peer),
        Ok(other) => tell_error(
            &mut conn,
            shared,
            &peer,
            format!("expected start or attach, got {other:?}"),
        ),
        // A connection closed before saying anything is a port probe, not an event.
        Err(WireError::Closed { mid_frame: false }) => {}
        Err(WireError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => (shared.log)(format!("{peer}: dropped during handshake: {e}")),
    }
}

/// Tells the peer what was wrong with what it sent, and logs it.
fn tell_error(conn: &mut Conn, shared: &Shared, peer: &str, message: String) {
    (shared.log)(format!("{peer}: {message}"));
    let _ = send(conn, &ServerMsg::Error { message });
}

fn attach(mut conn: Conn, session: u64, stream: u16, shared: &Shared, peer: &str) {
    let sender = shared
        .sessions
        .waiting
        .lock()
        .ok()
        .and_then(|m| m.get(&session).cloned());
    match sender {
        Some(tx) => {
            if tx.send((stream, conn)).is_err() {
                (shared.log)(format!(
                    "{peer}: session {session:x} ended before stream {stream} attached"
                ));
            }
        }
        None => tell_error(
            &mut conn,
            shared,
            peer,
            format!("unknown session {session:x}"),
        ),
    }
}

/// A session's entry in the registry and the running count, removed however the session ends.
struct SessionGuard<'a> {
    shared: &'a Shared,
    cookie: u64,
    /// Whether the test was accepted (only those count for `--one-off`).
    ran: bool,
}

impl<'a> SessionGuard<'a> {
    /// Counts the session as running and registers a fresh cookie for its data connections;
    /// refuses it if that makes more than `max_sessions`.
    fn register(shared: &'a Shared, attach: SyncSender<(u16, Conn)>) -> Result<Self, SessionError> {
        let running = shared.sessions.running.fetch_add(1, Ordering::SeqCst) + 1;
        let cookie = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        if let Ok(mut m) = shared.sessions.waiting.lock() {
            m.insert(cookie, attach);
        }
        let mut guard = SessionGuard {
            shared,
            cookie,
            ran: false,
        };
        let limit = shared.config.max_sessions;
        if running > limit {
            return Err(SessionError::Busy {
                running: running - 1,
                limit,
            });
        }
        guard.ran = true;
        Ok(guard)
    }

    /// Takes no more data connections (every stream has arrived).
    fn close_registration(&self) {
        if let Ok(mut m) = self.shared.sessions.waiting.lock() {
            m.remove(&self.cookie);
        }
    }
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        self.close_registration();
        self.shared.sessions.running.fetch_sub(1, Ordering::SeqCst);
        if self.ran {
            self.shared.finished.raise();
        }
    }
}

fn refuse(conn: &mut Conn, shared: &Shared, peer: &str, why: SessionError) {
    let message = why.to_string();
    (shared.log)(format!("{peer}: refused: {message}"));
    let _ = send(conn, &ServerMsg::Error { message });
}

/// One client's test, from its `Start` to the results (or the error that ended it).
fn run_session(mut ctrl: Conn, spec: TestSpec, shared: &Shared, peer: &str) {
    if let Err(why) = setup::check_spec(&spec, &shared.config.limits) {
        return refuse(&mut ctrl, shared, peer, why);
    }
    let (attach, attached) = mpsc::sync_channel(usize::from(spec.streams) * 2);
    let guard = match SessionGuard::register(shared, attach) {
        Ok(guard) => guard,
        Err(why) => return refuse(&mut ctrl, shared, peer, why),
    };
    (shared.log)(format!(
        "{peer}: {} {:?} x{} for {} ms",
        spec.kind().as_str(),
        spec.direction(),
        spec.streams,
        spec.duration_ms
    ));
    let sockets = match setup::Sockets::open(&ctrl, &spec) {
        Ok(sockets) => sockets,
        Err(why) => return refuse(&mut ctrl, shared, peer, why),
    };
    let outcome = send(&mut ctrl, &sockets.accepted(guard.cookie, &shared.info))
        .map_err(SessionError::from)
        .and_then(|_| setup::data_connections(&mut ctrl, &spec, sockets, &attached, shared))
        .inspect(|_| guard.close_registration())
        .and_then(|streams| streams::run_streams(&mut ctrl, &spec, streams, shared));
    match outcome {
        Ok(()) => (shared.log)(format!("{peer}: test done")),
        Err(why) => {
            let message = why.to_string();
            (shared.log)(format!("{peer}: test ended early: {message}"));
            let _ = send(&mut ctrl, &ServerMsg::Error { message });
        }
    }
}
