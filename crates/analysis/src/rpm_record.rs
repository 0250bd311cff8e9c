//! One direction of `linerate rpm` as a stored run: a `tcp_stream` [`RunRecord`] over all of
//! the direction's load-generating connections, built from their own records (each a one-stream
//! `tcp_stream` session) and the direction's figures ([`RpmDirection`]). Pure arithmetic.
//!
//! What the record holds (docs/METHODOLOGY.md section 20, docs/RESULTS.md):
//! - the first connection's target, server, hosts, user and spec, with `spec.streams` the
//!   connections that left a record (those running at the end, less any that failed: as many
//!   as the flow's `streams`) and `spec.duration_ms` the direction's length;
//! - one flow per direction of data whose `streams` are every connection's stream, in the order
//!   they were added (renumbered from 0), each over its own connection's life;
//! - the load's flow over the direction's goodput window (the last MAD intervals of its grid,
//!   `RpmDirection::window_s`): `bytes_received` and `bytes_sent` the bytes read and written in
//!   it, `throughput_bps` (as the summary's) and `sender_throughput_bps` those over `window_s`,
//!   so that "received B over its W s window = G" holds; `bytes_in_flight`,
//!   `bytes_received_after_drain` and `reconciled` summed over the connections' whole lives
//!   (what the drain checks); the direction's CPU figures, `interrupted` from the rpm run (a
//!   load connection is always stopped, so its own record's flag says nothing);
//! - the link speed the first connection's record found (a real NIC's or `--link-speed`, never
//!   a veth's) and the Performance Index by `link::set_performance_index`'s rule (none above
//!   the link's speed); the rpm run's overall figure in `summary.rpm.overall`;
//! - no `intervals`: the direction's time series is `summary.rpm.direction.timeline`, each
//!   interval's goodput the bytes every connection read in it over ID.

use measure::stats::Spread;
use record::rpm::{RpmDirection, RpmResult, RpmWay, StoredRpm};
use record::{CpuSummary, Family, FlowSummary, RpmFamily, RunRecord, Summary, TcpFigures};
use wire::spec::Flow;

/// Why a direction has no record to store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpmRecordError {
    /// Not one load connection finished with a record (each failed, or none started).
    #[error("rpm {way}: no load connection finished, so this direction has no run to store")]
    NoConnections {
        /// The direction, `up` or `down`.
        way: &'static str,
    },
}

/// The run stored for `direction` of `result`, from its load connections' records `loads`
/// (in the order the connections were added).
pub fn build(
    result: &RpmResult,
    direction: &RpmDirection,
    loads: &[RunRecord],
) -> Result<RunRecord, RpmRecordError> {
    let first = loads.first().ok_or(RpmRecordError::NoConnections {
        way: direction.direction.as_str(),
    })?;
    let duration_s = direction.timeline.last().map_or(0.0, |t| t.t_s);
    let mut spec = first.spec.clone();
    spec.streams = u16::try_from(loads.len()).unwrap_or(u16::MAX);
    spec.duration_ms = (duration_s * 1000.0).round() as u64;
    let flows = merged_flows(direction, loads, duration_s);
    let summary = summary(result, direction, loads, first, flows, duration_s);
    let (target, started) = (first.target.clone(), first.started_at_unix_ms);
    let (server, hosts) = (first.server.clone(), first.hosts.clone());
    // No intervals: the rpm direction's figures are its summary's (see `RunRecord::is_rpm`).
    let mut record = RunRecord::new(spec, target, started, server, hosts, summary);
    record.user = first.user.clone();
    Ok(record)
}

/// The flow the load of `way` travels.
fn flow_of(way: RpmWay) -> Flow {
    match way {
        RpmWay::Up => Flow::ClientToServer,
        RpmWay::Down => Flow::ServerToClient,
    }
}

/// One flow per direction of data over every connection: streams in connection order, the
/// drain's byte counts summed; the load's flow's bytes and rates over the goodput window, its
/// CPU the direction's.
fn merged_flows(d: &RpmDirection, loads: &[RunRecord], duration_s: f64) -> Vec<FlowSummary> {
    let mut flows: Vec<FlowSummary> = Vec::new();
    for f in loads.iter().flat_map(|r| &r.summary.flows) {
        match flows.iter_mut().find(|m| m.flow == f.flow) {
            Some(m) => add_flow(m, f),
            None => flows.push(f.clone()),
        }
    }
    let goodput = Spread::of(d.timeline.iter().map(|t| t.goodput_bps)).unwrap_or_default();
    for f in &mut flows {
        for (i, s) in f.streams.iter_mut().enumerate() {
            s.stream = u16::try_from(i).unwrap_or(u16::MAX);
        }
        f.window_s = duration_s;
        f.interval_throughput_bps = goodput;
        // One connection's verdict, service demand, timing or fairness is not the direction's.
        f.limited_by = None;
        f.sender_service_demand_us_per_kb = None;
        f.receiver_service_demand_us_per_kb = None;
        f.efficiency = None;
        f.tcp_time = None;
        f.stream_spread = None;
        if f.flow == flow_of(d.direction) {
            f.window_s = d.window_s;
            (f.bytes_received, f.bytes_sent) = (d.received_bytes, d.sent_bytes);
            f.throughput_bps = d.goodput_bps;
            f.sender_throughput_bps = match d.window_s > 0.0 {
                true => d.sent_bytes as f64 * 8.0 / d.window_s,
                false => 0.0,
            };
            let (local, remote) = (
                d.local_cpu_pct.unwrap_or(0.0),
                d.remote_cpu_pct.unwrap_or(0.0),
            );
            (f.sender_cpu_pct, f.receiver_cpu_pct) = match d.direction {
                RpmWay::Up => (local, remote),
                RpmWay::Down => (remote, local),
            };
        }
    }
    flows
}

/// Adds connection flow `f` to the merged flow `m`.
fn add_flow(m: &mut FlowSummary, f: &FlowSummary) {
    m.bytes_sent += f.bytes_sent;
    m.bytes_received += f.bytes_received;
    m.bytes_in_flight += f.bytes_in_flight;
    m.bytes_received_after_drain += f.bytes_received_after_drain;
    m.reconciled &= f.reconciled;
    m.throughput_bps += f.throughput_bps;
    m.sender_throughput_bps += f.sender_throughput_bps;
    m.retransmits = sum_opt(m.retransmits, f.retransmits);
    // A mean over streams: each side weighs as many streams as it holds.
    m.rtt_us = weighted_mean(
        [(m.rtt_us, m.streams.len()), (f.rtt_us, f.streams.len())]
            .into_iter()
            .filter_map(|(r, n)| Some((r?, n))),
    );
    m.streams.extend(f.streams.iter().cloned());
}

/// The mean of values each standing for `n` streams (at least one); `None` without values.
fn weighted_mean(parts: impl Iterator<Item = (u32, usize)>) -> Option<u32> {
    let (sum, n) = parts.fold((0u64, 0u64), |(sum, n), (v, k)| {
        let k = k.max(1) as u64;
        (sum + u64::from(v) * k, n + k)
    });
    (n > 0).then(|| (sum / n) as u32)
}

fn sum_opt(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

/// One end's CPU: the direction's data-thread figure, split into user and system time as the
/// connections' own figures split it; the process and host figures of the first connection
/// (whose time spans the direction, and which count the whole process and host).
fn cpu(threads_pct: Option<f64>, ends: &[&CpuSummary]) -> CpuSummary {
    let t = threads_pct.unwrap_or(0.0);
    let (user, sys) = ends
        .iter()
        .fold((0.0, 0.0), |(u, s), c| (u + c.user_pct, s + c.sys_pct));
    let (user_pct, sys_pct) = if user + sys > 0.0 {
        (t * user / (user + sys), t * sys / (user + sys))
    } else {
        (0.0, 0.0)
    };
    let first = ends.first().copied().copied().unwrap_or_default();
    CpuSummary {
        threads_pct: t,
        user_pct,
        sys_pct,
        process_pct: first.process_pct,
        system_busy_pct: first.system_busy_pct,
    }
}

fn summary(
    result: &RpmResult,
    d: &RpmDirection,
    loads: &[RunRecord],
    first: &RunRecord,
    flows: Vec<FlowSummary>,
    duration_s: f64,
) -> Summary {
    let local: Vec<&CpuSummary> = loads.iter().map(|r| &r.summary.local_cpu).collect();
    let remote: Vec<&CpuSummary> = loads.iter().map(|r| &r.summary.remote_cpu).collect();
    let (local_cpu, remote_cpu) = (cpu(d.local_cpu_pct, &local), cpu(d.remote_cpu_pct, &remote));
    let s = &first.summary;
    let link = s.link_speed_bps;
    let mut summary = Summary {
        duration_s,
        interrupted: result.interrupted,
        until_stopped: false,
        incomplete: loads.iter().find_map(|r| r.summary.incomplete.clone()),
        server_figures_up_to_s: loads.iter().find_map(|r| r.summary.server_figures_up_to_s),
        bytes_sent: flows.iter().map(|f| f.bytes_sent).sum(),
        bytes_received: flows.iter().map(|f| f.bytes_received).sum(),
        bytes_in_flight: flows.iter().map(|f| f.bytes_in_flight).sum(),
        throughput_bps: d.goodput_bps,
        local_cpu_pct: local_cpu.threads_pct,
        remote_cpu_pct: remote_cpu.threads_pct,
        local_cpu,
        remote_cpu,
        local_cores: s.local_cores.clone(),
        remote_cores: s.remote_cores.clone(),
        link_speed_bps: link,
        link_speed_source: s.link_speed_source.clone(),
        // Set below by the rule every throughput run follows (`link::set_performance_index`).
        performance_index: None,
        family: Family::Rpm(RpmFamily {
            rpm: Box::new(StoredRpm {
                draft: result.draft.clone(),
                params: result.params,
                idle: result.idle,
                overall: result.overall.clone(),
                direction: d.clone(),
            }),
            tcp: TcpFigures {
                retransmits: flows.iter().fold(None, |a, f| sum_opt(a, f.retransmits)),
                rtt_us: weighted_mean(
                    flows
                        .iter()
                        .filter_map(|f| Some((f.rtt_us?, f.streams.len()))),
                ),
            },
        }),
        flows,
    };
    crate::link::set_performance_index(&mut summary);
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpm::Params;
    use crate::rpm_window::DirectionTracker;
    use crate::testing::record_with;
    use record::rpm::{IdleBaseline, RpmDocument, RpmParams};

    /// A direction of three connections over three intervals, its CPU set.
    fn direction(loads: &[RunRecord]) -> RpmDirection {
        let mut t = DirectionTracker::new(Params::default());
        for (i, _) in loads.iter().enumerate() {
            for (conn, r) in loads[..=i].iter().enumerate() {
                t.interval(conn as u16, i, &r.intervals[0]);
            }
            t.tick((i + 1) as u16);
        }
        let mut d = t.finish(
            RpmWay::Up,
            &IdleBaseline::default(),
            record::rpm::RpmEnd::TimeLimit,
            Vec::new(),
        );
        d.local_cpu_pct = Some(120.0);
        d.remote_cpu_pct = Some(90.0);
        d
    }

    fn result(d: &RpmDirection, interrupted: bool) -> RpmResult {
        RpmResult {
            kind: RpmDocument::Rpm,
            draft: crate::rpm::DRAFT.into(),
            target: "in-process".into(),
            started_at_unix_ms: 1,
            params: RpmParams {
                moving_average_intervals: 4,
                interval_s: 1.0,
                trimmed_keep: 0.95,
                stability_tolerance: 0.05,
                max_connections: 16,
                probes_per_s: 50.0,
                self_probes_per_connection: 3,
            },
            time_limit_s: 30.0,
            duration_s: 3.2,
            idle: IdleBaseline::default(),
            overall: crate::rpm::overall(std::slice::from_ref(d)),
            directions: vec![d.clone()],
            interrupted,
            run_ids: Vec::new(),
        }
    }

    /// Three stopped load connections: each record says interrupted.
    fn loads() -> Vec<RunRecord> {
        (1..=3)
            .map(|i| {
                let mut r = record_with("tcp", 1e9 * f64::from(i));
                r.summary.interrupted = true;
                r
            })
            .collect()
    }

    #[test]
    fn the_record_sums_the_connections_and_keeps_the_direction() {
        let loads = loads();
        let d = direction(&loads);
        let r = build(&result(&d, false), &d, &loads).unwrap();
        assert_eq!(r.kind, wire::TestKind::TcpStream);
        assert_eq!(r.spec.streams, 3);
        assert_eq!(r.spec.duration_ms, 3000);
        let s = &r.summary;
        assert!(
            !s.interrupted,
            "the load connections' own flag is not copied"
        );
        // Over the goodput window (the 3 intervals, 1 + 2 + 3 connections' first intervals):
        // received bytes over the window's seconds are the goodput, as the text says.
        let first = |l: &RunRecord| l.intervals[0].flows[0].receiver_bytes;
        let received: u64 = (0..3)
            .map(|i| loads[..=i].iter().map(first).sum::<u64>())
            .sum();
        let f = &s.flows[0];
        assert_eq!((s.bytes_received, f.bytes_received), (received, received));
        assert_eq!((f.window_s, s.duration_s), (3.0, 3.0));
        assert_eq!(s.throughput_bps, d.goodput_bps);
        assert_eq!(f.throughput_bps, received as f64 * 8.0 / 3.0);
        assert_eq!(f.sender_throughput_bps, s.bytes_sent as f64 * 8.0 / 3.0);
        // The drain's figures stay the connections' whole lives'.
        let drained: u64 = (loads.iter())
            .map(|l| l.summary.flows[0].bytes_received_after_drain)
            .sum();
        assert_eq!(f.bytes_received_after_drain, drained);
        assert_eq!((s.local_cpu_pct, s.remote_cpu_pct), (120.0, 90.0));
        assert_eq!(s.flows.len(), 1, "one flow: the direction's");
        assert_eq!((f.sender_cpu_pct, f.receiver_cpu_pct), (120.0, 90.0));
        let ids: Vec<u16> = f.streams.iter().map(|s| s.stream).collect();
        assert_eq!(ids, [0, 1, 2]);
        assert_eq!(s.retransmits(), Some(24), "8 per connection");
        // A fourth connection ran at the end but failed: no record, no stream, not counted.
        let four = RpmDirection {
            connections: 4,
            ..d.clone()
        };
        let r4 = build(&result(&four, false), &four, &loads).unwrap();
        assert_eq!((r4.spec.streams, r4.summary.flows[0].streams.len()), (3, 3));
        assert!(r.intervals.is_empty());
        let rpm = s.rpm().unwrap();
        assert_eq!(rpm.direction, d);
        assert_eq!(rpm.overall, crate::rpm::overall(std::slice::from_ref(&d)));
        assert_eq!(rpm.params.max_connections, 16);
        let back: RunRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        let timeline = |r: &RunRecord| r.summary.rpm().map(|x| x.direction.timeline.len());
        assert_eq!(
            timeline(&back),
            Some(3),
            "the stored record reads back with its rpm"
        );
    }

    /// The first connection's link speed (`link_from_hosts` left only a real NIC's or
    /// `--link-speed`): the Performance Index by the throughput kinds' rule, none above it.
    #[test]
    fn the_performance_index_follows_the_link_rule_of_every_throughput_run() {
        let with_link = |gbps: f64| {
            let mut loads = loads();
            loads[0].summary.link_speed_bps = Some((gbps * 1e9) as u64);
            let mut d = direction(&loads);
            d.goodput_bps = 15.5e9;
            build(&result(&d, false), &d, &loads).unwrap().summary
        };
        let above = with_link(10.0);
        assert_eq!(above.link_speed_bps, Some(10_000_000_000));
        assert_eq!(
            above.performance_index, None,
            "15.5 Gbit/s on a 10 Gbit/s link"
        );
        let within = with_link(100.0);
        // T/C x T/L: 15500 Mbit/s over the busier end's 120 %, times 15500 / 100000.
        let pi = within.performance_index.unwrap();
        assert!((pi - 15500.0 / 120.0 * 0.155).abs() < 1e-9, "{pi}");
        let mut none = loads();
        none[0].summary.link_speed_bps = None;
        let d = direction(&none);
        let s = build(&result(&d, false), &d, &none).unwrap().summary;
        assert_eq!(s.performance_index, None, "no link speed, no index");
    }

    #[test]
    fn interrupted_comes_from_the_rpm_run_and_no_connection_is_an_error() {
        let loads = loads();
        let d = direction(&loads);
        let r = build(&result(&d, true), &d, &loads[..1]).unwrap();
        assert!(r.summary.interrupted);
        assert_eq!(r.summary.flows[0].streams.len(), 1);
        let err = build(&result(&d, false), &d, &[]).unwrap_err();
        assert_eq!(err, RpmRecordError::NoConnections { way: "up" });
        assert!(err.to_string().contains("rpm up"), "{err}");
    }
}
