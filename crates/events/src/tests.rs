//! The stream's JSON as docs/RESULTS.md shows it, each event back from its line unchanged, and
//! the writer's failure handling.

use std::borrow::Cow;
use std::io::Write;

use record::rpm::{RpmTick, RpmWay};
use record::IntervalSample;
use serde_json::json;
use wire::msg::ServerInfo;
use wire::{Params, TestKind, TestSpec};

use crate::{Event, JsonLines, Kind, Observer, Payload};

fn spec() -> TestSpec {
    TestSpec::new(Params::defaults(TestKind::TcpStream), 2, 2000)
}

fn server() -> ServerInfo {
    ServerInfo {
        version: "0.1.0".into(),
        hostname: "vm".into(),
        cores: 4,
        host: None,
    }
}

fn sample() -> IntervalSample {
    IntervalSample {
        start_s: 0.0,
        end_s: 1.0005,
        flows: Vec::new(),
        probe: None,
        cpu: None,
        omitted: false,
    }
}

fn tick() -> RpmTick {
    RpmTick {
        t_s: 1.0,
        connections: 4,
        goodput_bps: 9.5e8,
        received_bytes: 118_750_000,
        rpm: Some(1200.0),
        ..RpmTick::default()
    }
}

/// Each event with the line docs/RESULTS.md gives for it (a `started`'s spec aside: it is
/// the spec's own serialization).
fn every_event() -> Vec<(Event<'static>, String)> {
    let spec = spec();
    let spec_json = serde_json::to_string(&spec).unwrap();
    let doc = Payload::of(&json!({"kind": "tcp_stream", "schema_version": 2})).unwrap();
    vec![
        (
            Event::Started {
                server: Cow::Owned(server()),
                spec: Cow::Owned(spec),
            },
            format!(
                r#"{{"event":"started","server":{{"version":"0.1.0","hostname":"vm","cores":4}},"spec":{spec_json}}}"#
            ),
        ),
        (
            Event::Interval {
                data: Cow::Owned(sample()),
            },
            r#"{"event":"interval","data":{"start_s":0.0,"end_s":1.0005,"flows":[]}}"#.into(),
        ),
        (
            Event::Begin {
                title: "linerate sweep size".into(),
                points: 2,
                planned_s: vec![1.0, 2.0].into(),
                hosts: Vec::new().into(),
            },
            r#"{"event":"begin","title":"linerate sweep size","points":2,"planned_s":[1.0,2.0]}"#
                .into(),
        ),
        (
            Event::Begin {
                title: "linerate mesh".into(),
                points: 2,
                planned_s: Vec::new().into(),
                hosts: vec!["a".to_string(), "b".into()].into(),
            },
            r#"{"event":"begin","title":"linerate mesh","points":2,"hosts":["a","b"]}"#.into(),
        ),
        (
            Event::Point {
                index: 1,
                label: "streams=2".into(),
                data: Payload::of(&json!({"z": 1, "a": [0.1, 2]})).unwrap(),
            },
            r#"{"event":"point","index":1,"label":"streams=2","data":{"a":[0.1,2],"z":1}}"#.into(),
        ),
        (
            Event::Tick {
                direction: RpmWay::Up,
                data: Cow::Owned(tick()),
            },
            r#"{"event":"tick","direction":"up","data":{"t_s":1.0,"connections":4,"goodput_bps":950000000.0,"received_bytes":118750000,"moving_average_bps":0.0,"self_p50_ms":null,"foreign_p50_ms":null,"kernel_rtt_ms":null,"rpm":1200.0}}"#.into(),
        ),
        (
            Event::Note {
                text: "left out".into(),
            },
            r#"{"event":"note","text":"left out"}"#.into(),
        ),
        (
            Event::Stored { run_id: 1 },
            r#"{"event":"stored","run_id":1}"#.into(),
        ),
        (
            Event::End { data: doc },
            r#"{"event":"end","data":{"kind":"tcp_stream","schema_version":2}}"#.into(),
        ),
    ]
}

#[test]
fn every_event_is_written_as_the_stream_documents_it_and_read_back_equal() {
    let all = every_event();
    let kinds: Vec<Kind> = all.iter().map(|(e, _)| e.kind()).collect();
    for kind in Kind::ALL {
        assert!(kinds.contains(&kind), "{kind:?} is not tested");
    }
    for (event, line) in all {
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
        assert_eq!(Event::parse(&line).unwrap(), event, "{line}");
        let owned: Event<'static> = serde_json::from_str(&line).unwrap();
        assert_eq!(owned, event, "{line}");
        let from_reader: Event<'static> = serde_json::from_reader(line.as_bytes()).unwrap();
        assert_eq!(from_reader, event, "{line}");
        assert_eq!(Event::kind_of(&line).unwrap(), Some(event.kind()));
        assert_eq!(Kind::from_name(event.kind().name()), Some(event.kind()));
    }
}

#[test]
fn a_documents_text_is_kept_as_written() {
    // Field order and number spelling as the writer gave them, not a map's.
    let line = r#"{"event":"end","data":{"z":1.50,"a":{"y":[],"b":1e3}}}"#;
    let Event::End { data } = Event::parse(line).unwrap() else {
        panic!("not an end")
    };
    assert_eq!(data.get(), r#"{"z":1.50,"a":{"y":[],"b":1e3}}"#);
    assert_eq!(data.parse::<serde_json::Value>().unwrap()["a"]["b"], 1000.0);
}

#[test]
fn an_unknown_event_is_told_apart_from_a_broken_one() {
    assert_eq!(
        Event::kind_of(r#"{"event":"someday","x":1}"#).unwrap(),
        None
    );
    assert!(Event::parse(r#"{"event":"someday","x":1}"#).is_err());
    for bad in ["hello", "[1]", r#"{"no":"event"}"#, r#"{"event":"stored"}"#] {
        assert!(Event::parse(bad).is_err(), "{bad}");
    }
}

fn lines(f: impl FnOnce(&mut JsonLines<&mut Vec<u8>>)) -> Vec<serde_json::Value> {
    let mut buf = Vec::new();
    f(&mut JsonLines::new(&mut buf));
    String::from_utf8(buf)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_writer_gives_one_line_per_report_named_by_its_event_field() {
    let got = lines(|s| {
        s.started(&server(), &spec());
        s.interval(&sample());
        s.begin("linerate sweep size", &[1.0, 2.0], &[]);
        s.point_started(0, "size=64");
        s.point_done(0, "size=64", 1.0);
        s.point(0, "size=64", &json!({"x": 1}));
        s.tick(RpmWay::Down, &tick());
        s.note("linerate: note: left out");
        s.stored(12);
        s.finish();
    });
    let names: Vec<&str> = got.iter().map(|v| v["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["started", "interval", "begin", "point", "tick", "note", "stored"]
    );
    assert_eq!(got[2]["points"], 2);
    assert!(got[2].get("hosts").is_none());
    assert_eq!(got[3]["data"]["x"], 1);
    assert_eq!(got[4]["direction"], "down");
    assert_eq!(got[5]["text"], "left out");
    assert_eq!(got[6]["run_id"], 12);
}

#[test]
fn a_mesh_begins_with_its_hosts_and_ordered_pairs() {
    let hosts = vec!["a".to_string(), "b".into(), "c".into()];
    let got = lines(|s| s.begin("linerate mesh", &[], &hosts));
    assert_eq!(got[0]["points"], 6);
    assert_eq!(got[0]["hosts"][2], "c");
}

#[test]
fn the_end_carries_the_document_last() {
    let mut buf = Vec::new();
    let mut s = JsonLines::new(&mut buf);
    s.stored(3);
    s.finish(&json!({"kind": "sweep_size"})).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert_eq!(
        text,
        "{\"event\":\"stored\",\"run_id\":3}\n{\"event\":\"end\",\"data\":{\"kind\":\"sweep_size\"}}\n"
    );
}

#[test]
fn a_failed_write_is_kept_later_events_skipped_and_said_at_the_end() {
    struct Broken(usize);
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut broken = Broken(0);
    let mut s = JsonLines::new(&mut broken);
    s.note("x");
    s.stored(1);
    let err = s.finish(&()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    assert_eq!(broken.0, 1, "nothing is written after the first failure");
}
