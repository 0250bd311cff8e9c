//! The interval bound's ground truths: arithmetic over synthetic intervals, and the widest
//! record the bound lets a run store, serialized.

use record::bounds::{MAX_INTERVALS, MAX_KEPT_ROUND_TRIPS, MAX_RECORD_BYTES};
use record::schema::MAX_PROBE_ROUND_TRIPS;
use record::{FlowInterval, IntervalCpu, IntervalSample, IntervalTcp, RrInterval, UdpInterval};
use wire::spec::Flow;

use crate::BoundedIntervals;

/// Interval `i` of `len` s: `bytes` each stream, datagrams and transactions from `i`, TCP
/// state from `i`, `round_trips` listed (smallest first).
fn interval(i: usize, len: f64, streams: usize, bytes: u64, round_trips: usize) -> IntervalSample {
    let flow = |flow| FlowInterval {
        flow,
        // Saturating: the widest record's `u64::MAX / 3` a stream would wrap (release) or
        // overflow (debug) here; the sum of its streams is still the widest number.
        sender_bytes: (bytes.saturating_mul(streams as u64)).saturating_add(1),
        receiver_bytes: bytes.saturating_mul(streams as u64),
        throughput_bps: 0.0,
        stream_receiver_bytes: vec![bytes; streams],
        udp: Some(UdpInterval {
            packets_sent: 10 + i as u64,
            packets_received: 9 + i as u64,
            packets_lost: if i % 3 == 0 { -1 } else { 2 },
            packets_out_of_order: i as u64 % 2,
            packets_duplicate: 1,
            packets_late: 3,
            jitter_us: i as f64,
            ..UdpInterval::default()
        }),
        rr: Some(RrInterval {
            transactions: 100 + i as u64,
            transactions_per_s: 0.0,
            p50_us: Some(10.0 + i as f64),
            p99_us: Some(50.0 + (i % 7) as f64),
        }),
        tcp_info: Some(IntervalTcp {
            retransmits: i as u32 % 5,
            snd_cwnd_segments: i as u32,
            rtt_us: 100 + i as u32,
            delivery_rate_bps: Some(1_000_000_000 + i as u64),
            min_rtt_us: Some(90 - (i as u32 % 10)),
        }),
        self_probes: Some(RrInterval {
            transactions: round_trips as u64,
            ..RrInterval::default()
        }),
        self_probe_round_trips_us: (0..round_trips)
            // Whole nanoseconds in µs, as the histogram gives them, up to a minute.
            .map(|k| (59_999_999_999 - k as u64 * 1_234_567) as f64 / 1000.0)
            .collect(),
    };
    IntervalSample {
        start_s: i as f64 * len,
        end_s: (i + 1) as f64 * len,
        flows: vec![flow(Flow::ClientToServer), flow(Flow::ServerToClient)],
        probe: Some(RrInterval {
            transactions: 7,
            transactions_per_s: 7.0,
            p50_us: Some(123.456_789_012_345_67),
            p99_us: Some(9_876.543_210_987_654),
        }),
        cpu: Some(IntervalCpu {
            local_pct: if i % 2 == 0 { 100.0 } else { 50.0 },
            remote_pct: Some(12.345_678_901_234_567),
            local_host_busy_pct: Some(99.999_999_999_999_99),
            remote_host_busy_pct: None,
        }),
        omitted: false,
    }
}

/// Σ over the kept intervals of one figure of the first flow.
fn sum(kept: &[IntervalSample], f: impl Fn(&FlowInterval) -> i128) -> i128 {
    kept.iter().map(|s| f(&s.flows[0])).sum()
}

#[test]
fn past_its_capacity_pairs_merge_and_every_count_adds_up_exactly() {
    let (cap, n) = (8, 8 + 13);
    let inputs: Vec<_> = (0..n)
        .map(|i| interval(i, 0.05, 3, 1000 + i as u64, 4))
        .collect();
    let mut kept = BoundedIntervals::new(cap, 1000);
    for s in inputs.clone() {
        kept.push(s);
        assert!(kept.len() <= cap, "{} kept", kept.len());
    }
    let kept = kept.into_vec();
    let counts: [fn(&FlowInterval) -> i128; 8] = [
        |f| f.sender_bytes.into(),
        |f| f.receiver_bytes.into(),
        |f| f.stream_receiver_bytes[2].into(),
        |f| f.udp.unwrap().packets_sent.into(),
        |f| f.udp.unwrap().packets_received.into(),
        |f| f.udp.unwrap().packets_lost.into(),
        |f| f.rr.unwrap().transactions.into(),
        |f| f.tcp_info.unwrap().retransmits.into(),
    ];
    for count in counts {
        assert_eq!(sum(&kept, count), sum(&inputs, count));
    }
    // The whole span, in order, without gaps; rates over each merged span.
    assert_eq!(kept[0].start_s, 0.0);
    assert_eq!(kept.last().unwrap().end_s, inputs.last().unwrap().end_s);
    assert!(kept.windows(2).all(|w| w[0].end_s == w[1].start_s));
    let first = &kept[0];
    let secs = first.end_s - first.start_s;
    assert!(
        (secs - 0.2).abs() < 1e-9,
        "16 inputs into 8, then 8 into 4: 4 × 0.05 s"
    );
    let f = &first.flows[0];
    assert_eq!(f.receiver_bytes, 3 * (1000 + 1001 + 1002 + 1003));
    assert_eq!(f.throughput_bps, f.receiver_bytes as f64 * 8.0 / secs);
    let rr = f.rr.unwrap();
    assert_eq!(rr.transactions_per_s, rr.transactions as f64 / secs);
    assert_eq!(
        (rr.p50_us, rr.p99_us),
        (Some(13.0), Some(53.0)),
        "the higher"
    );
    // TCP state and jitter from the later interval; CPU weighted by length.
    let tcp = f.tcp_info.unwrap();
    assert_eq!((tcp.snd_cwnd_segments, tcp.rtt_us), (3, 103));
    assert_eq!(tcp.min_rtt_us, Some(87));
    assert_eq!(f.udp.unwrap().jitter_us, 3.0);
    assert_eq!(first.cpu.unwrap().local_pct, 75.0);
    assert_eq!(first.cpu.unwrap().remote_host_busy_pct, None);
    // Round trips: both lists together, smallest first.
    assert_eq!(f.self_probe_round_trips_us.len(), 16);
    assert!(f.self_probe_round_trips_us.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn a_warm_up_interval_merges_only_with_another() {
    let mut kept = BoundedIntervals::new(4, 100);
    for i in 0..20 {
        let mut s = interval(i, 1.0, 1, 10, 0);
        s.omitted = i < 3;
        kept.push(s);
    }
    let kept = kept.into_vec();
    let omitted: Vec<_> = kept.iter().filter(|s| s.omitted).collect();
    assert_eq!(omitted.last().unwrap().end_s, 3.0, "{kept:#?}");
    let sum = |s: &[&IntervalSample]| s.iter().map(|s| s.flows[0].receiver_bytes).sum::<u64>();
    assert_eq!(sum(&omitted), 30);
    assert_eq!(sum(&kept.iter().collect::<Vec<_>>()), 200);
}

#[test]
fn round_trip_lists_are_thinned_alike_to_the_bound() {
    let mut kept = BoundedIntervals::new(16, 1000);
    for i in 0..40 {
        kept.push(interval(i, 1.0, 1, 1, 100));
    }
    assert!(lists_of(&kept).sum::<usize>() <= 1000);
    // Each list is its interval's round trips, smallest first, every one kept alike: the
    // same share of the probes each kept interval counts (`self_probes.transactions`).
    let share = |f: &FlowInterval| {
        f.self_probe_round_trips_us.len() as f64 / f.self_probes.unwrap().transactions as f64
    };
    let flows: Vec<_> = kept.as_slice().iter().flat_map(|s| &s.flows).collect();
    let first = share(flows[0]);
    assert!(first <= 0.5, "thinned: {first}");
    for f in &flows {
        assert!(
            (share(f) - first).abs() <= first * 0.05,
            "{} vs {first}",
            share(f)
        );
        assert!(f.self_probe_round_trips_us.is_sorted());
    }
    // One merged list over its own bound halves them all too.
    let mut kept = BoundedIntervals::new(4, usize::MAX);
    for i in 0..5 {
        kept.push(interval(i, 1.0, 1, 1, MAX_PROBE_ROUND_TRIPS));
    }
    assert!(lists_of(&kept).all(|n| n <= MAX_PROBE_ROUND_TRIPS));
}

fn lists_of(kept: &BoundedIntervals) -> impl Iterator<Item = usize> + '_ {
    (kept.as_slice().iter().flat_map(|s| &s.flows)).map(|f| f.self_probe_round_trips_us.len())
}

/// The widest record the bounds let a run store: the protocol's most streams both ways, every
/// interval field present with 20-digit counts, every interval's round trips at the most one
/// lists, for twice the intervals kept (so all of them are kept, merged once), with the summary of a real run's stream for each
/// of its 256 streams. It is about half the store's limit.
#[test]
fn the_widest_record_of_the_longest_run_serializes_well_under_the_stores_limit() {
    let streams = usize::from(wire::spec::bounds::MAX_STREAMS);
    let mut kept = BoundedIntervals::default();
    for i in 0..2 * MAX_INTERVALS {
        kept.push(interval(
            i,
            0.05,
            streams,
            u64::MAX / 3,
            MAX_PROBE_ROUND_TRIPS,
        ));
    }
    assert_eq!(kept.len(), MAX_INTERVALS);
    assert!(lists_of(&kept).sum::<usize>() <= MAX_KEPT_ROUND_TRIPS);
    let mut v = serde_json::to_value(crate::testing::record_with("tcp", 1e9)).unwrap();
    let flow = v["summary"]["flows"][0].clone();
    let stream = flow["streams"][0].clone();
    let ways = ["client_to_server", "server_to_client"].map(|way| {
        let mut f = flow.clone();
        f["flow"] = way.into();
        f["streams"] = vec![stream.clone(); streams].into();
        f
    });
    v["summary"]["flows"] = ways.to_vec().into();
    let mut record: record::RunRecord = serde_json::from_value(v).unwrap();
    record.intervals = kept.into_vec();
    let bytes = serde_json::to_vec(&record).unwrap().len();
    eprintln!("widest record: {bytes} bytes");
    // 8.4 MB when written: about half the limit.
    assert!(bytes < MAX_RECORD_BYTES * 3 / 5, "{bytes} bytes");
}
