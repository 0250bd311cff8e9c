//! The one entry that turns what a run measured into its [`Summary`]: every producer of a
//! measured run (linerate's client, its client towards an iperf3 server, the server that
//! stores a stock iperf3 client's run) calls [`summarize`], so a figure is added here once.
//!
//! The passes run in a fixed order, each reading what the ones before it set: both ends'
//! figures (`summary::build`: goodput, reconciliation, CPU, TCP_INFO, service demand and
//! efficiency, a UDP test's loss causes, the Performance Index with `--link-speed`), then the
//! link speed from the hosts' drivers without `--link-speed` (`link`), then what limited each
//! direction (`verdict`), which needs that link speed, then a frame engine's frames at both
//! drivers (`frames`). Pure: no I/O, no clock.
//!
//! Not here: `until_stopped` (the command knows whether `-t 0` was asked for), the
//! latency-under-load probe's figures (its method adds them to the finished record), and an
//! `rpm` direction's run, which `rpm_record` merges from its load connections' records (each
//! summarized here).

use record::{Hosts, IntervalSample, Summary};

use crate::raw::RawRun;
use crate::verdict::Client;

/// The summary of the run `raw` (its test is `raw.spec`) with its interval rows `intervals`
/// (their spread), both hosts' facts `hosts` (the link speed, a shaper, loopback) and who ran
/// its client end (`client`: the verdicts' hints name that client's flags).
pub fn summarize(
    raw: &RawRun,
    intervals: &[IntervalSample],
    hosts: &Hosts,
    client: Client,
) -> Summary {
    let mut summary = crate::summary::build(raw, intervals);
    crate::link::link_from_hosts(&mut summary, hosts);
    crate::verdict::add_verdicts_for(&mut summary, &raw.spec, hosts, client);
    let frames = crate::frames::frame_summary(raw, &summary);
    if let record::Family::Datagram(d) = &mut summary.family {
        d.frames = frames;
    }
    summary
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use measure::cpu::CpuTime;
    use measure::host::HostFacts;
    use measure::nic::NicFacts;
    use record::{End, LinkSpeedSource, Verdict};
    use wire::msg::{ServerResults, StreamCounts, StreamEnd};
    use wire::spec::{Direction, Flow, Params, StreamParams, TcpOptions};
    use wire::TestSpec;

    use super::*;
    use crate::raw::{LocalStream, WorkerReport};

    const SECS: u64 = 2;

    fn bytes(b: u64) -> StreamCounts {
        StreamCounts {
            bytes: b,
            ..StreamCounts::default()
        }
    }

    /// A one-stream TCP send test of `SECS` paced at `pacing_bps` that moved `goodput_bps`,
    /// every byte read by the server before the stop, its client's data thread at 25 % of a
    /// core; its worker reported `retransmits` without TCP_INFO.
    fn paced_send(pacing_bps: u64, goodput_bps: u64, retransmits: Option<u32>) -> RawRun {
        let tcp = TcpOptions {
            pacing_bps: Some(pacing_bps),
            ..TcpOptions::default()
        };
        let params = Params::TcpStream {
            stream: StreamParams::new(Direction::Send),
            tcp,
        };
        let moved = bytes(goodput_bps / 8 * SECS);
        let window = Duration::from_secs(SECS);
        let cpu = CpuTime {
            user_us: 0,
            sys_us: SECS * 250_000,
        };
        RawRun {
            spec: TestSpec::new(params, 1, SECS * 1000),
            window,
            interrupted: false,
            local_wall: window,
            local_streams: vec![LocalStream {
                at_stop: moved,
                now: moved,
                result: Some(Ok(WorkerReport {
                    cpu,
                    counts: moved,
                    retransmits,
                    ..WorkerReport::default()
                })),
                cpu,
            }],
            local_process_cpu: cpu,
            local_system_cpu: None,
            local_cores: Vec::new(),
            local_drops: None,
            local_link: None,
            server: ServerResults {
                streams: vec![StreamEnd {
                    at_stop: moved,
                    total: moved,
                    ..StreamEnd::default()
                }],
                wall_us: window.as_micros() as u64,
                window_us: window.as_micros() as u64,
                ..ServerResults::default()
            },
            server_lost: None,
            window_start: None,
        }
    }

    /// A client host whose `eth0` is a physical NIC at `mbps`.
    fn nic_at(mbps: u32) -> Hosts {
        Hosts {
            client: HostFacts {
                interface: Some("eth0".into()),
                nic: Some(NicFacts {
                    driver: Some("ixgbe".into()),
                    speed_mbps: Some(mbps),
                    ..NicFacts::default()
                }),
                ..HostFacts::default()
            },
            server: None,
        }
    }

    #[test]
    fn a_summary_takes_the_link_speed_from_the_drivers_and_judges_with_it() {
        let raw = paced_send(500_000_000, 500_000_000, None);
        let s = summarize(&raw, &[], &nic_at(10_000), Client::Linerate);
        let f = &s.flows[0];
        assert_eq!((f.flow, f.sender), (Flow::ClientToServer, End::Client));
        assert_eq!((f.bytes_sent, f.bytes_received), (125_000_000, 125_000_000));
        assert!(f.reconciled);
        assert_eq!(s.throughput_bps, 500e6);
        assert_eq!(s.local_cpu_pct, 25.0);
        assert_eq!(s.link_speed_bps, Some(10_000_000_000));
        assert_eq!(
            s.link_speed_source,
            Some(LinkSpeedSource::Interface {
                end: End::Client,
                name: "eth0".into()
            })
        );
        // PI = (500 Mbit/s / 25 %) × (500 / 10000): with the drivers' speed, not none.
        let pi = s.performance_index.unwrap();
        assert!((pi - 20.0 * 0.05).abs() < 1e-12, "{pi}");
        let limit = f.limited_by.as_ref().unwrap();
        assert_eq!(limit.verdict, Verdict::Application);
        assert!(
            limit.hint.contains("linerate's own pacing"),
            "{}",
            limit.hint
        );
        // The same figures from a stock iperf3 client: its hints name its own -b.
        let s = summarize(&raw, &[], &nic_at(10_000), Client::Iperf3);
        let hint = &s.flows[0].limited_by.as_ref().unwrap().hint;
        assert!(hint.contains("the iperf3 client's -b"), "{hint}");
    }

    #[test]
    fn retransmits_reported_without_tcp_info_count_in_the_flow_and_the_run() {
        let hosts = Hosts::default();
        let raw = paced_send(1_000_000_000, 400_000_000, Some(7));
        let s = summarize(&raw, &[], &hosts, Client::Iperf3);
        assert_eq!(
            (s.flows[0].retransmits, s.retransmits()),
            (Some(7), Some(7))
        );
        assert_eq!(s.flows[0].streams[0].tcp_info, None);
        // Neither TCP_INFO nor a report: no count, not a zero.
        let raw = paced_send(1_000_000_000, 400_000_000, None);
        let s = summarize(&raw, &[], &hosts, Client::Linerate);
        assert_eq!((s.flows[0].retransmits, s.retransmits()), (None, None));
        assert_eq!(s.link_speed_bps, None);
    }
}
