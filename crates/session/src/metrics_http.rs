//! `serve --metrics ADDR`: the server's counters ([`ServerMetrics`]) as OpenMetrics text at
//! `GET /metrics`, served by one thread that polls up to [`MAX_SCRAPES`] nonblocking
//! connections at once.
//!
//! Invariants: a scrape's whole request must arrive within [`REQUEST_DEADLINE`] of its accept
//! and its whole answer leave within [`ANSWER_DEADLINE`] after that, counted from those
//! instants and not per read or write, so a client that trickles bytes is closed at its
//! deadline; no read or write ever blocks the thread, so one slow client never delays
//! another; a request is at most [`MAX_REQUEST`] bytes. With every slot taken, further
//! connections wait in the listen backlog until a slot frees (within the deadlines), so a
//! flood costs at most [`MAX_SCRAPES`] × [`MAX_REQUEST`] bytes and never evicts a scrape
//! already being served.

use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::Signal;

use crate::server::{MetricsSnapshot, ServerMetrics};

/// Most connections served at once.
pub const MAX_SCRAPES: usize = 64;
/// A request's whole time to arrive, from its accept.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// An answer's whole time to leave, from the end of its request.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(2);
/// Longest request, bytes; a longer one is answered from its first bytes.
pub const MAX_REQUEST: usize = 8192;
/// Longest wait in one poll, so shutdown is heard.
const TICK: Duration = Duration::from_millis(100);

/// Starts the endpoint on `addr`; it serves until `shutdown` is raised.
pub fn start(
    addr: SocketAddr,
    metrics: Arc<ServerMetrics>,
    shutdown: Signal,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("lr-metrics".into())
        .spawn(move || serve(&listener, &metrics, &shutdown))?;
    Ok(bound)
}

/// One connection being served: reading its request, then writing its answer.
struct Scrape {
    conn: TcpStream,
    /// The request so far; then the answer.
    buf: Vec<u8>,
    /// Bytes of the answer already written; `None` while the request is read.
    sent: Option<usize>,
    /// When this stage must be over.
    deadline: Instant,
}

/// What a step of a scrape left.
enum Left {
    Open,
    Closed,
}

fn serve(listener: &TcpListener, metrics: &ServerMetrics, shutdown: &Signal) {
    let mut scrapes: Vec<Scrape> = Vec::new();
    while !shutdown.is_raised() {
        let now = Instant::now();
        // A scrape past its deadline is closed, whatever it is doing.
        scrapes.retain(|s| s.deadline > now);
        let accepting = scrapes.len() < MAX_SCRAPES;
        let mut fds: Vec<(RawFd, i16)> = scrapes
            .iter()
            .map(|s| {
                let events = if s.sent.is_some() {
                    libc::POLLOUT
                } else {
                    libc::POLLIN
                };
                (s.conn.as_raw_fd(), events)
            })
            .collect();
        if accepting {
            fds.push((listener.as_raw_fd(), libc::POLLIN));
        }
        let wait = scrapes
            .iter()
            .map(|s| s.deadline.saturating_duration_since(now))
            .fold(TICK, Duration::min);
        let ready = poll(&fds, wait);
        let mut i = 0;
        scrapes.retain_mut(|s| {
            let go = ready.get(i).copied().unwrap_or(false);
            i += 1;
            !go || matches!(step(s, metrics), Left::Open)
        });
        if accepting && ready.last().copied().unwrap_or(false) {
            accept(listener, &mut scrapes);
        }
    }
}

/// Takes the listener's waiting connections, up to the free slots.
fn accept(listener: &TcpListener, scrapes: &mut Vec<Scrape>) {
    while scrapes.len() < MAX_SCRAPES {
        let Ok((conn, _)) = listener.accept() else {
            return;
        };
        if conn.set_nonblocking(true).is_err() {
            continue;
        }
        scrapes.push(Scrape {
            conn,
            buf: Vec::new(),
            sent: None,
            deadline: Instant::now() + REQUEST_DEADLINE,
        });
    }
}

/// Reads what the connection has, or writes what it takes; never blocks.
fn step(s: &mut Scrape, metrics: &ServerMetrics) -> Left {
    if s.sent.is_none() {
        const CHUNK: usize = 2048;
        let mut chunk = [0u8; CHUNK];
        loop {
            let room = MAX_REQUEST - s.buf.len();
            match s.conn.read(&mut chunk[..room.min(CHUNK)]) {
                // The end of the request, or the peer's end: answer what came.
                Ok(0) => break,
                Ok(n) => {
                    s.buf.extend_from_slice(&chunk[..n]);
                    if s.buf.len() >= MAX_REQUEST || s.buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Left::Open,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return Left::Closed,
            }
        }
        s.buf = answer(&s.buf, metrics);
        s.sent = Some(0);
        s.deadline = Instant::now() + ANSWER_DEADLINE;
    }
    let Some(sent) = s.sent.as_mut() else {
        return Left::Closed;
    };
    while *sent < s.buf.len() {
        match s.conn.write(&s.buf[*sent..]) {
            Ok(0) => return Left::Closed,
            Ok(n) => *sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Left::Open,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Left::Closed,
        }
    }
    Left::Closed
}

/// Which of `fds` (each with the events it waits for) are ready, closed or in error, within
/// `timeout` (at least 1 ms); none on a timeout, an interrupt or a failed poll.
fn poll(fds: &[(RawFd, i16)], timeout: Duration) -> Vec<bool> {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, events)| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `set` is a valid array of `set.len()` pollfds for the call's duration.
    let n = unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, ms) };
    set.iter().map(|p| n > 0 && p.revents != 0).collect()
}

/// The whole HTTP answer to `request`: the metrics for `GET /metrics`, 404 otherwise.
fn answer(request: &[u8], metrics: &ServerMetrics) -> Vec<u8> {
    let wanted = request.starts_with(b"GET /metrics ") || request.starts_with(b"GET /metrics?");
    let (status, kind, body) = if wanted {
        (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            render(&metrics.snapshot()),
        )
    } else {
        (
            "404 Not Found",
            "text/plain",
            "only GET /metrics is served here\n".to_string(),
        )
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One metric family: its TYPE and HELP lines, then its samples.
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, String)]) {
    let _ = writeln!(out, "# TYPE {name} {kind}\n# HELP {name} {help}");
    let suffix = if kind == "counter" { "_total" } else { "" };
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{suffix}{labels} {value}");
    }
}

fn label(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The snapshot as OpenMetrics text (ends with `# EOF`).
pub fn render(m: &MetricsSnapshot) -> String {
    let mut out = String::new();
    for (name, kind, help, samples) in families(m) {
        family(&mut out, name, kind, help, &samples);
    }
    out.push_str("# EOF\n");
    out
}

/// A metric family: name, type, help, and its samples as (labels, value).
type Family = (
    &'static str,
    &'static str,
    &'static str,
    Vec<(String, String)>,
);

/// Every family of the snapshot, in the order they are written.
fn families(m: &MetricsSnapshot) -> Vec<Family> {
    let by = |key: &str, map: &std::collections::BTreeMap<String, u64>| -> Vec<(String, String)> {
        map.iter()
            .map(|(k, v)| (label(&[(key, k)]), v.to_string()))
            .collect()
    };
    let one = |v: u64| vec![(String::new(), v.to_string())];
    let bytes = m
        .bytes
        .iter()
        .map(|((d, t), v)| (label(&[("direction", d), ("transport", t)]), v.to_string()))
        .collect();
    let datagrams = m
        .datagrams
        .iter()
        .map(|(d, v)| {
            (
                label(&[("direction", d), ("transport", "udp")]),
                v.to_string(),
            )
        })
        .collect();
    let last = m
        .last_throughput_bps
        .iter()
        .map(|(ip, (bps, _))| (label(&[("client", &ip.to_string())]), format!("{bps}")))
        .collect();
    vec![
        ("linerate_sessions_started", "counter", "Tests accepted, by kind.", by("kind", &m.started)),
        ("linerate_sessions_refused", "counter", "Tests refused, by reason.", by("reason", &m.refused)),
        ("linerate_sessions_running", "gauge", "Tests running now.", one(m.running)),
        ("linerate_bytes", "counter", "Bytes moved by finished tests' server-side streams (linerate and iperf3 clients), as the server saw them.", bytes),
        ("linerate_datagrams", "counter", "UDP datagrams moved by finished tests (linerate and iperf3 clients), as the server saw them.", datagrams),
        ("linerate_auth_failures", "counter", "First messages whose key proof failed or was missing.", one(m.auth_failures)),
        ("linerate_handshake_timeouts", "counter", "Connections dropped at their handshake deadline.", one(m.handshake_timeouts)),
        ("linerate_probes", "counter", "Foreign probes (linerate rpm) answered.", one(m.probes)),
        ("linerate_last_test_throughput_bits_per_second", "gauge", "Each client's last finished test: bytes both ways over the server's window, in bits/s.", last),
    ]
}
