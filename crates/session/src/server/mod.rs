//! The server: accepts control and data connections on one listener, runs each client's
//! session on its own threads, and keeps serving whatever one client does.
//!
//! Every connection first exchanges hellos, then says what it is: `Start` opens a session,
//! `Attach` hands a data connection to a waiting session through the `Sessions` registry
//! (passed in, not global). A connection whose first byte is not linerate's may belong to a
//! [`Dialect`] the caller plugged in ([`ServerConfig::dialects`]: iperf3's, from the `iperf3`
//! crate), which reads its opening through the gate and runs its tests in a [`Server`]. The handshakes run in the accepting thread (`gate`), so a
//! connection gets no thread of its own; one that stays silent or trickles is dropped at its
//! handshake deadline without holding up anyone else.

mod admit;
mod allow;
mod budget;
mod dialect;
mod error;
mod frames;
mod gate;
mod metrics;
pub mod metrics_text;
mod registry;
mod relay;
mod relay_to;
pub mod result_line;
mod running;
mod setup;
mod streams;

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use engine::{Conn, Listener, Signal};
use record::{RunRecord, Tags};
use wire::msg::ServerInfo;
use wire::spec::SpecLimits;
use wire::{ServerMsg, TestSpec};

use crate::control::{send_within, HANDSHAKE_TIMEOUT};

use admit::Admission;
pub use admit::AuthKeys;
pub use allow::{Prefix, PrefixError};
pub use budget::{default_max_sockets, Budget, Needs};
pub use dialect::{Dialect, DialectServer, KeylessRefusal, Opening, Server, Slot};
pub use error::SessionError;
pub use metrics::{transport_of, MetricsSnapshot, Refusal, ServerMetrics, Started, Transport, Way};
use registry::{attach, Claim, SessionGuard, Sessions};
pub use relay::RelayPolicy;
pub use running::{listen_tcp, ServerThread};
pub use streams::{stream_end, SENDER_GRACE};

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Limits on what a client may ask for.
    pub limits: SpecLimits,
    /// Tests that may run at once.
    pub max_sessions: usize,
    /// Sockets and buffer memory all running tests may hold at once.
    pub budget: Budget,
    /// Tests one source address may run at once (`None`: up to `max_sessions`).
    pub max_sessions_per_address: Option<usize>,
    /// `--auth-keys`: every client must prove it holds one of these keys.
    pub auth: Option<AuthKeys>,
    /// `--auth-address`: the addresses (as `wire::auth::server_identity` writes them) clients
    /// reach this server at through NAT or a proxy, under which their proofs pass besides the
    /// address each connection reached.
    pub auth_addresses: Vec<String>,
    /// Wait for a silent peer during setup, and the deadline of a connection's whole
    /// handshake (hello through `start` or `attach`).
    pub handshake_timeout: Duration,
    /// Longest time from a test's `start` to its `begin`: a session that has not begun by then
    /// is dropped and frees its slot.
    pub setup_timeout: Duration,
    /// The address prefixes clients may connect from (`--allow`); empty: everyone.
    pub allow: Vec<Prefix>,
    /// Exit after the first session ends.
    pub one_off: bool,
    /// Longest wait for streams to drain after `Stop`.
    pub drain_timeout: Duration,
    /// The protocols served beside linerate's at the same port (iperf3's, from the `iperf3`
    /// crate); none by default.
    pub dialects: Vec<Arc<dyn Dialect>>,
    /// Where a dialect's finished tests go (iperf3 clients' runs: `linerate serve` stores
    /// them); `None`: the server keeps nothing.
    pub records: Option<RecordSink>,
    /// `--relay`: run tests towards other servers when a controller asks (`--from`); `None`:
    /// refuse.
    pub relay: Option<RelayPolicy>,
    /// `--metrics`: where the server counts what it does, for the metrics endpoint; `None`:
    /// nothing is counted.
    pub metrics: Option<Arc<ServerMetrics>>,
}

/// A dialect's finished test (an iperf3 client's) as the server hands it out.
#[derive(Debug, Clone)]
pub struct ServedRun {
    /// The run, with the iperf3 client as the record's client and this server as its server.
    pub record: RunRecord,
    /// Its tags: `client=iperf3`, `client_version`, `client_address`.
    pub tags: Tags,
}

/// Takes each finished run, on the thread that ran the test, once the client is done with
/// it. It must not block for long: the test's session slot is held until it returns.
#[derive(Clone)]
pub struct RecordSink(pub Arc<dyn Fn(ServedRun) + Send + Sync>);

impl std::fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordSink")
    }
}

impl ServerConfig {
    /// A server for this process's own client (`linerate tcp` with no host, sweeps on
    /// loopback): the protocol's limits rather than a public server's defaults, so `-l 64M` or
    /// `--flows-dst 1000` run as they would against a `serve` that allows them.
    pub fn in_process() -> Self {
        Self {
            limits: SpecLimits::protocol(),
            ..Self::default()
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            limits: SpecLimits::default(),
            max_sessions: 16,
            budget: Budget::default(),
            max_sessions_per_address: None,
            auth: None,
            auth_addresses: Vec::new(),
            handshake_timeout: HANDSHAKE_TIMEOUT,
            setup_timeout: Duration::from_secs(5),
            allow: Vec::new(),
            one_off: false,
            drain_timeout: Duration::from_secs(10),
            dialects: Vec::new(),
            records: None,
            relay: None,
            metrics: None,
        }
    }
}

/// Where the server reports what happens (stderr in the binary, a buffer in tests). Lines
/// carry a peer's words (its error text, a congestion name, a relay target); [`serve`] wraps
/// the log it is given in [`escaping`], so no line it writes can hold a line break or an ESC.
pub type Log = Arc<dyn Fn(String) + Send + Sync>;

/// `log` with every control character of each line escaped (`wire::escape`): one place that
/// every server line passes through, so a peer's text cannot forge a line or drive a terminal.
pub fn escaping(log: Log) -> Log {
    Arc::new(
        move |line: String| match wire::escape::escape_controls(&line) {
            std::borrow::Cow::Borrowed(_) => log(line),
            std::borrow::Cow::Owned(escaped) => log(escaped),
        },
    )
}

struct Shared {
    config: ServerConfig,
    sessions: Sessions,
    /// This server's instances of the configuration's dialects, in its order.
    dialects: Vec<Arc<dyn DialectServer>>,
    log: Log,
    shutdown: Signal,
    info: ServerInfo,
    finished: Signal,
}

/// Serves until `shutdown` is raised (or, with `one_off`, after one session); `ready` runs
/// once every port (the listener's, each dialect's) is open, before the first accept.
pub fn serve(
    listener: Listener,
    shutdown: Signal,
    config: ServerConfig,
    log: Log,
    ready: impl FnOnce(),
) {
    let log = escaping(log);
    let dialects = (config.dialects.iter())
        .map(|d| d.start(listener.tcp_addr(), &log))
        .collect();
    let shared = Arc::new(Shared {
        dialects,
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
    ready();
    let done =
        || shared.shutdown.is_raised() || (shared.config.one_off && shared.finished.is_raised());
    gate::run(&listener, &shared, done);
}

fn wait_readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let timeout = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    engine::sys_io::poll_readable(&[fd], timeout)[0]
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
        host: None,
    }
}

impl Shared {
    /// Counts into the metrics, when `--metrics` asked for them.
    fn count(&self, f: impl FnOnce(&ServerMetrics)) {
        if let Some(m) = &self.config.metrics {
            f(m);
        }
    }
}

/// A started test in the metrics' running count until dropped.
struct Counted<'a>(&'a Shared);

impl<'a> Counted<'a> {
    fn start(shared: &'a Shared, kind: Started) -> Self {
        shared.count(|m| m.started(kind));
        Counted(shared)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.count(ServerMetrics::ended);
    }
}

/// Longest the gate waits for a peer to take a refusal: it runs in the accepting thread, and
/// the answer is small, so a peer that takes none of it in that time is left unanswered.
const TELL_TIMEOUT: Duration = Duration::from_millis(200);

/// Tells the peer what was wrong with what it sent (the caller logs it).
fn tell(conn: &mut Conn, message: String) {
    let _ = send_within(conn, &ServerMsg::Error { message }, TELL_TIMEOUT);
}

impl Shared {
    /// Sends a session's control message: a client that does not take it within the handshake
    /// timeout fails the send, which ends its session (see `control::send_within`).
    fn send(&self, conn: &mut Conn, msg: &ServerMsg) -> Result<(), wire::WireError> {
        send_within(conn, msg, self.config.handshake_timeout)
    }
}

fn refuse(conn: &mut Conn, shared: &Shared, peer: &str, why: SessionError) {
    shared.count(|m| m.refused(why.reason()));
    let message = why.to_string();
    let detail = why.log_detail();
    (shared.log)(format!("{peer}: refused: {message}{detail}"));
    let _ = shared.send(conn, &ServerMsg::Error { message });
}

/// One client's test, from its `Start` to the results (or the error that ended it).
fn run_session(mut ctrl: Conn, spec: TestSpec, admission: Admission, shared: &Shared, peer: &str) {
    let peer = match &admission.user {
        Some(user) => format!("{peer} ({user})"),
        None => peer.to_string(),
    };
    let peer = peer.as_str();
    if let Err(why) = check_limits(&spec, &admission, shared) {
        return refuse(&mut ctrl, shared, peer, why);
    }
    let (attach, attached) = mpsc::sync_channel(usize::from(spec.streams) * 2);
    let claim = Claim {
        user: admission.user.clone(),
        key_max_sessions: admission.limits.max_sessions,
        address: ctrl.peer_addr().map(|a| a.ip().to_canonical()),
    };
    // Drawn before any socket is opened or buffer allocated.
    let guard = match SessionGuard::register(shared, claim, attach)
        .and_then(|guard| guard.hold_budget(Needs::of(&spec)))
    {
        Ok(guard) => guard,
        Err(why) => return refuse(&mut ctrl, shared, peer, why),
    };
    let _counted = Counted::start(shared, Started::Test(spec.kind()));
    let begin_by = Instant::now() + shared.config.setup_timeout;
    let opened = setup::Sockets::open(&ctrl, &spec).and_then(|sockets| {
        let frames = frames::FrameCounter::for_ports(&ctrl, &spec, &sockets.udp_ports())?;
        Ok((sockets, frames))
    });
    let (sockets, frames) = match opened {
        Ok(opened) => opened,
        Err(why) => return refuse(&mut ctrl, shared, peer, why),
    };
    let before = streams::CountersAtSetup::read(&ctrl, &spec, frames.as_ref());
    let info = ServerInfo {
        host: Some(Box::new(measure::host::HostFacts::collect(
            ctrl.local_addr().map(|a| a.ip()),
        ))),
        ..shared.info.clone()
    };
    let accepted = sockets.accepted(guard.cookie, &info, admission.answer);
    let outcome = shared
        .send(&mut ctrl, &accepted)
        .map_err(SessionError::from)
        .and_then(|_| {
            setup::data_connections(&mut ctrl, &spec, sockets, &attached, shared, begin_by)
        })
        .inspect(|_| guard.close_registration())
        .and_then(|conns| {
            streams::run_streams(&mut ctrl, &spec, conns, frames, before, shared, begin_by)
        });
    match outcome {
        Ok(results) => {
            let client = ctrl.peer_addr().map(|a| a.ip().to_canonical());
            shared.count(|m| m.finished(&spec, &results, client));
            let ends: Vec<_> = (spec.flows().iter().zip(&results.streams))
                .map(|(&(_, flow), end)| (flow, end.at_stop, end.total))
                .collect();
            let window = std::time::Duration::from_micros(results.window_us);
            let line = result_line::line(&spec, &ends, window);
            (shared.log)(format!("{peer}: test done: {line}"))
        }
        Err(why) => {
            let message = why.to_string();
            (shared.log)(format!("{peer}: test ended early: {message}"));
            let _ = shared.send(&mut ctrl, &ServerMsg::Error { message });
        }
    }
}

/// The spec against the server's limits narrowed by the key's; a refusal by the key's limits
/// alone names the key and its limit.
fn check_limits(
    spec: &TestSpec,
    admission: &Admission,
    shared: &Shared,
) -> Result<(), SessionError> {
    let server = &shared.config.limits;
    setup::check_spec(spec, server)?;
    match (&admission.user, spec.check(&admission.spec_limits(server))) {
        (Some(user), Err(error)) => Err(SessionError::KeyLimit {
            user: user.clone(),
            limit: admit::limit_word(&error),
            error,
        }),
        _ => Ok(()),
    }
}
