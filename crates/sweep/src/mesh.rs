//! `linerate mesh`: a test over every ordered pair of hosts (N×(N−1) runs), one at a time or
//! K at a time, never two at once on one host unless asked. The executor only schedules:
//! a [`PairRunner`] runs each pair (the binary's asks the `from` host to test towards the `to`
//! host) and the caller receives each finished cell as it comes, to store and show it.
//!
//! Invariants: every pair is handed to the runner at most once, in row order (from, then to)
//! among those whose hosts are free; a failed pair (a host down, a refusal) is a cell with its
//! error and the mesh goes on; after an interrupt no pair starts, the running ones finish (the
//! runner sees the interrupt too) and the pairs not run are reported as such.
//!
//! The scheduling is here; [`relay`] holds the runner `linerate mesh` uses ([`RelayPairs`]:
//! each pair a third-party test through its `from` host).

mod relay;

use std::sync::mpsc;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeshPlan {
    hosts: Vec<String>,
    concurrency: usize,
    share_hosts: bool,
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
        })
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

/// Receives the mesh's cells as they finish.
pub trait MeshProgress<T, E> {
    /// Pair `(from, to)` started.
    fn started(&mut self, from: &str, to: &str);
    /// Pair `(from, to)` ended; `done` of `total` pairs have ended.
    fn ended(
        &mut self,
        from: &str,
        to: &str,
        outcome: CellOutcome<T, E>,
        done: usize,
        total: usize,
    );
}

/// Runs every pair of `plan` through `runner`, reporting each to `progress` as it ends (pairs
/// not run after an interrupt are reported last, as [`CellOutcome::NotRun`]).
pub fn run_mesh<R: PairRunner>(
    plan: &MeshPlan,
    runner: &R,
    interrupt: &dyn Interrupt,
    progress: &mut dyn MeshProgress<R::Output, R::Error>,
) {
    let mut pending = plan.pairs();
    let total = pending.len();
    let mut busy = vec![0usize; plan.hosts.len()];
    let mut running = 0;
    let mut done = 0;
    let host = |i: usize| plan.hosts[i].as_str();
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
            progress.started(host(f), host(t));
            let tx = tx.clone();
            scope.spawn(move || {
                let _ = tx.send((f, t, runner.run_pair(host(f), host(t))));
            });
        }
        if running == 0 {
            break;
        }
        let Ok((f, t, result)) = rx.recv() else {
            break;
        };
        busy[f] -= 1;
        busy[t] -= 1;
        running -= 1;
        done += 1;
        let outcome = match result {
            Ok(out) => CellOutcome::Ran(out),
            Err(why) => CellOutcome::Failed(why),
        };
        progress.ended(host(f), host(t), outcome, done, total);
    });
    for (f, t) in pending {
        done += 1;
        progress.ended(host(f), host(t), CellOutcome::NotRun, done, total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    impl MeshProgress<String, Down> for Cells {
        fn started(&mut self, _: &str, _: &str) {}
        fn ended(
            &mut self,
            from: &str,
            to: &str,
            outcome: CellOutcome<String, Down>,
            done: usize,
            _: usize,
        ) {
            assert_eq!(done, self.0.len() + 1);
            let text = match outcome {
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
        let mut cells = Cells::default();
        run_mesh(&plan, &runner, &AtomicBool::new(false), &mut cells);
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
        run_mesh(
            &plan,
            &runner,
            &AtomicBool::new(false),
            &mut Cells::default(),
        );
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
        run_mesh(
            &shared,
            &runner,
            &AtomicBool::new(false),
            &mut Cells::default(),
        );
        assert!(runner.overlaps.lock().unwrap().iter().any(|o| o.len() == 3));
    }

    #[test]
    fn an_interrupt_runs_no_more_pairs_and_says_which_were_not_run() {
        let plan = MeshPlan::new(hosts(3), 1, false).unwrap();
        let runner = probe(None);
        type Outcome = CellOutcome<String, Down>;
        struct StopAfterFirst(Cells, Arc<AtomicBool>);
        impl MeshProgress<String, Down> for StopAfterFirst {
            fn started(&mut self, _: &str, _: &str) {
                self.1.store(true, Ordering::Release);
            }
            fn ended(&mut self, f: &str, t: &str, o: Outcome, d: usize, n: usize) {
                self.0.ended(f, t, o, d, n);
            }
        }
        let shared = Arc::new(AtomicBool::new(false));
        let mut progress = StopAfterFirst(Cells::default(), Arc::clone(&shared));
        run_mesh(&plan, &runner, &shared, &mut progress);
        assert_eq!(runner.calls.load(Ordering::SeqCst), 1);
        let cells = progress.0 .0;
        assert_eq!(cells.len(), 6);
        assert_eq!(cells.iter().filter(|c| c.2 == "not run").count(), 5);
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
