//! The client side of a test session: connects, opens the data connections, runs the workers,
//! polls the server each interval and collects both ends' figures. All timing is on this
//! (the client's) monotonic clock.
//!
//! Measurement only: the caller receives interval samples through [`Progress`] and the final
//! [`RunRecord`]; nothing here prints.

use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use analysis::{IntervalTracker, LocalStream, RawRun, WorkerReport};
use engine::sockopt::{connect_tcp, ConnectError, SocketOptions};
use engine::udp_socket::{max_payload_to, probe, udp_socket};
use engine::{engine_for, Conn, CrrTarget, Endpoint, Role, Signal, UdpMulti, Workers};
use measure::cpu::{CpuTime, SystemCpuSnapshot};
use results::{IntervalSample, RunRecord};
use wire::msg::{ServerInfo, ServerResults};
use wire::spec::Flow;
use wire::{ClientMsg, ServerMsg, TestSpec, WireError};

use crate::control::{exchange_hello, recv, send, HANDSHAKE_TIMEOUT};
use crate::target::Target;

/// What the client runs and where.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Where the server is.
    pub target: Target,
    /// How the target was given, for the record (e.g. `in-process 127.0.0.1:…`).
    pub target_label: String,
    /// The test.
    pub spec: TestSpec,
    /// Raised on Ctrl-C: the run stops early and returns what it measured.
    pub interrupt: Signal,
    /// Longest wait for a connection to open.
    pub connect_timeout: Duration,
    /// Longest wait for streams to drain after the test time.
    pub drain_timeout: Duration,
}

impl ClientConfig {
    /// A test of `spec` against `target` with the command line's timeouts: 5 s to open a
    /// connection, 10 s for streams to drain after the test time.
    pub fn new(target: Target, target_label: String, spec: TestSpec, interrupt: Signal) -> Self {
        Self {
            target,
            target_label,
            spec,
            interrupt,
            connect_timeout: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(10),
        }
    }
}

/// Receives live figures while a test runs.
pub trait Progress {
    /// The server accepted the test.
    fn started(&mut self, server: &ServerInfo, spec: &TestSpec);
    /// One interval finished.
    fn interval(&mut self, sample: &IntervalSample);
}

/// A progress sink that ignores everything.
pub struct Silent;

impl Progress for Silent {
    fn started(&mut self, _: &ServerInfo, _: &TestSpec) {}
    fn interval(&mut self, _: &IntervalSample) {}
}

/// Why a test could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection could not be opened.
    #[error("cannot connect to {target}: {reason}{hint}")]
    Connect {
        /// Where.
        target: String,
        /// Why.
        reason: ConnectError,
        /// What to try.
        hint: &'static str,
    },
    /// The peer is not a (compatible) linerate server.
    #[error("{target}: {reason}")]
    Handshake {
        /// Where.
        target: String,
        /// Why.
        reason: WireError,
    },
    /// The server refused the test.
    #[error("server refused the test: {0}")]
    Refused(String),
    /// The control conversation failed.
    #[error("{0}")]
    Protocol(String),
    /// The test cannot run as given (found by the client before any data).
    #[error("{0}")]
    Input(String),
    /// The user interrupted before the test began.
    #[error("interrupted before the test began")]
    Interrupted,
}

fn protocol(context: &str) -> impl Fn(WireError) -> ClientError + '_ {
    move |e| ClientError::Protocol(format!("{context}: {e}"))
}

fn connect(config: &ClientConfig, opts: &SocketOptions) -> Result<Conn, ClientError> {
    let target = config.target.describe();
    let mut conn = match &config.target {
        Target::Tcp { addr, bind } => connect_tcp(*addr, *bind, opts, config.connect_timeout)
            .map_err(|reason| {
                let hint = match &reason {
                    ConnectError::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        "; is `linerate serve` running there, on that port?"
                    }
                    ConnectError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        "; check the address and any firewall on the way"
                    }
                    _ => "",
                };
                ClientError::Connect {
                    target: target.clone(),
                    reason,
                    hint,
                }
            })?,
        Target::Unix { path } => {
            Conn::Unix(UnixStream::connect(path).map_err(|e| ClientError::Connect {
                target: target.clone(),
                reason: ConnectError::Io(e),
                hint: "; is `linerate serve --unix` listening on that path?",
            })?)
        }
    };
    exchange_hello(&mut conn, HANDSHAKE_TIMEOUT)
        .map_err(|reason| ClientError::Handshake { target, reason })?;
    Ok(conn)
}

/// Opens data connection `stream` of `session` and waits for the server to confirm it.
fn open_stream(
    config: &ClientConfig,
    opts: &SocketOptions,
    session: u64,
    stream: u16,
) -> Result<Conn, ClientError> {
    let mut conn = connect(config, opts)?;
    send(&mut conn, &ClientMsg::Attach { session, stream })
        .map_err(protocol("attaching a stream"))?;
    match recv::<ServerMsg>(&mut conn, HANDSHAKE_TIMEOUT).map_err(protocol("attaching a stream"))? {
        ServerMsg::Attached { .. } => Ok(conn),
        ServerMsg::Error { message } => Err(ClientError::Refused(message)),
        other => Err(ClientError::Protocol(format!("unexpected reply {other:?}"))),
    }
}

/// Opens every TCP (or Unix) data connection at once, so a long path costs one round of
/// handshakes.
fn open_tcp(config: &ClientConfig, session: u64) -> Result<Vec<Conn>, ClientError> {
    let opts = SocketOptions::from_spec(&config.spec);
    let opts = &opts;
    std::thread::scope(|scope| {
        let pending: Vec<_> = config
            .spec
            .flows()
            .into_iter()
            .map(|(stream, _)| scope.spawn(move || open_stream(config, opts, session, stream)))
            .collect();
        join_all(pending)
    })
}

fn join_all(
    pending: Vec<std::thread::ScopedJoinHandle<'_, Result<Conn, ClientError>>>,
) -> Result<Vec<Conn>, ClientError> {
    pending
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(ClientError::Protocol("stream setup thread panicked".into()))
            })
        })
        .collect()
}

/// Opens one UDP socket per stream, connected to the server's port for it, checks the payload
/// fits the path, and completes the probe handshake.
fn open_udp(
    config: &ClientConfig,
    ports: &[u16],
    extra_ports: &[Vec<u16>],
) -> Result<Vec<Conn>, ClientError> {
    let Target::Tcp { addr, bind } = &config.target else {
        return Err(ClientError::Protocol(
            "UDP tests need an IP address, not --unix".into(),
        ));
    };
    let flows = config.spec.flows();
    if ports.len() != flows.len() {
        return Err(ClientError::Protocol(format!(
            "server offered {} UDP ports for {} streams",
            ports.len(),
            flows.len()
        )));
    }
    let local = bind
        .map(|b| SocketAddr::new(b.ip(), 0))
        .unwrap_or(match addr {
            SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
            SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
        });
    let server_ip = addr.ip();
    std::thread::scope(|scope| {
        let pending: Vec<_> = flows
            .iter()
            .zip(ports)
            .map(|(&(stream, _), &port)| {
                let extra: Vec<SocketAddr> = extra_ports
                    .get(usize::from(stream))
                    .map(|ps| ps.iter().map(|&p| SocketAddr::new(server_ip, p)).collect())
                    .unwrap_or_default();
                scope.spawn(move || {
                    open_udp_stream(
                        config,
                        local,
                        SocketAddr::new(server_ip, port),
                        extra,
                        stream,
                    )
                })
            })
            .collect();
        join_all(pending)
    })
}

fn open_udp_stream(
    config: &ClientConfig,
    local: SocketAddr,
    server: SocketAddr,
    extra_dst: Vec<SocketAddr>,
    stream: u16,
) -> Result<Conn, ClientError> {
    let setup = |e: std::io::Error| ClientError::Protocol(format!("UDP setup: {e}"));
    let spec = &config.spec;
    let payload = spec.message_len_bytes() as usize;
    let max = max_payload_to(server).map_err(setup)?;
    if payload > max {
        return Err(ClientError::Input(format!(
            "-l {payload}: larger than the path allows; its MTU leaves {max} bytes of UDP payload"
        )));
    }
    let open = || {
        udp_socket(local, spec.window_bytes)
            .map_err(|e| ClientError::Protocol(format!("UDP setup: {e}")))
    };
    let sock = open()?;
    probe(&sock, server, stream, HANDSHAKE_TIMEOUT).map_err(setup)?;
    // Only `udp_stream` spreads over ports; `udp_rr` has one socket each way.
    let (flows, flows_dst) = spec.udp().map_or((1, 1), |u| (u.flows, u.flows_dst));
    let receiving = spec
        .flows()
        .iter()
        .any(|&(s, flow)| s == stream && flow == Flow::ServerToClient);
    if receiving && flows_dst > 1 {
        let extra_recv = (1..flows_dst).map(|_| open()).collect::<Result<_, _>>()?;
        return Ok(Conn::UdpMulti(UdpMulti {
            sock,
            only_from: Some(server.ip()),
            extra_recv,
            extra_dst: Vec::new(),
        }));
    }
    // A multi-flow receiver takes every source port of the server's address.
    if receiving && flows > 1 {
        return Ok(Conn::UdpFrom(sock, server.ip()));
    }
    sock.connect(server).map_err(setup)?;
    if !receiving && flows_dst > 1 {
        return Ok(Conn::UdpMulti(UdpMulti {
            sock,
            only_from: None,
            extra_recv: Vec::new(),
            extra_dst,
        }));
    }
    Ok(Conn::Udp(sock))
}

/// With several destination ports and streams the client receives, tells the server the
/// client's further receiving ports (the server sends only to the control peer's address).
fn announce_udp_ports(ctrl: &mut Conn, spec: &TestSpec, conns: &[Conn]) -> Result<(), ClientError> {
    let flows_dst = spec.udp().map_or(1, |u| u.flows_dst);
    if flows_dst <= 1 || !spec.flows().iter().any(|&(_, f)| f == Flow::ServerToClient) {
        return Ok(());
    }
    let extra = conns
        .iter()
        .map(|c| match c {
            Conn::UdpMulti(m) => m
                .extra_recv
                .iter()
                .filter_map(|s| s.local_addr().ok().map(|a| a.port()))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    send(ctrl, &ClientMsg::UdpPorts { extra }).map_err(protocol("announcing UDP ports"))
}

/// Runs one test to the end (or to an interrupt) and returns its record.
pub fn run(config: &ClientConfig, progress: &mut dyn Progress) -> Result<RunRecord, ClientError> {
    let spec = &config.spec;
    let started_at_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut ctrl = connect(config, &SocketOptions::default())?;
    send(&mut ctrl, &ClientMsg::Start { spec: spec.clone() })
        .map_err(protocol("sending the test"))?;
    let (session, server, udp_ports) = match recv::<ServerMsg>(&mut ctrl, HANDSHAKE_TIMEOUT)
        .map_err(protocol("waiting for the server to accept"))?
    {
        ServerMsg::Accepted {
            session,
            server,
            udp_ports,
            udp_extra_ports,
            crr_port,
        } => (session, server, (udp_ports, udp_extra_ports, crr_port)),
        ServerMsg::Error { message } => return Err(ClientError::Refused(message)),
        other => return Err(ClientError::Protocol(format!("unexpected reply {other:?}"))),
    };
    if config.interrupt.is_raised() {
        return Err(ClientError::Interrupted);
    }
    let conns = if let Some(port) = udp_ports.2 {
        let Target::Tcp { addr, .. } = &config.target else {
            return Err(ClientError::Input(
                "crr tests need an IP address, not --unix".into(),
            ));
        };
        let target = CrrTarget {
            addr: SocketAddr::new(addr.ip(), port),
            options: SocketOptions::from_spec(spec),
        };
        spec.flows()
            .iter()
            .map(|_| Endpoint::Connect(target.clone()))
            .collect()
    } else if spec.kind().is_udp() {
        let conns = open_udp(config, &udp_ports.0, &udp_ports.1)?;
        announce_udp_ports(&mut ctrl, spec, &conns)?;
        conns.into_iter().map(Endpoint::Socket).collect()
    } else {
        open_tcp(config, session)?
            .into_iter()
            .map(Endpoint::Socket)
            .collect()
    };
    progress.started(&server, spec);
    let measured = measure_streams(config, &mut ctrl, conns, progress)?;
    let summary = analysis::build(&measured.raw, &measured.intervals);
    Ok(RunRecord {
        kind: spec.kind(),
        schema_version: results::SCHEMA_VERSION,
        spec: spec.clone(),
        target: config.target_label.clone(),
        started_at_unix_ms,
        server,
        intervals: measured.intervals,
        summary,
    })
}

/// How long the polling loop sleeps at `elapsed` (< `duration`): until the next interval tick
/// or the end, at most 50 ms. A tick already due was skipped for being within 10 ms of the end,
/// so then it sleeps toward the end.
fn wait_before_next_look(elapsed: Duration, next_tick: Duration, duration: Duration) -> Duration {
    let until = if next_tick > elapsed {
        next_tick.min(duration)
    } else {
        duration
    };
    until.saturating_sub(elapsed).min(Duration::from_millis(50))
}

struct Measured {
    intervals: Vec<IntervalSample>,
    raw: RawRun,
}

fn measure_streams(
    config: &ClientConfig,
    ctrl: &mut Conn,
    conns: Vec<Endpoint>,
    progress: &mut dyn Progress,
) -> Result<Measured, ClientError> {
    let spec = &config.spec;
    let flows = spec.flows();
    let mut workers = Workers::new(engine_for(spec));
    workers.pin_to(spec.client_cpu.map(|c| c as usize));
    send(ctrl, &ClientMsg::Begin).map_err(protocol("starting the test"))?;
    let t0 = Instant::now();
    let cpu0 = CpuTime::process_now();
    let sys0 = SystemCpuSnapshot::now();
    for (&(index, flow), conn) in flows.iter().zip(conns) {
        let role = match flow {
            Flow::ClientToServer => Role::Sender,
            Flow::ServerToClient => Role::Receiver,
        };
        workers
            .spawn(conn, role, format!("lr-cli-{index}"))
            .map_err(|e| ClientError::Protocol(format!("cannot start stream thread: {e}")))?;
    }
    match recv::<ServerMsg>(ctrl, HANDSHAKE_TIMEOUT).map_err(protocol("starting the test"))? {
        ServerMsg::Begun => {}
        ServerMsg::Error { message } => return Err(ClientError::Refused(message)),
        other => return Err(ClientError::Protocol(format!("unexpected reply {other:?}"))),
    }

    let duration = Duration::from_millis(spec.duration_ms);
    let interval = Duration::from_millis(spec.interval_ms);
    let mut tracker = IntervalTracker::new(spec);
    let mut intervals = Vec::new();
    let mut next_tick = interval;
    let mut seq = 0u64;
    let interrupted = loop {
        if config.interrupt.is_raised() {
            break true;
        }
        let elapsed = t0.elapsed();
        if elapsed >= duration {
            break false;
        }
        if elapsed >= next_tick && duration - elapsed > Duration::from_millis(10) {
            seq += 1;
            send(ctrl, &ClientMsg::Poll { seq }).map_err(protocol("polling the server"))?;
            let server_counts = match recv::<ServerMsg>(ctrl, HANDSHAKE_TIMEOUT)
                .map_err(protocol("polling the server"))?
            {
                ServerMsg::Counters { counts, .. } => counts,
                ServerMsg::Error { message } => {
                    return Err(ClientError::Protocol(format!(
                        "server ended the test: {message}"
                    )))
                }
                other => return Err(ClientError::Protocol(format!("unexpected reply {other:?}"))),
            };
            let mut sample = tracker.sample(t0.elapsed(), &workers.snapshot(), &server_counts);
            analysis::add_latency(&mut sample, workers.take_latency().as_ref());
            progress.interval(&sample);
            intervals.push(sample);
            next_tick += interval;
            continue;
        }
        std::thread::sleep(wait_before_next_look(elapsed, next_tick, duration));
    };
    workers.stop();
    let window = t0.elapsed();
    let local_at_stop = workers.snapshot();
    send(ctrl, &ClientMsg::Stop).map_err(protocol("stopping the test"))?;
    let results_wait = config.drain_timeout + HANDSHAKE_TIMEOUT;
    let server: ServerResults = match recv::<ServerMsg>(ctrl, results_wait)
        .map_err(protocol("waiting for the server's results"))?
    {
        ServerMsg::Results(r) => r,
        ServerMsg::Error { message } => {
            return Err(ClientError::Protocol(format!(
                "server ended the test: {message}"
            )))
        }
        other => return Err(ClientError::Protocol(format!("unexpected reply {other:?}"))),
    };
    let outcomes = workers.join(config.drain_timeout);
    let mut workers_latency: Option<measure::latency::Latency> = None;
    for tail in outcomes.iter().filter_map(|o| o.latency_tail.as_ref()) {
        workers_latency
            .get_or_insert_with(Default::default)
            .add(tail);
    }
    let local_wall = t0.elapsed();
    // The last interval ends at Stop: receivers count what they had read by then, senders
    // everything they wrote (a write in progress at Stop still completes), so the intervals
    // add up exactly to the summary's totals.
    let (mut last_local, mut last_server) = (Vec::new(), Vec::new());
    for (i, &(_, flow)) in flows.iter().enumerate() {
        let remote = server.streams.get(i);
        let (local, far) = match flow {
            Flow::ClientToServer => (
                outcomes[i].now,
                remote.map(|r| r.at_stop).unwrap_or_default(),
            ),
            Flow::ServerToClient => (
                local_at_stop[i],
                remote.map(|r| r.total).unwrap_or_default(),
            ),
        };
        last_local.push(local);
        last_server.push(far);
    }
    let mut sample = tracker.sample(window, &last_local, &last_server);
    analysis::add_latency(&mut sample, workers_latency.as_ref());
    progress.interval(&sample);
    intervals.push(sample);
    let local_streams = outcomes
        .into_iter()
        .zip(local_at_stop)
        .map(|(o, at_stop)| LocalStream {
            at_stop,
            now: o.now,
            result: o.result.map(|r| r.map(worker_report)),
        })
        .collect();
    Ok(Measured {
        intervals,
        raw: RawRun {
            spec: spec.clone(),
            window,
            interrupted,
            local_wall,
            local_streams,
            local_process_cpu: CpuTime::process_now().since(cpu0),
            local_system_cpu: sys0.zip(SystemCpuSnapshot::now()).map(|(a, b)| b.since(&a)),
            server,
        },
    })
}

/// The figures of a worker's report that the summary reads.
fn worker_report(r: engine::StreamReport) -> WorkerReport {
    WorkerReport {
        cpu: r.cpu,
        tcp_info: r.tcp_info,
        counts: r.counts,
        latency: r.latency,
        lost_transactions: r.lost_transactions,
        slots_missed: r.slots_missed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_polling_loop_never_waits_past_a_tick_or_the_end() {
        let ms = Duration::from_millis;
        assert_eq!(wait_before_next_look(ms(990), ms(1000), ms(3000)), ms(10));
        assert_eq!(wait_before_next_look(ms(100), ms(1000), ms(3000)), ms(50));
        assert_eq!(wait_before_next_look(ms(2990), ms(4000), ms(3000)), ms(10));
        // A tick due within 10 ms of the end is skipped: sleep toward the end (this subtraction
        // overflowed once, panicking the client at the end of a run).
        assert_eq!(wait_before_next_look(ms(2995), ms(2993), ms(3000)), ms(5));
    }
}
