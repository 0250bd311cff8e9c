//! iperf3 clients at `linerate serve`: iperf3's control protocol (docs/PROTOCOL.md section 13)
//! on the server's one port, TCP and UDP tests in every direction on linerate's data plane;
//! each finished test's record goes to the server's record sink when it has one (`record.rs`),
//! and its output to a client that asks for it (`output.rs`).
//!
//! It is a `session` dialect ([`Dialect`], plugged into `ServerConfig::dialects`): the gate
//! tells an iperf3 client by its cookie (`gate.rs`): a cookie a session waits for is that
//! session's next data connection (`Waiting::hand`); any other opens a test, whose parameters
//! the gate reads before `run` gets a thread for it, so a silent client costs no thread.
//! Invariants: a test takes a session slot like any other ([`Server::hold`]); every refusal is
//! an iperf3 error state the client prints, and a line in the server's log; a server with keys
//! refuses iperf3 clients (they cannot prove one) unless [`Dialect::open`] says to serve them
//! unauthenticated.

mod gate;
mod output;
mod record;
mod rows;
mod run;
mod udp;

pub use gate::Dialect;
use gate::Served;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::protocol::{server_error, Params, State, COOKIE_LEN, ERROR_UNIMPLEMENTED};
use engine::udp_stream::{Framing, UdpStream};
use engine::{engine_for, Conn, StreamEngine};
use measure::host::HostFacts;
use wire::spec::{
    Amount, DataPath, Direction, Flow, Params as SpecParams, SpecError, StreamParams, TcpOptions,
    UdpParams, UdpRate,
};
use wire::TestSpec;

use session::server::{Server, Started};
use udp::UdpClaim;

/// An iperf3 client's cookie.
type Cookie = [u8; COOKIE_LEN];

/// iperf3's error numbers linerate answers with (`iperf_api.h`).
mod code {
    /// "invalid number of parallel streams".
    pub const STREAMS: i32 = 6;
    /// "total required bandwidth is larger than server limit".
    pub const RATE: i32 = 27;
    /// "block size too large" (`-l` above `serve --max-length`).
    pub const BLOCK_SIZE: i32 = 7;
    /// "client's duration exceeds server's maximum duration".
    pub const DURATION: i32 = 37;
    /// "test authorization failed".
    pub const AUTH: i32 = 142;
    /// "unable to receive parameters from client".
    pub const PARAMS: i32 = 114;
    /// "unable to connect stream".
    pub const STREAM_CONNECT: i32 = 203;
}

/// The sessions waiting for their data connections, by cookie.
#[derive(Default)]
struct Waiting(Mutex<HashMap<Cookie, SyncSender<(u64, Conn)>>>);

impl Waiting {
    /// Whether a session waits for data connections with this cookie.
    fn waits_for(&self, cookie: &[u8]) -> bool {
        self.0.lock().is_ok_and(|m| m.contains_key(cookie))
    }

    /// Hands `conn` to the session waiting for `cookie`; why not, when it cannot take it.
    /// `accepted` is the connection's place in the order of the server's accepts.
    fn hand(&self, cookie: &Cookie, accepted: u64, conn: Conn) -> Result<(), &'static str> {
        let tx = self.0.lock().ok().and_then(|m| m.get(cookie).cloned());
        match tx.map(|tx| tx.try_send((accepted, conn))) {
            Some(Ok(())) => Ok(()),
            Some(Err(TrySendError::Full(_))) => Err("beyond the streams its test asked for"),
            Some(Err(TrySendError::Disconnected(_))) | None => {
                Err("for a test that no longer waits for it")
            }
        }
    }

    fn open(&self, cookie: Cookie, streams: usize) -> Receiver<(u64, Conn)> {
        let (tx, rx) = mpsc::sync_channel(streams);
        if let Ok(mut m) = self.0.lock() {
            m.insert(cookie, tx);
        }
        rx
    }

    fn close(&self, cookie: &Cookie) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(cookie);
        }
    }
}

/// Why a test did not run or finish: iperf3's error number for the client, words for the log.
struct Refusal {
    code: Option<i32>,
    why: String,
}

fn refusal(code: i32, why: impl Into<String>) -> Refusal {
    Refusal {
        code: Some(code),
        why: why.into(),
    }
}

fn gone(context: &str, e: impl std::fmt::Display) -> Refusal {
    Refusal {
        code: None,
        why: format!("{context}: {e}"),
    }
}

/// Runs one iperf3 client's test on its control connection (its cookie and parameters read
/// by the gate, which refused it already if the server asks for keys it cannot prove), to the
/// end.
fn run(
    mut ctrl: Conn,
    cookie: Cookie,
    params: Result<Params, wire::WireError>,
    (here, shared): (&Served, &Server<'_>),
    peer: &str,
) {
    let outcome = params
        .map_err(|e| refusal(code::PARAMS, format!("its parameters: {e}")))
        .map(|params| Params {
            client_version: params.client_version.as_deref().map(printable),
            ..params
        })
        .and_then(|params| session(&mut ctrl, cookie, &params, (here, shared)));
    match outcome {
        Ok(line) => shared.log(format!("{peer}: iperf3 client {line}")),
        Err(r) => {
            shared.log(format!("{peer}: iperf3 client refused or ended: {}", r.why));
            if let Some(code) = r.code {
                let _ = ctrl.write_all(&server_error(code));
            }
        }
    }
}

/// A peer's words fit for the log and the store: printable ASCII, at most 64 characters
/// (an unauthenticated client's `client_version` may hold newlines or terminal escapes).
fn printable(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(64)
        .collect()
}

fn send_state(ctrl: &mut Conn, state: State) -> Result<(), Refusal> {
    ctrl.write_all(&[state.to_byte()])
        .map_err(|e| gone("the client went away", e))
}

/// Reads one state byte, waiting at most `wait`: `None` when none came in time, or for a byte
/// that is no state linerate knows.
fn read_state(ctrl: &mut Conn, wait: Duration) -> Result<Option<State>, Refusal> {
    ctrl.set_read_timeout(Some(wait))
        .map_err(|e| gone("control connection", e))?;
    let mut b = [0u8; 1];
    match ctrl.read(&mut b) {
        Ok(0) => Err(gone("the client closed the control connection", "EOF")),
        Ok(_) => Ok(State::from_byte(b[0])),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(None),
        Err(e) if e.kind() == ErrorKind::Interrupted => Ok(None),
        Err(e) => Err(gone("waiting for the client", e)),
    }
}

/// The test, from the parameters to the results.
fn session(
    ctrl: &mut Conn,
    cookie: Cookie,
    params: &Params,
    (here, shared): (&Served, &Server<'_>),
) -> Result<String, Refusal> {
    let spec = spec_from(params, here, shared)?;
    // Every state goes out at once (Nagle would hold one behind the client's delayed ACK).
    if let Conn::Tcp(s) = ctrl {
        let _ = s.set_nodelay(true);
    }
    let udp = udp_claim(ctrl, &spec, here)?;
    let address = ctrl.peer_addr().map(|a| a.ip().to_canonical());
    // A busy server says so in iperf3's words: "the server is busy running a test".
    let kind = Started::Dialect("iperf3");
    let slot = shared.hold(address, &spec, kind).map_err(|e| {
        shared.count(|m| m.refused(e.reason()));
        Refusal {
            code: None,
            why: e.to_string(),
        }
    });
    let _slot = match slot {
        Ok(slot) => slot,
        Err(r) => {
            let _ = ctrl.write_all(&[State::AccessDenied.to_byte()]);
            return Err(r);
        }
    };
    // Before the test, not in its window, and only for a run that is kept.
    let host = shared
        .config()
        .records
        .as_ref()
        .map(|_| HostFacts::collect(ctrl.local_addr().map(|a| a.ip())));
    let conns = match &udp {
        Some(claim) => udp_streams(ctrl, claim, &spec, shared)?,
        None => data_connections(ctrl, cookie, &spec, (here, shared))?,
    };
    let test = run::Test {
        spec: &spec,
        params,
        client: ctrl.peer_addr(),
        host,
    };
    let version = params.client_version.as_deref().unwrap_or("?");
    run::run_test(ctrl, &test, conns, udp, shared).map(|line| format!("{version}: {line}"))
}

/// A UDP test's hold on its client's address: its streams carry no cookie, so a second UDP
/// test from the same address is refused (as busy) rather than have their streams mixed.
fn udp_claim<'a>(
    ctrl: &mut Conn,
    spec: &TestSpec,
    here: &'a Served,
) -> Result<Option<UdpClaim<'a>>, Refusal> {
    if spec.kind().row().path != DataPath::Udp {
        return Ok(None);
    }
    let claim = ctrl
        .peer_addr()
        .and_then(|a| here.udp.claim(a.ip(), spec.flows().len()));
    if claim.is_none() {
        let _ = ctrl.write_all(&[State::AccessDenied.to_byte()]);
        return Err(Refusal {
            code: None,
            why: "a UDP test from this address is running already (iperf3's UDP streams are \
                  told apart by their address alone)"
                .into(),
        });
    }
    Ok(claim)
}

/// `CreateStreams`, then the client's UDP streams, each set up by its connect datagram.
fn udp_streams(
    ctrl: &mut Conn,
    claim: &UdpClaim<'_>,
    spec: &TestSpec,
    shared: &Server<'_>,
) -> Result<Vec<Conn>, Refusal> {
    let local = ctrl
        .local_addr()
        .ok_or_else(|| gone("control connection", "it has no local address"))?;
    send_state(ctrl, State::CreateStreams)?;
    let deadline = Instant::now() + shared.config().setup_timeout;
    claim
        .streams(spec.flows().len(), local, spec.window_bytes, deadline)
        .map_err(|why| refusal(code::STREAM_CONNECT, why.to_string()))
}

/// The spec of an iperf3 client's parameters; what linerate does not run is refused.
fn spec_from(p: &Params, here: &Served, shared: &Server<'_>) -> Result<TestSpec, Refusal> {
    let unsupported = |what: &str| {
        refusal(
            ERROR_UNIMPLEMENTED,
            format!("{what}: linerate serve runs iperf3's TCP and UDP tests only"),
        )
    };
    if p.sctp == Some(true) || p.mptcp == Some(true) {
        return Err(unsupported("SCTP or MPTCP"));
    }
    if p.authtoken.is_some() {
        return Err(refusal(code::AUTH, "iperf3's RSA authentication"));
    }
    let direction = match (p.reverse, p.bidirectional) {
        (_, Some(true)) => Direction::Bidir,
        (Some(true), _) => Direction::Reverse,
        _ => Direction::Send,
    };
    let params = if p.udp == Some(true) {
        if !here.udp.is_open() {
            return Err(unsupported(
                "UDP (this server's UDP port could not be bound)",
            ));
        }
        udp_params(p, direction)
    } else {
        tcp_params(p, direction)
    };
    let streams = u16::try_from(p.parallel).unwrap_or(u16::MAX);
    // By amount (-n, -k) iperf3's client sends no time and ends the test itself once the
    // amount is written or read; this server's senders run until its TEST_END, as iperf3's
    // do, and the longest test this server runs bounds it.
    let amount = match (p.num, p.blockcount) {
        (0, 0) => None,
        (n, 0) => Some(Amount::Bytes(n)),
        (_, k) => Some(Amount::Blocks(k)),
    };
    // A peer's numbers: a sum past any clock is refused as too long, not wrapped.
    let duration_ms = match amount {
        Some(_) if p.time == 0 => shared.config().limits.max_duration_ms,
        _ => p
            .time
            .checked_add(p.omit)
            .and_then(|s| s.max(1).checked_mul(1000))
            .filter(|_| p.omit <= u64::from(u32::MAX))
            .ok_or_else(|| refusal(code::DURATION, "its time and omitted seconds overflow"))?,
    };
    let spec = TestSpec {
        window_bytes: p.window,
        amount,
        ..TestSpec::new(params, streams, duration_ms)
    };
    spec.check(&shared.config().limits).map_err(|e| {
        let code = match e {
            SpecError::Streams { .. } => code::STREAMS,
            SpecError::Duration { .. } => code::DURATION,
            SpecError::WriteLength { .. } => code::BLOCK_SIZE,
            SpecError::TcpRateLimit { .. } | SpecError::UdpRateLimit { .. } => code::RATE,
            _ => ERROR_UNIMPLEMENTED,
        };
        refusal(code, e.to_string())
    })?;
    if let Some(name) = spec.tcp().and_then(|t| t.congestion.as_ref()) {
        // Before any socket gets it: only a name the host lists.
        engine::sockopt::check_congestion(name)
            .map_err(|e| refusal(ERROR_UNIMPLEMENTED, e.to_string()))?;
    }
    Ok(spec)
}

/// A UDP test's parameters: iperf3's datagram length and rate (`bandwidth` 0: as fast as it
/// goes), one flow per stream.
fn udp_params(p: &Params, direction: Direction) -> SpecParams {
    let udp = UdpParams {
        payload_len_bytes: p.len.unwrap_or(1460).max(1),
        rate: match p.bandwidth {
            Some(b) if b > 0 => UdpRate::BitsPerSec(b),
            _ => UdpRate::Max,
        },
        ..UdpParams::new(direction)
    };
    SpecParams::UdpStream { udp }
}

/// A TCP test's parameters.
fn tcp_params(p: &Params, direction: Direction) -> SpecParams {
    let stream = StreamParams {
        write_len_bytes: p.len.unwrap_or(128 << 10).max(1),
        // As iperf3 sends: write(2), or sendfile(2) with -Z. (Against an iperf3 receiver on
        // loopback, splice cost this server ~20 % of the rate iperf3 -s reaches.)
        send_mode: if p.zerocopy.is_some_and(|z| z > 0) {
            wire::spec::SendMode::Sendfile
        } else {
            wire::spec::SendMode::Write
        },
        // `--skip-rx-copy` (iperf3 3.19+): this server's receivers discard as iperf3's would.
        rx_mode: if p.skip_rx_copy.is_some_and(|s| s > 0) {
            wire::spec::RxMode::Trunc
        } else {
            wire::spec::RxMode::Copy
        },
        ..StreamParams::new(direction)
    };
    let tcp = TcpOptions {
        mss_bytes: p.mss,
        no_delay: p.nodelay == Some(true),
        congestion: p.congestion.clone(),
        tos: p.tos,
        // iperf3 has one rate for every sender.
        pacing_bps: p.bandwidth.filter(|&b| b > 0),
        reverse_pacing_bps: None,
        notsent_lowat_bytes: None,
    };
    SpecParams::TcpStream { stream, tcp }
}

/// The data plane for an iperf3 client's test: iperf3's datagram header for UDP.
fn engine_of(spec: &TestSpec, p: &Params) -> Box<dyn StreamEngine> {
    match &spec.params {
        SpecParams::UdpStream { udp } => Box::new(UdpStream::framed(
            udp,
            Framing::Iperf3 {
                counters_64bit: p.udp_counters_64bit.is_some_and(|v| v > 0),
            },
            Flow::ServerToClient,
        )),
        _ => engine_for(spec, Flow::ServerToClient),
    }
}

/// `CreateStreams`, then the client's data connections (each opens with the cookie), in the
/// order they come: iperf3's stream ids 1, 3, 4, …; a bidirectional client's sending ones first.
fn data_connections(
    ctrl: &mut Conn,
    cookie: Cookie,
    spec: &TestSpec,
    (here, shared): (&Served, &Server<'_>),
) -> Result<Vec<Conn>, Refusal> {
    let n = spec.flows().len();
    let arrivals = here.waiting.open(cookie, n);
    let got = send_state(ctrl, State::CreateStreams).and_then(|()| {
        let deadline = Instant::now() + shared.config().setup_timeout;
        let mut conns = Vec::with_capacity(n);
        while conns.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match arrivals.recv_timeout(left) {
                Ok(arrival) => conns.push(arrival),
                Err(_) => {
                    return Err(refusal(
                        code::STREAM_CONNECT,
                        format!("{} of {n} data connections came in time", conns.len()),
                    ))
                }
            }
        }
        // iperf3 tells a stream's direction by the order its connections were accepted in,
        // which a retransmitted cookie can make differ from the order they became whole.
        conns.sort_by_key(|&(accepted, _)| accepted);
        let conns: Vec<Conn> = conns.into_iter().map(|(_, c)| c).collect();
        // Each connection its flow's options (pacing at the rate asked for, -w), as a
        // linerate client's: without them a paced (-b) test from iperf3 would leave unpaced.
        for (conn, &(_, flow)) in conns.iter().zip(&spec.flows()) {
            engine::sockopt::SocketOptions::for_flow(spec, flow)
                .apply_accepted(conn)
                .map_err(|e| refusal(code::STREAM_CONNECT, e.to_string()))?;
        }
        Ok(conns)
    });
    here.waiting.close(&cookie);
    got
}
