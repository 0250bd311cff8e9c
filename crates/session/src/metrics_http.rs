//! `serve --metrics ADDR`: the server's counters ([`ServerMetrics`]) as OpenMetrics text at `GET /metrics`, served
//! by one thread, one short connection at a time (a request must arrive within 2 s and fit in
//! 8 KiB), so a scraper costs no more than that however it behaves.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use engine::Signal;

use crate::server::{MetricsSnapshot, ServerMetrics};

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
        .spawn(move || {
            while !shutdown.is_raised() {
                match listener.accept() {
                    Ok((conn, _)) => answer(conn, &metrics),
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        })?;
    Ok(bound)
}

/// Reads one request and answers it: the metrics for `GET /metrics`, 404 otherwise.
fn answer(mut conn: TcpStream, metrics: &ServerMetrics) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 8192];
    let mut len = 0;
    while len < buf.len() && !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf[len..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n,
        }
    }
    let request = String::from_utf8_lossy(&buf[..len]);
    let wanted = request.starts_with("GET /metrics ") || request.starts_with("GET /metrics?");
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
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn
        .write_all(head.as_bytes())
        .and_then(|()| conn.write_all(body.as_bytes()));
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
