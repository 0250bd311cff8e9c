//! [`SessionError`]: why the server refused a test or ended it early. Its `Display` is what
//! the client is told (in `ServerMsg::Error`) and what the server's log says, so every variant
//! names the cause and, where there is one, what to change.

use std::time::Duration;

use std::net::IpAddr;

use engine::EngineError;
use wire::auth::UserName;
use wire::spec::SpecError;
use wire::{ClientMsg, WireError};

use super::metrics::Refusal;

/// Why a session was refused or ended before its results.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The spec is outside the protocol's ranges or this server's limits.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A socket option the spec asks for is refused here.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The congestion control the spec names is not available on this host.
    #[error("on the server: {0}")]
    Congestion(EngineError),
    /// `--affinity` names a CPU this host does not have.
    #[error("--affinity: the server has {cpus} CPUs (0 to {}); CPU {cpu} is not one of them", cpus - 1)]
    NoSuchCpu {
        /// Online CPUs here.
        cpus: usize,
        /// The CPU asked for.
        cpu: u32,
    },
    /// More tests are running than the server allows at once.
    #[error("server busy: {running} tests already running (limit {limit}); try again later")]
    Busy {
        /// Tests running before this one.
        running: usize,
        /// `max_sessions`.
        limit: usize,
    },
    /// The key's own `max-sessions`.
    #[error("key {user} may run {limit} test{} at once (max-sessions in the server's keys file); {running} running", if *.limit == 1 { "" } else { "s" })]
    KeyBusy {
        /// The key.
        user: UserName,
        /// Its tests running.
        running: usize,
        /// Its limit.
        limit: usize,
    },
    /// The server's socket or buffer budget (`--max-sockets`, `--max-buffer-memory`).
    #[error("this test needs {asked} {what}, and running tests hold {in_use} of this server's {limit} ({flag}); ask for fewer streams or flows, or try again later")]
    Budget {
        /// `sockets`, or `bytes of buffers`.
        what: &'static str,
        /// What this test needs.
        asked: u64,
        /// Held by running tests.
        in_use: u64,
        /// The server's total.
        limit: u64,
        /// The flag that sets it.
        flag: &'static str,
    },
    /// `--max-sessions-per-address`.
    #[error("{address} may run {limit} test{} at once (serve --max-sessions-per-address); {running} running", if *.limit == 1 { "" } else { "s" })]
    AddressBusy {
        /// The client's address.
        address: IpAddr,
        /// Its tests running.
        running: usize,
        /// The limit.
        limit: usize,
    },
    /// A spec within the server's limits but outside the key's.
    #[error("over key {user}'s {limit} in the server's keys file: {error}")]
    KeyLimit {
        /// The key.
        user: UserName,
        /// The limit's word: `max-time`, `max-rate` or `max-streams`.
        limit: &'static str,
        /// What was asked and allowed.
        error: SpecError,
    },
    /// A `relay` to a server started without `--relay`.
    #[error("this server does not run tests towards others; start it with `linerate serve --relay` to allow --from")]
    RelayOff,
    /// A `relay` under a key without the `relay` mark.
    #[error("key {user} may not ask this server to run tests towards others; add the word `relay` to its line in the server's keys file")]
    RelayKey {
        /// The key.
        user: UserName,
    },
    /// The relay cannot resolve where the test should go.
    #[error("cannot reach {to} from this server: {why}")]
    RelayTarget {
        /// As the controller named it.
        to: String,
        /// Why.
        why: String,
    },
    /// A destination outside `--relay-to`.
    #[error("{addr} is outside this server's --relay-to prefixes")]
    RelayDenied {
        /// Where the test would have gone.
        addr: IpAddr,
    },
    /// A destination of a special class, or this relay's own, that `--relay-to` does not name.
    #[error("{addr} is {what}: this relay does not test towards it unless a --relay-to prefix names it (e.g. serve --relay-to 127.0.0.0/8)")]
    RelaySpecial {
        /// Where the test would have gone.
        addr: IpAddr,
        /// Its class.
        what: &'static str,
    },
    /// The operating system's random source failed.
    #[error("no random numbers for a session cookie: {0}")]
    Random(String),
    /// UDP and connection tests open sockets on the control connection's address.
    #[error("{tests} need an IP control connection")]
    NotIp {
        /// `UDP tests` or `crr tests`.
        tests: &'static str,
    },
    /// The listener of a connection test could not be opened.
    #[error("cannot open a listener for connection tests: {0}")]
    CrrListener(std::io::Error),
    /// A UDP socket could not be opened.
    #[error("cannot open a UDP socket: {0}")]
    UdpSocket(EngineError),
    /// The XDP counter of a frame engine's test could not be attached or read.
    #[error("frame counter: {0}")]
    Frames(#[from] frames::SysError),
    /// Another XDP program holds the interface a frame test's counter would go on. The client
    /// is told the interface (`busy`, its holder left out); which program it is, `holder`, is
    /// for the server's log alone ([`SessionError::log_detail`]).
    #[error("frame counter: {busy}")]
    FramesBusy {
        /// The refusal, naming no program.
        busy: frames::SysError,
        /// The program in the way, as " (program id N, name NAME)", or empty if unknown.
        holder: String,
    },
    /// A frame engine's test whose control connection arrived on no interface the counter can
    /// use.
    #[error("frame counter: the interface the control connection arrived on is not known here; frame tests need an IP control connection over an Ethernet interface between the hosts")]
    FramesInterface,
    /// The UDP probe handshake or a socket call after it failed.
    #[error("UDP setup: {0}")]
    UdpSetup(std::io::Error),
    /// A socket call during setup failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Not every data connection arrived in time.
    #[error("only {got} of {want} data connections arrived within {waited:?}; is a firewall blocking new connections to this port?")]
    StreamsMissing {
        /// Connections that arrived.
        got: usize,
        /// Connections the test needs.
        want: usize,
        /// The handshake timeout.
        waited: Duration,
    },
    /// The test did not begin within the setup timeout of its start (its slot is freed).
    #[error("the test did not begin within {0:?} of its start; the server freed its slot")]
    NotBegun(Duration),
    /// The session's registry entry went away (the server is ending).
    #[error("session closed")]
    Closed,
    /// The client sent something other than the next step of the protocol.
    #[error("expected {expected}, got {got:?}")]
    Unexpected {
        /// The message the protocol calls for here.
        expected: &'static str,
        /// What came.
        got: Box<ClientMsg>,
    },
    /// The client sent something out of place while the test ran.
    #[error("unexpected message mid-test: {0:?}")]
    UnexpectedMidTest(Box<ClientMsg>),
    /// A stream's worker thread could not start.
    #[error("cannot start stream thread: {0}")]
    Thread(std::io::Error),
    /// The client said nothing for longer than an interval plus the handshake timeout.
    #[error("client went away mid-test: silent for {0:?}")]
    ClientSilent(Duration),
    /// The client kept the session past its window without saying stop.
    #[error("the client did not say stop within {0:?} of the test's end; the server ended the test and freed its slot")]
    NoStop(Duration),
    /// The control connection failed while the test ran.
    #[error("client went away mid-test: {0}")]
    ClientGone(WireError),
    /// The client ended the test with an error of its own.
    #[error("client gave up: {0}")]
    ClientGaveUp(String),
    /// The server was told to shut down.
    #[error("server shutting down")]
    ShuttingDown,
    /// The control connection failed outside the test's run.
    #[error(transparent)]
    Wire(#[from] WireError),
}

impl SessionError {
    /// What the server's log adds to the refusal the client is told: which XDP program holds
    /// a frame test's interface (the client learns nothing of other programs on this host).
    pub fn log_detail(&self) -> &str {
        match self {
            Self::FramesBusy { holder, .. } => holder,
            _ => "",
        }
    }

    /// The refusal's reason as `serve --metrics` counts it.
    pub fn reason(&self) -> Refusal {
        match self {
            Self::Busy { .. } => Refusal::Busy,
            Self::KeyBusy { .. } => Refusal::KeyBusy,
            Self::AddressBusy { .. } => Refusal::AddressBusy,
            Self::Budget { .. } => Refusal::Budget,
            Self::Spec(_)
            | Self::KeyLimit { .. }
            | Self::NoSuchCpu { .. }
            | Self::Congestion(_)
            | Self::Engine(_) => Refusal::Limits,
            Self::RelayOff
            | Self::RelayKey { .. }
            | Self::RelayTarget { .. }
            | Self::RelayDenied { .. }
            | Self::RelaySpecial { .. } => Refusal::Relay,
            _ => Refusal::Setup,
        }
    }
}
