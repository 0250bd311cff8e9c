//! Records of layout 1 (the flat spec of protocol versions up to 6) read as layout 2 with the
//! same values: `tests/fixtures/records-v1.json` holds one `--json` record of every kind, with
//! non-default flags, captured from the last layout-1 build; `store-v1.sqlite` holds the three
//! sample runs as that build stored them.

use std::collections::BTreeMap;
use std::path::Path;

use record::{HostFacts, RunRecord, Tags, SCHEMA_VERSION};
use results::store::{Filter, Store};
use wire::spec::{
    Direction, Params, RrParams, SendMode, StreamParams, TcpOptions, Transport, UdpParams, UdpRate,
};
use wire::TestKind;

use crate::common::fixture_dir;

/// The layout-1 records, by name, as JSON and as read.
fn records_v1() -> BTreeMap<String, (serde_json::Value, RunRecord)> {
    let text = std::fs::read_to_string(fixture_dir().join("records-v1.json")).unwrap();
    let raw: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    raw.into_iter()
        .map(|(name, json)| {
            assert_eq!(json["schema_version"], 1, "{name} is a layout-1 fixture");
            let record: RunRecord =
                serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, (json, record))
        })
        .collect()
}

fn tcp(mss: Option<u32>, no_delay: bool, congestion: Option<&str>, tos: Option<u8>) -> TcpOptions {
    TcpOptions {
        mss_bytes: mss,
        no_delay,
        congestion: congestion.map(Into::into),
        tos,
        pacing_bps: None,
        reverse_pacing_bps: None,
        notsent_lowat_bytes: None,
    }
}

fn rr(request: u32, response: u32, omit_ms: u64, tps: Option<u64>, busy: Option<u32>) -> RrParams {
    RrParams {
        request_len_bytes: request,
        response_len_bytes: response,
        omit_ms,
        transactions_per_sec: tps,
        busy_poll_us: busy,
    }
}

/// What each fixture's flags were, in layout 2.
fn expected_params(name: &str) -> Params {
    let udp = |direction| UdpParams::new(direction);
    match name {
        // tcp -P 2 --bidir -l 64K -w 1M -M 1400 -N -C reno --tos 0x10 --send-mode sendfile
        "tcp_options" => Params::TcpStream {
            stream: StreamParams {
                direction: Direction::Bidir,
                transport: Transport::Tcp,
                write_len_bytes: 65_536,
                send_mode: SendMode::Sendfile,
                rx_mode: wire::spec::RxMode::Copy,
                self_probes_per_s: None,
            },
            tcp: tcp(Some(1400), true, Some("reno"), Some(16)),
        },
        // tcp --unix PATH -R -l 128K
        "tcp_unix" => Params::TcpStream {
            stream: StreamParams {
                direction: Direction::Reverse,
                transport: Transport::Unix,
                write_len_bytes: 131_072,
                send_mode: SendMode::Write,
                rx_mode: wire::spec::RxMode::Copy,
                self_probes_per_s: None,
            },
            tcp: TcpOptions::default(),
        },
        // udp -R --pps 20K --burst 8 --batch 16 --flows 4 --flows-dst 2 --no-gso --no-gro -l 512
        "udp_pps" => Params::UdpStream {
            udp: UdpParams {
                payload_len_bytes: 512,
                rate: UdpRate::PacketsPerSec(20_000),
                burst_packets: 8,
                batch_packets: 16,
                gso: false,
                gro: false,
                flows: 4,
                flows_dst: 2,
                ..udp(Direction::Reverse)
            },
        },
        // udp -b max --no-batch -l 64 -w 4M
        "udp_max" => Params::UdpStream {
            udp: UdpParams {
                payload_len_bytes: 64,
                rate: UdpRate::Max,
                batch_packets: 1,
                ..udp(Direction::Send)
            },
        },
        // udp -b 50M (when the default batch was 64)
        "udp_rate" => Params::UdpStream {
            udp: UdpParams {
                rate: UdpRate::BitsPerSec(50_000_000),
                batch_packets: 64,
                ..udp(Direction::Send)
            },
        },
        // rr -l 100 --response 2000 --omit 0.1 --busy-poll 20 --tps 5K -P 2
        "tcp_rr" => Params::TcpRr {
            rr: rr(100, 2000, 100, Some(5000), Some(20)),
            tcp: TcpOptions::no_delay(),
        },
        // rr --udp -l 32 --response 48
        "udp_rr" => Params::UdpRr {
            rr: rr(32, 48, 0, None, None),
        },
        // crr -l 10 --response 20 --tps 500
        "tcp_crr" => Params::TcpCrr {
            rr: rr(10, 20, 0, Some(500), None),
            tcp: TcpOptions::no_delay(),
        },
        other => panic!("no expectation for fixture {other}"),
    }
}

#[test]
fn every_kind_of_layout_1_record_reads_with_the_same_values() {
    let records = records_v1();
    assert_eq!(records.len(), 8);
    for (name, (json, record)) in &records {
        let old = &json["spec"];
        let spec = &record.spec;
        assert_eq!(record.schema_version, SCHEMA_VERSION, "{name}");
        assert_eq!(spec.params, expected_params(name), "{name}");
        assert_eq!(spec.kind(), record.kind, "{name}");
        assert_eq!(spec.kind().as_str(), old["kind"], "{name}");
        // The fields every kind has are carried over as they were.
        assert_eq!(spec.duration_ms, old["duration_ms"], "{name}");
        assert_eq!(spec.interval_ms, old["interval_ms"], "{name}");
        assert_eq!(spec.streams, old["streams"], "{name}");
        assert_eq!(
            serde_json::to_value(spec.window_bytes).unwrap(),
            old["window_bytes"]
        );
        assert_eq!(
            serde_json::to_value(spec.link_speed_bps).unwrap(),
            old["link_speed_bps"]
        );
        assert_eq!(
            serde_json::to_value(spec.server_cpu).unwrap(),
            old["server_cpu"]
        );
        assert_eq!(
            serde_json::to_value(spec.client_cpu).unwrap(),
            old["client_cpu"]
        );
        assert_eq!(spec.message_len_bytes(), old["write_len_bytes"], "{name}");
        assert_eq!(
            serde_json::to_value(spec.direction()).unwrap(),
            old["direction"]
        );
        // Everything outside the spec is as stored.
        let mut rest = serde_json::to_value(record).unwrap();
        let mut old_rest = json.clone();
        for v in [&mut rest, &mut old_rest] {
            let map = v.as_object_mut().unwrap();
            map.remove("spec");
            map.remove("schema_version");
        }
        assert_eq!(rest, old_rest, "{name}");
    }
    let options = &records["tcp_options"].1.spec;
    assert_eq!(options.link_speed_bps, Some(10_000_000_000));
    assert_eq!((options.client_cpu, options.server_cpu), (Some(0), Some(1)));
    assert_eq!(records["udp_max"].1.spec.window_bytes, Some(4 << 20));
}

#[test]
fn a_converted_record_is_stored_and_read_as_layout_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    for (name, (_, record)) in records_v1() {
        let id = store
            .insert(&record, &Tags::new(), &HostFacts::default())
            .unwrap();
        let back = store.get(id).unwrap().record;
        assert_eq!(back, record, "{name}");
        let text = serde_json::to_value(&back).unwrap();
        assert_eq!(text["schema_version"], 2, "{name}");
        assert_eq!(text["spec"]["params"]["kind"], name_kind(&name), "{name}");
    }
}

fn name_kind(name: &str) -> &'static str {
    match name {
        "tcp_options" | "tcp_unix" => "tcp_stream",
        "udp_pps" | "udp_max" | "udp_rate" => "udp_stream",
        other => expected_params(other).kind().as_str(),
    }
}

/// The schema-1 store fixture's runs (stored by the last layout-1 build) read with the values
/// they were run with.
#[test]
fn the_version_1_store_fixture_reads_as_layout_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("copy.sqlite");
    std::fs::copy(fixture_dir().join("store-v1.sqlite"), &path).unwrap();
    let store = Store::open_existing(&path).unwrap();
    let rows = store.list(&Filter::default()).unwrap().rows;
    let spec_of = |kind: &str| {
        let row = rows.iter().find(|r| r.kind.as_str() == kind).unwrap();
        store.get(row.id).unwrap().record.spec
    };
    let tcp = spec_of("tcp_stream");
    assert_eq!(
        tcp.stream(),
        Some(&StreamParams {
            direction: Direction::Send,
            transport: Transport::Tcp,
            write_len_bytes: 524_288,
            send_mode: SendMode::Sendfile,
            rx_mode: wire::spec::RxMode::Copy,
            self_probes_per_s: None,
        })
    );
    assert_eq!(tcp.duration_ms, 2000);
    let udp = spec_of("udp_stream");
    assert_eq!(
        udp.udp().map(|u| (u.payload_len_bytes, u.rate)),
        Some((1472, UdpRate::BitsPerSec(100_000_000)))
    );
    let rr = spec_of("tcp_rr");
    assert_eq!(
        rr.params,
        Params::TcpRr {
            rr: RrParams::new(64, 64),
            tcp: TcpOptions::no_delay(),
        }
    );
    assert_eq!(rr.kind(), TestKind::TcpRr);
}

/// `RunRecord::new` is the one constructor: a record of every kind rebuilt through it from
/// its parts (spec, target, start, server, hosts, summary; then user and intervals) writes the
/// same JSON as the record read, so producers that moved to it store what they stored before.
#[test]
fn a_record_rebuilt_by_new_writes_the_same_json_for_every_kind() {
    for (name, (_, read)) in records_v1() {
        let mut rebuilt = RunRecord::new(
            read.spec.clone(),
            read.target.clone(),
            read.started_at_unix_ms,
            read.server.clone(),
            read.hosts.clone(),
            read.summary.clone(),
        );
        rebuilt.user = read.user.clone();
        rebuilt.intervals = read.intervals.clone();
        assert_eq!(rebuilt.kind, read.spec.kind(), "{name}");
        assert!(
            !rebuilt.is_rpm(),
            "{name}: a run with intervals is no rpm direction"
        );
        let (a, b) = (
            serde_json::to_string(&rebuilt),
            serde_json::to_string(&read),
        );
        assert_eq!(a.unwrap(), b.unwrap(), "{name}");
    }
}

/// Every record's kind and summary inside `v` (at any depth: a list of runs, a pps matrix's
/// cells).
fn summaries_in(v: &serde_json::Value, out: &mut Vec<(serde_json::Value, serde_json::Value)>) {
    match v {
        serde_json::Value::Object(m) => {
            if let (Some(s), Some(kind)) = (m.get("summary"), m.get("kind")) {
                if m.contains_key("schema_version") {
                    out.push((kind.clone(), s.clone()));
                }
            }
            m.values().for_each(|x| summaries_in(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| summaries_in(x, out)),
        _ => {}
    }
}

/// Whether `written` holds every value of `read` (objects may add fields: those made after
/// the fixture, written with their defaults).
fn holds(written: &serde_json::Value, read: &serde_json::Value) -> bool {
    use serde_json::Value::{Array, Object};
    match (written, read) {
        (Object(w), Object(r)) => r.iter().all(|(k, v)| w.get(k).is_some_and(|x| holds(x, v))),
        (Array(w), Array(r)) => w.len() == r.len() && w.iter().zip(r).all(|(x, y)| holds(x, y)),
        (w, r) => w == r,
    }
}

/// A summary is typed by its kind family now, and still reads and writes the one flat layout:
/// every stored summary the fixtures hold (layout 1 and 2, every kind, an rpm direction; the
/// probes, latency under load and frames are held by `record`'s `summary_tests`) reads into
/// the family of its record's kind and writes back the same JSON: the same top-level keys, every value as it was (nested fields made after a fixture are added
/// with their defaults, as before families).
#[test]
fn every_stored_summary_reads_into_its_family_and_writes_back_the_same_json() {
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures");
    let mut summaries = Vec::new();
    for path in [fixture_dir(), report] {
        for entry in std::fs::read_dir(&path).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                summaries_in(&serde_json::from_str(&text).unwrap(), &mut summaries);
            }
        }
    }
    let mut families = std::collections::BTreeSet::new();
    for (kind, json) in &summaries {
        let s: record::Summary = serde_json::from_value(json.clone()).unwrap();
        let kind: TestKind = serde_json::from_value(kind.clone()).unwrap();
        assert!(s.family.fits(kind), "{kind:?}: {}", s.family.name());
        let back = serde_json::to_value(&s).unwrap();
        let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect();
        let (written, read): (Vec<String>, Vec<String>) = (keys(&back), keys(json));
        assert_eq!(written, read, "the same keys at the summary's top level");
        assert!(holds(&back, json), "{back}\n{json}");
        families.insert(s.family.name());
    }
    assert!(summaries.len() >= 20, "{} summaries", summaries.len());
    let all = ["datagram", "rpm", "stream", "transaction"];
    assert_eq!(families.into_iter().collect::<Vec<_>>(), all);
}
