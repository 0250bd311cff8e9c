//! The tests started from the UI while it runs: at most [`Limits::max_running`] at once, each
//! with the events a late reader replays (its start, its last [`Limits::max_intervals`]
//! intervals, its end), forgotten [`Limits::keep_finished`] after they end, and never more than
//! [`Limits::max_kept`] finished ones. Stored runs stay in the database; this is only the live
//! view.
//!
//! Each test runs on a thread of its own (the client's data path is blocking threads); its
//! events go into the test's [`Log`] under a mutex, and a `watch` channel tells readers that
//! something new is there. Nothing is formatted here: the events are the typed samples.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engine::Signal;
use results::IntervalSample;
use session::client::Progress;
use tokio::sync::watch;
use wire::msg::ServerInfo;
use wire::TestSpec;

use crate::launcher::{Finished, LaunchError};

/// A test's id in this UI (not a stored run's id).
pub type TestId = u64;

/// How much the registry keeps.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Tests running at once; one more is refused.
    pub max_running: usize,
    /// How long a finished test's events stay readable.
    pub keep_finished: Duration,
    /// Finished tests kept at most (the oldest go first).
    pub max_kept: usize,
    /// Intervals kept per test for late readers (the oldest go first).
    pub max_intervals: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_running: 4,
            keep_finished: Duration::from_secs(600),
            max_kept: 64,
            max_intervals: 3600,
        }
    }
}

/// How a test ended.
#[derive(Debug, Clone)]
pub enum End {
    /// Measured (to its end, or stopped early) and stored; the record without its intervals
    /// (readers had them one by one, and the stored run keeps them).
    Finished(Arc<Finished>),
    /// It could not run, or its run could not be stored.
    Failed(String),
}

/// What a test's readers are shown, in order.
#[derive(Debug, Default)]
pub struct Log {
    /// The server accepted the test.
    pub started: Option<(ServerInfo, TestSpec)>,
    /// The last intervals.
    pub intervals: VecDeque<Arc<IntervalSample>>,
    /// Intervals dropped from the front of `intervals` to keep it bounded.
    pub dropped: u64,
    /// The end, once there is one.
    pub end: Option<End>,
    ended_at: Option<Instant>,
}

/// One test started from the UI.
pub struct TestEntry {
    /// Its id.
    pub id: TestId,
    /// Its command line as shown (the words after `linerate`, without `--db`).
    pub command: Vec<String>,
    interrupt: Signal,
    log: Mutex<Log>,
    changed: watch::Sender<u64>,
    max_intervals: usize,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl TestEntry {
    /// The test's events so far.
    pub fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A receiver told of every new event.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Raises the test's interrupt, as Ctrl-C does: it stops, and what it measured is stored.
    pub fn stop(&self) {
        self.interrupt.raise();
    }

    /// Whether [`TestEntry::stop`] was called.
    pub fn stopping(&self) -> bool {
        self.interrupt.is_raised()
    }

    fn push(&self, add: impl FnOnce(&mut Log)) {
        add(&mut self.log());
        self.changed.send_modify(|n| *n += 1);
    }

    fn end(&self, end: End) {
        self.push(|log| {
            log.end = Some(end);
            log.ended_at = Some(Instant::now());
        });
    }
}

/// The [`Progress`] of a test: its start and intervals into its log.
struct Sink<'a>(&'a TestEntry);

impl Progress for Sink<'_> {
    fn started(&mut self, server: &ServerInfo, spec: &TestSpec) {
        self.0
            .push(|log| log.started = Some((server.clone(), spec.clone())));
    }

    fn interval(&mut self, sample: &IntervalSample) {
        let max = self.0.max_intervals;
        self.0.push(|log| {
            log.intervals.push_back(Arc::new(sample.clone()));
            while log.intervals.len() > max {
                log.intervals.pop_front();
                log.dropped += 1;
            }
        });
    }
}

/// Refused: as many tests as allowed are running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy(pub usize);

/// The tests started from this UI.
pub struct Registry {
    limits: Limits,
    tests: Mutex<(TestId, BTreeMap<TestId, Arc<TestEntry>>)>,
}

impl Registry {
    /// An empty registry.
    pub fn new(limits: Limits) -> Self {
        Registry {
            limits,
            tests: Mutex::new((0, BTreeMap::new())),
        }
    }

    /// Tests allowed to run at once.
    pub fn max_running(&self) -> usize {
        self.limits.max_running
    }

    fn tests(&self) -> MutexGuard<'_, (TestId, BTreeMap<TestId, Arc<TestEntry>>)> {
        self.tests.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `run` on a thread of its own as a new test, unless too many are running; it gets
    /// the test's interrupt and progress sink, and its result is the test's end.
    pub fn start<F>(&self, command: Vec<String>, run: F) -> Result<Arc<TestEntry>, Busy>
    where
        F: FnOnce(Signal, &mut dyn Progress) -> Result<Finished, LaunchError> + Send + 'static,
    {
        let mut tests = self.tests();
        self.evict(&mut tests.1);
        let running = tests.1.values().filter(|t| t.log().end.is_none()).count();
        if running >= self.limits.max_running {
            return Err(Busy(self.limits.max_running));
        }
        tests.0 += 1;
        let entry = Arc::new(TestEntry {
            id: tests.0,
            command,
            interrupt: Signal::new(),
            log: Mutex::new(Log::default()),
            changed: watch::channel(0).0,
            max_intervals: self.limits.max_intervals,
            thread: Mutex::new(None),
        });
        tests.1.insert(entry.id, Arc::clone(&entry));
        let runner = Arc::clone(&entry);
        let handle = std::thread::spawn(move || {
            // A panic still ends the test, so that its readers are not left waiting.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run(runner.interrupt.clone(), &mut Sink(&runner))
            }));
            runner.end(match result {
                Ok(Ok(mut finished)) => {
                    finished.record.intervals = Vec::new();
                    End::Finished(Arc::new(finished))
                }
                Ok(Err(e)) => End::Failed(e.0),
                Err(_) => End::Failed("the test failed unexpectedly (a bug: see stderr)".into()),
            });
        });
        *entry.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(entry)
    }

    /// Test `id`, if it is running or still kept.
    pub fn get(&self, id: TestId) -> Option<Arc<TestEntry>> {
        let mut tests = self.tests();
        self.evict(&mut tests.1);
        tests.1.get(&id).cloned()
    }

    /// Every test kept, oldest first.
    pub fn all(&self) -> Vec<Arc<TestEntry>> {
        let mut tests = self.tests();
        self.evict(&mut tests.1);
        tests.1.values().cloned().collect()
    }

    /// Stops every running test and waits for each to end (and be stored).
    pub fn stop_all(&self) {
        let entries = self.all();
        for entry in &entries {
            entry.stop();
        }
        for entry in &entries {
            let handle = entry
                .thread
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(handle) = handle {
                let _ = handle.join();
            }
        }
    }

    /// Forgets finished tests older than `keep_finished`, then the oldest beyond `max_kept`.
    fn evict(&self, tests: &mut BTreeMap<TestId, Arc<TestEntry>>) {
        let now = Instant::now();
        tests.retain(|_, t| {
            t.log()
                .ended_at
                .is_none_or(|at| now.duration_since(at) < self.limits.keep_finished)
        });
        let finished: Vec<TestId> = tests
            .iter()
            .filter(|(_, t)| t.log().end.is_some())
            .map(|(id, _)| *id)
            .collect();
        let excess = finished.len().saturating_sub(self.limits.max_kept);
        for id in &finished[..excess] {
            tests.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn limits(max_running: usize, keep: Duration, max_kept: usize, max_intervals: usize) -> Limits {
        Limits {
            max_running,
            keep_finished: keep,
            max_kept,
            max_intervals,
        }
    }

    fn finished() -> Finished {
        Finished {
            record: analysis::testing::record_with("tcp", 1e9),
            run_id: results::store::RunId(7),
        }
    }

    fn wait_end(entry: &TestEntry) {
        let start = Instant::now();
        while entry.log().end.is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the test never ended"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn one_test_too_many_is_refused_until_one_ends() {
        let registry = Registry::new(limits(1, Duration::from_secs(60), 8, 8));
        let (go, wait) = mpsc::channel::<()>();
        let first = registry
            .start(vec!["tcp".into()], move |_, _| {
                let _ = wait.recv();
                Ok(finished())
            })
            .unwrap();
        let refused = registry.start(vec![], |_, _| Ok(finished()));
        assert_eq!(refused.err(), Some(Busy(1)));
        go.send(()).unwrap();
        wait_end(&first);
        let second = registry.start(vec![], |_, _| Ok(finished())).unwrap();
        assert_eq!((first.id, second.id), (1, 2));
        registry.stop_all();
        assert!(matches!(second.log().end, Some(End::Finished(_))));
    }

    #[test]
    fn stop_raises_the_interrupt_the_run_sees() {
        let registry = Registry::new(Limits::default());
        let entry = registry
            .start(vec![], |stop, _| {
                while !stop.is_raised() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(LaunchError("stopped".into()))
            })
            .unwrap();
        assert!(!entry.stopping());
        entry.stop();
        wait_end(&entry);
        assert!(matches!(&entry.log().end, Some(End::Failed(m)) if m == "stopped"));
    }

    #[test]
    fn the_log_keeps_the_last_intervals_and_counts_the_rest() {
        let registry = Registry::new(limits(4, Duration::from_secs(60), 8, 3));
        let entry = registry
            .start(vec![], |_, progress| {
                let record = finished().record;
                progress.started(&record.server, &record.spec);
                for i in 0..5 {
                    let mut sample = record.intervals[0].clone();
                    sample.start_s = f64::from(i);
                    progress.interval(&sample);
                }
                Ok(finished())
            })
            .unwrap();
        wait_end(&entry);
        let log = entry.log();
        assert!(log.started.is_some());
        assert_eq!(log.dropped, 2);
        let starts: Vec<f64> = log.intervals.iter().map(|s| s.start_s).collect();
        assert_eq!(starts, [2.0, 3.0, 4.0]);
    }

    #[test]
    fn finished_tests_are_forgotten_after_a_while_and_beyond_the_cap() {
        let registry = Registry::new(limits(4, Duration::from_secs(60), 2, 8));
        for _ in 0..3 {
            let entry = registry.start(vec![], |_, _| Ok(finished())).unwrap();
            wait_end(&entry);
        }
        let kept: Vec<TestId> = registry.all().iter().map(|t| t.id).collect();
        assert_eq!(kept, [2, 3]);
        let registry = Registry::new(limits(4, Duration::ZERO, 8, 8));
        let entry = registry.start(vec![], |_, _| Ok(finished())).unwrap();
        wait_end(&entry);
        assert!(registry.get(entry.id).is_none());
    }

    #[test]
    fn a_run_that_panics_still_ends() {
        let registry = Registry::new(Limits::default());
        let entry = registry.start(vec![], |_, _| panic!("a bug")).unwrap();
        wait_end(&entry);
        assert!(matches!(entry.log().end, Some(End::Failed(_))));
    }
}
