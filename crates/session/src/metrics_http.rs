//! `serve --metrics ADDR`: the server's counters ([`ServerMetrics`]) at `GET /metrics`, as
//! OpenMetrics text for a scraper that asks for it and in Prometheus's classic text format
//! otherwise ([`Format`]), in base units (bytes, not bits); served by one thread that polls up to [`MAX_SCRAPES`] nonblocking
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

/// The whole HTTP answer to `request`: the metrics for `GET /metrics`, in the format its
/// `Accept` header asks for; 404 otherwise.
fn answer(request: &[u8], metrics: &ServerMetrics) -> Vec<u8> {
    let wanted = request.starts_with(b"GET /metrics ") || request.starts_with(b"GET /metrics?");
    let (status, kind, body) = if wanted {
        let format = Format::accepted(request);
        (
            "200 OK",
            format.content_type(),
            render(&metrics.snapshot(), format),
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

/// The two text formats a Prometheus server reads. They differ in how a counter is named:
/// OpenMetrics names the family without `_total` and its samples with it, and ends with
/// `# EOF`; the classic format names both `..._total` (a TYPE or HELP line whose name is not
/// the samples' leaves them untyped, as `promtool check metrics` says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`, for a scraper that asks for it.
    OpenMetrics,
    /// `text/plain; version=0.0.4`, for every other client.
    Classic,
}

impl Format {
    /// The format `request`'s `Accept` header asks for: OpenMetrics where it lists
    /// `application/openmetrics-text` (with a q above 0, as Prometheus sends it), the classic
    /// format otherwise (no header, `*/*`, `text/plain`).
    pub fn accepted(request: &[u8]) -> Format {
        let text = String::from_utf8_lossy(request);
        let accept = text
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .filter(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
            .flat_map(|(_, value)| value.split(','));
        for item in accept {
            let mut parts = item.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f64>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if media.eq_ignore_ascii_case("application/openmetrics-text") && !refused {
                return Format::OpenMetrics;
            }
        }
        Format::Classic
    }

    /// The answer's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Classic => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// One metric family: its TYPE and HELP lines, then its samples.
fn family(out: &mut String, f: &Family, format: Format) {
    let (name, kind, help, samples) = f;
    let suffix = if *kind == "counter" { "_total" } else { "" };
    let family = match format {
        Format::OpenMetrics => name.to_string(),
        Format::Classic => format!("{name}{suffix}"),
    };
    let _ = writeln!(out, "# TYPE {family} {kind}\n# HELP {family} {help}");
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

/// The snapshot as text in `format` (OpenMetrics ends with `# EOF`).
pub fn render(m: &MetricsSnapshot, format: Format) -> String {
    let mut out = String::new();
    for f in families(m) {
        family(&mut out, &f, format);
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
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
        .map(|(ip, (bps, _))| {
            (
                label(&[("client", &ip.to_string())]),
                format!("{}", bps / 8.0),
            )
        })
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
        ("linerate_last_test_throughput_bytes_per_second", "gauge", "Each client's last finished test: bytes both ways over the server's window, per second.", last),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_header_chooses_the_format() {
        let req = |accept: &str| format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}\r\n\r\n");
        let prometheus = "Accept: application/openmetrics-text;version=1.0.0,application/\
            openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        for (accept, format) in [
            (prometheus, Format::OpenMetrics),
            ("accept: Application/OpenMetrics-Text", Format::OpenMetrics),
            ("Accept: text/plain;version=0.0.4", Format::Classic),
            ("Accept: */*", Format::Classic),
            (
                "Accept: application/openmetrics-text;q=0, text/plain",
                Format::Classic,
            ),
            ("X-Other: application/openmetrics-text", Format::Classic),
        ] {
            assert_eq!(Format::accepted(req(accept).as_bytes()), format, "{accept}");
        }
    }

    #[test]
    fn counters_are_named_as_each_format_names_them() {
        let m = MetricsSnapshot::default();
        let open = render(&m, Format::OpenMetrics);
        assert!(
            open.contains("# TYPE linerate_auth_failures counter\n"),
            "{open}"
        );
        assert!(
            open.contains("\nlinerate_auth_failures_total 0\n"),
            "{open}"
        );
        assert!(open.ends_with("# EOF\n"), "{open}");
        let classic = render(&m, Format::Classic);
        assert!(
            classic.contains("# TYPE linerate_auth_failures_total counter\n"),
            "{classic}"
        );
        assert!(
            classic.contains("# HELP linerate_auth_failures_total "),
            "{classic}"
        );
        assert!(
            classic.contains("\nlinerate_auth_failures_total 0\n"),
            "{classic}"
        );
        assert!(!classic.contains("# EOF"), "{classic}");
    }
}
