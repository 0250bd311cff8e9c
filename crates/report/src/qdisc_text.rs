//! The path's queues in text: one line per host with the qdiscs of the interface the test
//! used (`hosts.*.qdiscs`), their shaping parameters and what their counters added over the
//! test. The full summary (`-v`) shows both hosts'; the brief one only a host whose qdisc
//! limited a direction (the `shaper` verdict).

use measure::host::HostFacts;
use measure::qdisc::{tc_rate, Qdisc};
use measure::units::format_bytes;
use record::{RunRecord, Verdict};

/// `qdiscs     client va: tbf 1: root rate 100Mbit burst 256 KiB limit 1.2 MiB; over the
/// test 8123 sent, 35920 dropped, 60211 overlimits`, for each host whose qdiscs are known.
pub fn qdisc_lines(r: &RunRecord) -> Vec<String> {
    let Some(hosts) = &r.hosts else {
        return Vec::new();
    };
    let ends = [
        ("client", Some(&hosts.client)),
        ("server", hosts.server.as_ref()),
    ];
    ends.into_iter()
        .filter_map(|(name, h)| host_line(name, h?))
        .collect()
}

/// The lines of the hosts whose qdisc limited a direction, for the brief summary.
pub fn shaper_lines(r: &RunRecord) -> Vec<String> {
    let shaped: Vec<&str> = r
        .summary
        .flows
        .iter()
        .filter_map(|f| f.limited_by.as_ref())
        .filter(|l| l.verdict == Verdict::Shaper)
        .filter_map(|l| l.shaper.as_ref())
        .map(|s| match s.end {
            record::End::Client => "client",
            record::End::Server => "server",
        })
        .collect();
    qdisc_lines(r)
        .into_iter()
        .filter(|line| shaped.iter().any(|end| line[11..].starts_with(end)))
        .collect()
}

fn host_line(name: &str, h: &HostFacts) -> Option<String> {
    let list = h.qdiscs.as_ref()?;
    let interface = h.interface.as_deref().unwrap_or("?");
    let parts: Vec<String> = list.iter().map(qdisc_words).collect();
    let parts = if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join("; ")
    };
    Some(format!("{:<11}{name} {interface}: {parts}", "qdiscs"))
}

/// `tbf 1: root rate 100Mbit burst 256 KiB limit 1.2 MiB; over the test …`.
fn qdisc_words(q: &Qdisc) -> String {
    let mut out = format!("{} {} {}", q.kind, q.handle, q.parent);
    let mut param = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push_str(&format!(" {name} {v}"));
        }
    };
    param("rate", q.rate_bps.map(tc_rate));
    param("peakrate", q.peak_rate_bps.map(tc_rate));
    param("burst", q.burst_bytes.map(format_bytes));
    param("limit", q.limit_bytes.map(|b| format_bytes(u64::from(b))));
    param("limit", q.limit_packets.map(|p| format!("{p}p")));
    param("latency", q.latency_us.filter(|&l| l > 0).map(ms));
    param("jitter", q.jitter_us.map(ms));
    param(
        "loss",
        q.loss_ppm.map(|p| format!("{}%", f64::from(p) / 1e4)),
    );
    param("target", q.target_us.map(|t| ms(u64::from(t))));
    param("interval", q.interval_us.map(|t| ms(u64::from(t))));
    param("quantum", q.quantum_bytes.map(|b| b.to_string()));
    param("flows", q.flows.map(|f| f.to_string()));
    param("flow_limit", q.flow_limit_packets.map(|p| format!("{p}p")));
    param("maxrate", q.flow_max_rate_bps.map(tc_rate));
    if let Some(d) = q
        .during_test
        .filter(|d| d.packets + d.drops + d.overlimits > 0)
    {
        out.push_str(&format!(
            ", over the test {} sent, {} dropped, {} overlimits",
            d.packets, d.drops, d.overlimits
        ));
    }
    out
}

fn ms(us: u64) -> String {
    format!("{}ms", us as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::qdisc::QdiscCounts;

    #[test]
    fn one_line_per_host_with_parameters_and_counters() {
        let runs: Vec<RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let mut r = runs[0].clone();
        let tbf = Qdisc {
            kind: "tbf".into(),
            handle: "1:".into(),
            parent: "root".into(),
            rate_bps: Some(100_000_000),
            burst_bytes: Some(262_144),
            limit_bytes: Some(1_511_072),
            latency_us: Some(100_000),
            during_test: Some(QdiscCounts {
                packets: 8123,
                drops: 35_920,
                overlimits: 60_211,
                ..QdiscCounts::default()
            }),
            ..Qdisc::default()
        };
        r.hosts = Some(record::Hosts {
            client: HostFacts {
                interface: Some("va".into()),
                qdiscs: Some(vec![tbf]),
                ..HostFacts::default()
            },
            server: Some(HostFacts {
                interface: Some("vb".into()),
                qdiscs: Some(vec![]),
                ..HostFacts::default()
            }),
        });
        assert_eq!(
            qdisc_lines(&r),
            vec![
                "qdiscs     client va: tbf 1: root rate 100Mbit burst 256 KiB limit 1.44 MiB latency 100ms, over the test 8123 sent, 35920 dropped, 60211 overlimits",
                "qdiscs     server vb: none",
            ]
        );
        assert!(shaper_lines(&r).is_empty(), "no direction was shaped");
        r.summary.flows[0].limited_by = Some(record::LimitedBy {
            verdict: Verdict::Shaper,
            evidence: String::new(),
            hint: String::new(),
            shaper: Some(record::Shaper {
                end: record::End::Client,
                interface: "va".into(),
                kind: "tbf".into(),
                handle: "1:".into(),
                rate_bps: 100_000_000,
            }),
        });
        assert_eq!(shaper_lines(&r).len(), 1);
        assert!(shaper_lines(&r)[0].contains("client va: tbf"));
    }
}
