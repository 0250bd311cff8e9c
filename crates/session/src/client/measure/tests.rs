//! The measuring loop's timing rules, and its intervals kept within their bound.

use super::super::remote::FarCounts;
use super::*;
use crate::target::Target;
use engine::{mock::MockEngine, Conn};
use wire::msg::{ServerResults, StreamEnd};
use wire::spec::{Direction, Params, StreamParams};

/// A far end that stands in with this end's counts (as a stock iperf3 server does).
struct Mirror;

impl Remote for Mirror {
    fn local_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
    fn engine(&self, _: &wire::TestSpec) -> Box<dyn StreamEngine> {
        Box::new(MockEngine {
            bytes_per_stream: 10_000,
        })
    }
    fn begin(&mut self) -> Result<(), ClientError> {
        Ok(())
    }
    fn begun(&mut self) -> Result<(), ClientError> {
        Ok(())
    }
    fn counts(
        &mut self,
        _: u64,
        local: &[StreamCounts],
    ) -> Result<Result<FarCounts, FarEndLost>, ClientError> {
        let (counts, cpu, stand_in) = (local.to_vec(), None, true);
        Ok(Ok(FarCounts {
            counts,
            cpu,
            stand_in,
        }))
    }
    fn results(
        &mut self,
        local: &[StreamCounts],
        _: CpuTime,
        _: Duration,
    ) -> Result<Result<ServerResults, FarEndLost>, ClientError> {
        let streams = (local.iter())
            .map(|&c| StreamEnd {
                at_stop: c,
                total: c,
                ..StreamEnd::default()
            })
            .collect();
        Ok(Ok(ServerResults {
            streams,
            ..ServerResults::default()
        }))
    }
}

/// Issue 48: a run of many more intervals than the record keeps (every millisecond for
/// half a second) keeps at most its bound, every one still shown, every byte still in
/// the kept intervals.
#[test]
fn a_run_of_more_intervals_than_the_bound_keeps_the_bound_and_every_byte() {
    let stream = StreamParams::new(Direction::Send);
    let tcp = Default::default();
    let mut spec = wire::TestSpec::new(Params::TcpStream { stream, tcp }, 1, 500);
    spec.interval_ms = 1;
    let target = Target::Tcp {
        addr: ([127, 0, 0, 1], 9).into(),
        bind: None,
    };
    let config = ClientConfig::new(target, "mirror".into(), spec, engine::Signal::new());
    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let conns = vec![Endpoint::Socket(Conn::Unix(ours))];
    let mut shown = Counted(0);
    let kept = BoundedIntervals::new(8, 100);
    let m = measure_keeping(&config, &mut Mirror, conns, &mut shown, kept).unwrap();
    // At most 1 ms apart (and 50 ms when the machine is busy) for 500 ms.
    assert!(shown.0 > 16, "{} intervals shown", shown.0);
    assert!(m.intervals.len() <= 8, "{} kept", m.intervals.len());
    let sum = |f: fn(&record::FlowInterval) -> u64| -> u64 {
        m.intervals.iter().map(|s| f(&s.flows[0])).sum()
    };
    assert_eq!(
        (sum(|f| f.sender_bytes), sum(|f| f.receiver_bytes)),
        (10_000, 10_000)
    );
    assert_eq!(m.intervals[0].start_s, 0.0);
    assert!(m.intervals.windows(2).all(|w| w[0].end_s == w[1].start_s));
}

/// Counts the intervals shown.
struct Counted(usize);

impl Observer for Counted {
    fn interval(&mut self, _: &IntervalSample) {
        self.0 += 1;
    }
}

#[test]
fn the_polling_loop_never_waits_past_a_tick_or_the_end() {
    let ms = Duration::from_millis;
    assert_eq!(wait_before_next_look(ms(990), ms(1000), ms(3000)), ms(10));
    assert_eq!(wait_before_next_look(ms(100), ms(1000), ms(3000)), ms(50));
    assert_eq!(wait_before_next_look(ms(2990), ms(4000), ms(3000)), ms(10));
    // A tick due within 10 ms of the end is skipped: sleep toward the end (this subtraction
    // overflowed once, panicking the client at the end of a run).
    assert_eq!(wait_before_next_look(ms(2995), ms(2993), ms(3000)), ms(5));
}

#[test]
fn a_grid_puts_the_ticks_on_its_own_seconds() {
    let (ms, anchor) = (Duration::from_millis, Instant::now());
    assert_eq!(first_tick(None, anchor + ms(30), ms(1000)), ms(1000));
    // Started 30 ms into the grid's first interval: its first tick is at the grid's 1 s.
    assert_eq!(first_tick(Some(anchor), anchor + ms(30), ms(1000)), ms(970));
    // Started 2.3 s in: at 3 s; on a tick: the next one.
    assert_eq!(
        first_tick(Some(anchor), anchor + ms(2300), ms(1000)),
        ms(700)
    );
    assert_eq!(
        first_tick(Some(anchor), anchor + ms(2000), ms(1000)),
        ms(1000)
    );
    // A grid that begins after the start (never, but): its first tick.
    assert_eq!(
        first_tick(Some(anchor + ms(500)), anchor, ms(1000)),
        ms(1500)
    );
}

#[test]
fn an_interrupt_right_after_a_tick_ends_the_test_no_sooner_than_the_floor() {
    let ms = Duration::from_millis;
    // Ctrl-C 1 ms after the tick at 3 s: the test ends at 3.2 s, not at 3.001 s.
    assert_eq!(interrupted_end(ms(3001), ms(3000), ms(1000)), ms(3200));
    // Later than the floor: at once.
    assert_eq!(interrupted_end(ms(3500), ms(3000), ms(1000)), ms(3500));
    // Intervals shorter than the floor: one interval after the last tick.
    assert_eq!(interrupted_end(ms(3001), ms(3000), ms(50)), ms(3050));
    // Before the first tick, the floor counts from the start.
    assert_eq!(interrupted_end(ms(10), Duration::ZERO, ms(1000)), ms(200));
}
