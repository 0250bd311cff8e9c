//! An iperf3 client's finished test as a [`RunRecord`], from both ends' figures: what this
//! server measured of its own streams and what the client sent in the results exchange. The
//! summary comes from `analysis::summarize`, as a linerate client's does; the client's TCP
//! retransmits, which iperf3 reports without the rest of its TCP_INFO, go in as its streams'
//! `WorkerReport::retransmits`.
//!
//! Which end is which. The record names its ends by the test, as every record does, not by
//! who wrote it: the iperf3 client opened the test, so it is the record's *client* (the
//! `RawRun`'s local end, `hosts.client`, `summary.local_cpu`), and this server is the record's
//! *server* (`RawRun.server`, `hosts.server`, `summary.remote_cpu`), although every figure was
//! gathered here. The spec is the one the server derived from iperf3's parameters, in the
//! client's terms, so `client_to_server` is what the iperf3 client sent and this server
//! received (iperf3's default direction) and `server_to_client` is what this server sent
//! (`-R`, and the second half of `--bidir`). A flow's sender figures thus come from this server
//! for `server_to_client` and from the client's results for `client_to_server`; its receiver
//! figures the other way round.
//!
//! Invariants: the receivers' counts are the ones iperf3 prints, at `TEST_END` on both ends, so
//! a flow's `bytes_received` (and a UDP flow's datagrams received) equal iperf3's own receiver
//! figures; this server's TCP receivers also read their streams to the end, which is the
//! flow's `bytes_received_after_drain`. With `-O`, bytes leave out the omitted seconds, as both
//! ends' iperf3 figures do; datagram counts are totals, as both ends send them (iperf3 3.14 and later
//! prints them less `omitted_packets`).

use std::net::SocketAddr;
use std::time::Duration;

use crate::protocol::{stream_ids, Results, StreamResults};
use analysis::{LocalStream, RawRun, WorkerReport};
use measure::cpu::CpuTime;
use measure::host::HostFacts;
use record::{Hosts, IntervalSample, RunRecord, Tag, Tags};
use wire::msg::{ServerInfo, ServerResults, StreamCounts};
use wire::spec::{Flow, Loss};
use wire::TestSpec;

use session::server::ServedRun;

/// The test a record describes, beside the two ends' figures.
pub(super) struct About<'a> {
    /// The spec derived from the client's parameters.
    pub spec: &'a TestSpec,
    /// The client's iperf3 version, as its parameters name it.
    pub client_version: Option<&'a str>,
    /// The client's control connection.
    pub client: Option<SocketAddr>,
    /// When `TEST_START` went out, Unix epoch ms.
    pub started_at_unix_ms: u64,
    /// This server: its version, name and cores.
    pub server: &'a ServerInfo,
    /// This server's host facts, collected before the test.
    pub host: HostFacts,
}

/// The record of a finished test and its tags, from this server's results, its interval
/// rows (`rows.rs`, the last ending at `TEST_END`) and the client's results; `Err` names what
/// the client's results lack.
pub(super) fn build(
    about: About<'_>,
    server: ServerResults,
    intervals: Vec<IntervalSample>,
    theirs: &Results,
) -> Result<ServedRun, NotKept> {
    let spec = about.spec;
    let client = client_side(spec, theirs)?;
    let raw = RawRun {
        spec: spec.clone(),
        window: client.window,
        interrupted: false,
        local_wall: client.window,
        local_streams: client.streams,
        local_process_cpu: client.process_cpu,
        local_system_cpu: None,
        local_cores: Vec::new(),
        local_drops: None,
        local_link: None,
        server: receivers_at_test_end(spec, server),
        server_lost: None,
        // An iperf3 client's omitted seconds are out of the counts already (`run.rs`).
        window_start: None,
    };
    // The iperf3 client tells nothing of its host.
    let hosts = Hosts {
        client: HostFacts::default(),
        server: Some(about.host),
    };
    // Its hints name the iperf3 client's flags: its own -b paced it, not linerate.
    let summary = analysis::summarize(&raw, &intervals, &hosts, analysis::Client::Iperf3);
    let address = about.client.map(|a| a.ip().to_canonical());
    let target = match about.client {
        Some(a) => format!("iperf3 client at {a}"),
        None => "iperf3 client".into(),
    };
    let server = about.server.clone();
    let started = about.started_at_unix_ms;
    let mut record = RunRecord::new(spec.clone(), target, started, server, Some(hosts), summary);
    record.intervals = intervals;
    let tags = [
        Some(("client", "iperf3".to_string())),
        about
            .client_version
            .map(|v| ("client_version", v.to_string())),
        address.map(|a| ("client_address", a.to_string())),
    ];
    let mut set = Tags::new();
    for (key, value) in tags.into_iter().flatten() {
        // Fixed keys, each once: always accepted.
        let _ = set.insert(Tag {
            key: key.into(),
            value,
        });
    }
    Ok(ServedRun { record, tags: set })
}

/// Why an iperf3 client's finished test is not kept as a record (the log says so after the
/// test's line): its results lack what the record needs.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotKept {
    /// The client's results have no stream of iperf3's `id` (1, 3, 4, … in connection order).
    #[error("the client's results have no stream {id}")]
    NoStream { id: i32 },
}

/// The client's end as a linerate client's would be: its streams, window and process CPU.
struct ClientSide {
    streams: Vec<LocalStream>,
    window: Duration,
    process_cpu: CpuTime,
}

/// The client's results, each stream found by iperf3's id (1, 3, 4, … in connection order).
/// Its window is its streams' longest `end_time`; its CPU, `cpu_util_user` and
/// `cpu_util_system` of that window, shared equally among its streams as their thread CPU
/// (iperf3 before 3.16 runs every stream on one thread).
fn client_side(spec: &TestSpec, theirs: &Results) -> Result<ClientSide, NotKept> {
    let flows = spec.flows();
    // A peer's number: at most the test's time and a minute, whatever it says.
    let most = Duration::from_millis(spec.duration_ms) + Duration::from_secs(60);
    let window = theirs.window(most);
    let (process_cpu, per_stream) = theirs.cpu_shares(window, flows.len());
    let udp = spec.kind().row().loss == Loss::Datagrams;
    let retransmits = theirs.sender_has_retransmits == 1;
    let mut streams = Vec::with_capacity(flows.len());
    for ((_, flow), id) in flows.iter().zip(stream_ids(flows.len())) {
        let s = theirs
            .streams
            .iter()
            .find(|s| s.id == id)
            .ok_or(NotKept::NoStream { id })?;
        let counts = client_counts(s, *flow, udp);
        // Its TCP senders' retransmits, reported without the rest of their TCP_INFO: the
        // summary counts them in their flow's and the run's (`-1`: not counted).
        let retransmits = (retransmits && *flow == Flow::ClientToServer)
            .then(|| u32::try_from(s.retransmits).ok())
            .flatten();
        streams.push(LocalStream {
            at_stop: counts,
            now: counts,
            result: Some(Ok(WorkerReport {
                cpu: per_stream,
                counts,
                retransmits,
                ..WorkerReport::default()
            })),
            cpu: per_stream,
        });
    }
    Ok(ClientSide {
        streams,
        window,
        process_cpu,
    })
}

/// One of the client's streams as counters: a sender's bytes and datagrams sent; a receiver's
/// bytes received, and for UDP its accounting as iperf3 reports it (`packets` up to the highest
/// sequence number seen, `errors` the ones missing below it, so `packets − errors` arrived).
fn client_counts(s: &StreamResults, flow: Flow, udp: bool) -> StreamCounts {
    let count = |v: i64| u64::try_from(v).unwrap_or(0);
    let packets = count(s.packets);
    match (flow, udp) {
        (Flow::ClientToServer, _) => StreamCounts {
            bytes: s.bytes,
            packets: if udp { packets } else { 0 },
            ..StreamCounts::default()
        },
        (Flow::ServerToClient, false) => StreamCounts {
            bytes: s.bytes,
            ..StreamCounts::default()
        },
        (Flow::ServerToClient, true) => s.udp_receiver_counts(),
    }
}

/// This server's UDP receivers stand at `TEST_END` for their totals as well: iperf3's ends
/// both count datagrams to `TEST_END` (the client's receivers too), so the record's datagram
/// counts are the ones iperf3 prints, in both directions. TCP receivers keep their drained
/// totals, which reconcile a `client_to_server` flow.
fn receivers_at_test_end(spec: &TestSpec, mut server: ServerResults) -> ServerResults {
    if spec.kind().row().loss == Loss::Datagrams {
        for (end, (_, flow)) in server.streams.iter_mut().zip(spec.flows()) {
            if flow == Flow::ClientToServer {
                end.total = end.at_stop;
            }
        }
    }
    server
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::msg::StreamEnd;
    use wire::spec::{Direction, Params as SpecParams, StreamParams, UdpParams};

    fn about<'a>(spec: &'a TestSpec, info: &'a ServerInfo) -> About<'a> {
        About {
            spec,
            client_version: Some("3.12"),
            client: Some("[::ffff:198.18.0.1]:40000".parse().unwrap()),
            started_at_unix_ms: 1,
            server: info,
            host: HostFacts {
                hostname: "server".into(),
                ..HostFacts::default()
            },
        }
    }

    fn theirs(text: &str) -> Results {
        serde_json::from_str(text).unwrap()
    }

    fn bytes(b: u64) -> StreamCounts {
        StreamCounts {
            bytes: b,
            ..StreamCounts::default()
        }
    }

    #[test]
    fn the_iperf3_client_is_the_records_client_and_this_server_its_server() {
        let spec = TestSpec::new(
            SpecParams::TcpStream {
                stream: StreamParams::new(Direction::Send),
                tcp: Default::default(),
            },
            1,
            2000,
        );
        let info = ServerInfo::default();
        // The client sent 1000 bytes (4 retransmitted); this server had read 900 at TEST_END
        // and all 1000 by the end of the stream.
        let server = ServerResults {
            streams: vec![StreamEnd {
                at_stop: bytes(900),
                total: bytes(1000),
                ..StreamEnd::default()
            }],
            wall_us: 2_000_000,
            window_us: 2_000_000,
            ..ServerResults::default()
        };
        let client = theirs(
            r#"{"cpu_util_total":50,"cpu_util_user":10,"cpu_util_system":40,"sender_has_retransmits":1,
                "streams":[{"id":1,"bytes":1000,"retransmits":4,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.0}]}"#,
        );
        let rows = super::super::rows::Rows::new(&spec, false, Default::default());
        let intervals = rows.finish(Duration::from_secs(2), &[bytes(900)], None);
        let run = build(about(&spec, &info), server, intervals.clone(), &client).unwrap();
        let f = &run.record.summary.flows[0];
        assert_eq!(
            (f.flow, f.sender),
            (Flow::ClientToServer, record::End::Client)
        );
        assert_eq!((f.bytes_sent, f.bytes_received), (1000, 900));
        assert_eq!(f.bytes_received_after_drain, 1000);
        assert!(f.reconciled);
        assert_eq!(f.retransmits, Some(4));
        assert_eq!(run.record.summary.local_cpu.process_pct, 50.0);
        assert_eq!(run.record.intervals.len(), 1);
        assert_eq!(
            run.record.target,
            "iperf3 client at [::ffff:198.18.0.1]:40000"
        );
        let hosts = run.record.hosts.as_ref().unwrap();
        assert_eq!(hosts.server.as_ref().unwrap().hostname, "server");
        assert_eq!(hosts.client, HostFacts::default());
        assert_eq!(
            run.tags.to_string(),
            "client=iperf3,client_address=198.18.0.1,client_version=3.12"
        );
        let missing = theirs(
            r#"{"streams":[{"id":3,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":0}]}"#,
        );
        let server = ServerResults::default();
        assert!(build(about(&spec, &info), server, intervals, &missing).is_err());
    }

    #[test]
    fn a_reverse_udp_test_counts_what_the_client_says_it_received() {
        let spec = TestSpec::new(
            SpecParams::UdpStream {
                udp: UdpParams::new(Direction::Reverse),
            },
            1,
            1000,
        );
        let info = ServerInfo::default();
        let sent = StreamCounts {
            bytes: 192 * 1000,
            packets: 192,
            ..StreamCounts::default()
        };
        let server = ServerResults {
            streams: vec![StreamEnd {
                at_stop: sent,
                total: sent,
                ..StreamEnd::default()
            }],
            wall_us: 1_000_000,
            window_us: 1_000_000,
            ..ServerResults::default()
        };
        // iperf3's receiver saw sequence numbers up to 191, 2 of them missing.
        let client = theirs(
            r#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":-1,
                "streams":[{"id":1,"bytes":189000,"retransmits":-1,"jitter":0.00002,"errors":2,"packets":191,"start_time":0,"end_time":1.0}]}"#,
        );
        let run = build(about(&spec, &info), server, Vec::new(), &client).unwrap();
        let f = &run.record.summary.flows[0];
        assert_eq!(
            (f.flow, f.sender),
            (Flow::ServerToClient, record::End::Server)
        );
        assert_eq!((f.bytes_sent, f.bytes_received), (192_000, 189_000));
        let u = f.udp.unwrap();
        assert_eq!(
            (u.packets_sent, u.packets_received, u.packets_lost),
            (192, 189, 3)
        );
        assert_eq!(u.jitter_us, 20.0);
    }
}
