//! The run summary's `congestion` line: which TCP congestion control the data connections ran.

use results::RunRecord;

/// Which TCP congestion control the data connections ran: the one `-C` chose on both ends, or
/// each host's default (`HostFacts::tcp_congestion`), which differs between hosts and changes
/// throughput and CPU (TCP paces BBR's bursts itself with a timer when the egress qdisc is not fq).
/// `None` for transports that have none, or when no host's default is known.
pub(crate) fn congestion_line(r: &RunRecord) -> Option<String> {
    let tcp = r.spec.tcp()?;
    if r.spec.stream().map(|s| s.transport) == Some(wire::spec::Transport::Unix) {
        return None;
    }
    if let Some(name) = &tcp.congestion {
        return Some(format!("congestion {name} on both ends (-C)"));
    }
    let hosts = r.hosts.as_ref()?;
    let client = hosts.client.tcp_congestion.as_deref();
    let server = hosts
        .server
        .as_ref()
        .and_then(|h| h.tcp_congestion.as_deref());
    let text = match (client, server) {
        (None, None) => return None,
        (Some(c), Some(s)) if c == s => format!("{c} (both hosts' default)"),
        (c, s) => format!(
            "client {}, server {} (each host's default)",
            c.unwrap_or("?"),
            s.unwrap_or("?")
        ),
    };
    Some(format!("congestion {text}; -C sets one for both ends"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::host::HostFacts;
    use results::Hosts;

    fn run(client: Option<&str>, server: Option<&str>, chosen: Option<&str>) -> RunRecord {
        let runs: Vec<RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let mut r = runs[0].clone();
        r.spec.tcp_mut().unwrap().congestion = chosen.map(Into::into);
        let facts = |cc: Option<&str>| HostFacts {
            tcp_congestion: cc.map(Into::into),
            ..HostFacts::default()
        };
        r.hosts = Some(Hosts {
            client: facts(client),
            server: Some(facts(server)),
        });
        r
    }

    #[test]
    fn names_the_chosen_or_each_hosts_default() {
        let line = |c, s, chosen| congestion_line(&run(c, s, chosen));
        assert_eq!(
            line(Some("bbr"), Some("bbr"), None).as_deref(),
            Some("congestion bbr (both hosts' default); -C sets one for both ends")
        );
        assert_eq!(
            line(Some("bbr"), None, None).as_deref(),
            Some(
                "congestion client bbr, server ? (each host's default); -C sets one for both ends"
            )
        );
        assert_eq!(
            line(Some("bbr"), Some("cubic"), Some("reno")).as_deref(),
            Some("congestion reno on both ends (-C)")
        );
        assert_eq!(line(None, None, None), None);
    }
}
