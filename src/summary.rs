//! Turning both ends' raw counters into interval samples and the run summary.
//!
//! Pure functions over plain data, so every formula is unit-tested. Throughput is receiver
//! goodput over the receiver's own window (the client's, or the server's: the test duration
//! from `Begin` by its clock); bytes still in flight when the window closed are counted
//! separately and reconciled against what the receiver read after draining.

use std::time::Duration;

use measure::cpu::{CpuTime, SystemCpu};
use measure::latency::Latency;
use measure::stats::Spread;
use measure::udp_stats::UdpCounts;
use measure::units::bits_per_sec;
use results::{
    CpuSummary, End, FlowInterval, FlowSummary, IntervalSample, RrInterval, RrSummary,
    StreamSummary, Summary, UdpInterval, UdpSummary,
};
use wire::msg::{ServerResults, StreamCounts};
use wire::spec::Flow;
use wire::{TestKind, TestSpec};

/// The client's end of one data connection.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalStream {
    /// Counters when the window closed.
    pub at_stop: StreamCounts,
    /// Counters when the worker was last seen (after draining, or when it was given up on).
    pub now: StreamCounts,
    /// The worker's report, `None` if it never finished.
    pub result: Option<Result<engine::StreamReport, String>>,
}

/// Everything measured in one run, before summarising.
#[derive(Debug, Clone)]
pub struct RawRun {
    /// The test.
    pub spec: TestSpec,
    /// Test window (Begin → Stop) on the client's clock.
    pub window: Duration,
    /// Whether the user cut the run short.
    pub interrupted: bool,
    /// Begin → the client's last worker ended.
    pub local_wall: Duration,
    /// Client ends, in stream order.
    pub local_streams: Vec<LocalStream>,
    /// Client process CPU over `local_wall`.
    pub local_process_cpu: CpuTime,
    /// Client host CPU over `local_wall`.
    pub local_system_cpu: Option<SystemCpu>,
    /// The server's figures.
    pub server: ServerResults,
}

/// Turns successive counter snapshots into interval samples.
#[derive(Debug, Clone)]
pub struct IntervalTracker {
    flows: Vec<(u16, Flow)>,
    udp: bool,
    rr: bool,
    prev_local: Vec<StreamCounts>,
    prev_server: Vec<StreamCounts>,
    prev_end: Duration,
}

impl IntervalTracker {
    /// A tracker for `spec`'s streams, starting at zero.
    pub fn new(spec: &TestSpec) -> Self {
        let flows = spec.flows();
        let n = flows.len();
        Self {
            flows,
            udp: spec.kind() == TestKind::UdpStream,
            rr: spec.kind().is_rr(),
            prev_local: vec![StreamCounts::default(); n],
            prev_server: vec![StreamCounts::default(); n],
            prev_end: Duration::ZERO,
        }
    }

    /// The interval from the previous sample to `at`, from both ends' cumulative counters.
    pub fn sample(
        &mut self,
        at: Duration,
        local: &[StreamCounts],
        server: &[StreamCounts],
    ) -> IntervalSample {
        let secs = (at - self.prev_end.min(at)).as_secs_f64();
        let mut flows: Vec<FlowInterval> = Vec::new();
        for (i, &(_, flow)) in self.flows.iter().enumerate() {
            let (l, s) = (
                local.get(i).copied().unwrap_or_default(),
                server.get(i).copied().unwrap_or_default(),
            );
            let (pl, ps) = (self.prev_local[i], self.prev_server[i]);
            let ((snd, psnd), (rcv, prcv)) = match flow {
                Flow::ClientToServer => ((l, pl), (s, ps)),
                Flow::ServerToClient => ((s, ps), (l, pl)),
            };
            let entry = match flows.iter_mut().find(|f| f.flow == flow) {
                Some(f) => f,
                None => {
                    flows.push(FlowInterval {
                        flow,
                        sender_bytes: 0,
                        receiver_bytes: 0,
                        throughput_bps: 0.0,
                        stream_receiver_bytes: Vec::new(),
                        udp: self.udp.then(UdpInterval::default),
                        rr: self.rr.then(RrInterval::default),
                    });
                    flows.last_mut().expect("just pushed")
                }
            };
            let received = rcv.bytes.saturating_sub(prcv.bytes);
            entry.sender_bytes += snd.bytes.saturating_sub(psnd.bytes);
            entry.receiver_bytes += received;
            entry.stream_receiver_bytes.push(received);
            if let Some(r) = &mut entry.rr {
                r.transactions += snd.packets.saturating_sub(psnd.packets);
            }
            if let Some(u) = &mut entry.udp {
                let (rx, prx) = (rcv.rx.unwrap_or_default(), prcv.rx.unwrap_or_default());
                u.packets_sent += snd.packets.saturating_sub(psnd.packets);
                u.packets_received += rx.unique.saturating_sub(prx.unique);
                u.packets_lost += rx.lost_so_far as i64 - prx.lost_so_far as i64;
                u.packets_out_of_order += rx.out_of_order.saturating_sub(prx.out_of_order);
                u.packets_duplicate += rx.duplicates.saturating_sub(prx.duplicates);
                u.packets_late += rx.late.saturating_sub(prx.late);
                // Summed here, divided by the flow's stream count below.
                u.jitter_us += rx.jitter_ns as f64 / 1000.0;
            }
        }
        for f in &mut flows {
            f.throughput_bps = bits_per_sec(f.receiver_bytes, secs);
            if let Some(r) = &mut f.rr {
                r.transactions_per_s = per_sec(r.transactions, secs);
            }
            if let Some(u) = &mut f.udp {
                u.jitter_us /= f.stream_receiver_bytes.len().max(1) as f64;
                u.pps_sent = per_sec(u.packets_sent, secs);
                u.pps_received = per_sec(u.packets_received, secs);
            }
        }
        let sample = IntervalSample {
            start_s: self.prev_end.as_secs_f64(),
            end_s: at.as_secs_f64(),
            flows,
            probe: None,
        };
        self.prev_local = local.to_vec();
        self.prev_server = server.to_vec();
        self.prev_end = at;
        sample
    }
}

/// Puts an interval's round-trip percentiles into its request/response figures.
pub fn add_latency(sample: &mut IntervalSample, latency: Option<&Latency>) {
    for f in &mut sample.flows {
        if let (Some(r), Some(l)) = (&mut f.rr, latency.filter(|l| !l.is_empty())) {
            r.p50_us = Some(l.quantile_us(0.50));
            r.p99_us = Some(l.quantile_us(0.99));
        }
    }
}

fn per_sec(count: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}

/// Datagram accounting of one stream: `sent` by the sender, `rx_end` the receiver's final
/// accounting, `rx_stop` its accounting when the window closed.
fn udp_stream_summary(
    sent: u64,
    rx_end: UdpCounts,
    rx_stop: UdpCounts,
    secs: f64,
    rx_secs: f64,
) -> UdpSummary {
    let lost = rx_end.lost(sent);
    UdpSummary {
        packets_sent: sent,
        packets_received: rx_end.unique,
        packets_lost: lost,
        loss_pct: if sent > 0 {
            lost as f64 * 100.0 / sent as f64
        } else {
            0.0
        },
        packets_out_of_order: rx_end.out_of_order,
        packets_duplicate: rx_end.duplicates,
        packets_late: rx_end.late,
        jitter_us: rx_end.jitter_ns as f64 / 1000.0,
        pps_sent: per_sec(sent, secs),
        pps_received: per_sec(rx_stop.unique, rx_secs),
    }
}

/// Sums stream (or flow) accounting; jitter is the mean.
fn udp_total<'a>(parts: impl Iterator<Item = &'a UdpSummary>) -> Option<UdpSummary> {
    let mut total: Option<UdpSummary> = None;
    let mut n = 0.0;
    for p in parts {
        let t = total.get_or_insert_with(UdpSummary::default);
        t.packets_sent += p.packets_sent;
        t.packets_received += p.packets_received;
        t.packets_lost += p.packets_lost;
        t.packets_out_of_order += p.packets_out_of_order;
        t.packets_duplicate += p.packets_duplicate;
        t.packets_late += p.packets_late;
        t.jitter_us += p.jitter_us;
        t.pps_sent += p.pps_sent;
        t.pps_received += p.pps_received;
        n += 1.0;
    }
    total.map(|mut t| {
        t.jitter_us /= n;
        t.loss_pct = if t.packets_sent > 0 {
            t.packets_lost as f64 * 100.0 / t.packets_sent as f64
        } else {
            0.0
        };
        t
    })
}

fn cpu_summary(
    threads: CpuTime,
    process: CpuTime,
    system: Option<SystemCpu>,
    wall: Duration,
) -> CpuSummary {
    let pct = |us: u64| {
        CpuTime {
            user_us: us,
            sys_us: 0,
        }
        .pct_of(wall)
    };
    CpuSummary {
        threads_pct: threads.pct_of(wall),
        user_pct: pct(threads.user_us),
        sys_pct: pct(threads.sys_us),
        process_pct: process.pct_of(wall),
        system_busy_pct: system.map(|s| s.busy_pct),
    }
}

/// Summarises a run. `intervals` supplies the per-interval spread.
pub fn build(raw: &RawRun, intervals: &[IntervalSample]) -> Summary {
    let secs = raw.window.as_secs_f64();
    // Each receiver's count covers its own window: the client's, or the server's (the test
    // duration from Begin by its clock, closed before a Stop that may be late).
    let server_secs = match raw.server.window_us {
        0 => secs,
        us => us as f64 / 1e6,
    };
    let rx_secs = |flow: Flow| match flow {
        Flow::ClientToServer => server_secs,
        Flow::ServerToClient => secs,
    };
    let flows_of_spec = raw.spec.flows();
    let udp = raw.spec.kind() == TestKind::UdpStream;
    // Datagram tests may lose data by design; for them "reconciled" means every stream ended
    // cleanly (stream sockets must deliver every byte).
    let datagrams = raw.spec.kind().is_udp();
    let server_wall = Duration::from_micros(raw.server.wall_us);
    let mut local_threads = CpuTime::default();
    let mut remote_threads = CpuTime::default();
    let mut flows: Vec<FlowSummary> = Vec::new();
    for (i, &(stream, flow)) in flows_of_spec.iter().enumerate() {
        let local = raw.local_streams.get(i);
        let remote = raw.server.streams.get(i).cloned().unwrap_or_default();
        let local_report = local
            .and_then(|l| l.result.as_ref())
            .and_then(|r| r.as_ref().ok());
        let local_error = local.and_then(|l| match &l.result {
            Some(Err(e)) => Some(format!("client: {e}")),
            None => Some("client: stream did not finish draining in time".into()),
            Some(Ok(_)) => None,
        });
        let local_end = local_report
            .map(|r| r.counts)
            .or(local.map(|l| l.now))
            .unwrap_or_default();
        let local_cpu = local_report.map(|r| r.cpu).unwrap_or_default();
        local_threads = local_threads.plus(local_cpu);
        remote_threads = remote_threads.plus(remote.cpu);
        let local_at_stop = local.map(|l| l.at_stop).unwrap_or_default();
        // (sender's final counts, receiver's at stop, receiver's final, sender's TCP_INFO)
        let (snd, rcv_stop, rcv_end, tcp_info) = match flow {
            Flow::ClientToServer => (
                local_end,
                remote.at_stop,
                remote.total,
                local_report.and_then(|r| r.tcp_info),
            ),
            Flow::ServerToClient => (remote.total, local_at_stop, local_end, remote.tcp_info),
        };
        let (sent, received, drained) = (snd.bytes, rcv_stop.bytes, rcv_end.bytes);
        let udp = udp.then(|| {
            udp_stream_summary(
                snd.packets,
                rcv_end.rx.unwrap_or_default(),
                rcv_stop.rx.unwrap_or_default(),
                secs,
                rx_secs(flow),
            )
        });
        let error = local_error.or(remote.error.map(|e| format!("server: {e}")));
        let (sender_cpu, receiver_cpu) = match flow {
            Flow::ClientToServer => (
                local_cpu.pct_of(raw.local_wall),
                remote.cpu.pct_of(server_wall),
            ),
            Flow::ServerToClient => (
                remote.cpu.pct_of(server_wall),
                local_cpu.pct_of(raw.local_wall),
            ),
        };
        let entry = match flows.iter_mut().find(|f| f.flow == flow) {
            Some(f) => f,
            None => {
                flows.push(empty_flow(flow));
                flows.last_mut().expect("just pushed")
            }
        };
        entry.bytes_sent += sent;
        entry.bytes_received += received;
        entry.bytes_received_after_drain += drained;
        entry.sender_cpu_pct += sender_cpu;
        entry.receiver_cpu_pct += receiver_cpu;
        entry.streams.push(StreamSummary {
            stream,
            bytes_sent: sent,
            bytes_received: received,
            throughput_bps: bits_per_sec(received, rx_secs(flow)),
            tcp_info,
            udp,
            error,
        });
    }
    for f in &mut flows {
        f.bytes_in_flight = f.bytes_sent.saturating_sub(f.bytes_received);
        f.udp = udp_total(f.streams.iter().filter_map(|s| s.udp.as_ref()));
        // A stream socket delivers every byte or fails; datagrams may be lost, so there the
        // accounting (sent = received + lost) is exact by construction and "reconciled" means
        // every stream ended cleanly.
        f.reconciled = if datagrams {
            f.streams.iter().all(|s| s.error.is_none())
        } else {
            f.bytes_received_after_drain == f.bytes_sent
        };
        f.window_s = rx_secs(f.flow);
        f.throughput_bps = bits_per_sec(f.bytes_received, f.window_s);
        f.sender_throughput_bps = bits_per_sec(f.bytes_sent, secs);
        f.interval_throughput_bps = Spread::of(
            intervals
                .iter()
                .flat_map(|s| s.flows.iter())
                .filter(|x| x.flow == f.flow)
                .map(|x| x.throughput_bps),
        )
        .unwrap_or_default();
        let infos: Vec<_> = f.streams.iter().filter_map(|s| s.tcp_info).collect();
        if !infos.is_empty() {
            f.retransmits = Some(infos.iter().map(|t| t.retransmits).sum());
            f.rtt_us = Some(infos.iter().map(|t| t.rtt_us).sum::<u32>() / infos.len() as u32);
        }
    }
    let local_cpu = cpu_summary(
        local_threads,
        raw.local_process_cpu,
        raw.local_system_cpu,
        raw.local_wall,
    );
    let remote_cpu = cpu_summary(
        remote_threads,
        raw.server.process_cpu,
        raw.server.system_cpu,
        server_wall,
    );
    let throughput_bps: f64 = flows.iter().map(|f| f.throughput_bps).sum();
    let all_infos: Vec<_> = flows
        .iter()
        .flat_map(|f| f.streams.iter().filter_map(|s| s.tcp_info))
        .collect();
    let link = raw.spec.link_speed_bps;
    let busier = local_cpu.threads_pct.max(remote_cpu.threads_pct);
    Summary {
        duration_s: secs,
        interrupted: raw.interrupted,
        bytes_sent: flows.iter().map(|f| f.bytes_sent).sum(),
        bytes_received: flows.iter().map(|f| f.bytes_received).sum(),
        bytes_in_flight: flows.iter().map(|f| f.bytes_in_flight).sum(),
        throughput_bps,
        local_cpu_pct: local_cpu.threads_pct,
        remote_cpu_pct: remote_cpu.threads_pct,
        local_cpu,
        remote_cpu,
        retransmits: (!all_infos.is_empty()).then(|| all_infos.iter().map(|t| t.retransmits).sum()),
        rtt_us: (!all_infos.is_empty())
            .then(|| all_infos.iter().map(|t| t.rtt_us).sum::<u32>() / all_infos.len() as u32),
        link_speed_bps: link,
        performance_index: link.and_then(|l| performance_index(throughput_bps, busier, l as f64)),
        udp: udp_total(flows.iter().filter_map(|f| f.udp.as_ref())),
        rr: raw.spec.kind().is_rr().then(|| rr_summary(raw, secs)),
        latency_under_load: None,
        flows,
    }
}

/// Transactions and merged round trips of every requester (the client's streams).
/// Every transaction after the warm-up is one histogram sample, so the count comes from there.
fn rr_summary(raw: &RawRun, secs: f64) -> RrSummary {
    let mut latency = Latency::new();
    let (mut lost, mut missed) = (0, 0);
    for l in &raw.local_streams {
        if let Some(Ok(report)) = &l.result {
            lost += report.lost_transactions;
            missed += report.slots_missed;
            if let Some(h) = &report.latency {
                latency.add(h);
            }
        }
    }
    let omit_s = (raw.spec.rr().map_or(0, |rr| rr.omit_ms) as f64 / 1000.0).min(secs);
    RrSummary {
        transactions: latency.len(),
        transactions_per_s: per_sec(latency.len(), secs - omit_s),
        omit_s,
        lost_transactions: (raw.spec.kind() == TestKind::UdpRr).then_some(lost),
        slots_missed: raw
            .spec
            .rr()
            .is_some_and(|rr| rr.transactions_per_sec.is_some())
            .then_some(missed),
        connections_per_s: (raw.spec.kind() == TestKind::TcpCrr)
            .then(|| per_sec(latency.len(), secs - omit_s)),
        latency_us: latency.summary(),
    }
}

/// `PI = T/C × T/L` with T and L in Mbit/s and C in %; `None` when C or L is zero.
pub fn performance_index(throughput_bps: f64, cpu_pct: f64, link_bps: f64) -> Option<f64> {
    let t = throughput_bps / 1e6;
    let l = link_bps / 1e6;
    (cpu_pct > 0.0 && l > 0.0).then(|| (t / cpu_pct) * (t / l))
}

fn empty_flow(flow: Flow) -> FlowSummary {
    FlowSummary {
        flow,
        sender: match flow {
            Flow::ClientToServer => End::Client,
            Flow::ServerToClient => End::Server,
        },
        bytes_sent: 0,
        bytes_received: 0,
        bytes_in_flight: 0,
        bytes_received_after_drain: 0,
        reconciled: false,
        throughput_bps: 0.0,
        sender_throughput_bps: 0.0,
        interval_throughput_bps: Spread::default(),
        sender_cpu_pct: 0.0,
        receiver_cpu_pct: 0.0,
        retransmits: None,
        rtt_us: None,
        udp: None,
        window_s: 0.0,
        streams: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::tcp_info::TcpInfo;
    use wire::msg::StreamEnd;
    use wire::spec::{Direction, Params, StreamParams, TestKind};

    fn spec(direction: Direction, streams: u16) -> TestSpec {
        let params = Params::TcpStream {
            stream: StreamParams::new(direction),
            tcp: Default::default(),
        };
        TestSpec {
            link_speed_bps: Some(10_000_000_000),
            ..TestSpec::new(params, streams, 2000)
        }
    }

    #[test]
    fn tracker_splits_sender_and_receiver_by_flow() {
        let mut t = IntervalTracker::new(&spec(Direction::Bidir, 1));
        // stream 0 client->server, stream 1 server->client
        let s = t.sample(
            Duration::from_secs(1),
            &[bytes(1000), bytes(300)],
            &[bytes(900), bytes(400)],
        );
        assert_eq!(s.flows[0].flow, Flow::ClientToServer);
        assert_eq!(
            (s.flows[0].sender_bytes, s.flows[0].receiver_bytes),
            (1000, 900)
        );
        assert_eq!(
            (s.flows[1].sender_bytes, s.flows[1].receiver_bytes),
            (400, 300)
        );
        assert_eq!(s.flows[0].throughput_bps, 7200.0);
        let s = t.sample(
            Duration::from_millis(1500),
            &[bytes(2000), bytes(300)],
            &[bytes(1900), bytes(400)],
        );
        assert_eq!(s.start_s, 1.0);
        assert_eq!(s.flows[0].receiver_bytes, 1000);
        assert_eq!(s.flows[0].throughput_bps, 16000.0);
        assert_eq!(s.flows[1].receiver_bytes, 0);
    }

    fn bytes(b: u64) -> StreamCounts {
        StreamCounts {
            bytes: b,
            ..Default::default()
        }
    }

    fn report(
        total: u64,
        cpu_us: u64,
        info: Option<TcpInfo>,
    ) -> Option<Result<engine::StreamReport, String>> {
        Some(Ok(engine::StreamReport {
            bytes_total: total,
            cpu: CpuTime {
                user_us: 0,
                sys_us: cpu_us,
            },
            tcp_info: info,
            counts: bytes(total),
            latency: None,
            lost_transactions: 0,
            slots_missed: 0,
        }))
    }

    #[test]
    fn udp_intervals_and_summary_reconcile_exactly() {
        let mut spec = spec(Direction::Send, 1);
        spec.params = Params::defaults(TestKind::UdpStream);
        let mut t = IntervalTracker::new(&spec);
        let rx = |unique: u64, lost_so_far: u64, ooo: u64| UdpCounts {
            packets: unique,
            bytes: unique * 100,
            unique,
            lost_so_far,
            out_of_order: ooo,
            ..Default::default()
        };
        let sent = |p: u64| StreamCounts {
            bytes: p * 100,
            packets: p,
            rx: None,
        };
        let recv = |c: UdpCounts| StreamCounts {
            bytes: c.bytes,
            packets: c.packets,
            rx: Some(c),
        };
        let s1 = t.sample(
            Duration::from_secs(1),
            &[sent(1000)],
            &[recv(rx(990, 10, 0))],
        );
        let u = s1.flows[0].udp.unwrap();
        assert_eq!(
            (u.packets_sent, u.packets_received, u.packets_lost),
            (1000, 990, 10)
        );
        // Four of the gaps fill late: the interval's loss goes down.
        let s2 = t.sample(
            Duration::from_secs(2),
            &[sent(2000)],
            &[recv(rx(1994, 6, 4))],
        );
        let u = s2.flows[0].udp.unwrap();
        assert_eq!(
            (u.packets_received, u.packets_lost, u.packets_out_of_order),
            (1004, -4, 4)
        );

        let raw = RawRun {
            spec,
            window: Duration::from_secs(2),
            interrupted: false,
            local_wall: Duration::from_secs(2),
            local_streams: vec![LocalStream {
                at_stop: sent(2000),
                now: sent(2000),
                result: Some(Ok(engine::StreamReport {
                    counts: sent(2000),
                    ..Default::default()
                })),
            }],
            local_process_cpu: CpuTime::default(),
            local_system_cpu: None,
            server: ServerResults {
                streams: vec![StreamEnd {
                    at_stop: recv(rx(1994, 6, 4)),
                    total: recv(rx(1997, 3, 4)),
                    ..Default::default()
                }],
                wall_us: 2_000_000,
                ..Default::default()
            },
        };
        let s = build(&raw, &[s1, s2]);
        let u = s.udp.unwrap();
        assert_eq!(
            (u.packets_sent, u.packets_received, u.packets_lost),
            (2000, 1997, 3)
        );
        assert_eq!(u.packets_sent, u.packets_received + u.packets_lost);
        assert_eq!(u.pps_received, 997.0);
        assert!((u.loss_pct - 0.15).abs() < 1e-9);
        assert!(s.flows[0].reconciled);
    }

    #[test]
    fn send_summary_reconciles_and_computes_pi() {
        let info = TcpInfo {
            retransmits: 3,
            rtt_us: 100,
            ..Default::default()
        };
        let raw = RawRun {
            spec: spec(Direction::Send, 2),
            window: Duration::from_secs(2),
            interrupted: false,
            local_wall: Duration::from_secs(2),
            local_streams: vec![
                LocalStream {
                    at_stop: bytes(0),
                    now: bytes(1_000_000),
                    result: report(1_000_000, 1_000_000, Some(info)),
                },
                LocalStream {
                    at_stop: bytes(0),
                    now: bytes(500_000),
                    result: report(
                        500_000,
                        500_000,
                        Some(TcpInfo {
                            retransmits: 1,
                            rtt_us: 300,
                            ..info
                        }),
                    ),
                },
            ],
            local_process_cpu: CpuTime {
                user_us: 0,
                sys_us: 1_500_000,
            },
            local_system_cpu: None,
            server: ServerResults {
                streams: vec![
                    StreamEnd {
                        stream: 0,
                        at_stop: bytes(900_000),
                        total: bytes(1_000_000),
                        cpu: CpuTime {
                            user_us: 250_000,
                            sys_us: 0,
                        },
                        ..Default::default()
                    },
                    StreamEnd {
                        stream: 1,
                        at_stop: bytes(500_000),
                        total: bytes(500_000),
                        ..Default::default()
                    },
                ],
                wall_us: 2_000_000,
                ..Default::default()
            },
        };
        let s = build(&raw, &[]);
        let f = &s.flows[0];
        assert_eq!(f.sender, End::Client);
        assert_eq!(
            (f.bytes_sent, f.bytes_received, f.bytes_in_flight),
            (1_500_000, 1_400_000, 100_000)
        );
        assert!(f.reconciled);
        assert_eq!(f.throughput_bps, 5_600_000.0);
        assert_eq!(f.sender_throughput_bps, 6_000_000.0);
        assert_eq!(f.retransmits, Some(4));
        assert_eq!(f.rtt_us, Some(200));
        assert_eq!(s.local_cpu_pct, 75.0);
        assert_eq!(s.remote_cpu_pct, 12.5);
        // PI = (5.6 Mbit/s / 75 %) × (5.6 / 10000)
        let pi = s.performance_index.unwrap();
        assert!((pi - (5.6 / 75.0) * (5.6 / 10_000.0)).abs() < 1e-12, "{pi}");
    }

    #[test]
    fn unfinished_streams_are_not_reconciled_and_say_why() {
        let raw = RawRun {
            spec: spec(Direction::Reverse, 1),
            window: Duration::from_secs(1),
            interrupted: true,
            local_wall: Duration::from_secs(1),
            local_streams: vec![LocalStream {
                at_stop: bytes(100),
                now: bytes(150),
                result: None,
            }],
            local_process_cpu: CpuTime::default(),
            local_system_cpu: None,
            server: ServerResults {
                streams: vec![StreamEnd {
                    stream: 0,
                    at_stop: bytes(180),
                    total: bytes(200),
                    ..Default::default()
                }],
                wall_us: 1_000_000,
                ..Default::default()
            },
        };
        let s = build(&raw, &[]);
        let f = &s.flows[0];
        assert_eq!(f.sender, End::Server);
        assert_eq!(
            (f.bytes_sent, f.bytes_received, f.bytes_received_after_drain),
            (200, 100, 150)
        );
        assert!(!f.reconciled);
        assert!(f.streams[0]
            .error
            .as_deref()
            .unwrap()
            .contains("did not finish draining"));
        assert!(s.interrupted);
        assert_eq!(s.performance_index, None, "no CPU measured, no PI");
    }

    #[test]
    fn performance_index_formula() {
        assert_eq!(
            performance_index(1e9, 50.0, 10e9),
            Some((1000.0 / 50.0) * (1000.0 / 10000.0))
        );
        assert_eq!(performance_index(1e9, 0.0, 10e9), None);
    }
}
