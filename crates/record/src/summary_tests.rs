//! Unit tests of [`crate::summary`]: each family's summary round-trips, writes the JSON the
//! flat summary of layout 2 wrote before families (byte for byte: that struct is kept here,
//! frozen, as the reference), and reads what it wrote; a summary mixing two families' keys is
//! refused by name.

use measure::cpu::CoreCpu;
use measure::latency::LatencySummary;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::rpm::StoredRpm;
use crate::schema::*;
use crate::summary::*;
use crate::{FrameSummary, LinkSpeedSource};

/// The summary as layout 2 declared it before families (the reference layout, frozen).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Flat {
    duration_s: f64,
    interrupted: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    until_stopped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    incomplete: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_figures_up_to_s: Option<f64>,
    bytes_sent: u64,
    bytes_received: u64,
    bytes_in_flight: u64,
    throughput_bps: f64,
    local_cpu_pct: f64,
    remote_cpu_pct: f64,
    local_cpu: CpuSummary,
    remote_cpu: CpuSummary,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    local_cores: Vec<CoreCpu>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    remote_cores: Vec<CoreCpu>,
    retransmits: Option<u32>,
    rtt_us: Option<u32>,
    link_speed_bps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link_speed_source: Option<LinkSpeedSource>,
    performance_index: Option<f64>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    udp: Option<UdpSummary>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    rr: Option<RrSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_under_load: Option<LatencyUnderLoad>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    self_probes: Option<RrSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rpm: Option<Box<StoredRpm>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    frames: Option<FrameSummary>,
    flows: Vec<FlowSummary>,
}

fn rr(transactions: u64) -> RrSummary {
    RrSummary {
        transactions,
        transactions_per_s: transactions as f64 / 2.0,
        omit_s: 0.1,
        connections_per_s: None,
        lost_transactions: Some(1),
        slots_missed: Some(2),
        latency_us: Some(LatencySummary {
            samples: transactions,
            p50: 31.5,
            p99: 80.25,
            significant_digits: 3,
            ..LatencySummary::default()
        }),
    }
}

fn latency_under_load() -> LatencyUnderLoad {
    LatencyUnderLoad {
        probe_kind: wire::TestKind::UdpRr,
        probe_rate_per_s: 100,
        probe_bytes: 64,
        idle_s: 2.0,
        idle: rr(200),
        loaded: rr(1000),
        loaded_s: 10.0,
        added_p50_us: Some(0.0),
        added_p99_us: None,
    }
}

fn stored_rpm() -> Box<StoredRpm> {
    let spread = json!({"samples": 3, "p50": 1.5, "p90": 2.0, "p99": 2.5});
    serde_json::from_value(json!({
        "draft": "draft-ietf-ippm-responsiveness-05",
        "params": {"moving_average_intervals": 4, "interval_s": 1.0, "trimmed_keep": 0.95,
            "stability_tolerance": 0.05, "max_connections": 16, "probes_per_s": 10.0},
        "idle": {"connect_ms": spread, "rr_ms": spread, "rpm": 40000.0},
        "direction": {"direction": "up", "goodput_bps": 9.0e8, "connections": 4,
            "goodput_stable_s": 3.0, "goodput_confidence": "high", "rpm_confidence": "medium",
            "responsiveness": null, "foreign_connect_ms": spread, "foreign_rr_ms": spread,
            "self_ms": spread, "kernel_rtt_ms": spread, "in_socket_buffers_ms": 0.5,
            "in_network_queues_ms": null, "loaded_minus_idle_ms": 1.0, "local_cpu_pct": 50.0,
            "remote_cpu_pct": null, "timeline": [], "notes": ["a note"]}
    }))
    .unwrap()
}

/// A summary of no family yet: every common figure set, none of a family's.
fn common() -> Flat {
    let cpu = CpuSummary {
        threads_pct: 12.5,
        user_pct: 2.5,
        sys_pct: 10.0,
        process_pct: 13.0,
        system_busy_pct: Some(4.0),
    };
    Flat {
        duration_s: 2.000_3,
        interrupted: true,
        until_stopped: true,
        incomplete: Some("server went away".into()),
        server_figures_up_to_s: Some(1.0),
        bytes_sent: 1_000_000,
        bytes_received: 999_000,
        bytes_in_flight: 1_000,
        throughput_bps: 3_996_000.0,
        local_cpu_pct: 12.5,
        remote_cpu_pct: 0.0,
        local_cpu: cpu,
        remote_cpu: CpuSummary::default(),
        local_cores: vec![CoreCpu {
            core: 1,
            busy_pct: 50.0,
            ..CoreCpu::default()
        }],
        remote_cores: Vec::new(),
        retransmits: None,
        rtt_us: None,
        link_speed_bps: Some(10_000_000_000),
        link_speed_source: Some(LinkSpeedSource::Flag),
        performance_index: Some(0.5),
        udp: None,
        rr: None,
        latency_under_load: None,
        self_probes: None,
        rpm: None,
        frames: None,
        flows: Vec::new(),
    }
}

/// A frame engine's `summary.frames`, live frames out, with a per-flow spread.
fn frames() -> FrameSummary {
    FrameSummary {
        engine: wire::spec::UdpEngine::Xdp,
        tx_path: Some(wire::spec::FramePath::XdpLive),
        tx_fallback: None,
        rx_path: None,
        rx_queues: None,
        rx_fallback: None,
        rx_socket_dropped: None,
        interface: "veth1".into(),
        frames_sent: 10,
        frames_refused: 0,
        frames_at_driver: 10,
        bytes_at_driver: 640,
        frames_per_queue: None,
        flows_at_driver: Some(wire::msg::FlowSpread::of(2, &[6, 4])),
        pps_at_driver: 5.0,
    }
}

/// One summary of every family and shape its producers make, named by the family it reads as.
fn every_shape() -> Vec<(&'static str, Flat)> {
    let tcp = Flat {
        retransmits: Some(89),
        rtt_us: Some(50),
        ..common()
    };
    let udp = UdpSummary {
        packets_sent: 10,
        packets_received: 9,
        packets_lost: 1,
        loss_pct: 10.0,
        jitter_us: 8.339,
        ..UdpSummary::default()
    };
    vec![
        ("stream", tcp.clone()),
        ("stream", common()),
        (
            "stream",
            Flat {
                self_probes: Some(rr(40)),
                latency_under_load: Some(latency_under_load()),
                ..tcp.clone()
            },
        ),
        (
            "datagram",
            Flat {
                udp: Some(udp),
                ..common()
            },
        ),
        (
            "datagram",
            Flat {
                udp: Some(udp),
                frames: Some(frames()),
                latency_under_load: Some(latency_under_load()),
                ..common()
            },
        ),
        (
            "transaction",
            Flat {
                rr: Some(rr(3620)),
                ..tcp.clone()
            },
        ),
        (
            "transaction",
            Flat {
                rr: Some(rr(0)),
                ..common()
            },
        ),
        (
            "rpm",
            Flat {
                rpm: Some(stored_rpm()),
                ..tcp
            },
        ),
    ]
}

#[test]
fn every_family_writes_byte_for_byte_what_the_flat_summary_wrote() {
    for (family, flat) in every_shape() {
        let before = serde_json::to_string(&flat).unwrap();
        let read: Summary = serde_json::from_str(&before).unwrap();
        assert_eq!(read.family.name(), family, "{before}");
        assert_eq!(serde_json::to_string(&read).unwrap(), before);
        let back: Flat = serde_json::from_str(&serde_json::to_string(&read).unwrap()).unwrap();
        assert_eq!(back, flat, "the flat reader reads what a family writes");
    }
}

#[test]
fn each_family_round_trips_with_its_own_figures_and_no_other() {
    for (_, flat) in every_shape() {
        let read: Summary = serde_json::to_value(&flat)
            .and_then(serde_json::from_value)
            .unwrap();
        assert_eq!(read.retransmits(), flat.retransmits);
        assert_eq!(read.rtt_us(), flat.rtt_us);
        assert_eq!(read.udp(), flat.udp.as_ref());
        assert_eq!(read.rr(), flat.rr.as_ref());
        assert_eq!(read.self_probes(), flat.self_probes.as_ref());
        assert_eq!(read.latency_under_load(), flat.latency_under_load.as_ref());
        assert_eq!(read.rpm(), flat.rpm.as_deref());
        assert_eq!(read.frames(), flat.frames.as_ref());
        let again: Summary = serde_json::to_value(&read)
            .and_then(serde_json::from_value)
            .unwrap();
        assert_eq!(again, read);
        match &read.family {
            Family::Datagram(_) => assert_eq!(read.tcp(), None, "a datagram run has no TCP"),
            _ => assert!(read.tcp().is_some()),
        }
    }
}

#[test]
fn a_summary_mixing_two_families_is_refused_by_name() {
    let udp = UdpSummary::default();
    let mixed = [
        (
            Flat {
                rr: Some(rr(1)),
                udp: Some(udp),
                ..common()
            },
            ["`transactions`", "`packets_sent`"],
        ),
        (
            Flat {
                udp: Some(udp),
                retransmits: Some(3),
                ..common()
            },
            ["`packets_sent`", "`retransmits`"],
        ),
        (
            Flat {
                rpm: Some(stored_rpm()),
                self_probes: Some(rr(1)),
                ..common()
            },
            ["`rpm`", "`self_probes`"],
        ),
        (
            Flat {
                frames: Flat::frames_of(every_shape()),
                ..common()
            },
            ["stream run", "`frames`"],
        ),
    ];
    for (flat, words) in mixed {
        let text = serde_json::to_string(&flat).unwrap();
        let err = serde_json::from_str::<Summary>(&text)
            .unwrap_err()
            .to_string();
        for w in words {
            assert!(err.contains(w), "{err}");
        }
    }
}

impl Flat {
    /// The frames of the first shape that has them.
    fn frames_of(shapes: Vec<(&str, Flat)>) -> Option<FrameSummary> {
        shapes.into_iter().find_map(|(_, f)| f.frames)
    }
}

#[test]
fn latency_under_load_is_set_on_the_runs_latency_loads_and_refused_elsewhere() {
    for (family, flat) in every_shape() {
        let mut s: Summary = serde_json::to_value(&flat)
            .and_then(serde_json::from_value)
            .unwrap();
        let set = s.set_latency_under_load(latency_under_load());
        match family {
            "stream" | "datagram" => {
                assert_eq!(set, Ok(()));
                assert_eq!(s.latency_under_load(), Some(&latency_under_load()));
            }
            _ => {
                let err = set.unwrap_err().to_string();
                assert!(err.contains(family) && err.contains("--latency"), "{err}");
                assert_eq!(s.latency_under_load(), None);
            }
        }
    }
}
