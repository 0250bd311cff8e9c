//! The tests started from the UI while it runs: at most [`Limits::max_running`] at once, each
//! a linerate child process whose `--json-stream` events go into the test's [`Log`]: what a
//! late reader replays (its last [`Limits::max_intervals`] intervals, its last
//! [`Limits::max_events`] other events, its end). Finished tests are forgotten
//! [`Limits::keep_finished`] after they end, beyond [`Limits::max_kept`] of them, and beyond
//! [`Limits::max_kept_bytes`] of events. Stored runs stay in the database (the child stores
//! them); this is only the live view.
//!
//! Each child has a thread that reads its stdout line by line (a line is at most
//! [`Limits::max_line_bytes`]; a longer one is left out with a note) and a thread for its
//! stderr's last lines; when stdout ends, the first reaps the child and writes the test's end:
//! `summary` if the command wrote its `end`, else `error` with its message. Events go into the
//! log under a mutex, and a `watch` channel tells readers something new is there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::child::{self, Proc};
pub use crate::log::{End, Log};
use crate::stream::{self, Parsed};

/// A test's id in this UI (not a stored run's id).
pub type TestId = u64;

/// How much the registry runs and keeps.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Tests running at once; one more is refused.
    pub max_running: usize,
    /// How long a finished test's events stay readable.
    pub keep_finished: Duration,
    /// Finished tests kept at most (the oldest go first).
    pub max_kept: usize,
    /// Bytes of events kept over all finished tests at most (the oldest tests go first).
    pub max_kept_bytes: usize,
    /// Intervals kept per test for late readers (the oldest go first).
    pub max_intervals: usize,
    /// Other events (starts, points, notes, stored runs) kept per test (the oldest go first).
    pub max_events: usize,
    /// The longest line read from a test's stdout (its end document is one line).
    pub max_line_bytes: usize,
    /// How long the UI's shutdown waits for an interrupted test before killing it.
    pub stop_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_running: 4,
            keep_finished: Duration::from_secs(600),
            max_kept: 64,
            max_kept_bytes: 256 << 20,
            max_intervals: 3600,
            max_events: 10_000,
            max_line_bytes: 64 << 20,
            stop_grace: Duration::from_secs(30),
        }
    }
}

/// One test started from the UI.
pub struct TestEntry {
    /// Its id.
    pub id: TestId,
    /// Its command line as shown (the words after `linerate`, without `--json-stream`).
    pub command: Vec<String>,
    /// The request it was started with (`POST /api/tests`' body), so a page that follows it
    /// (reloaded, or another tab's) shows its settings rather than the form's defaults.
    pub request: serde_json::Value,
    proc: Proc,
    log: Mutex<Log>,
    changed: watch::Sender<u64>,
    limits: Limits,
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

    /// Interrupts the command (SIGINT, as Ctrl-C): it stops, stores what it measured and
    /// writes its end. Stopping a test that has ended changes nothing.
    pub fn stop(&self) {
        if self.log().end.is_none() {
            self.proc.interrupt();
        }
    }

    /// Whether [`TestEntry::stop`] was called while it ran.
    pub fn stopping(&self) -> bool {
        self.proc.interrupted()
    }

    fn changed(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// One stdout line (`None`: one too long to keep).
    fn take_line(&self, line: Option<&[u8]>) {
        let single = !self.log().begun;
        let parsed = match line.map(std::str::from_utf8) {
            Some(Ok(text)) => stream::parse(text, self.id, &self.command, single),
            Some(Err(_)) => Parsed::Invalid(stream::note(self.id, "not an event: not UTF-8")),
            None => Parsed::Invalid(stream::note(
                self.id,
                &format!(
                    "a line longer than {} was left out",
                    crate::log::size(self.limits.max_line_bytes)
                ),
            )),
        };
        self.log().take(parsed, &self.limits);
        self.changed();
    }

    /// The end: its result if the command wrote one, else its error.
    fn finish(&self, status: Option<ExitStatus>, stderr: &[String]) {
        let stopped = self.proc.interrupted();
        let code = status.and_then(|s| s.code());
        let mut log = self.log();
        let (name, data, end) = match log.take_end_doc() {
            Some(doc) => {
                // A command that wrote its result and then failed says why on stderr.
                let failed = !stopped && code.is_some_and(|c| c != 0);
                let error = failed.then(|| child::error_message(stderr, status));
                let ended = (code, error.as_deref());
                let data = stream::summary(self.id, &doc, &log.run_ids, stopped, ended);
                ("summary", data, End::Finished)
            }
            None => {
                let message = match status {
                    Some(s) if s.success() => format!(
                        "the command ended ({}) without writing its result",
                        child::describe(s)
                    ),
                    _ => child::error_message(stderr, status),
                };
                let data = serde_json::json!({"id": self.id, "error": message}).to_string();
                ("error", data, End::Failed(message))
            }
        };
        log.finish(name, data, end, &self.limits);
        drop(log);
        self.changed();
    }
}

/// Reads the child's output to its end, reaps it, and ends the test.
fn supervise(entry: &TestEntry, mut child: Child) {
    let stderr = child.stderr.take();
    // Without a thread for stderr (none to be had), its pipe closes and only the exit status
    // explains a failure.
    let errors = std::thread::Builder::new()
        .name(format!("ui-test-{}-stderr", entry.id))
        .spawn(move || stderr.map(child::stderr_tail).unwrap_or_default())
        .ok();
    if let Some(stdout) = child.stdout.take() {
        let cap = entry.limits.max_line_bytes;
        let _ = child::for_each_line(stdout, cap, |line| entry.take_line(line));
    }
    let status = entry.proc.wait(&mut child).ok();
    let tail = errors.and_then(|h| h.join().ok()).unwrap_or_default();
    entry.finish(status, &tail);
}

/// Why a test did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// As many tests as allowed are running.
    #[error("{0} tests are running")]
    Busy(usize),
    /// The UI is shutting down.
    #[error("the UI is shutting down")]
    Closing,
    /// The child process or its thread could not be started.
    #[error("cannot start the test: {0}")]
    Spawn(std::io::Error),
}

/// The tests started from this UI.
pub struct Registry {
    limits: Limits,
    /// The key file the tests prove to servers with keys (`linerate ui --auth-key`); `None`:
    /// they run without one.
    auth_key: Option<PathBuf>,
    /// Set by [`Registry::stop_all`]: no test starts after it.
    closing: AtomicBool,
    tests: Mutex<(TestId, BTreeMap<TestId, Arc<TestEntry>>)>,
}

impl Registry {
    /// An empty registry.
    pub fn new(limits: Limits) -> Self {
        Registry {
            limits,
            auth_key: None,
            closing: AtomicBool::new(false),
            tests: Mutex::new((0, BTreeMap::new())),
        }
    }

    /// The same, its tests proving `key` (a key file) to servers with keys.
    pub fn with_key(self, key: Option<PathBuf>) -> Self {
        Registry {
            auth_key: key,
            ..self
        }
    }

    fn tests(&self) -> MutexGuard<'_, (TestId, BTreeMap<TestId, Arc<TestEntry>>)> {
        self.tests.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `exe words…` (storing in `db`) as a new test shown as `command`, asked for by
    /// `request`, unless too many are running.
    pub fn start(
        &self,
        exe: &Path,
        db: &str,
        words: &[String],
        (command, request): (Vec<String>, serde_json::Value),
    ) -> Result<Arc<TestEntry>, StartError> {
        let mut tests = self.tests();
        if self.closing.load(Ordering::SeqCst) {
            return Err(StartError::Closing);
        }
        self.evict(&mut tests.1);
        let running = tests.1.values().filter(|t| t.log().end.is_none()).count();
        if running >= self.limits.max_running {
            return Err(StartError::Busy(self.limits.max_running));
        }
        let id = tests.0 + 1;
        // The child is started by the thread that supervises it, which lives as long as the
        // child: its parent-death signal (`child::spawn`) is tied to that thread.
        let (pid_tx, pid_rx) = mpsc::channel::<std::io::Result<libc::pid_t>>();
        let (entry_tx, entry_rx) = mpsc::channel::<Arc<TestEntry>>();
        let (exe, words, db) = (exe.to_path_buf(), words.to_vec(), db.to_string());
        let key = self.auth_key.clone();
        let handle = std::thread::Builder::new()
            .name(format!("ui-test-{id}"))
            .spawn(move || {
                let mut child = match child::spawn(&exe, &words, &db, key.as_deref()) {
                    Ok(child) => child,
                    Err(e) => return drop(pid_tx.send(Err(e))),
                };
                let _ = pid_tx.send(Ok(child.id() as libc::pid_t));
                match entry_rx.recv() {
                    Ok(entry) => supervise(&entry, child),
                    // Not taken after all: killed and reaped here.
                    Err(_) => {
                        let proc = Proc::of(&child);
                        proc.kill();
                        let _ = proc.wait(&mut child);
                    }
                }
            })
            .map_err(StartError::Spawn)?;
        let pid = match pid_rx.recv() {
            Ok(Ok(pid)) => pid,
            Ok(Err(e)) => {
                let _ = handle.join();
                return Err(StartError::Spawn(e));
            }
            Err(_) => {
                let _ = handle.join();
                return Err(StartError::Spawn(std::io::Error::other(
                    "the test's thread ended before its child started",
                )));
            }
        };
        let entry = Arc::new(TestEntry {
            id,
            command,
            request,
            proc: Proc::of_pid(pid),
            log: Mutex::new(Log::default()),
            changed: watch::channel(0).0,
            limits: self.limits.clone(),
            thread: Mutex::new(None),
        });
        let _ = entry_tx.send(Arc::clone(&entry));
        *entry.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        tests.0 = id;
        tests.1.insert(id, Arc::clone(&entry));
        Ok(entry)
    }

    /// Test `id`, if it is running or still kept.
    pub fn get(&self, id: TestId) -> Option<Arc<TestEntry>> {
        let mut tests = self.tests();
        self.evict(&mut tests.1);
        tests.1.get(&id).cloned()
    }

    /// Forgets test `id` (one refused before its first event: it never was a test).
    pub fn forget(&self, id: TestId) {
        let entry = self.tests().1.remove(&id);
        if let Some(entry) = entry {
            join(&entry);
        }
    }

    /// Every test kept, oldest first.
    pub fn all(&self) -> Vec<Arc<TestEntry>> {
        let mut tests = self.tests();
        self.evict(&mut tests.1);
        tests.1.values().cloned().collect()
    }

    /// Interrupts every running test and waits for each to end (and store what it measured);
    /// one still running [`Limits::stop_grace`] after is killed.
    pub fn stop_all(&self) {
        // A start that saw it unset holds the lock until its test is in: `all()` has it.
        self.closing.store(true, Ordering::SeqCst);
        let entries = self.all();
        for entry in &entries {
            entry.stop();
        }
        let deadline = Instant::now() + self.limits.stop_grace;
        for entry in &entries {
            while entry.log().end.is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if entry.log().end.is_none() {
                entry.proc.kill();
            }
        }
        for entry in &entries {
            join(entry);
        }
    }

    /// Forgets finished tests older than `keep_finished`, then the oldest beyond `max_kept`
    /// or `max_kept_bytes`.
    fn evict(&self, tests: &mut BTreeMap<TestId, Arc<TestEntry>>) {
        let now = Instant::now();
        tests.retain(|_, t| {
            t.log()
                .ended_at()
                .is_none_or(|at| now.duration_since(at) < self.limits.keep_finished)
        });
        let finished: Vec<(TestId, usize)> = tests
            .iter()
            .filter_map(|(id, t)| {
                let log = t.log();
                log.end.as_ref().map(|_| (*id, log.bytes()))
            })
            .collect();
        let mut count = finished.len();
        let mut bytes: usize = finished.iter().map(|(_, b)| b).sum();
        for (id, size) in finished {
            if count <= self.limits.max_kept && bytes <= self.limits.max_kept_bytes {
                break;
            }
            tests.remove(&id);
            count -= 1;
            bytes -= size;
        }
    }
}

/// Waits for a test's reading thread (it ends with the child).
fn join(entry: &TestEntry) {
    let handle = entry
        .thread
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(handle) = handle {
        let _ = handle.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_running: 4,
            max_kept: 8,
            max_intervals: 8,
            ..Limits::default()
        }
    }

    /// A test whose "command" is the shell script `script`.
    fn sh(registry: &Registry, script: &str) -> Result<Arc<TestEntry>, StartError> {
        let words = ["-c".to_string(), script.to_string()];
        let shown = (vec!["sh".into()], serde_json::Value::Null);
        registry.start(Path::new("/bin/sh"), "db", &words, shown)
    }

    fn wait_end(entry: &TestEntry) -> End {
        let start = Instant::now();
        loop {
            if let Some(end) = entry.log().end.clone() {
                return end;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "no end");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn names(log: &Log) -> Vec<&'static str> {
        log.since(0).iter().map(|e| e.name.unwrap_or("-")).collect()
    }

    #[test]
    fn a_commands_events_end_in_its_summary() {
        let registry = Registry::new(limits());
        let spec = wire::TestSpec::new(wire::Params::defaults(wire::TestKind::TcpStream), 1, 1000);
        let started = serde_json::json!({"event": "started", "spec": spec,
            "server": {"version": "1", "hostname": "h", "cores": 1}});
        let script = format!(
            r#"printf '%s\n' \
            '{started}' \
            '{{"event":"interval","data":{{"start_s":0.0,"end_s":1.0,"flows":[]}}}}' 'junk' \
            '{{"event":"stored","run_id":5}}' \
            '{{"event":"end","data":{{"kind":"tcp_stream","target":"t","summary":{{"interrupted":false}}}}}}'"#
        );
        let entry = sh(&registry, &script).unwrap();
        assert_eq!(wait_end(&entry), End::Finished);
        let log = entry.log();
        assert_eq!(names(&log), ["started", "-", "note", "stored", "summary"]);
        assert_eq!((log.intervals, log.run_ids.as_slice()), (1, &[5][..]));
        let summary: serde_json::Value = serde_json::from_str(&log.since(4)[0].data).unwrap();
        assert_eq!(summary["run_id"], 5);
        assert_eq!(summary["exit_code"], 0);
    }

    #[test]
    fn a_command_that_fails_ends_in_its_message() {
        let registry = Registry::new(limits());
        let entry = sh(
            &registry,
            "echo 'linerate: error: -C nosuchcc: unknown' >&2; exit 2",
        )
        .unwrap();
        assert_eq!(wait_end(&entry), End::Failed("-C nosuchcc: unknown".into()));
        assert!(!entry.log().evented);
        let entry = sh(&registry, "exit 0").unwrap();
        assert_eq!(
            wait_end(&entry),
            End::Failed("the command ended (exit status 0) without writing its result".into())
        );
        let entry = registry
            .start(
                Path::new("/nonexistent/linerate"),
                "db",
                &[],
                Default::default(),
            )
            .err();
        assert!(matches!(entry, Some(StartError::Spawn(_))), "{entry:?}");
    }

    #[test]
    fn one_test_too_many_is_refused_until_one_ends() {
        let registry = Registry::new(Limits {
            max_running: 1,
            ..limits()
        });
        let first = sh(&registry, "exec sleep 30").unwrap();
        assert!(matches!(sh(&registry, "true"), Err(StartError::Busy(1))));
        first.stop();
        assert!(first.stopping());
        assert_eq!(wait_end(&first), End::Failed("killed by signal 2".into()));
        let second = sh(&registry, "true").unwrap();
        assert_eq!((first.id, second.id), (1, 2));
        registry.stop_all();
    }

    #[test]
    fn a_stopped_command_that_writes_its_end_is_a_summary() {
        let registry = Registry::new(limits());
        let entry = sh(
            &registry,
            r#"trap 'echo "{\"event\":\"end\",\"data\":{\"interrupted\":true}}"; exit 130' INT
               echo '{"event":"begin","title":"t","points":1}'
               while :; do sleep 0.05; done"#,
        )
        .unwrap();
        while !entry.log().begun {
            std::thread::sleep(Duration::from_millis(5));
        }
        entry.stop();
        assert_eq!(wait_end(&entry), End::Finished);
        let log = entry.log();
        let last = log.since(0).pop().unwrap();
        let data: serde_json::Value = serde_json::from_str(&last.data).unwrap();
        assert_eq!(
            (data["interrupted"].clone(), data["exit_code"].clone()),
            (true.into(), 130.into())
        );
        assert_eq!(data["document"], serde_json::json!({"interrupted": true}));
    }

    #[test]
    fn the_log_is_bounded() {
        let registry = Registry::new(Limits {
            max_intervals: 3,
            max_line_bytes: 80,
            ..limits()
        });
        let entry = sh(
            &registry,
            r#"for i in 0 1 2 3 4; do
                 echo "{\"event\":\"interval\",\"data\":{\"start_s\":$i,\"end_s\":$i,\"flows\":[]}}"
               done
               head -c 100 /dev/zero | tr '\0' x; echo"#,
        )
        .unwrap();
        wait_end(&entry);
        let log = entry.log();
        assert_eq!(log.intervals, 5);
        let kept: Vec<String> = log.since(0).iter().map(|e| e.data.to_string()).collect();
        let sample = |i| format!(r#"{{"start_s":{i}.0,"end_s":{i}.0,"flows":[]}}"#);
        assert_eq!(kept[..3], [sample(2), sample(3), sample(4)]);
        assert!(
            kept[3].contains("a line longer than 80 bytes was left out"),
            "{kept:?}"
        );
        assert_eq!(log.since(6).len(), 1);
    }

    #[test]
    fn shutdown_kills_a_test_that_does_not_stop() {
        let registry = Registry::new(Limits {
            stop_grace: Duration::from_millis(200),
            ..limits()
        });
        let entry = sh(
            &registry,
            r#"trap '' INT; echo '{"event":"begin","title":"t","points":1}'; exec sleep 30"#,
        )
        .unwrap();
        // Once the trap is set.
        while !entry.log().begun {
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        registry.stop_all();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(wait_end(&entry), End::Failed("killed by signal 9".into()));
    }

    #[test]
    fn finished_tests_are_forgotten_after_a_while_and_beyond_the_cap() {
        let registry = Registry::new(Limits {
            max_kept: 2,
            ..limits()
        });
        for _ in 0..3 {
            wait_end(&sh(&registry, "true").unwrap());
        }
        let kept: Vec<TestId> = registry.all().iter().map(|t| t.id).collect();
        assert_eq!(kept, [2, 3]);
        let registry = Registry::new(Limits {
            keep_finished: Duration::ZERO,
            ..limits()
        });
        let entry = sh(&registry, "true").unwrap();
        wait_end(&entry);
        assert!(registry.get(entry.id).is_none());
    }
}
