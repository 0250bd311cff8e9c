//! The run summary's `congestion` line: which TCP congestion control the data connections ran.

use results::RunRecord;
use wire::spec::Flow;
use wire::Direction;

/// Which TCP congestion control the data connections ran: the one `-C` chose on both ends, or
/// the sending hosts' defaults (`HostFacts::tcp_congestion`), which differ between hosts and
/// change throughput and CPU (TCP paces BBR's bursts itself with a timer when the egress qdisc
/// is not fq). Only the ends that send count: the client for `send`, the server for `reverse`,
/// both for `bidir` and request/response. `None` for Unix sockets, or when no sender's default
/// is known.
pub(crate) fn congestion_line(r: &RunRecord) -> Option<String> {
    let tcp = r.spec.tcp()?;
    if r.spec.stream().map(|s| s.transport) == Some(wire::spec::Transport::Unix) {
        return None;
    }
    if let Some(name) = &tcp.congestion {
        return Some(format!("congestion {name} on both ends (-C)"));
    }
    let hosts = r.hosts.as_ref()?;
    let client = hosts.congestion_of(&r.spec, Flow::ClientToServer);
    let server = hosts.congestion_of(&r.spec, Flow::ServerToClient);
    let both = r.kind.is_rr() || r.spec.direction() == Direction::Bidir;
    let text = match (both, r.spec.direction(), client, server) {
        (true, _, None, None) => return None,
        (true, _, Some(c), Some(s)) if c == s => format!("{c} (both hosts' default)"),
        (true, _, c, s) => format!(
            "client {}, server {} (each host's default)",
            c.unwrap_or("?"),
            s.unwrap_or("?")
        ),
        (false, Direction::Reverse, _, s) => format!("{} (the sending server's default)", s?),
        (false, _, c, _) => format!("{} (the sending client's default)", c?),
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
    fn names_the_chosen_or_the_sending_hosts_default() {
        let line = |c, s, chosen, direction| {
            let mut r = run(c, s, chosen);
            r.spec.stream_mut().unwrap().direction = direction;
            congestion_line(&r)
        };
        let tail = "; -C sets one for both ends";
        assert_eq!(
            line(Some("bbr"), Some("cubic"), None, Direction::Send),
            Some(format!(
                "congestion bbr (the sending client's default){tail}"
            ))
        );
        assert_eq!(
            line(Some("bbr"), Some("cubic"), None, Direction::Reverse),
            Some(format!(
                "congestion cubic (the sending server's default){tail}"
            ))
        );
        assert_eq!(
            line(Some("bbr"), None, None, Direction::Bidir),
            Some(format!(
                "congestion client bbr, server ? (each host's default){tail}"
            ))
        );
        assert_eq!(
            line(Some("bbr"), Some("bbr"), None, Direction::Bidir),
            Some(format!("congestion bbr (both hosts' default){tail}"))
        );
        assert_eq!(
            line(Some("bbr"), Some("cubic"), Some("reno"), Direction::Bidir).as_deref(),
            Some("congestion reno on both ends (-C)")
        );
        // An iperf3 server sends no facts: nothing to say about its sending.
        assert_eq!(line(Some("bbr"), None, None, Direction::Reverse), None);
        assert_eq!(line(None, None, None, Direction::Bidir), None);
    }
}
