//! Test support: run an engine's sender and receiver over a connected pair.

use std::time::Duration;

use crate::budget::Budget;
use crate::{Endpoint, Role, Signal, StreamControl, StreamCounters, StreamEngine, StreamReport};

/// Both ends' reports, and each end's published byte counter after the run.
pub(crate) struct PairRun {
    /// From before the threads started until stop was raised (at least `run_for`; more when
    /// the test thread woke late), or until both ends had ended by amount.
    pub ran_for: Duration,
    pub sender: StreamReport,
    pub receiver: StreamReport,
    pub sender_published: u64,
    pub receiver_published: u64,
}

/// Runs `engine` as sender on `a` and receiver on `b` for `run_for`, then raises stop and
/// waits for both; panics if either end fails.
pub(crate) fn run_pair(
    engine: &dyn StreamEngine,
    a: impl Into<Endpoint>,
    b: impl Into<Endpoint>,
    run_for: Duration,
) -> PairRun {
    drive(engine, (a.into(), b.into()), None, run_for)
}

/// Runs `engine` as sender on `a`, sending `budget`, and receiver on `b` until both end on
/// their own, or stop is raised at `most`; panics if either end fails.
pub(crate) fn run_pair_by_amount(
    engine: &dyn StreamEngine,
    a: impl Into<Endpoint>,
    b: impl Into<Endpoint>,
    budget: &Budget,
    most: Duration,
) -> PairRun {
    drive(engine, (a.into(), b.into()), Some(budget), most)
}

fn drive(
    engine: &dyn StreamEngine,
    (a, b): (Endpoint, Endpoint),
    budget: Option<&Budget>,
    run_for: Duration,
) -> PairRun {
    let (stop, abort) = (Signal::new(), crate::Abort::new());
    let (tx, rx) = (StreamCounters::default(), StreamCounters::default());
    let ctl = |counter, budget| StreamControl {
        stream: 0,
        counter,
        stop: &stop,
        abort: &abort,
        origin: std::time::Instant::now(),
        budget,
    };
    let t0 = std::time::Instant::now();
    let mut ran_for = run_for;
    let (sender, receiver) = std::thread::scope(|s| {
        let sender = s.spawn(|| engine.run(a, Role::Sender, ctl(&tx, budget)));
        let receiver = s.spawn(|| engine.run(b, Role::Receiver, ctl(&rx, None)));
        let ended = || budget.is_some() && sender.is_finished() && receiver.is_finished();
        while t0.elapsed() < run_for && !ended() {
            std::thread::sleep(Duration::from_millis(1).min(run_for));
        }
        ran_for = t0.elapsed();
        stop.raise();
        (
            sender.join().unwrap().unwrap(),
            receiver.join().unwrap().unwrap(),
        )
    });
    PairRun {
        ran_for,
        sender,
        receiver,
        sender_published: tx.get(),
        receiver_published: rx.get(),
    }
}
