//! The server's counters as text for a scraper: OpenMetrics for one that asks for it (its
//! `Accept` header lists `application/openmetrics-text`, as Prometheus's does) and Prometheus's
//! classic text format otherwise ([`Format`]), in base units (bytes, not bits).
//! [`ServerMetrics::page`] is what the HTTP endpoint (`ui::metrics`, in the UI's crate beside
//! the UI's own HTTP) answers `GET /metrics` with; nothing here reads a socket.
//!
//! Invariants: a counter's family is named as each format names it (OpenMetrics without
//! `_total`, the classic format with it); label values are escaped; OpenMetrics ends `# EOF`.

use std::fmt::Write as _;

use super::metrics::Transport;
use super::{MetricsSnapshot, ServerMetrics};

impl ServerMetrics {
    /// The answer to a scrape whose `Accept` header is `accept` (`None`: no header): its
    /// `Content-Type` and its body, the counters now in the format it asks for.
    pub fn page(&self, accept: Option<&str>) -> (&'static str, String) {
        let format = accept.map_or(Format::Classic, Format::accepted);
        (format.content_type(), render(&self.snapshot(), format))
    }
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
    /// The format an `Accept` header's value asks for: OpenMetrics where it lists
    /// `application/openmetrics-text` (with a q above 0, as Prometheus sends it), the classic
    /// format otherwise (`*/*`, `text/plain`).
    pub fn accepted(accept: &str) -> Format {
        for item in accept.split(',') {
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
    let started = (m.started.iter())
        .map(|(kind, v)| (label(&[("kind", kind.as_str())]), v.to_string()))
        .collect();
    let refused = (m.refused.iter())
        .map(|(why, v)| (label(&[("reason", why.as_str())]), v.to_string()))
        .collect();
    let one = |v: u64| vec![(String::new(), v.to_string())];
    let bytes = m
        .bytes
        .iter()
        .map(|((d, t), v)| {
            let labels = [("direction", d.as_str()), ("transport", t.as_str())];
            (label(&labels), v.to_string())
        })
        .collect();
    let datagrams = m
        .datagrams
        .iter()
        .map(|(d, v)| {
            (
                label(&[
                    ("direction", d.as_str()),
                    ("transport", Transport::Udp.as_str()),
                ]),
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
        ("linerate_sessions_started", "counter", "Tests accepted, by kind.", started),
        ("linerate_sessions_refused", "counter", "Tests refused, by reason.", refused),
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
        let prometheus = "application/openmetrics-text;version=1.0.0,application/\
            openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        for (accept, format) in [
            (prometheus, Format::OpenMetrics),
            ("Application/OpenMetrics-Text", Format::OpenMetrics),
            ("text/plain;version=0.0.4", Format::Classic),
            ("*/*", Format::Classic),
            (
                "application/openmetrics-text;q=0, text/plain",
                Format::Classic,
            ),
        ] {
            assert_eq!(Format::accepted(accept), format, "{accept}");
        }
        let m = ServerMetrics::default();
        assert!(m.page(None).0.starts_with("text/plain; version=0.0.4"));
        assert!(m.page(Some(prometheus)).1.ends_with("# EOF\n"));
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
