//! `linerate mesh`: a test over every ordered pair of hosts (N×(N−1) runs), one at a time or
//! K at a time, never two at once on one host unless asked. The executor only schedules:
//! a [`PairRunner`] runs each pair (the binary's asks the `from` host to test towards the `to`
//! host) and the caller receives each finished cell as it comes, to store and show it.
//!
//! Two ways out, for two different things: progress goes to the one [`Observer`] every runner
//! reports to (`begin` with the hosts, `point_started`/`point_done` per pair, `finish`), as a
//! sweep's does; each pair's typed outcome ([`Cell`]: the run, or why it failed) goes to the
//! caller's `keep`, which owns what the mesh produced (it stores the run, fills the matrix and
//! reports `stored` and the cell's `point` to the same observer). An observer only watches and
//! is never handed a run to keep, so the outcome is not an observer's event.
//!
//! Invariants: every pair is handed to the runner at most once, in row order (from, then to)
//! among those whose hosts are free; a failed pair (a host down, a refusal) is a cell with its
//! error and the mesh goes on; after an interrupt no pair starts, the running ones finish (the
//! runner sees the interrupt too) and the pairs not run are handed to `keep` last, as such
//! (they neither start nor finish for the observer). A pair's index counts pairs in the order
//! they start (`point_started`) or end (`point_done`, [`Cell::done`]); one at a time, both are
//! row order.
//!
//! The scheduling is here; `mesh/relay.rs` holds the runner `linerate mesh` uses ([`RelayPairs`]:
//! each pair a third-party test through its `from` host).

mod relay;

use std::sync::mpsc;
use std::time::Instant;

use events::Observer;

use crate::interrupt::Interrupt;

pub use relay::{PairError, RelayPairs};

/// Runs one test of the mesh: `from` towards `to`.
pub trait PairRunner: Sync {
    /// What one pair produced (a run).
    type Output: Send;
    /// Why a pair failed (a host down, a refusal); its `Display` is the cell's one line.
    type Error: std::error::Error + Send;
    /// Runs the pair; called from a thread of the mesh's own.
    fn run_pair(&self, from: &str, to: &str) -> Result<Self::Output, Self::Error>;
}

/// A validated mesh: at least two distinct hosts and at least one test at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshPlan {
    hosts: Vec<String>,
    concurrency: usize,
    share_hosts: bool,
    /// Each pair's test duration (0: not said), for the progress's estimate.
    pair_seconds: f64,
}

/// A mesh that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshError {
    /// Fewer than two hosts.
    #[error("a mesh needs at least two hosts; {0} given")]
    TooFew(usize),
    /// The same host twice.
    #[error("host {0} is given twice; name each host once")]
    Duplicate(String),
    /// `--concurrency 0`.
    #[error("--concurrency 0: at least one test must run at a time")]
    NoConcurrency,
}

impl MeshPlan {
    /// A mesh over `hosts`, running up to `concurrency` pairs at once; with `share_hosts`,
    /// pairs that share a host may run together.
    pub fn new(
        hosts: Vec<String>,
        concurrency: usize,
        share_hosts: bool,
    ) -> Result<Self, MeshError> {
        if hosts.len() < 2 {
            return Err(MeshError::TooFew(hosts.len()));
        }
        for (i, h) in hosts.iter().enumerate() {
            if hosts[..i].contains(h) {
                return Err(MeshError::Duplicate(h.clone()));
            }
        }
        if concurrency == 0 {
            return Err(MeshError::NoConcurrency);
        }
        Ok(Self {
            hosts,
            concurrency,
            share_hosts,
            pair_seconds: 0.0,
        })
    }

    /// The same, each pair's test lasting `seconds` (what the progress's estimate plans on).
    pub fn timed(self, seconds: f64) -> Self {
        Self {
            pair_seconds: seconds.max(0.0),
            ..self
        }
    }

    /// Pairs that run together at most: `--concurrency`, and without `--share-hosts` one pair
    /// per two hosts.
    fn at_once(&self) -> usize {
        let pairs = self.hosts.len() * (self.hosts.len() - 1);
        let hosts_allow = match self.share_hosts {
            true => pairs,
            false => self.hosts.len() / 2,
        };
        self.concurrency.min(hosts_allow).max(1)
    }

    /// Each pair's share of the mesh's wall time, as planned: its duration over the pairs
    /// that run together (the `begin` event's `planned_s`).
    pub fn planned_seconds(&self) -> Vec<f64> {
        let share = self.pair_seconds / self.at_once() as f64;
        vec![share; self.hosts.len() * (self.hosts.len() - 1)]
    }

    /// The hosts, in the order given (rows and columns of the matrix).
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Every ordered pair `(from, to)` by index, in row order.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let n = self.hosts.len();
        (0..n)
            .flat_map(|f| (0..n).filter(move |&t| t != f).map(move |t| (f, t)))
            .collect()
    }
}

/// What became of one pair.
#[derive(Debug)]
pub enum CellOutcome<T, E> {
    /// It ran.
    Ran(T),
    /// It failed, with why.
    Failed(E),
    /// It was not run: the mesh was interrupted first.
    NotRun,
}

/// One pair's end, handed to the caller that keeps it.
#[derive(Debug)]
pub struct Cell<'a, T, E> {
    /// The pair's client host.
    pub from: &'a str,
    /// The pair's server host.
    pub to: &'a str,
    /// What became of it.
    pub outcome: CellOutcome<T, E>,
    /// Pairs ended so far, this one included (a pair not run counts as ended).
    pub done: usize,
    /// Pairs in the mesh.
    pub total: usize,
}

impl<T, E> Cell<'_, T, E> {
    /// `from -> to`, the pair's label in progress and in the stream's `point`.
    pub fn label(&self) -> String {
        label(self.from, self.to)
    }
}

/// What takes each pair's [`Cell`] as it ends, with the observer to report what it kept to.
pub type Keep<'k, T, E> = dyn FnMut(Cell<'_, T, E>, &mut dyn Observer) + 'k;

fn label(from: &str, to: &str) -> String {
    format!("{from} -> {to}")
}

/// Runs every pair of `plan` through `runner`, reporting its progress to `progress` and
/// handing each pair's [`Cell`] to `keep` (with `progress`, to report what it kept) as it ends;
/// pairs not run after an interrupt are handed over last, as [`CellOutcome::NotRun`].
pub fn run_mesh<R: PairRunner>(
    plan: &MeshPlan,
    runner: &R,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
    keep: &mut Keep<'_, R::Output, R::Error>,
) {
    let mut pending = plan.pairs();
    let total = pending.len();
    let mut busy = vec![0usize; plan.hosts.len()];
    let (mut running, mut started, mut done) = (0, 0, 0);
    let host = |i: usize| plan.hosts[i].as_str();
    progress.begin("linerate mesh", &plan.planned_seconds(), &plan.hosts);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| loop {
        while running < plan.concurrency && !interrupt.is_raised() {
            let free =
                |&(f, t): &(usize, usize)| plan.share_hosts || (busy[f] == 0 && busy[t] == 0);
            let Some(next) = pending.iter().position(free) else {
                break;
            };
            let (f, t) = pending.remove(next);
            busy[f] += 1;
            busy[t] += 1;
            running += 1;
            progress.point_started(started, &label(host(f), host(t)));
            started += 1;
            let tx = tx.clone();
            scope.spawn(move || {
                let t0 = Instant::now();
                let result = runner.run_pair(host(f), host(t));
                let _ = tx.send((f, t, t0.elapsed().as_secs_f64(), result));
            });
        }
        if running == 0 {
            break;
        }
        let Ok((f, t, seconds, result)) = rx.recv() else {
            break;
        };
        busy[f] -= 1;
        busy[t] -= 1;
        running -= 1;
        done += 1;
        let (from, to) = (host(f), host(t));
        // Its share of the wall time, in the plan's terms.
        let share = seconds / plan.at_once() as f64;
        progress.point_done(done - 1, &label(from, to), share);
        let outcome = match result {
            Ok(out) => CellOutcome::Ran(out),
            Err(why) => CellOutcome::Failed(why),
        };
        let cell = Cell {
            from,
            to,
            outcome,
            done,
            total,
        };
        keep(cell, &mut *progress);
    });
    for (f, t) in pending {
        done += 1;
        let (from, to) = (host(f), host(t));
        let cell = Cell {
            from,
            to,
            outcome: CellOutcome::NotRun,
            done,
            total,
        };
        keep(cell, &mut *progress);
    }
    progress.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::Silent;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Records which pairs ran at once; fails pairs touching `down`.
    struct Probe {
        down: Option<&'static str>,
        now: Mutex<Vec<(String, String)>>,
        overlaps: Mutex<Vec<Vec<(String, String)>>>,
        calls: AtomicUsize,
    }

    /// A probe's failed pair: the host that is down.
    #[derive(Debug, thiserror::Error)]
    #[error("{0} is down")]
    struct Down(&'static str);

    impl PairRunner for Probe {
        type Output = String;
        type Error = Down;
        fn run_pair(&self, from: &str, to: &str) -> Result<String, Down> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if let Some(down) = self.down.filter(|d| *d == from || *d == to) {
                return Err(Down(down));
            }
            {
                let mut now = self.now.lock().unwrap();
                now.push((from.into(), to.into()));
                self.overlaps.lock().unwrap().push(now.clone());
            }
            std::thread::sleep(Duration::from_millis(30));
            self.now
                .lock()
                .unwrap()
                .retain(|p| p != &(from.to_string(), to.to_string()));
            Ok(format!("{from}>{to}"))
        }
    }

    #[derive(Default)]
    struct Cells(Vec<(String, String, String)>);

    impl Cells {
        fn keep(&mut self, cell: Cell<'_, String, Down>) {
            assert_eq!(cell.done, self.0.len() + 1);
            let (from, to) = (cell.from, cell.to);
            let text = match cell.outcome {
                CellOutcome::Ran(s) => s,
                CellOutcome::Failed(e @ Down(host)) => {
                    assert!(host == from || host == to, "{e} fails {from}>{to}");
                    format!("error: {e}")
                }
                CellOutcome::NotRun => "not run".into(),
            };
            self.0.push((from.into(), to.into(), text));
        }
    }

    /// Runs `plan`, its progress to `progress`, its cells kept.
    fn run(
        plan: &MeshPlan,
        runner: &Probe,
        stop: &AtomicBool,
        progress: &mut dyn Observer,
    ) -> Cells {
        let mut cells = Cells::default();
        run_mesh(plan, runner, stop, progress, &mut |c, _| cells.keep(c));
        cells
    }

    /// What the observer saw, one word a report.
    #[derive(Default)]
    struct Seen(Vec<String>);

    impl Observer for Seen {
        fn begin(&mut self, title: &str, planned_s: &[f64], hosts: &[String]) {
            self.0.push(format!(
                "begin {title} {} {}",
                planned_s.len(),
                hosts.join(",")
            ));
        }
        fn point_started(&mut self, index: usize, label: &str) {
            self.0.push(format!("started {index} {label}"));
        }
        fn point_done(&mut self, index: usize, label: &str, _: f64) {
            self.0.push(format!("done {index} {label}"));
        }
        fn finish(&mut self) {
            self.0.push("finish".into());
        }
    }

    fn probe(down: Option<&'static str>) -> Probe {
        Probe {
            down,
            now: Mutex::new(Vec::new()),
            overlaps: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
        }
    }

    fn hosts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("h{i}")).collect()
    }

    #[test]
    fn every_ordered_pair_runs_once_and_a_down_host_only_fails_its_cells() {
        let plan = MeshPlan::new(hosts(3), 1, false).unwrap();
        let runner = probe(Some("h2"));
        let cells = run(&plan, &runner, &AtomicBool::new(false), &mut Silent);
        assert_eq!(cells.0.len(), 6);
        let failed = cells.0.iter().filter(|c| c.2.starts_with("error")).count();
        assert_eq!(failed, 4, "{:?}", cells.0);
        assert!(cells.0.iter().any(|c| c.2 == "error: h2 is down"));
        assert!(cells.0.iter().any(|c| c.2 == "h0>h1") && cells.0.iter().any(|c| c.2 == "h1>h0"));
        assert!(runner.overlaps.lock().unwrap().iter().all(|o| o.len() == 1));
    }

    #[test]
    fn concurrent_pairs_never_share_a_host_unless_asked() {
        let plan = MeshPlan::new(hosts(4), 4, false).unwrap();
        let runner = probe(None);
        run(&plan, &runner, &AtomicBool::new(false), &mut Silent);
        let overlaps = runner.overlaps.lock().unwrap();
        assert!(
            overlaps.iter().any(|o| o.len() == 2),
            "4 hosts allow 2 at once"
        );
        for o in overlaps.iter() {
            let mut seen: Vec<&String> = o.iter().flat_map(|(f, t)| [f, t]).collect();
            let n = seen.len();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), n, "a host in two tests at once: {o:?}");
        }
        let shared = MeshPlan::new(hosts(3), 3, true).unwrap();
        let runner = probe(None);
        run(&shared, &runner, &AtomicBool::new(false), &mut Silent);
        assert!(runner.overlaps.lock().unwrap().iter().any(|o| o.len() == 3));
    }

    /// The progress's plan is the mesh's wall time: each pair's seconds over the pairs that
    /// run together (two of 4 hosts' pairs at once; 3 with shared hosts).
    #[test]
    fn the_planned_time_is_the_pairs_over_those_run_together() {
        let plan = MeshPlan::new(hosts(4), 4, false).unwrap().timed(10.0);
        assert_eq!(plan.planned_seconds(), [5.0; 12]);
        let shared = MeshPlan::new(hosts(3), 3, true).unwrap().timed(6.0);
        assert_eq!(shared.planned_seconds(), [2.0; 6]);
        let serial = MeshPlan::new(hosts(2), 8, false).unwrap().timed(1.0);
        assert_eq!(serial.planned_seconds(), [1.0; 2]);
    }

    #[test]
    fn an_interrupt_runs_no_more_pairs_and_says_which_were_not_run() {
        let plan = MeshPlan::new(hosts(3), 1, false).unwrap();
        let runner = probe(None);
        /// Raises the interrupt as the first pair starts.
        struct StopAtFirst(Arc<AtomicBool>);
        impl Observer for StopAtFirst {
            fn point_started(&mut self, _: usize, _: &str) {
                self.0.store(true, Ordering::Release);
            }
        }
        let shared = Arc::new(AtomicBool::new(false));
        let cells = run(
            &plan,
            &runner,
            &shared,
            &mut StopAtFirst(Arc::clone(&shared)),
        );
        assert_eq!(runner.calls.load(Ordering::SeqCst), 1);
        assert_eq!(cells.0.len(), 6);
        assert_eq!(cells.0.iter().filter(|c| c.2 == "not run").count(), 5);
    }

    #[test]
    fn the_observer_sees_the_hosts_then_each_pair_start_and_end_then_the_finish() {
        let plan = MeshPlan::new(hosts(2), 1, false).unwrap();
        let mut seen = Seen::default();
        let cells = run(
            &plan,
            &probe(Some("h1")),
            &AtomicBool::new(false),
            &mut seen,
        );
        assert_eq!(cells.0.len(), 2, "a failed pair is still a cell");
        assert_eq!(
            seen.0,
            [
                "begin linerate mesh 2 h0,h1",
                "started 0 h0 -> h1",
                "done 0 h0 -> h1",
                "started 1 h1 -> h0",
                "done 1 h1 -> h0",
                "finish",
            ]
        );
        let stop = AtomicBool::new(true);
        let mut seen = Seen::default();
        let cells = run(&plan, &probe(None), &stop, &mut seen);
        assert!(cells.0.iter().all(|c| c.2 == "not run"), "{:?}", cells.0);
        assert_eq!(
            seen.0,
            ["begin linerate mesh 2 h0,h1", "finish"],
            "nothing started"
        );
    }

    #[test]
    fn bad_meshes_are_refused() {
        assert_eq!(MeshPlan::new(hosts(1), 1, false), Err(MeshError::TooFew(1)));
        let dup = vec!["a".to_string(), "b".into(), "a".into()];
        assert_eq!(
            MeshPlan::new(dup, 1, false),
            Err(MeshError::Duplicate("a".into()))
        );
        assert_eq!(
            MeshPlan::new(hosts(2), 0, false),
            Err(MeshError::NoConcurrency)
        );
    }
}
