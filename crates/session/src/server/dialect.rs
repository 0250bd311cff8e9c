//! Other protocols at the server's one port: a [`Dialect`] (iperf3's, from the `iperf3` crate)
//! is what the gate asks about a connection whose first byte is not linerate's, and what runs
//! the tests it opens. The binary plugs dialects in through [`ServerConfig::dialects`]; this
//! crate knows none of them.
//!
//! The gate keeps every invariant of its module doc for a dialect's connections too: they share
//! its one handshake deadline, its caps (`MAX_PENDING`, the per-source count) and its buffer
//! bound (a dialect's [`DialectServer::max_opening`] at most, checked before bytes are read);
//! only a whole opening gets a thread, and on a server with keys a dialect that cannot prove one
//! is refused in the gate, without a thread ([`DialectServer::keyless_refusal`]). A dialect's
//! test holds a session slot, its budget and the metrics' running count like any other
//! ([`Server::hold`]).

use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::Arc;

use engine::Conn;
use wire::msg::ServerInfo;
use wire::{TestSpec, WireError};

use super::registry::{Claim, SessionGuard};
use super::{Counted, Log, Needs, ServerConfig, ServerMetrics, SessionError, Shared, Started};

/// A protocol the server speaks beside linerate's, as the configuration carries it.
pub trait Dialect: Send + Sync + std::fmt::Debug {
    /// This server's instance of the dialect, made once by `serve` before its first accept,
    /// with the listener's address (where a dialect binds its own sockets: iperf3's UDP door).
    /// Lines for the log (a socket that could not be bound) go to `log`.
    fn start(&self, addr: Option<SocketAddr>, log: &Log) -> Arc<dyn DialectServer>;
}

/// Where a dialect's opening stands after a read.
pub enum Opening {
    /// More bytes to come.
    More,
    /// Write these bytes to the client (a question, e.g. iperf3's `PARAM_EXCHANGE`) and read
    /// on; the next look is with `asked` set.
    Ask(Vec<u8>),
    /// A connection of a test already running: the gate hands it over
    /// ([`DialectServer::join`]).
    Joins,
    /// The whole opening of a new test: it gets a thread ([`DialectServer::run`]).
    Opens,
    /// Not this dialect's opening after all, or a broken one.
    Failed(WireError),
}

/// A gate's answer to a dialect's client on a server with keys it cannot prove.
pub struct KeylessRefusal {
    /// What the client is sent, in its protocol's words (small: a nonblocking write takes it).
    pub bytes: Vec<u8>,
    /// For the log.
    pub why: &'static str,
}

/// A dialect on one server: what the gate asks it, and the tests it runs.
pub trait DialectServer: Send + Sync {
    /// Its name, for the log (`{name} client refused`) and its tests' threads (`lr-{name}`).
    fn name(&self) -> &'static str;
    /// Whether a connection whose first byte is `first` speaks this dialect (its client
    /// speaks first; a linerate client's first byte is `wire::MAGIC[0]`, never claimed).
    fn claims(&self, first: u8) -> bool;
    /// Most bytes a whole opening holds: the gate's buffer bound for this dialect.
    fn max_opening(&self) -> usize;
    /// Where the opening `buf` stands (`asked`: the gate sent it the [`Opening::Ask`] bytes).
    /// Called on every read; it must not block.
    fn opening(&self, buf: &[u8], asked: bool) -> Opening;
    /// Hands a connection whose opening [`Opening::Joins`] to its test (`accepted`: its place
    /// in the order of the server's accepts); why not, for the log, when no test takes it.
    fn join(&self, opening: &[u8], accepted: u64, conn: Conn) -> Result<(), &'static str>;
    /// On a server with keys: the refusal of a client of this dialect (which cannot prove one),
    /// or `None` to serve it unauthenticated.
    fn keyless_refusal(&self) -> Option<KeylessRefusal>;
    /// Runs the test a whole opening asks for, on the thread the gate started for it.
    fn run(&self, conn: Conn, opening: &[u8], server: &Server<'_>, peer: &str);
    /// A socket of its own the gate polls beside the listener (iperf3's UDP streams open with
    /// a datagram to the server's port); `None`: none.
    fn door(&self) -> Option<RawFd> {
        None
    }
    /// Reads the door's waiting datagrams (a bounded number, without blocking); `admit` says
    /// whether an address may connect at all (`--allow`). Returns lines for the log.
    fn door_ready(&self, admit: &dyn Fn(IpAddr) -> bool) -> Vec<String> {
        let _ = admit;
        Vec::new()
    }
}

/// The server a dialect's test runs in: its configuration, log, counters, and session slots.
pub struct Server<'a>(pub(super) &'a Shared);

impl<'a> Server<'a> {
    /// The server's configuration (limits, timeouts, record sink).
    pub fn config(&self) -> &'a ServerConfig {
        &self.0.config
    }

    /// Writes a line to the server's log (escaped like every other).
    pub fn log(&self, line: String) {
        (self.0.log)(line)
    }

    /// Counts into the metrics, when `--metrics` asked for them.
    pub fn count(&self, f: impl FnOnce(&ServerMetrics)) {
        self.0.count(f)
    }

    /// What the server says about itself (version, host name, cores).
    pub fn info(&self) -> &'a ServerInfo {
        &self.0.info
    }

    /// A session slot for a test of `spec` from `address`, counted as a test of `kind` in the
    /// metrics: refused when the server is busy (`--max-sessions`, per address) or the test
    /// would pass the socket or buffer budget. Held until the slot is dropped.
    pub fn hold(
        &self,
        address: Option<IpAddr>,
        spec: &TestSpec,
        kind: Started,
    ) -> Result<Slot<'a>, SessionError> {
        // A dialect's data connections come through `DialectServer::join`, never `attach`.
        let (attach, _unused) = std::sync::mpsc::sync_channel(1);
        let claim = Claim {
            user: None,
            key_max_sessions: None,
            address,
        };
        let guard = SessionGuard::register(self.0, claim, attach)
            .and_then(|guard| guard.hold_budget(Needs::of(spec)))?;
        guard.close_registration();
        Ok(Slot {
            _counted: Counted::start(self.0, kind),
            _guard: guard,
        })
    }
}

/// A dialect's test's hold on a session slot, its budget and the running count.
pub struct Slot<'a> {
    // Dropped first: the metrics' running count ends before the slot frees.
    _counted: Counted<'a>,
    _guard: SessionGuard<'a>,
}
