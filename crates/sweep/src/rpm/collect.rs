//! What an rpm direction's load connections and foreign probes report, collected interval by
//! interval on the direction's grid (issue 47).
//!
//! Every load connection's intervals end on the direction's ticks, ID apart from its start
//! ([`Grid`], given to each session as `ClientConfig::interval_grid`), however late in the ramp
//! it began: a connection's report for the interval ending at tick k is sent once its poll at k
//! is answered, so it arrives at k or a little after, and [`Grid::interval_of`] takes the
//! interval from that. An interval closes once every running connection's report for it came
//! in, or [`GRACE`] of an interval after its tick (a connection still setting up, or a slow
//! answer): a report later than that still counts in its own interval's bytes
//! (`DirectionTracker::finish`). Before the grid, a new connection's first report came a tick
//! after the orchestrator's, which took a false 0 and lost the last second.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use analysis::rpm_window::DirectionTracker;
use events::Observer;
use record::{IntervalSample, RunRecord};
use session::client::{self, ClientConfig};

/// What the load connections and the foreign prober report.
pub(super) enum Event {
    /// Load connection `conn`'s interval, as it arrived at `at`.
    Interval {
        conn: u16,
        at: Instant,
        sample: Box<IntervalSample>,
    },
    Foreign {
        connect_ms: f64,
        rr_ms: f64,
    },
    Failed(String),
}

/// Hands a load connection's intervals to the orchestrator, with when each arrived.
struct Forward(u16, Sender<Event>);

impl Observer for Forward {
    fn interval(&mut self, sample: &IntervalSample) {
        let _ = self.1.send(Event::Interval {
            conn: self.0,
            at: Instant::now(),
            sample: Box::new(sample.clone()),
        });
    }
}

/// A load connection: a `tcp_stream` session with self probes until `config.interrupt`; its
/// record, unless it failed (said on `tx`).
pub(super) fn load_connection(
    conn: u16,
    config: &ClientConfig,
    tx: Sender<Event>,
) -> Option<RunRecord> {
    let mut forward = Forward(conn, tx.clone());
    match client::run(config, &mut forward) {
        Ok(record) => Some(record),
        Err(e) => {
            let _ = tx.send(Event::Failed(format!("a load connection failed: {e}")));
            None
        }
    }
}

/// How long after its tick an interval waits for the running connections' reports, as a
/// share of the interval.
pub(super) const GRACE: f64 = 0.5;

/// A direction's intervals: ticks every `every` from `t0`, interval `i` (0-based) ending at
/// tick `i + 1`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grid {
    /// The direction's start: the grid's anchor.
    pub t0: Instant,
    /// ID.
    pub every: Duration,
}

impl Grid {
    /// When interval `index` ends.
    pub fn end_of(&self, index: usize) -> Instant {
        self.t0 + self.every * (index as u32 + 1)
    }

    /// The interval a report that arrived at `at` is for: the one ending at the last tick at
    /// or before `at` (its poll began at that tick); `None` before the first tick.
    pub fn interval_of(&self, at: Instant) -> Option<usize> {
        let since = at.saturating_duration_since(self.t0).as_nanos();
        let ticks = since / self.every.as_nanos().max(1);
        usize::try_from(ticks).ok()?.checked_sub(1)
    }
}

/// How many load connections run, and whether more are added.
pub(super) struct Ramp {
    pub running: u16,
    pub adding: bool,
}

impl Default for Ramp {
    fn default() -> Self {
        Self {
            running: 0,
            adding: true,
        }
    }
}

/// Feeds the tracker until its open interval is complete: past its end, with every running
/// connection's report for it in, or [`GRACE`] after its end.
pub(super) fn collect(
    rx: &Receiver<Event>,
    grid: Grid,
    tracker: &mut DirectionTracker,
    ramp: &mut Ramp,
    notes: &mut Vec<String>,
) {
    let index = tracker.open_interval();
    let (end, deadline) = (
        grid.end_of(index),
        grid.end_of(index) + grid.every.mul_f64(GRACE),
    );
    loop {
        let now = Instant::now();
        if now >= end && tracker.reported(index) >= usize::from(ramp.running) {
            break;
        }
        // Looks again at the end, then waits for reports until the grace is out.
        let wake = if now < end { end } else { deadline };
        let wait = wake.saturating_duration_since(now);
        match rx.recv_timeout(wait) {
            Ok(Event::Interval { conn, at, sample }) => {
                if let Some(i) = grid.interval_of(at) {
                    tracker.interval(conn, i, &sample);
                }
            }
            Ok(Event::Foreign { connect_ms, rr_ms }) => tracker.foreign(connect_ms, rr_ms),
            Ok(Event::Failed(why)) => {
                // A refused or broken connection: no more are added; it no longer counts.
                if why.starts_with("a load connection") {
                    ramp.adding = false;
                    ramp.running = ramp.running.saturating_sub(1);
                }
                notes.push(why);
            }
            Err(RecvTimeoutError::Timeout) if now < end => {}
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_belongs_to_the_interval_ending_at_the_tick_before_it_arrived() {
        let ms = Duration::from_millis;
        let grid = Grid {
            t0: Instant::now(),
            every: ms(1000),
        };
        assert_eq!(grid.interval_of(grid.t0 + ms(999)), None);
        assert_eq!(grid.interval_of(grid.t0 + ms(1000)), Some(0));
        assert_eq!(
            grid.interval_of(grid.t0 + ms(1400)),
            Some(0),
            "a slow answer"
        );
        assert_eq!(grid.interval_of(grid.t0 + ms(3002)), Some(2));
        assert_eq!(grid.end_of(2), grid.t0 + ms(3000));
    }

    #[test]
    fn an_interval_closes_once_every_running_connection_reported_it() {
        let every = Duration::from_millis(40);
        let grid = Grid {
            t0: Instant::now(),
            every,
        };
        let mut tracker = DirectionTracker::new(analysis::rpm::Params::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let mut ramp = Ramp {
            running: 2,
            adding: true,
        };
        let at = grid.end_of(0) + Duration::from_millis(1);
        for conn in [1, 2] {
            let sample = Box::new(sample(1000));
            tx.send(Event::Interval { conn, at, sample }).unwrap();
        }
        collect(&rx, grid, &mut tracker, &mut ramp, &mut Vec::new());
        // Both in: closed at the tick, not at the grace's end.
        let late = Instant::now().saturating_duration_since(grid.end_of(0));
        assert!(late < every.mul_f64(GRACE), "{late:?}");
        assert_eq!(tracker.reported(0), 2);
        tracker.tick(2);
        // Interval 1: one report of two; the other connection failed.
        let at = grid.end_of(1);
        let sample = Box::new(sample(1000));
        tx.send(Event::Interval {
            conn: 1,
            at,
            sample,
        })
        .unwrap();
        tx.send(Event::Failed("a load connection failed: x".into()))
            .unwrap();
        let mut notes = Vec::new();
        collect(&rx, grid, &mut tracker, &mut ramp, &mut notes);
        assert_eq!((ramp.running, ramp.adding, notes.len()), (1, false, 1));
    }

    fn sample(bytes: u64) -> IntervalSample {
        IntervalSample {
            start_s: 0.0,
            end_s: 1.0,
            flows: vec![record::FlowInterval {
                flow: wire::spec::Flow::ClientToServer,
                sender_bytes: bytes,
                receiver_bytes: bytes,
                throughput_bps: 0.0,
                stream_receiver_bytes: vec![bytes],
                udp: None,
                rr: None,
                tcp_info: None,
                self_probes: None,
                self_probe_round_trips_us: Vec::new(),
            }],
            probe: None,
            cpu: None,
            omitted: false,
        }
    }
}
