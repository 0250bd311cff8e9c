//! A run's summary from both ends' raw figures: the first of the passes [`crate::summarize()`]
//! runs (the link speed from the drivers and the verdicts follow there).
//!
//! Pure functions over plain data, so every formula is unit-tested. Throughput is receiver
//! goodput over the receiver's own window (the client's, or the server's: the test duration
//! from `Begin` by its clock, or from the warm-up's end: `window.rs`); bytes still in flight when the window closed are counted
//! separately and reconciled against what the receiver read after draining. The datagram and
//! request/response parts are in `udp_rr.rs`.

use std::time::Duration;

use measure::cpu::{CpuTime, SystemCpu};
use measure::stats::Spread;
use measure::units::bits_per_sec;
use record::{CpuSummary, End, FlowSummary, IntervalSample, StreamSummary, Summary};
use wire::spec::{DataPath, Flow, Loss};

use crate::family::sum_opt;
use crate::raw::RawRun;
use crate::udp_rr::{udp_stream_summary, udp_total};
use crate::window::{from_start, Windows};

/// One stream's share of its flow.
struct StreamPart {
    summary: StreamSummary,
    /// What its receiver had read after draining.
    drained: u64,
    /// Its sender's retransmitted segments: its TCP_INFO's, or what its end reported.
    retransmits: Option<u32>,
    sender_cpu_pct: f64,
    receiver_cpu_pct: f64,
    /// Its worker threads' CPU time on the client and on the server.
    local_cpu: CpuTime,
    remote_cpu: CpuTime,
}

/// Stream `i` of `raw` (stream number `stream`, in direction `flow`).
fn stream_part(raw: &RawRun, i: usize, (stream, flow): (u16, Flow), w: Windows) -> StreamPart {
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
    // A stream that failed (its peer gone) has no report: its thread's own figure.
    let local_cpu = local_report
        .map(|r| r.cpu)
        .or(local.map(|l| l.cpu))
        .unwrap_or_default();
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
    // A client whose senders report retransmits without TCP_INFO (a stock iperf3 client).
    let reported = match flow {
        Flow::ClientToServer => local_report.and_then(|r| r.retransmits),
        Flow::ServerToClient => None,
    };
    let [snd, rcv_stop, rcv_end] = from_start(raw, i, flow, [snd, rcv_stop, rcv_end]);
    let (sent, received) = (snd.bytes, rcv_stop.bytes);
    let udp = (raw.spec.kind().row().loss == Loss::Datagrams).then(|| {
        udp_stream_summary(
            snd.packets,
            rcv_end.rx.unwrap_or_default(),
            rcv_stop.rx.unwrap_or_default(),
            w.client_s,
            w.receiver(flow),
        )
    });
    let server_wall = Duration::from_micros(raw.server.wall_us);
    let (local_pct, remote_pct) = (
        local_cpu.pct_of(raw.local_wall),
        remote.cpu.pct_of(server_wall),
    );
    let (sender_cpu_pct, receiver_cpu_pct) = match flow {
        Flow::ClientToServer => (local_pct, remote_pct),
        Flow::ServerToClient => (remote_pct, local_pct),
    };
    StreamPart {
        summary: StreamSummary {
            stream,
            bytes_sent: sent,
            bytes_received: received,
            throughput_bps: bits_per_sec(received, w.receiver(flow)),
            tcp_info,
            udp,
            error: local_error.or(remote.error.map(|e| format!("server: {e}"))),
            receive: rcv_end.receive,
            send_mode: snd.send_mode,
        },
        drained: rcv_end.bytes,
        retransmits: tcp_info.map(|t| t.retransmits).or(reported),
        sender_cpu_pct,
        receiver_cpu_pct,
        local_cpu,
        remote_cpu: remote.cpu,
    }
}

/// Totals of a flow once all its streams are in; `datagrams` for UDP tests.
fn finish_flow(f: &mut FlowSummary, datagrams: bool, w: Windows, intervals: &[IntervalSample]) {
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
    f.window_s = w.receiver(f.flow);
    f.throughput_bps = bits_per_sec(f.bytes_received, f.window_s);
    f.sender_throughput_bps = bits_per_sec(f.bytes_sent, w.client_s);
    f.stream_spread = crate::streams::spread(&f.streams);
    f.receive = FlowSummary::receive_of(&f.streams);
    f.send_mode = FlowSummary::send_mode_of(&f.streams);
    f.interval_throughput_bps = Spread::of(
        intervals
            .iter()
            .filter(|s| !s.omitted)
            .flat_map(|s| s.flows.iter())
            .filter(|x| x.flow == f.flow)
            .map(|x| x.throughput_bps),
    )
    .unwrap_or_default();
    let infos: Vec<_> = f.streams.iter().filter_map(|s| s.tcp_info).collect();
    if !infos.is_empty() {
        f.rtt_us = Some(infos.iter().map(|t| t.rtt_us).sum::<u32>() / infos.len() as u32);
    }
    // The senders' window: the client's for its own streams, the server's for the server's.
    let sender_window_s = match f.flow {
        Flow::ClientToServer => w.client_s,
        Flow::ServerToClient => w.server_s,
    };
    f.tcp_time = crate::tcp_time::of(&infos, sender_window_s);
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
pub(crate) fn build(raw: &RawRun, intervals: &[IntervalSample]) -> Summary {
    let w = Windows::of(raw);
    let mut local_threads = CpuTime::default();
    let mut remote_threads = CpuTime::default();
    let mut flows: Vec<FlowSummary> = Vec::new();
    for (i, &(stream, flow)) in raw.spec.flows().iter().enumerate() {
        let part = stream_part(raw, i, (stream, flow), w);
        local_threads = local_threads.plus(part.local_cpu);
        remote_threads = remote_threads.plus(part.remote_cpu);
        let at = match flows.iter().position(|f| f.flow == flow) {
            Some(at) => at,
            None => {
                flows.push(empty_flow(flow));
                flows.len() - 1
            }
        };
        let entry = &mut flows[at];
        entry.bytes_sent += part.summary.bytes_sent;
        entry.bytes_received += part.summary.bytes_received;
        entry.bytes_received_after_drain += part.drained;
        entry.retransmits = sum_opt(entry.retransmits, part.retransmits);
        entry.sender_cpu_pct += part.sender_cpu_pct;
        entry.receiver_cpu_pct += part.receiver_cpu_pct;
        entry.streams.push(part.summary);
    }
    // Datagram tests may lose data by design; for them "reconciled" means every stream ended
    // cleanly (stream sockets must deliver every byte).
    let datagrams = raw.spec.kind().row().path == DataPath::Udp;
    let intervals = crate::partial::answered(raw, intervals);
    for f in &mut flows {
        finish_flow(f, datagrams, w, intervals);
    }
    let local_cpu = cpu_summary(
        local_threads,
        raw.local_process_cpu,
        raw.local_system_cpu,
        raw.local_wall,
    );
    let mut remote_cpu = cpu_summary(
        remote_threads,
        raw.server.process_cpu,
        raw.server.system_cpu,
        Duration::from_micros(raw.server.wall_us),
    );
    if raw.server_lost.is_some() {
        // The two ends' figures cover different times: no cost or efficiency from them.
        crate::partial::add_server_cpu(&raw.server, &mut flows, &mut remote_cpu);
    } else {
        crate::interface_frames::add_interface_frames(raw, &mut flows);
        crate::cost::add_service_demand(raw, &mut flows);
        crate::cost::add_efficiency(raw.spec.kind(), &mut flows);
    }
    crate::loss::add_loss_causes(raw, &mut flows);
    let mut summary = totals(raw, w.client_s, flows, local_cpu, remote_cpu);
    crate::link::set_performance_index(&mut summary);
    summary
}

/// The run's totals over its finished flows.
fn totals(
    raw: &RawRun,
    secs: f64,
    flows: Vec<FlowSummary>,
    local_cpu: CpuSummary,
    remote_cpu: CpuSummary,
) -> Summary {
    let throughput_bps: f64 = flows.iter().map(|f| f.throughput_bps).sum();
    let link = raw.spec.link_speed_bps;
    Summary {
        duration_s: secs,
        interrupted: raw.interrupted,
        // The command knows whether `-t 0` was asked for; it sets this.
        until_stopped: false,
        incomplete: raw.server_lost.clone(),
        server_figures_up_to_s: raw
            .server_lost
            .as_ref()
            .map(|_| raw.server.window_us as f64 / 1e6),
        bytes_sent: flows.iter().map(|f| f.bytes_sent).sum(),
        bytes_received: flows.iter().map(|f| f.bytes_received).sum(),
        bytes_in_flight: flows.iter().map(|f| f.bytes_in_flight).sum(),
        throughput_bps,
        local_cpu_pct: local_cpu.threads_pct,
        remote_cpu_pct: remote_cpu.threads_pct,
        local_cpu,
        remote_cpu,
        local_cores: raw.local_cores.clone(),
        remote_cores: raw.server.cores.clone(),
        link_speed_bps: link,
        link_speed_source: link.map(|_| record::LinkSpeedSource::Flag),
        // Set by `build` once the summary is whole (`link::set_performance_index`).
        performance_index: None,
        family: crate::family::of(raw, secs, &flows),
        flows,
    }
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
        sender_service_demand_us_per_kb: None,
        receiver_service_demand_us_per_kb: None,
        efficiency: None,
        retransmits: None,
        rtt_us: None,
        udp: None,
        tcp_time: None,
        limited_by: None,
        loss_causes: None,
        window_s: 0.0,
        stream_spread: None,
        receive: None,
        send_mode: None,
        interface_frames: None,
        streams: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::IntervalTracker;
    use crate::raw::{LocalStream, WorkerReport};
    use measure::tcp_info::TcpInfo;
    use measure::udp_stats::UdpCounts;
    use wire::msg::{ServerResults, StreamCounts, StreamEnd};
    use wire::spec::{Direction, Params, StreamParams, TestKind};
    use wire::TestSpec;

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
    ) -> Option<Result<WorkerReport, crate::StreamFailure>> {
        Some(Ok(WorkerReport {
            cpu: CpuTime {
                user_us: 0,
                sys_us: cpu_us,
            },
            tcp_info: info,
            retransmits: None,
            counts: bytes(total),
            ..WorkerReport::default()
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
            ..Default::default()
        };
        let recv = |c: UdpCounts| StreamCounts {
            bytes: c.bytes,
            packets: c.packets,
            rx: Some(c),
            ..Default::default()
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
            server_lost: None,
            window_start: None,
            local_cores: Vec::new(),
            local_drops: None,
            local_link: None,
            local_wall: Duration::from_secs(2),
            local_streams: vec![LocalStream {
                at_stop: sent(2000),
                now: sent(2000),
                result: Some(Ok(WorkerReport {
                    counts: sent(2000),
                    ..Default::default()
                })),
                cpu: CpuTime::default(),
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
        let u = s.udp().unwrap();
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
            server_lost: None,
            window_start: None,
            local_cores: Vec::new(),
            local_drops: None,
            local_link: None,
            local_wall: Duration::from_secs(2),
            local_streams: vec![
                LocalStream {
                    at_stop: bytes(0),
                    now: bytes(1_000_000),
                    result: report(1_000_000, 1_000_000, Some(info)),
                    cpu: CpuTime::default(),
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
                    cpu: CpuTime::default(),
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
            server_lost: None,
            window_start: None,
            local_cores: Vec::new(),
            local_drops: None,
            local_link: None,
            local_wall: Duration::from_secs(1),
            local_streams: vec![LocalStream {
                at_stop: bytes(100),
                now: bytes(150),
                result: None,
                cpu: CpuTime::default(),
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
}
