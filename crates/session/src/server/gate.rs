//! The handshake gate: every new connection's hello and first message, read by the accepting
//! thread itself from nonblocking sockets, so a connection costs no thread until it starts a
//! test, and idle, trickling or half-open connections cost only a socket and a small buffer.
//!
//! Invariants:
//! - a connection from outside `--allow` is closed before any byte is read or written;
//! - at most [`MAX_PENDING`] connections are in handshake at once; one beyond that is closed at
//!   once, and the log says how many were turned away at most once per second;
//! - our greeting goes out only once the client's first byte is linerate's; a first byte from
//!   iperf3's cookie alphabet waits for the whole cookie (an iperf3 client speaks first, and
//!   reads states): a cookie a test waits for hands the connection to that test; any other is
//!   asked for its parameters here, like a linerate `start`, and only whole parameters get a
//!   thread (`iperf3/`);
//! - iperf3's UDP streams open with a connect datagram to the server's port, which carries no
//!   cookie: the gate polls that port's socket too (`iperf3/udp.rs`) and hands each connect
//!   datagram's address to the UDP test that claimed its IP; any other datagram is dropped and
//!   logged;
//! - a connection has one deadline for its whole handshake (our hello out, its hello and first
//!   message in): `handshake_timeout` after it was accepted, however slowly its bytes trickle;
//! - a first message is at most [`MAX_FIRST_FRAME`] bytes (a `start` with its spec, or an
//!   `attach`), so a pending connection never buffers more than that;
//! - with `--auth-keys`, a first message without a valid proof of a key is refused in the gate:
//!   only a proven `start` gets a thread (its session's); an `attach` is handed to its waiting
//!   session, and only if it proved the session's key.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::sys_io::poll_readable;
use engine::{Conn, Listener};
use wire::auth::{server_identity, Nonce};
use wire::iperf3::{decode_params, is_cookie, is_cookie_char, State, COOKIE_LEN, MAX_PARAMS_LEN};
use wire::{frame, ClientMsg, Greeting, Hello, ServerMsg, WireError, HELLO_LEN, MAGIC};

use super::admit::{admit, Admission, KeyWatch, Reached};
use super::allow::allowed;
use super::iperf3::Cookie;
use super::relay::{run_relay, RelayAsk};
use super::{attach, run_session, tell, Shared};

/// Most connections in handshake at once: enough that thousands of idle connections do not
/// keep a real client out (each costs a descriptor and a few hundred bytes, no thread).
pub const MAX_PENDING: usize = 16_384;
/// Largest first message, bytes (a spec is well under 2 KiB).
pub const MAX_FIRST_FRAME: usize = 64 << 10;
/// The frame length prefix.
const LEN_PREFIX: usize = 4;
/// Longest sleep of the gate between looks at the shutdown signal.
const TICK: Duration = Duration::from_millis(200);

/// A connection in handshake.
struct Pending {
    conn: Conn,
    peer: String,
    /// Its place in the order of accepts: iperf3 numbers a test's data connections by it.
    accepted: u64,
    /// What it sent so far: its hello, then its first frame.
    buf: Vec<u8>,
    deadline: Instant,
    /// The nonce of our greeting, which its proof must cover.
    challenge: Nonce,
    /// Our greeting, sent once the client's first byte shows a linerate hello (an iperf3
    /// client speaks first too, and must not read it).
    greeting: Option<Greeting>,
    /// An iperf3 client asked for its parameters (its cookie named no waiting test).
    iperf3_params: bool,
}

/// Where a pending connection's handshake stands after a read.
enum Step {
    /// More bytes to come.
    Waiting,
    /// Its first message.
    Done(Box<ClientMsg>),
    /// Closed before sending anything (a port probe).
    Closed,
    /// Closed right after its hello: a client that read our greeting and stopped (it has no
    /// key for a server that asks for one, or a key for one that does not).
    LeftAfterHello,
    /// An iperf3 client's cookie, whole.
    Iperf3Cookie,
    /// An iperf3 client's parameters, whole (after its cookie), not yet decoded.
    Iperf3Params,
    /// A broken hello or frame, or a failed read.
    Failed(WireError),
}

impl Pending {
    /// Reads what has arrived (without waiting) and parses as far as it goes.
    fn read(&mut self) -> Step {
        let mut chunk = [0u8; 4096];
        loop {
            match self.conn.read(&mut chunk) {
                Ok(0) if self.buf.is_empty() => return Step::Closed,
                Ok(0) if self.buf.len() == HELLO_LEN => {
                    // A bad hello is reported as such (an older client leaves here too).
                    return match self.parse() {
                        Step::Failed(e) => Step::Failed(e),
                        _ => Step::LeftAfterHello,
                    };
                }
                Ok(0) => return Step::Failed(WireError::Closed { mid_frame: true }),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset && self.buf.is_empty() => {
                    return Step::Closed
                }
                Err(e) => return Step::Failed(e.into()),
            }
            if self.buf.len() > HELLO_LEN + LEN_PREFIX + MAX_FIRST_FRAME {
                break;
            }
        }
        if let Some(step) = self.first_bytes() {
            return step;
        }
        self.parse()
    }

    /// Tells a linerate client (greeted now) from an iperf3 one by the first bytes; `None`
    /// once greeted, for the hello and first message to be parsed.
    fn first_bytes(&mut self) -> Option<Step> {
        let first = *self.buf.first()?;
        if self.iperf3_params {
            return Some(self.iperf3_params());
        }
        if is_cookie_char(first) {
            return Some(match self.buf.get(..COOKIE_LEN) {
                None => Step::Waiting,
                Some(c) if is_cookie(c) => Step::Iperf3Cookie,
                Some(_) => Step::Failed(WireError::BadMagic {
                    found: [self.buf[0], self.buf[1], self.buf[2], self.buf[3]],
                    expected: MAGIC,
                }),
            });
        }
        // A fresh socket's send buffer takes the 40 bytes at once.
        let greeting = self.greeting.take()?;
        if first == MAGIC[0] {
            if let Err(e) = self.conn.write_all(&greeting.emit()) {
                return Some(Step::Failed(e.into()));
            }
        }
        None
    }

    /// An iperf3 client's parameters after its cookie: a big-endian length, then the JSON.
    fn iperf3_params(&self) -> Step {
        let body = &self.buf[COOKIE_LEN..];
        let Some(prefix) = body.get(..LEN_PREFIX) else {
            return Step::Waiting;
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        if len == 0 {
            return Step::Failed(WireError::EmptyMessage);
        }
        if len > MAX_PARAMS_LEN {
            return Step::Failed(WireError::FrameTooLarge {
                len: len as usize,
                max: MAX_PARAMS_LEN as usize,
            });
        }
        if body.len() < LEN_PREFIX + len as usize {
            return Step::Waiting;
        }
        Step::Iperf3Params
    }

    fn parse(&self) -> Step {
        let Some(hello) = self.buf.get(..HELLO_LEN) else {
            return Step::Waiting;
        };
        if let Err(e) = Hello::parse(hello).and_then(Hello::check_version) {
            return Step::Failed(e);
        }
        let body = &self.buf[HELLO_LEN..];
        if let Some(prefix) = body.get(..LEN_PREFIX) {
            let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
            if len > MAX_FIRST_FRAME {
                return Step::Failed(WireError::FrameTooLarge {
                    len,
                    max: MAX_FIRST_FRAME,
                });
            }
        }
        match frame::decode::<ClientMsg>(body) {
            Ok(Some((msg, _))) => Step::Done(Box::new(msg)),
            Ok(None) => Step::Waiting,
            Err(e) => Step::Failed(e),
        }
    }
}

/// Lines about single connections (drops, refusals) logged per second; past that they are
/// counted, and the count is logged once per second.
const CONN_LINES_PER_SECOND: u32 = 20;

/// What the gate logs in bulk: connections closed at the cap or from outside `--allow`,
/// failed accepts (out of descriptors), and single-connection lines past
/// [`CONN_LINES_PER_SECOND`], each reported at most once per second, so a flood of bad
/// connections cannot flood the log.
#[derive(Default)]
struct GateLog {
    count: u64,
    /// Connections from outside `--allow`.
    outsiders: u64,
    last_report: Option<Instant>,
    accept_error: Option<std::io::Error>,
    /// Single-connection lines logged in this second.
    lines: u32,
    /// Single-connection lines not logged in this second.
    suppressed: u64,
}

impl GateLog {
    /// Logs a line about one connection, or counts it once this second's share is spent.
    fn conn_line(&mut self, shared: &Shared, line: String) {
        if self.lines < CONN_LINES_PER_SECOND {
            self.lines += 1;
            (shared.log)(line);
        } else {
            self.suppressed += 1;
        }
    }

    fn report(&mut self, shared: &Shared) {
        if self
            .last_report
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        if self.count > 0 {
            (shared.log)(format!(
                "turned away {} connection{}: {MAX_PENDING} already in handshake (the cap)",
                self.count,
                plural(self.count)
            ));
        }
        if self.outsiders > 0 {
            (shared.log)(format!(
                "closed {} connection{} from outside --allow",
                self.outsiders,
                plural(self.outsiders)
            ));
        }
        if let Some(e) = self.accept_error.take() {
            (shared.log)(format!("accept failed: {e}"));
        }
        if self.suppressed > 0 {
            (shared.log)(format!(
                "{} more connection{} dropped or refused during handshake in the last second \
                 (not logged one by one past {CONN_LINES_PER_SECOND} a second)",
                self.suppressed,
                plural(self.suppressed)
            ));
        }
        self.count = 0;
        self.outsiders = 0;
        self.lines = 0;
        self.suppressed = 0;
        self.last_report = Some(Instant::now());
    }
}

/// Accepts and shakes hands until `done()`; each connection's first message goes to
/// [`dispatch`].
pub(super) fn run(listener: &Listener, shared: &Arc<Shared>, done: impl Fn() -> bool) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut keys = KeyWatch::new(shared.config.auth.clone());
    let mut gate_log = GateLog::default();
    let mut accepts = 0u64;
    while !done() {
        let now = Instant::now();
        let wait = pending
            .iter()
            .map(|p| p.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(TICK)
            .min(TICK);
        // The listener, the iperf3 UDP door when open, then every pending connection.
        let door = shared.iperf3_udp.fd();
        let fds: Vec<RawFd> = std::iter::once(listener.as_raw_fd())
            .chain(door)
            .chain(pending.iter().map(|p| p.conn.as_raw_fd()))
            .collect();
        let ready = poll_readable(&fds, wait);
        keys.refresh(&*shared.log);
        let first_pending = 1 + usize::from(door.is_some());
        advance(
            &mut pending,
            &ready[first_pending..],
            shared,
            &keys,
            &mut gate_log,
        );
        if ready[0] {
            accept_all(listener, &mut pending, &mut accepts, &mut gate_log, shared);
        }
        if door.is_some() && ready[1] {
            let allow = &shared.config.allow;
            for line in shared.iperf3_udp.read(|ip| allowed(allow, ip)) {
                gate_log.conn_line(shared, line);
            }
        }
        gate_log.report(shared);
    }
}

/// Reads the ready connections among the first `ready.len()`, drops those past their deadline.
fn advance(
    pending: &mut Vec<Pending>,
    ready: &[bool],
    shared: &Arc<Shared>,
    keys: &KeyWatch,
    log: &mut GateLog,
) {
    let now = Instant::now();
    for i in (0..ready.len()).rev() {
        let expired = pending[i].deadline <= now;
        if !ready[i] && !expired {
            continue;
        }
        let step = if ready[i] {
            pending[i].read()
        } else {
            Step::Waiting
        };
        match step {
            Step::Waiting if !expired => {}
            Step::Waiting => {
                let p = pending.swap_remove(i);
                shared.count(|m| m.handshake_timed_out());
                log.conn_line(
                    shared,
                    format!(
                        "{}: dropped during handshake: no hello and first message within {:?}",
                        p.peer, shared.config.handshake_timeout
                    ),
                );
            }
            Step::Closed => drop(pending.swap_remove(i)),
            Step::Iperf3Cookie => {
                // Handed on with its place in the accept order, by which its test orders them.
                if let Some(p) = iperf3_cookie(pending, i, shared) {
                    iperf3_data_connection(p, shared, log);
                }
            }
            Step::Iperf3Params => iperf3_start(pending.swap_remove(i), shared, log),
            Step::LeftAfterHello => left_after_hello(pending.swap_remove(i), keys, shared, log),
            Step::Failed(e) => {
                let p = pending.swap_remove(i);
                log.conn_line(shared, format!("{}: dropped during handshake: {e}", p.peer));
            }
            Step::Done(msg) => {
                let p = pending.swap_remove(i);
                let proof = match &*msg {
                    ClientMsg::Start { auth, .. }
                    | ClientMsg::Attach { auth, .. }
                    | ClientMsg::Relay { auth, .. }
                    | ClientMsg::Probe { auth } => auth.as_ref(),
                    _ => None,
                };
                let reached = Reached {
                    local: server_identity(p.conn.local_addr()),
                    aliases: &shared.config.auth_addresses,
                };
                match admit(keys.table(), &p.challenge, proof, &reached) {
                    Ok(admission) => dispatch(p.conn, p.peer, *msg, admission, shared, log),
                    Err(refusal) => {
                        shared.count(|m| m.auth_failed());
                        log.conn_line(shared, format!("{}: {}", p.peer, refusal.log_text()));
                        let mut conn = p.conn;
                        // The answer is small and the fresh socket's send buffer empty: a
                        // nonblocking write takes it.
                        tell(&mut conn, refusal.to_string());
                    }
                }
            }
        }
    }
}

/// A connection that closed right after our greeting, logged with the likely reason.
fn left_after_hello(p: Pending, keys: &KeyWatch, shared: &Shared, log: &mut GateLog) {
    let why = if keys.table().is_some() {
        "it had no key for this server, which asks for one"
    } else {
        "it has a key, and this server asks for none"
    };
    log.conn_line(
        shared,
        format!("{}: left after the greeting ({why})", p.peer),
    );
}

/// Accepts every connection waiting (up to a bound per call); each is greeted once its first
/// byte shows a linerate client.
fn accept_all(
    listener: &Listener,
    pending: &mut Vec<Pending>,
    accepts: &mut u64,
    log: &mut GateLog,
    shared: &Shared,
) {
    for _ in 0..1024 {
        let conn = match listener.accept() {
            Ok(conn) => conn,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) => {
                // Out of descriptors, most likely: they free up as handshakes end.
                log.accept_error = Some(e);
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
        };
        // Before any byte is read or written: a peer outside --allow learns nothing.
        if conn
            .peer_addr()
            .is_some_and(|a| !allowed(&shared.config.allow, a.ip()))
        {
            log.outsiders += 1;
            shared.count(|m| m.refused("allow"));
            continue;
        }
        if pending.len() >= MAX_PENDING {
            log.count += 1;
            continue;
        }
        let challenge = match crate::auth::fresh_nonce() {
            Ok(nonce) => nonce,
            Err(e) => {
                log.accept_error = Some(std::io::Error::other(e.to_string()));
                continue;
            }
        };
        let greeting = Greeting {
            hello: Hello {
                requires_key: shared.config.auth.is_some(),
                ..Hello::ours()
            },
            nonce: challenge,
        };
        if conn.set_nonblocking(true).is_ok() {
            *accepts += 1;
            pending.push(Pending {
                accepted: *accepts,
                peer: conn.peer(),
                conn,
                buf: Vec::new(),
                deadline: Instant::now() + shared.config.handshake_timeout,
                challenge,
                greeting: Some(greeting),
                iperf3_params: false,
            });
        }
    }
}

/// An iperf3 client's whole cookie at `pending[i]`: a test waiting for it takes the connection
/// out of the gate (returned); any other cookie opens a test, so the connection stays and is
/// asked for its parameters (`PARAM_EXCHANGE`).
fn iperf3_cookie(pending: &mut Vec<Pending>, i: usize, shared: &Shared) -> Option<Pending> {
    let p = &mut pending[i];
    if shared.iperf3.waits_for(&p.buf[..COOKIE_LEN]) {
        return Some(pending.swap_remove(i));
    }
    p.iperf3_params = true;
    // A fresh socket's send buffer takes the one byte at once; a failed write shows as the
    // client's silence at the deadline.
    let _ = p.conn.write_all(&[State::ParamExchange.to_byte()]);
    None
}

/// A data connection of the iperf3 test its cookie names; dropped, and logged, when that test
/// has all it asked for or has ended.
fn iperf3_data_connection(p: Pending, shared: &Shared, log: &mut GateLog) {
    let cookie: Cookie = p.buf[..COOKIE_LEN].try_into().unwrap_or([0; COOKIE_LEN]);
    if let Err(e) = p.conn.set_nonblocking(false) {
        return log.conn_line(shared, format!("{}: dropped during handshake: {e}", p.peer));
    }
    if let Err(why) = shared.iperf3.hand(&cookie, p.accepted, p.conn) {
        log.conn_line(shared, format!("{}: iperf3 data connection {why}", p.peer));
    }
}

/// An iperf3 client's cookie and whole parameters: its test on a thread of its own.
fn iperf3_start(p: Pending, shared: &Arc<Shared>, log: &mut GateLog) {
    let cookie: Cookie = p.buf[..COOKIE_LEN].try_into().unwrap_or([0; COOKIE_LEN]);
    let params = decode_params(&p.buf[COOKIE_LEN + LEN_PREFIX..]);
    if let Err(e) = p.conn.set_nonblocking(false) {
        return log.conn_line(shared, format!("{}: dropped during handshake: {e}", p.peer));
    }
    let (conn, for_thread, peer) = (p.conn, Arc::clone(shared), p.peer.clone());
    let spawned = std::thread::Builder::new()
        .name("lr-iperf3".into())
        .spawn(move || super::iperf3::run(conn, cookie, params, &for_thread, &peer));
    if let Err(e) = spawned {
        log.conn_line(
            shared,
            format!("{}: cannot start a thread for a session: {e}", p.peer),
        );
    }
}

/// A connection's first message: a `start` gets its session's thread, an `attach` joins its
/// session, anything else is answered with an error. Every line about the connection goes
/// through the gate's log, so a flood of bad first messages is summed like other drops.
fn dispatch(
    mut conn: Conn,
    peer: String,
    msg: ClientMsg,
    admission: Admission,
    shared: &Arc<Shared>,
    log: &mut GateLog,
) {
    let mut conn_line = |line: String| log.conn_line(shared, format!("{peer}: {line}"));
    if let Err(e) = conn.set_nonblocking(false) {
        return conn_line(format!("dropped during handshake: {e}"));
    }
    match msg {
        ClientMsg::Start { spec, .. } => {
            let for_thread = Arc::clone(shared);
            let session_peer = peer.clone();
            let spawned = std::thread::Builder::new()
                .name("lr-session".into())
                .spawn(move || run_session(conn, spec, admission, &for_thread, &session_peer));
            if let Err(e) = spawned {
                conn_line(format!("cannot start a thread for a session: {e}"));
            }
        }
        ClientMsg::Attach {
            session, stream, ..
        } => attach(conn, session, stream, admission, shared, &mut conn_line),
        ClientMsg::Relay {
            to,
            port,
            family,
            spec,
            ..
        } => {
            let for_thread = Arc::clone(shared);
            let relay_peer = peer.clone();
            let ask = RelayAsk {
                to,
                port,
                family,
                spec,
            };
            let spawned = std::thread::Builder::new()
                .name("lr-relay".into())
                .spawn(move || run_relay(conn, ask, admission, &for_thread, &relay_peer));
            if let Err(e) = spawned {
                conn_line(format!("cannot start a thread for a relayed test: {e}"));
            }
        }
        // A foreign probe: answered and closed, nothing logged (the client counts them).
        ClientMsg::Probe { .. } => {
            shared.count(|m| m.probed());
            let _ = crate::control::send(
                &mut conn,
                &ServerMsg::Probed {
                    auth: admission.answer,
                },
            );
        }
        other => {
            let message = format!("expected start or attach, got {other:?}");
            conn_line(message.clone());
            tell(&mut conn, message);
        }
    }
}
