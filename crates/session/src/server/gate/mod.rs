//! The handshake gate: every new connection's hello and first message, read by the accepting
//! thread itself from nonblocking sockets, so a connection costs no thread until it starts a
//! test, and idle, trickling or half-open connections cost only a socket and a small buffer.
//!
//! Invariants:
//! - a connection from outside `--allow` is closed before any byte is read or written;
//! - at most [`MAX_PENDING`] connections are in handshake at once; one beyond that is closed at
//!   once, and the log says how many were turned away at most once per second;
//! - our greeting goes out only once the client's first byte is linerate's; a first byte a
//!   [`Dialect`](super::Dialect) claims (iperf3's cookie alphabet: its client speaks first, and
//!   reads states) makes the connection that dialect's: the gate reads its opening here, like a
//!   linerate `start`, asking what the dialect asks; an opening that joins a running test is
//!   handed to it, and only a whole opening of a new test gets a thread;
//! - a dialect's socket of its own (iperf3's UDP streams open with a connect datagram to the
//!   server's port, which carries no cookie) is polled here too, and read by the dialect
//!   without blocking, with `--allow` applied to each datagram's source;
//! - a connection has one deadline for its whole handshake (our hello out, its hello and first
//!   message in): `handshake_timeout` after it was accepted, however slowly its bytes trickle;
//! - a first message is at most [`MAX_FIRST_FRAME`](pending::MAX_FIRST_FRAME) bytes (a `start` with its spec, or an
//!   `attach`), so a pending connection never buffers more than that, and its buffer grows
//!   only with what it sent; at most [`MAX_TALKING_PER_SOURCE`](pending::MAX_TALKING_PER_SOURCE) connections of one address
//!   hold bytes at once (`pending.rs`);
//! - with `--auth-keys`, a first message without a valid proof of a key is refused in the gate:
//!   only a proven `start` gets a thread (its session's); an `attach` is handed to its waiting
//!   session, and only if it proved the session's key; an iperf3 client (which cannot prove
//!   one) is refused here too, without a thread, unless its dialect serves it without a key
//!   (`--iperf3-open`).

mod log;
mod pending;

use std::io::{ErrorKind, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::sys_io::poll_readable;
use engine::{Conn, Listener};
use wire::auth::server_identity;
use wire::{ClientMsg, Greeting, Hello, ServerMsg};

use log::GateLog;
use pending::{Pending, Step, Table};

use super::admit::{admit, Admission, KeyWatch, Reached};
use super::allow::allowed;
use super::dialect::Server;
use super::metrics::Refusal;
use super::relay::{run_relay, RelayAsk};
use super::{attach, run_session, tell, Shared};

/// Most connections in handshake at once: enough that thousands of idle connections do not
/// keep a real client out (each costs a descriptor and a few hundred bytes, no thread).
pub const MAX_PENDING: usize = 16_384;
/// Longest sleep of the gate between looks at the shutdown signal.
const TICK: Duration = Duration::from_millis(200);

/// Accepts and shakes hands until `done()`; each connection's first message goes to
/// [`dispatch`].
pub(super) fn run(listener: &Listener, shared: &Arc<Shared>, done: impl Fn() -> bool) {
    let mut pending = Table::new(shared.dialects.clone());
    let mut keys = KeyWatch::new(shared.config.auth.clone());
    let mut gate_log = GateLog::default();
    let mut accepts = 0u64;
    while !done() {
        let now = Instant::now();
        let wait = pending
            .list
            .iter()
            .map(|p| p.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(TICK)
            .min(TICK);
        // The listener, the dialects' doors, then every pending connection.
        let doors: Vec<(usize, RawFd)> = (shared.dialects.iter().enumerate())
            .filter_map(|(i, d)| d.door().map(|fd| (i, fd)))
            .collect();
        let fds: Vec<RawFd> = std::iter::once(listener.as_raw_fd())
            .chain(doors.iter().map(|&(_, fd)| fd))
            .chain(pending.list.iter().map(|p| p.conn.as_raw_fd()))
            .collect();
        let ready = poll_readable(&fds, wait);
        keys.refresh(&*shared.log);
        let first_pending = 1 + doors.len();
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
        for (&(d, _), _) in doors.iter().zip(&ready[1..]).filter(|(_, &r)| r) {
            let allow = &shared.config.allow;
            for line in shared.dialects[d].door_ready(&|ip| allowed(allow, ip)) {
                gate_log.conn_line(shared, line);
            }
        }
        gate_log.report(shared);
    }
}

/// Reads the ready connections among the first `ready.len()`, drops those past their deadline.
fn advance(
    pending: &mut Table,
    ready: &[bool],
    shared: &Arc<Shared>,
    keys: &KeyWatch,
    log: &mut GateLog,
) {
    let now = Instant::now();
    for i in (0..ready.len()).rev() {
        let expired = pending.list[i].deadline <= now;
        if !ready[i] && !expired {
            continue;
        }
        let step = if ready[i] {
            pending.read(i)
        } else {
            Step::Waiting
        };
        match step {
            Step::Waiting if !expired => {}
            Step::Waiting => {
                let p = pending.take(i);
                shared.count(|m| m.handshake_timed_out());
                log.conn_line(
                    shared,
                    format!(
                        "{}: dropped during handshake: no hello and first message within {:?}",
                        p.peer, shared.config.handshake_timeout
                    ),
                );
            }
            Step::Closed => drop(pending.take(i)),
            Step::SourceBusy => {
                drop(pending.take(i));
                log.busy_sources += 1;
                shared.count(|m| m.refused(Refusal::SourceBusy));
            }
            // Handed on with its place in the accept order, by which its test orders them.
            Step::Joins => dialect_join(pending.take(i), shared, log),
            Step::Opens => dialect_start(pending.take(i), shared, log),
            Step::LeftAfterHello => left_after_hello(pending.take(i), keys, shared, log),
            Step::Failed(e) => {
                let p = pending.take(i);
                log.conn_line(shared, format!("{}: dropped during handshake: {e}", p.peer));
            }
            Step::Done(msg) => {
                let p = pending.take(i);
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
    pending: &mut Table,
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
            shared.count(|m| m.refused(Refusal::Allow));
            continue;
        }
        if pending.list.len() >= MAX_PENDING {
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
            let deadline = Instant::now() + shared.config.handshake_timeout;
            pending
                .list
                .push(Pending::new(conn, *accepts, deadline, greeting));
        }
    }
}

/// A dialect's connection that joins a running test; dropped, and logged, when no test takes
/// it (the test has all it asked for, or has ended).
fn dialect_join(p: Pending, shared: &Shared, log: &mut GateLog) {
    let Some(dialect) = p.dialect.and_then(|d| shared.dialects.get(d)) else {
        return;
    };
    if let Err(e) = p.conn.set_nonblocking(false) {
        return log.conn_line(shared, format!("{}: dropped during handshake: {e}", p.peer));
    }
    if let Err(why) = dialect.join(&p.buf, p.accepted, p.conn) {
        let name = dialect.name();
        log.conn_line(shared, format!("{}: {name} data connection {why}", p.peer));
    }
}

/// A dialect's whole opening: its test on a thread of its own, or, on a server with keys
/// whose dialect does not serve clients without one, its refusal here, without a thread.
fn dialect_start(mut p: Pending, shared: &Arc<Shared>, log: &mut GateLog) {
    let Some(dialect) = p.dialect.and_then(|d| shared.dialects.get(d)).cloned() else {
        return;
    };
    let name = dialect.name();
    let refusal = (shared.config.auth.as_ref()).and_then(|_| dialect.keyless_refusal());
    if let Some(refusal) = refusal {
        shared.count(|m| m.refused(Refusal::Auth));
        // A few bytes into a fresh socket's empty send buffer: the nonblocking write takes
        // them. The opening was read whole, so the close sends a FIN, not a reset that could
        // discard the answer before the client reads it.
        let _ = p.conn.write_all(&refusal.bytes);
        return log.conn_line(
            shared,
            format!("{}: {name} client refused: {}", p.peer, refusal.why),
        );
    }
    if let Err(e) = p.conn.set_nonblocking(false) {
        return log.conn_line(shared, format!("{}: dropped during handshake: {e}", p.peer));
    }
    let (conn, opening, peer) = (p.conn, p.buf, p.peer.clone());
    let spawned = session_thread(&format!("lr-{name}"), Arc::clone(shared), move |shared| {
        dialect.run(conn, &opening, &Server(shared), &peer)
    });
    if let Err(e) = spawned {
        log.conn_line(
            shared,
            format!("{}: cannot start a thread for a session: {e}", p.peer),
        );
    }
}

/// Starts a test's thread. When the test was the last one running, the thread hands the
/// allocator's free memory back before it ends, so an idle server's resident memory does not
/// keep the high-water mark of its busiest moment.
fn session_thread(
    name: &str,
    shared: Arc<Shared>,
    test: impl FnOnce(&Shared) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            test(&shared);
            if shared.sessions.idle() {
                engine::sys_io::release_freed_memory();
            }
        })
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
            let spawned = session_thread("lr-session", for_thread, move |shared| {
                run_session(conn, spec, admission, shared, &session_peer)
            });
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
            let spawned = session_thread("lr-relay", for_thread, move |shared| {
                run_relay(conn, ask, admission, shared, &relay_peer)
            });
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
