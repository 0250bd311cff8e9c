//! An incomplete run's server side: when the server goes away mid-test (killed, or the path
//! went black) its final results never come, but its last answered interval poll said what it
//! had counted and what its data threads had used by then. These figures stand in for its
//! results, marked as reaching only up to that poll (`Summary::server_figures_up_to_s`), so a
//! summary keeps what was measured instead of reading 0.
//!
//! Invariant: nothing here is extrapolated; every figure is one the server sent, and its
//! receivers' rates divide by the time of that poll (their window), not by the test's.

use std::time::Duration;

use measure::cpu::{CpuSoFar, CpuTime};
use record::{CpuSummary, End, FlowSummary, IntervalSample};
use wire::msg::{ServerResults, StreamCounts, StreamEnd};

use crate::RawRun;

/// The server's last answered poll: its counters per stream, its data threads' CPU so far (a
/// server that reports it), and when, on the client's clock from `Begin`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LastPoll {
    /// When the answer came, from the test's start by the client's clock.
    pub at: Duration,
    /// The server's counters, one per stream.
    pub counts: Vec<StreamCounts>,
    /// The server's data threads' CPU so far.
    pub cpu: Option<CpuSoFar>,
}

/// The server's results as far as `last` goes (none answered: nothing): each stream's
/// counters at that poll as both its window's and its final counts, its window and wall the
/// poll's time, and its CPU so far (as `cpu_at_stop`, which the summary's server CPU reads).
pub fn server_results_up_to(last: Option<&LastPoll>) -> ServerResults {
    let Some(last) = last else {
        return ServerResults::default();
    };
    let us = last.at.as_micros() as u64;
    ServerResults {
        streams: (0u16..)
            .zip(&last.counts)
            .map(|(stream, c)| StreamEnd {
                stream,
                at_stop: *c,
                total: *c,
                tcp_info: c.tcp_info,
                ..StreamEnd::default()
            })
            .collect(),
        wall_us: us,
        window_us: us,
        cpu_at_stop: last.cpu,
        ..ServerResults::default()
    }
}

/// An incomplete run's server CPU: its data threads' total at the last poll (the poll carries
/// no per-stream or user/system split), as `remote`'s thread share, and shared among the flows
/// by their number of streams for each flow's server end. Runs whose server sent its results
/// are left alone.
pub(crate) fn add_server_cpu(
    server: &ServerResults,
    flows: &mut [FlowSummary],
    remote: &mut CpuSummary,
) {
    let measured: u64 = server.streams.iter().map(|s| s.cpu.total_us()).sum();
    let Some(cpu) = server
        .cpu_at_stop
        .filter(|c| c.elapsed_us > 0 && measured == 0)
    else {
        return;
    };
    let used = CpuTime {
        user_us: cpu.threads_us,
        sys_us: 0,
    };
    let pct = used.pct_of(Duration::from_micros(cpu.elapsed_us));
    remote.threads_pct = pct;
    let streams: usize = flows.iter().map(|f| f.streams.len()).sum();
    for f in flows {
        let share = pct * f.streams.len() as f64 / streams.max(1) as f64;
        match f.sender {
            End::Server => f.sender_cpu_pct += share,
            End::Client => f.receiver_cpu_pct += share,
        }
    }
}

/// The intervals the server's figures cover: all of a run with its results; of an incomplete
/// run, those up to its last answered poll (after it, the server's side reads 0, which is no
/// measurement).
pub(crate) fn answered<'a>(raw: &RawRun, intervals: &'a [IntervalSample]) -> &'a [IntervalSample] {
    if raw.server_lost.is_none() {
        return intervals;
    }
    let up_to = raw.server.window_us as f64 / 1e6;
    let n = intervals
        .iter()
        .take_while(|s| s.end_s <= up_to + 1e-3)
        .count();
    &intervals[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_poll_stands_in_for_the_servers_results() {
        let last = LastPoll {
            at: Duration::from_millis(1000),
            counts: vec![
                StreamCounts {
                    bytes: 1 << 30,
                    ..Default::default()
                },
                StreamCounts {
                    bytes: 7,
                    ..Default::default()
                },
            ],
            cpu: Some(CpuSoFar {
                elapsed_us: 1_000_000,
                threads_us: 400_000,
                host: None,
            }),
        };
        let r = server_results_up_to(Some(&last));
        assert_eq!((r.window_us, r.wall_us), (1_000_000, 1_000_000));
        assert_eq!(r.streams.len(), 2);
        assert_eq!(
            (r.streams[0].at_stop.bytes, r.streams[0].total.bytes),
            (1 << 30, 1 << 30)
        );
        assert_eq!(r.streams[1].stream, 1);
        assert_eq!(server_results_up_to(None), ServerResults::default());

        let mut flows = vec![crate::testing::record_with("tcp", 1.0).summary.flows[0].clone()];
        flows[0].receiver_cpu_pct = 0.0;
        let mut remote = CpuSummary::default();
        add_server_cpu(&r, &mut flows, &mut remote);
        assert_eq!(remote.threads_pct, 40.0);
        assert_eq!(flows[0].receiver_cpu_pct, 40.0, "the server received");
    }

    /// A one-stream send whose server was killed after its poll at 1 s: the client wrote
    /// 2 GiB over 2 s, its stream failed (no report) having used 0.3 s of CPU.
    fn killed_at_one_second() -> RawRun {
        use crate::raw::LocalStream;
        use wire::spec::{Direction, Params, StreamParams};
        let counts = |bytes| StreamCounts {
            bytes,
            ..Default::default()
        };
        let params = Params::TcpStream {
            stream: StreamParams::new(Direction::Send),
            tcp: Default::default(),
        };
        let last = LastPoll {
            at: Duration::from_secs(1),
            counts: vec![counts(3 << 29)],
            cpu: Some(CpuSoFar {
                elapsed_us: 1_000_000,
                threads_us: 400_000,
                host: None,
            }),
        };
        RawRun {
            spec: wire::TestSpec::new(params, 1, 3000),
            window: Duration::from_secs(2),
            interrupted: false,
            local_wall: Duration::from_secs(2),
            local_streams: vec![LocalStream {
                at_stop: counts(2 << 30),
                now: counts(2 << 30),
                result: Some(Err(crate::StreamFailure("Broken pipe".into()))),
                cpu: CpuTime {
                    user_us: 100_000,
                    sys_us: 500_000,
                },
            }],
            local_process_cpu: CpuTime::default(),
            local_system_cpu: None,
            local_cores: Vec::new(),
            local_drops: None,
            local_link: None,
            server: server_results_up_to(Some(&last)),
            server_lost: Some("the server went away mid-test (polling it: reset)".into()),
            window_start: None,
        }
    }

    #[test]
    fn an_incomplete_run_keeps_both_ends_figures_up_to_when_each_was_measured() {
        let hosts = Default::default();
        let s = crate::summarize(
            &killed_at_one_second(),
            &[],
            &hosts,
            crate::Client::Linerate,
        );
        let f = &s.flows[0];
        assert_eq!((f.bytes_sent, f.bytes_received), (2 << 30, 3 << 29));
        // 1.5 GiB over the server's 1 s up to its last poll.
        assert_eq!(f.window_s, 1.0);
        assert_eq!(f.throughput_bps, (3u64 << 29) as f64 * 8.0);
        assert_eq!(
            f.sender_cpu_pct, 30.0,
            "the failed stream's thread: 0.6 s over 2 s"
        );
        assert_eq!(f.receiver_cpu_pct, 40.0);
        assert_eq!((s.local_cpu_pct, s.remote_cpu_pct), (30.0, 40.0));
        assert_eq!(s.server_figures_up_to_s, Some(1.0));
        assert_eq!(
            f.efficiency, None,
            "the ends' figures cover different times"
        );
        let v = s.flows[0].limited_by.clone().unwrap();
        assert_eq!(
            v.evidence,
            "no verdict: the run is incomplete: the server's figures stop at 1.00 s"
        );
        assert!(
            !v.evidence.contains("went away"),
            "the reason is said once, in `incomplete`"
        );
    }
}
