//! The run summary's `congestion` line: which TCP congestion control the data connections ran.

use record::RunRecord;
use wire::spec::{FamilyId, Flow};
use wire::Direction;

/// Which congestion control a run's data connections ran, as far as the record says.
enum RunCongestion<'a> {
    /// `-C`: the same one on both ends.
    Chosen(&'a str),
    /// Both ends send (bidir, request/response): each host's default, `None` where unknown.
    EachHost(Option<&'a str>, Option<&'a str>),
    /// One end sends: its host's default, and whether that end is the server.
    Sender(&'a str, bool),
}

/// The `-C` choice, else the sending hosts' defaults (`HostFacts::tcp_congestion`): only the
/// ends that send count, the client for `send`, the server for `reverse`, both for `bidir` and
/// request/response. `None` for Unix sockets, or when no sender's default is known.
fn run_congestion(r: &RunRecord) -> Option<RunCongestion<'_>> {
    let tcp = r.spec.tcp()?;
    if r.spec.stream().map(|s| s.transport) == Some(wire::spec::Transport::Unix) {
        return None;
    }
    if let Some(name) = &tcp.congestion {
        return Some(RunCongestion::Chosen(name));
    }
    let hosts = r.hosts.as_ref()?;
    let client = hosts.congestion_of(&r.spec, Flow::ClientToServer);
    let server = hosts.congestion_of(&r.spec, Flow::ServerToClient);
    if r.kind.row().family == FamilyId::Transaction || r.spec.direction() == Direction::Bidir {
        return (client.is_some() || server.is_some())
            .then_some(RunCongestion::EachHost(client, server));
    }
    match r.spec.direction() {
        Direction::Reverse => Some(RunCongestion::Sender(server?, true)),
        _ => Some(RunCongestion::Sender(client?, false)),
    }
}

/// The run summary's line: which TCP congestion control the data connections ran, the one `-C`
/// chose on both ends or the sending hosts' defaults, which differ between hosts and change
/// throughput and CPU (TCP paces BBR's bursts itself with a timer when the egress qdisc is not
/// fq).
pub(crate) fn congestion_line(r: &RunRecord) -> Option<String> {
    let text = match run_congestion(r)? {
        RunCongestion::Chosen(name) => return Some(format!("congestion {name} on both ends (-C)")),
        RunCongestion::EachHost(Some(c), Some(s)) if c == s => format!("{c} (both hosts' default)"),
        RunCongestion::EachHost(c, s) => format!(
            "client {}, server {} (each host's default)",
            c.unwrap_or("?"),
            s.unwrap_or("?")
        ),
        RunCongestion::Sender(name, true) => format!("{name} (the sending server's default)"),
        RunCongestion::Sender(name, false) => format!("{name} (the sending client's default)"),
    };
    Some(format!("congestion {text}; -C sets one for both ends"))
}

/// The same as a table cell: `cubic (-C)`, `bbr`, or `bbr/cubic` (client/server) where two
/// sending hosts' defaults differ.
pub(crate) fn congestion_cell(r: &RunRecord) -> Option<String> {
    Some(match run_congestion(r)? {
        RunCongestion::Chosen(name) => format!("{name} (-C)"),
        RunCongestion::EachHost(Some(c), Some(s)) if c == s => c.to_string(),
        RunCongestion::EachHost(c, s) => format!("{}/{}", c.unwrap_or("?"), s.unwrap_or("?")),
        RunCongestion::Sender(name, _) => name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::host::HostFacts;
    use record::Hosts;

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

    #[test]
    fn a_table_cell_says_the_same_in_short() {
        let cell = |c, s, chosen, direction| {
            let mut r = run(c, s, chosen);
            r.spec.stream_mut().unwrap().direction = direction;
            congestion_cell(&r)
        };
        let send = cell(Some("bbr"), Some("cubic"), None, Direction::Send);
        assert_eq!(send.as_deref(), Some("bbr"));
        let reverse = cell(Some("bbr"), Some("cubic"), None, Direction::Reverse);
        assert_eq!(reverse.as_deref(), Some("cubic"));
        let bidir = cell(Some("bbr"), Some("cubic"), None, Direction::Bidir);
        assert_eq!(bidir.as_deref(), Some("bbr/cubic"));
        let chosen = cell(Some("bbr"), None, Some("reno"), Direction::Send);
        assert_eq!(chosen.as_deref(), Some("reno (-C)"));
        assert_eq!(cell(None, None, None, Direction::Send), None);
    }
}
