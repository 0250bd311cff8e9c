//! A set of data-connection workers, one thread each, started and joined together.
//!
//! Both ends use it: spawn a worker per connection, read the counters while they run, raise
//! `stop`, then [`Workers::join`] with a drain deadline after which `abort` is raised. Dropping
//! the set raises `abort`, so an early return never leaves a worker running. The workers' CPU
//! time is read from outside ([`Workers::cpu_used`]: each thread's CPU clock), never by them.
//!
//! A worker whose engine asks for its own descriptor table (`StreamEngine::private_fd_table`)
//! takes its connection into it; the set keeps the shared table's copy open for `abort` and
//! closes it when the worker has ended (in `join`, or for workers still running when the set
//! is dropped, in a thread that waits for them).

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use measure::cpu::CpuTime;
use wire::msg::StreamCounts;

use crate::budget::Budget;
use crate::{
    Abort, Conn, Endpoint, EngineError, Role, Signal, StreamControl, StreamCounters, StreamEngine,
    StreamReport, ThreadCpu,
};

/// Why a worker ended without its report.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The engine failed (its error names the connection and the cause).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The worker could not be pinned to the CPU asked for, so it did not run elsewhere.
    #[error("cannot pin to CPU {cpu}: {source}")]
    Pin {
        /// The CPU asked for.
        cpu: usize,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// The worker's thread panicked.
    #[error("worker thread panicked")]
    Panicked,
}

/// How one worker ended.
#[derive(Debug)]
pub struct WorkerOutcome {
    /// Its counters when it was joined (or given up on).
    pub now: StreamCounts,
    /// Latency samples it published that nobody has taken yet (request/response tests).
    pub latency_tail: Option<measure::latency::Latency>,
    /// Its report or error; `None` when it did not finish by the deadline.
    pub result: Option<Result<StreamReport, WorkerError>>,
    /// Its thread's CPU time (`getrusage(RUSAGE_THREAD)`) from its start to its end, whatever
    /// the result: a stream that failed (its peer gone) still used CPU until then. Zero for a
    /// worker that did not finish by the deadline.
    pub cpu: CpuTime,
}

/// What a worker sends when it ends.
struct Done {
    index: usize,
    result: Result<StreamReport, WorkerError>,
    /// The worker thread's CPU time from its start to here.
    cpu: CpuTime,
    /// The shared table's copy of a connection the worker took into its own table.
    shared_copy: Option<RawFd>,
}

impl Done {
    /// Closes the shared copy (the worker has ended) and gives the result.
    fn settle(self) -> (usize, (Result<StreamReport, WorkerError>, CpuTime)) {
        if let Some(fd) = self.shared_copy {
            crate::fd_table::close_shared_copy(fd);
        }
        (self.index, (self.result, self.cpu))
    }
}

/// A worker's way to send its [`Done`]: once, or, if the worker panics, as an error when
/// unwinding drops it (so the set still hears of it and closes its shared copy).
struct Report {
    /// Taken by the one send.
    tx: Option<Sender<Done>>,
    /// The set's count of workers that have ended, raised by the one send.
    ended: Arc<AtomicUsize>,
    index: usize,
    shared_copy: Option<RawFd>,
}

impl Report {
    fn send(&mut self, result: Result<StreamReport, WorkerError>, cpu: CpuTime) {
        if let Some(tx) = self.tx.take() {
            self.ended.fetch_add(1, Ordering::Release);
            let _ = tx.send(Done {
                index: self.index,
                result,
                cpu,
                shared_copy: self.shared_copy.take(),
            });
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        self.send(Err(WorkerError::Panicked), CpuTime::default());
    }
}

/// Running workers.
pub struct Workers {
    engine: Arc<dyn StreamEngine>,
    stop: Signal,
    abort: Abort,
    counters: Vec<Arc<StreamCounters>>,
    /// Each worker's thread CPU time, in spawn order.
    cpu_used: Vec<Arc<ThreadCpu>>,
    /// A second descriptor of each TCP sender's socket, for its TCP_INFO in every snapshot
    /// (the worker may close its own first; this one keeps the socket readable).
    tcp_probes: Vec<Option<std::net::TcpStream>>,
    cpu: Option<usize>,
    /// Workers started and not yet heard from.
    running: usize,
    done_tx: Sender<Done>,
    done_rx: Receiver<Done>,
    /// The hard stop of [`Workers::stop_by`], disarmed with the set.
    watchdog: Option<crate::Watchdog>,
    /// When the test's window opened: [`Workers::start_clock`], else the first spawn.
    origin: Option<Instant>,
    /// Workers that have ended (their engine returned, or they panicked).
    ended: Arc<AtomicUsize>,
    /// A test by amount: what the senders of this set have left to send.
    budget: Option<Arc<Budget>>,
}

impl Workers {
    /// An empty set that will run `engine`.
    pub fn new(engine: Box<dyn StreamEngine>) -> Self {
        let (done_tx, done_rx) = mpsc::channel();
        Self {
            engine: Arc::from(engine),
            stop: Signal::new(),
            abort: Abort::new(),
            counters: Vec::new(),
            cpu_used: Vec::new(),
            tcp_probes: Vec::new(),
            cpu: None,
            running: 0,
            done_tx,
            done_rx,
            watchdog: None,
            origin: None,
            ended: Arc::default(),
            budget: None,
        }
    }

    /// A test by amount: the senders started from now on share `units` to send
    /// ([`StreamControl::budget`]); `None` for a test by time.
    pub fn share_budget(&mut self, units: Option<u64>) {
        self.budget = units.map(|u| Arc::new(Budget::new(u)));
    }

    /// Whether every worker started has ended: by amount, each sender has sent its share (a
    /// TCP sender once its receiver has read it all) and each receiver has seen its stream end.
    pub fn all_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire) == self.counters.len()
    }

    /// Opens the test's window now and returns its instant, the origin every worker spawned
    /// after is given ([`StreamControl::origin`]); without it, the first spawn opens it.
    pub fn start_clock(&mut self) -> Instant {
        *self.origin.insert(Instant::now())
    }

    /// A hard stop that holds whatever the caller is doing (blocked in a write to a peer that
    /// does not read, say): a thread of its own raises `stop` at `stop_at` and `abort` at
    /// `abort_at`, unless the set is joined or dropped first. Arming it again replaces it.
    pub fn stop_by(&mut self, stop_at: Instant, abort_at: Instant) -> std::io::Result<()> {
        let dog = crate::Watchdog::arm(self.stop.clone(), self.abort.clone(), stop_at, abort_at)?;
        self.watchdog = Some(dog);
        Ok(())
    }

    /// Pins every worker started from now on to `cpu` (a worker that cannot be pinned ends
    /// with that error instead of running elsewhere).
    pub fn pin_to(&mut self, cpu: Option<usize>) {
        self.cpu = cpu;
    }

    /// Starts a worker for `end` (a socket, or a `tcp_crr` requester's target) as `role`; its
    /// index is the number started before it.
    pub fn spawn(
        &mut self,
        end: impl Into<Endpoint>,
        role: Role,
        thread_name: String,
    ) -> std::io::Result<()> {
        let end = end.into();
        let probe = match (&end, role) {
            (Endpoint::Socket(Conn::Tcp(s)), Role::Sender) => s.try_clone().ok(),
            _ => None,
        };
        let index = self.counters.len();
        let counter = Arc::new(StreamCounters::default());
        let cpu_used = Arc::new(ThreadCpu::default());
        let (c, s, a) = (Arc::clone(&counter), self.stop.clone(), self.abort.clone());
        let thread_cpu = Arc::clone(&cpu_used);
        let (engine, tx) = (Arc::clone(&self.engine), self.done_tx.clone());
        let cpu = self.cpu;
        let origin = *self.origin.get_or_insert_with(Instant::now);
        let ended = Arc::clone(&self.ended);
        let budget = (role == Role::Sender)
            .then(|| self.budget.clone())
            .flatten();
        std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let mut report = Report {
                    tx: Some(tx),
                    ended,
                    index,
                    shared_copy: None,
                };
                // Dropped before the report goes (or while unwinding, before `report`), so a
                // joined worker's figure is final.
                let cpu_guard = thread_cpu.start();
                let rusage0 = CpuTime::thread_now();
                if let Some(cpu) = cpu {
                    if let Err(e) = crate::affinity::pin_current_thread(cpu) {
                        let used = CpuTime::thread_now().since(rusage0);
                        report.send(Err(WorkerError::Pin { cpu, source: e }), used);
                        return;
                    }
                }
                if engine.private_fd_table() {
                    report.shared_copy = take_into_own_table(&end);
                }
                let ctl = StreamControl {
                    stream: index as u16,
                    counter: &c,
                    stop: &s,
                    abort: &a,
                    origin,
                    budget: budget.as_deref(),
                };
                let result = engine.run(end, role, ctl).map_err(WorkerError::from);
                let used = CpuTime::thread_now().since(rusage0);
                drop(cpu_guard);
                report.send(result, used);
            })?;
        self.counters.push(counter);
        self.cpu_used.push(cpu_used);
        self.tcp_probes.push(probe);
        self.running += 1;
        Ok(())
    }

    /// Every worker's counters now, in spawn order, with each TCP sender's TCP_INFO (one
    /// getsockopt per sender).
    pub fn snapshot(&self) -> Vec<StreamCounts> {
        self.counters
            .iter()
            .zip(&self.tcp_probes)
            .map(|(c, probe)| StreamCounts {
                tcp_info: probe
                    .as_ref()
                    .and_then(|s| measure::tcp_info::read(s.as_raw_fd()).ok()),
                ..c.snapshot()
            })
            .collect()
    }

    /// The CPU time (user + system) every worker's thread has used so far, summed: one
    /// `clock_gettime` per running worker, read from this thread; with what the threads a
    /// worker started to help it used, as it last published (live frames' runner).
    pub fn cpu_used(&self) -> Duration {
        let own: Duration = self.cpu_used.iter().map(|c| c.used()).sum();
        own + self
            .counters
            .iter()
            .map(|c| c.helper_cpu())
            .sum::<Duration>()
    }

    /// Latency samples of every worker since the last call (request/response tests).
    pub fn take_latency(&self) -> Option<measure::latency::Latency> {
        let mut all: Option<measure::latency::Latency> = None;
        for c in &self.counters {
            if let Some(l) = c.take_latency() {
                all.get_or_insert_with(Default::default).add(&l);
            }
        }
        all
    }

    /// Tells senders to stop and receivers to drain.
    pub fn stop(&self) {
        self.stop.raise();
    }

    /// Tells every worker to give up now.
    pub fn abort(&self) {
        self.abort.raise();
    }

    /// Waits for every worker, raising `abort` at `drain` from now.
    pub fn join(mut self, drain: Duration) -> Vec<WorkerOutcome> {
        let n = self.counters.len();
        let mut results: Vec<Option<(Result<StreamReport, WorkerError>, CpuTime)>> =
            (0..n).map(|_| None).collect();
        let deadline = Instant::now() + drain;
        while self.running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .done_rx
                .recv_timeout(left.max(Duration::from_millis(1)))
            {
                Ok(done) => {
                    let (i, r) = done.settle();
                    if let Some(slot) = results.get_mut(i) {
                        *slot = Some(r);
                    }
                    self.running -= 1;
                }
                Err(RecvTimeoutError::Timeout) if !self.abort.is_raised() => self.abort.raise(),
                // Aborted workers end within one poll interval; past that, stop waiting.
                Err(RecvTimeoutError::Timeout)
                    if Instant::now() > deadline + Duration::from_secs(2) =>
                {
                    break
                }
                Err(_) => {}
            }
        }
        results
            .into_iter()
            .zip(&self.counters)
            .map(|(done, c)| {
                let (result, cpu) =
                    done.map_or((None, CpuTime::default()), |(r, cpu)| (Some(r), cpu));
                WorkerOutcome {
                    now: c.snapshot(),
                    latency_tail: c.take_latency(),
                    result,
                    cpu,
                }
            })
            .collect()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.abort.raise();
        if self.running > 0 && self.engine.private_fd_table() {
            // Workers still running hold connections whose shared copies are closed when each
            // ends; a thread waits for them (the channel closes when the last one has ended).
            let (tx, rx) = mpsc::channel();
            drop(std::mem::replace(&mut self.done_tx, tx));
            let late = std::mem::replace(&mut self.done_rx, rx);
            let _ = std::thread::Builder::new()
                .name("lr-reap".into())
                .spawn(move || late.iter().for_each(|done| drop(done.settle())));
        }
    }
}

/// Moves this worker thread to a descriptor table of its own holding `end`'s socket (see
/// `fd_table`); the shared table's copy, if any, is returned for the set to close once the
/// worker has ended. `None` and no change when `end` is not a stream socket this worker alone
/// owns (a listener shared by responders, UDP sockets, no socket yet) or the kernel refuses.
fn take_into_own_table(end: &Endpoint) -> Option<RawFd> {
    let keep = match end {
        Endpoint::Socket(conn @ (Conn::Tcp(_) | Conn::Unix(_))) => conn.as_raw_fd(),
        _ => return None,
    };
    crate::fd_table::make_private(keep).ok().map(|()| keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::MockEngine;
    use std::os::unix::net::UnixStream;

    #[test]
    fn mock_pair_reconciles_and_joins() {
        let engine = || {
            Box::new(MockEngine {
                bytes_per_stream: 12_345,
            })
        };
        let (mut tx, mut rx) = (Workers::new(engine()), Workers::new(engine()));
        for i in 0..3 {
            let (a, b) = UnixStream::pair().unwrap();
            tx.spawn(Conn::Unix(a), Role::Sender, format!("t{i}"))
                .unwrap();
            rx.spawn(Conn::Unix(b), Role::Receiver, format!("r{i}"))
                .unwrap();
        }
        // The counters reach 12 345 once every sender thread has run; a busy machine may take a
        // while to start them.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !tx.snapshot().iter().all(|c| c.bytes == 12_345) {
            assert!(std::time::Instant::now() < deadline, "{:?}", tx.snapshot());
            std::thread::sleep(Duration::from_millis(5));
        }
        tx.stop();
        let sent = tx.join(Duration::from_secs(5));
        let got = rx.join(Duration::from_secs(5));
        for (s, r) in sent.iter().zip(&got) {
            assert_eq!(
                s.result.as_ref().unwrap().as_ref().unwrap().bytes_total,
                12_345
            );
            assert_eq!(
                r.result.as_ref().unwrap().as_ref().unwrap().bytes_total,
                12_345
            );
        }
    }

    #[test]
    fn a_stuck_worker_is_aborted_at_the_deadline() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut rx = Workers::new(Box::new(MockEngine {
            bytes_per_stream: 0,
        }));
        rx.spawn(Conn::Unix(a), Role::Receiver, "r".into()).unwrap();
        let start = Instant::now();
        let out = rx.join(Duration::from_millis(100));
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(matches!(out[0].result, Some(Err(_))), "{out:?}");
    }

    /// Runs in a table of its own until stop or abort, then drops its connection without a
    /// shutdown (its peer sees end of stream only once the shared copy is closed too); with
    /// `panics`, panics at once instead.
    struct OwnTable {
        panics: bool,
    }

    impl StreamEngine for OwnTable {
        fn name(&self) -> &'static str {
            "own_table"
        }

        fn run(
            &self,
            _end: Endpoint,
            _role: Role,
            ctl: StreamControl<'_>,
        ) -> Result<StreamReport, crate::EngineError> {
            assert!(!self.panics, "engine bug");
            while !ctl.stop.is_raised() && !ctl.abort.is_raised() {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(StreamReport::default())
        }

        fn private_fd_table(&self) -> bool {
            true
        }
    }

    /// A set running one `OwnTable` worker on one end of a socket pair, and the other end.
    fn one_own_table_worker(panics: bool) -> (Workers, UnixStream) {
        let (a, peer) = UnixStream::pair().unwrap();
        let mut w = Workers::new(Box::new(OwnTable { panics }));
        w.spawn(Conn::Unix(a), Role::Receiver, "q".into()).unwrap();
        (w, peer)
    }

    /// End of stream at `peer` within 5 s.
    fn ends(mut peer: UnixStream) -> bool {
        use std::io::Read;
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        matches!(peer.read(&mut [0u8; 1]), Ok(0))
    }

    #[test]
    fn a_private_table_workers_connection_is_closed_at_join() {
        let (w, peer) = one_own_table_worker(false);
        w.stop();
        let out = w.join(Duration::from_secs(5));
        assert!(
            matches!(&out[0].result, Some(Ok(r)) if *r == StreamReport::default()),
            "{out:?}"
        );
        assert!(ends(peer));
    }

    #[test]
    fn a_panicked_worker_is_reported_and_its_connection_closed() {
        let (w, peer) = one_own_table_worker(true);
        let out = w.join(Duration::from_secs(5));
        assert!(
            matches!(out[0].result, Some(Err(WorkerError::Panicked))),
            "{out:?}"
        );
        assert!(ends(peer));
    }

    #[test]
    fn a_private_table_workers_connection_is_closed_after_a_drop() {
        let (w, peer) = one_own_table_worker(false);
        drop(w); // raises abort; the worker ends after the set is gone
        assert!(ends(peer));
    }
}
