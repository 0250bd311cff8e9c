//! The server: accepts control and data connections on one listener, runs each client's
//! session on its own threads, and keeps serving whatever one client does.
//!
//! Every connection first exchanges hellos, then says what it is: `Start` opens a session,
//! `Attach` hands a data connection to a waiting session through the [`Sessions`] registry
//! (passed in, not global). A connection that stays silent is dropped after the handshake
//! timeout without holding up anyone else; the only refusal for load is more than
//! `max_sessions` tests running at once.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::udp_socket::{accept_probes, udp_socket};
use engine::{
    engine_for, sockopt::SocketOptions, Conn, Listener, Role, Signal, UdpMulti, WorkerOutcome,
    Workers,
};
use measure::cpu::{CpuTime, SystemCpuSnapshot};
use wire::msg::{ServerInfo, ServerResults, StreamCounts, StreamEnd};
use wire::spec::{Flow, SpecLimits};
use wire::{ClientMsg, ServerMsg, TestSpec, WireError};

use crate::control::{exchange_hello, recv, send, HANDSHAKE_TIMEOUT};

/// How long after its window the server keeps sending while waiting for the client's Stop.
const SENDER_GRACE: Duration = Duration::from_secs(2);

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
        Ok(other) => {
            let message = format!("expected start or attach, got {other:?}");
            let _ = send(
                &mut conn,
                &ServerMsg::Error {
                    message: message.clone(),
                },
            );
            (shared.log)(format!("{peer}: {message}"));
        }
        // A connection closed before saying anything is a port probe, not an event.
        Err(WireError::Closed { mid_frame: false }) => {}
        Err(WireError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => (shared.log)(format!("{peer}: dropped during handshake: {e}")),
    }
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
        None => {
            let message = format!("unknown session {session:x}");
            let _ = send(
                &mut conn,
                &ServerMsg::Error {
                    message: message.clone(),
                },
            );
            (shared.log)(format!("{peer}: {message}"));
        }
    }
}

/// Removes the session from the registry and the running count however the session ends.
struct SessionGuard<'a> {
    shared: &'a Shared,
    cookie: u64,
    /// Whether the test was accepted (only those count for `--one-off`).
    ran: bool,
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.shared.sessions.waiting.lock() {
            m.remove(&self.cookie);
        }
        self.shared.sessions.running.fetch_sub(1, Ordering::SeqCst);
        if self.ran {
            self.shared.finished.raise();
        }
    }
}

fn refuse(conn: &mut Conn, shared: &Shared, peer: &str, message: String) {
    (shared.log)(format!("{peer}: refused: {message}"));
    let _ = send(conn, &ServerMsg::Error { message });
}

fn run_session(mut ctrl: Conn, spec: TestSpec, shared: &Shared, peer: &str) {
    if let Err(message) = check_spec(&spec, &shared.config.limits) {
        return refuse(&mut ctrl, shared, peer, message);
    }
    let running = shared.sessions.running.fetch_add(1, Ordering::SeqCst) + 1;
    let cookie = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let (tx, rx) = mpsc::sync_channel(usize::from(spec.streams) * 2);
    if let Ok(mut m) = shared.sessions.waiting.lock() {
        m.insert(cookie, tx);
    }
    let mut guard = SessionGuard {
        shared,
        cookie,
        ran: false,
    };
    if running > shared.config.max_sessions {
        let limit = shared.config.max_sessions;
        return refuse(
            &mut ctrl,
            shared,
            peer,
            format!(
                "server busy: {} tests already running (limit {limit}); try again later",
                running - 1
            ),
        );
    }
    guard.ran = true;
    (shared.log)(format!(
        "{peer}: {} {:?} x{} for {} ms",
        spec.kind().as_str(),
        spec.direction(),
        spec.streams,
        spec.duration_ms
    ));
    let udp = match open_udp(&ctrl, &spec) {
        Ok(socks) => socks,
        Err(message) => return refuse(&mut ctrl, shared, peer, message),
    };
    let crr = match open_crr_listener(&ctrl, &spec) {
        Ok(l) => l,
        Err(message) => return refuse(&mut ctrl, shared, peer, message),
    };
    let port = |s: &UdpSocket| s.local_addr().map(|a| a.port()).unwrap_or(0);
    let accepted = ServerMsg::Accepted {
        session: cookie,
        server: shared.info.clone(),
        udp_ports: udp.iter().map(|(main, _)| port(main)).collect(),
        udp_extra_ports: udp
            .iter()
            .map(|(_, extra)| extra.iter().map(port).collect())
            .collect(),
        crr_port: crr
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port()),
    };
    let outcome = send(&mut ctrl, &accepted)
        .map_err(|e| e.to_string())
        .and_then(|_| {
            if spec.kind().is_udp() {
                connect_udp(&mut ctrl, &spec, udp, shared)
            } else if let Some(listener) = crr {
                let shared_listener = Arc::new(listener);
                Ok(spec
                    .flows()
                    .iter()
                    .map(|_| Conn::CrrListener(Arc::clone(&shared_listener)))
                    .collect())
            } else {
                collect_streams(&spec, &rx, shared)
            }
        })
        .inspect(|_| {
            if let Ok(mut m) = shared.sessions.waiting.lock() {
                m.remove(&cookie);
            }
        })
        .and_then(|streams| run_streams(&mut ctrl, &spec, streams, shared));
    match outcome {
        Ok(()) => (shared.log)(format!("{peer}: test done")),
        Err(message) => {
            (shared.log)(format!("{peer}: test ended early: {message}"));
            let _ = send(&mut ctrl, &ServerMsg::Error { message });
        }
    }
}

/// `tcp_crr` tests: the session's own listener, on the address the client reached us at; its
/// responder threads accept from it in turn.
fn open_crr_listener(
    ctrl: &Conn,
    spec: &TestSpec,
) -> Result<Option<std::net::TcpListener>, String> {
    if spec.kind() != wire::TestKind::TcpCrr {
        return Ok(None);
    }
    let local = ctrl
        .local_addr()
        .ok_or("crr tests need an IP control connection")?;
    let listener = std::net::TcpListener::bind(SocketAddr::new(local.ip().to_canonical(), 0))
        .map_err(|e| format!("cannot open a listener for connection tests: {e}"))?;
    // Every accepted connection inherits the listener's options (window, congestion, TOS...).
    SocketOptions::from_spec(spec)
        .apply_listener(&listener)
        .map_err(|e| e.to_string())?;
    Ok(Some(listener))
}

/// UDP tests: one socket per stream on the address the client reached us at, plus
/// `flows_dst - 1` more for each stream the server receives.
fn open_udp(ctrl: &Conn, spec: &TestSpec) -> Result<Vec<(UdpSocket, Vec<UdpSocket>)>, String> {
    if !spec.kind().is_udp() {
        return Ok(Vec::new());
    }
    // Only `udp_stream` spreads over ports; `udp_rr` has one socket each way.
    let flows_dst = spec.udp().map_or(1, |u| u.flows_dst);
    let local = ctrl
        .local_addr()
        .ok_or("UDP tests need an IP control connection")?;
    // An IPv4 client on the dual-stack listener appears as ::ffff:a.b.c.d; an IPv4 socket for
    // it gets IPv4's don't-fragment setting (IPv6's does not cover IPv4).
    let open = || {
        udp_socket(
            SocketAddr::new(local.ip().to_canonical(), 0),
            spec.window_bytes,
        )
        .map_err(|e| format!("cannot open a UDP socket: {e}"))
    };
    spec.flows()
        .iter()
        .map(|&(_, flow)| {
            let extra = match flow {
                Flow::ClientToServer => flows_dst.saturating_sub(1),
                Flow::ServerToClient => 0,
            };
            Ok((
                open()?,
                (0..extra).map(|_| open()).collect::<Result<_, String>>()?,
            ))
        })
        .collect()
}

/// Waits for the client's probe on every UDP socket; only the control connection's peer
/// address is accepted, so the server never sends datagrams anywhere else. With several
/// destination ports, the client's further ports come in `UdpPorts` (at that same address).
fn connect_udp(
    ctrl: &mut Conn,
    spec: &TestSpec,
    socks: Vec<(UdpSocket, Vec<UdpSocket>)>,
    shared: &Shared,
) -> Result<Vec<Conn>, String> {
    let peer = ctrl
        .peer_addr()
        .ok_or("UDP tests need an IP control connection")?;
    let peer_ip = peer.ip().to_canonical();
    let mains: Vec<UdpSocket> = socks
        .iter()
        .map(|(m, _)| m.try_clone())
        .collect::<std::io::Result<_>>()
        .map_err(|e| e.to_string())?;
    let sources = accept_probes(&mains, peer_ip, shared.config.handshake_timeout)
        .map_err(|e| e.to_string())?;
    drop(mains);
    let flows = spec.flows();
    let (src_flows, flows_dst) = spec.udp().map_or((1, 1), |u| (u.flows, u.flows_dst));
    let client_ports = if flows_dst > 1 && flows.iter().any(|&(_, f)| f == Flow::ServerToClient) {
        match recv::<ClientMsg>(ctrl, shared.config.handshake_timeout).map_err(|e| e.to_string())? {
            ClientMsg::UdpPorts { extra } => extra,
            other => return Err(format!("expected udp_ports, got {other:?}")),
        }
    } else {
        Vec::new()
    };
    socks
        .into_iter()
        .zip(sources)
        .zip(flows)
        .map(|(((sock, extra_recv), source), (stream, flow))| {
            let multi = flows_dst > 1;
            match flow {
                Flow::ClientToServer if multi => Ok(Conn::UdpMulti(UdpMulti {
                    sock,
                    only_from: Some(peer_ip),
                    extra_recv,
                    extra_dst: Vec::new(),
                })),
                // A multi-flow receiver takes every source port of the client's address.
                Flow::ClientToServer if src_flows > 1 => Ok(Conn::UdpFrom(sock, peer_ip)),
                Flow::ClientToServer => sock.connect(source).map(|_| Conn::Udp(sock)),
                Flow::ServerToClient => {
                    sock.connect(source)?;
                    if !multi {
                        return Ok(Conn::Udp(sock));
                    }
                    let ports = client_ports
                        .get(usize::from(stream))
                        .cloned()
                        .unwrap_or_default();
                    Ok(Conn::UdpMulti(UdpMulti {
                        sock,
                        only_from: None,
                        extra_recv: Vec::new(),
                        extra_dst: ports
                            .into_iter()
                            .map(|p| SocketAddr::new(source.ip(), p))
                            .collect(),
                    }))
                }
            }
        })
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| format!("UDP setup: {e}"))
}

fn check_spec(spec: &TestSpec, limits: &SpecLimits) -> Result<(), String> {
    spec.check(limits)?;
    let opts = SocketOptions::from_spec(spec);
    if spec.is_unix() {
        opts.check_unix().map_err(|e| e.to_string())?;
    }
    if let Some(name) = spec.tcp().and_then(|t| t.congestion.as_ref()) {
        engine::sockopt::check_congestion(name).map_err(|e| format!("on the server: {e}"))?;
    }
    if let Some(cpu) = spec.server_cpu {
        let cpus = engine::affinity::online_cpus();
        if cpu as usize >= cpus {
            return Err(format!(
                "--affinity: the server has {cpus} CPUs (0 to {}); CPU {cpu} is not one of them",
                cpus - 1
            ));
        }
    }
    Ok(())
}

/// Waits for every data connection the spec needs, in stream-index order.
fn collect_streams(
    spec: &TestSpec,
    rx: &Receiver<(u16, Conn)>,
    shared: &Shared,
) -> Result<Vec<Conn>, String> {
    let flows = spec.flows();
    let mut slots: Vec<Option<Conn>> = (0..flows.len()).map(|_| None).collect();
    // The deadline moves with progress: a slow path with many streams is not cut off.
    let mut deadline = Instant::now() + shared.config.handshake_timeout;
    let opts = SocketOptions::from_spec(spec);
    while slots.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        let (stream, mut conn) = match rx.recv_timeout(left) {
            Ok(x) => x,
            Err(RecvTimeoutError::Timeout) => {
                let got = slots.iter().filter(|s| s.is_some()).count();
                return Err(format!(
                    "only {got} of {} data connections arrived within {:?}; is a firewall blocking new connections to this port?",
                    flows.len(),
                    shared.config.handshake_timeout
                ));
            }
            Err(RecvTimeoutError::Disconnected) => return Err("session closed".into()),
        };
        let slot = match slots.get_mut(usize::from(stream)) {
            Some(slot @ None) => slot,
            Some(Some(_)) => {
                let message = format!("stream {stream} is already attached");
                let _ = send(&mut conn, &ServerMsg::Error { message });
                continue;
            }
            None => {
                let _ = send(
                    &mut conn,
                    &ServerMsg::Error {
                        message: format!("no stream {stream} in this test"),
                    },
                );
                continue;
            }
        };
        opts.apply_accepted(&conn).map_err(|e| e.to_string())?;
        send(&mut conn, &ServerMsg::Attached { stream }).map_err(|e| e.to_string())?;
        *slot = Some(conn);
        deadline = Instant::now() + shared.config.handshake_timeout;
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Runs the data streams: answers polls, stops on `Stop`, drains, reports.
fn run_streams(
    ctrl: &mut Conn,
    spec: &TestSpec,
    conns: Vec<Conn>,
    shared: &Shared,
) -> Result<(), String> {
    match recv::<ClientMsg>(ctrl, shared.config.handshake_timeout).map_err(|e| e.to_string())? {
        ClientMsg::Begin => {}
        other => return Err(format!("expected begin, got {other:?}")),
    }
    let mut workers = Workers::new(engine_for(spec));
    workers.pin_to(spec.server_cpu.map(|c| c as usize));
    let t0 = Instant::now();
    let cpu0 = CpuTime::process_now();
    let sys0 = SystemCpuSnapshot::now();
    for ((index, flow), conn) in spec.flows().into_iter().zip(conns) {
        let role = match flow {
            Flow::ClientToServer => Role::Receiver,
            Flow::ServerToClient => Role::Sender,
        };
        workers
            .spawn(conn, role, format!("lr-srv-{index}"))
            .map_err(|e| format!("cannot start stream thread: {e}"))?;
    }
    send(ctrl, &ServerMsg::Begun).map_err(|e| e.to_string())?;

    let idle = Duration::from_millis(spec.interval_ms) + shared.config.handshake_timeout;
    // The server's window closes the test duration after `Begin` arrived, by its own clock, or
    // at `Stop` if that comes first (an interrupted client). `Stop` itself can be late: on a
    // loaded path it queues behind the test's own data, which would stretch the window.
    let window_end = t0 + Duration::from_millis(spec.duration_ms);
    let mut at_window_end: Option<Vec<StreamCounts>> = None;
    let mut window = Duration::ZERO;
    let mut last_message = Instant::now();
    let counts_at_stop = loop {
        let now = Instant::now();
        if at_window_end.is_none() && now >= window_end {
            at_window_end = Some(workers.snapshot());
            window = now - t0;
        }
        // Never send longer than the spec asked, even if the client's Stop never comes.
        if now >= window_end + SENDER_GRACE {
            workers.stop();
        }
        let wait = match at_window_end {
            None => (window_end - now).min(idle),
            Some(_) if now < window_end + SENDER_GRACE => {
                (window_end + SENDER_GRACE - now).min(idle)
            }
            Some(_) => idle,
        };
        if !wait_readable(ctrl.as_raw_fd(), wait.as_millis().max(1) as i32) {
            if last_message.elapsed() >= idle {
                return Err(format!("client went away mid-test: silent for {idle:?}"));
            }
            continue;
        }
        last_message = Instant::now();
        match recv::<ClientMsg>(ctrl, idle) {
            Ok(ClientMsg::Poll { seq }) => {
                // A poll after the window closed gets the window's end, so the intervals add
                // up to the window.
                let counts = at_window_end.clone().unwrap_or_else(|| workers.snapshot());
                send(ctrl, &ServerMsg::Counters { seq, counts }).map_err(|e| e.to_string())?;
            }
            Ok(ClientMsg::Stop) => {
                break at_window_end.unwrap_or_else(|| {
                    window = t0.elapsed();
                    workers.snapshot()
                })
            }
            Ok(ClientMsg::Error { message }) => return Err(format!("client gave up: {message}")),
            Ok(other) => return Err(format!("unexpected message mid-test: {other:?}")),
            Err(e) => return Err(format!("client went away mid-test: {e}")),
        }
        if shared.shutdown.is_raised() {
            return Err("server shutting down".into());
        }
    };
    workers.stop();
    let outcomes = workers.join(shared.config.drain_timeout);
    let results = ServerResults {
        streams: outcomes
            .into_iter()
            .zip(counts_at_stop)
            .enumerate()
            .map(|(i, (w, at_stop))| stream_end(i as u16, w, at_stop))
            .collect(),
        wall_us: t0.elapsed().as_micros() as u64,
        window_us: window.as_micros() as u64,
        process_cpu: CpuTime::process_now().since(cpu0),
        system_cpu: sys0.zip(SystemCpuSnapshot::now()).map(|(a, b)| b.since(&a)),
    };
    send(ctrl, &ServerMsg::Results(results)).map_err(|e| e.to_string())
}

fn stream_end(stream: u16, w: WorkerOutcome, at_stop: StreamCounts) -> StreamEnd {
    let (total, cpu, tcp_info, error) = match w.result {
        Some(Ok(report)) => (report.counts, report.cpu, report.tcp_info, None),
        Some(Err(e)) => (w.now, Default::default(), None, Some(e)),
        None => (
            w.now,
            Default::default(),
            None,
            Some("stream did not finish draining in time".into()),
        ),
    };
    StreamEnd {
        stream,
        at_stop,
        total,
        cpu,
        tcp_info,
        error,
    }
}
