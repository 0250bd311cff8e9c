//! Shared progress counters and CPU clocks between a worker and its orchestrator (the stop
//! flag, [`Signal`](crate::Signal), is `measure::signal::Signal`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use measure::cpu::{CpuTime, ThreadClock};
use measure::latency::Latency;
use measure::udp_stats::UdpCounts;
use wire::msg::StreamCounts;

/// One worker's running counters. Only the worker writes them; anyone may read them at any
/// time. Bytes and packets are single-writer atomics (a plain store per syscall); UDP receive
/// accounting is published once per batch under an uncontended lock.
#[derive(Debug, Default)]
pub struct StreamCounters {
    bytes: AtomicU64,
    packets: AtomicU64,
    /// CPU time, ns, of threads the worker started to send for it (live frames' runner).
    helper_cpu_ns: AtomicU64,
    rx: Mutex<Option<UdpCounts>>,
    latency: Mutex<PendingLatency>,
}

/// Round trips handed over by a worker and not yet taken: raw samples, folded into a histogram
/// once there are [`FOLD_AT`] of them (an orchestrator that never takes them costs bounded
/// memory).
#[derive(Debug, Default)]
struct PendingLatency {
    samples: Vec<u64>,
    folded: Option<Latency>,
}

/// Raw samples kept before they are folded into a histogram (512 KiB).
const FOLD_AT: usize = 1 << 16;

impl StreamCounters {
    /// Publishes the CPU time the threads the worker started to help it have used so far.
    pub fn publish_helper_cpu(&self, used: Duration) {
        let ns = u64::try_from(used.as_nanos()).unwrap_or(u64::MAX);
        self.helper_cpu_ns.store(ns, Ordering::Relaxed);
    }

    /// What [`StreamCounters::publish_helper_cpu`] last published.
    pub fn helper_cpu(&self) -> Duration {
        Duration::from_nanos(self.helper_cpu_ns.load(Ordering::Relaxed))
    }

    /// Publishes the worker's running byte total.
    #[inline]
    pub fn publish(&self, bytes: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Publishes running byte and datagram totals.
    #[inline]
    pub fn publish_packets(&self, bytes: u64, packets: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
        self.packets.store(packets, Ordering::Relaxed);
    }

    /// Publishes a UDP receiver's accounting (and its byte and datagram totals).
    pub fn publish_rx(&self, rx: UdpCounts) {
        self.publish_packets(rx.bytes, rx.packets);
        if let Ok(mut slot) = self.rx.lock() {
            *slot = Some(rx);
        }
    }

    /// Hands over round trips (ns) for the orchestrator to collect per interval, leaving
    /// `samples` empty with its capacity. Raw values, not a histogram: a worker that merged
    /// and cleared a 221 KiB histogram every 10 ms evicted its own socket state from the cache.
    pub fn hand_over_latency(&self, samples: &mut Vec<u64>) {
        if let Ok(mut slot) = self.latency.lock() {
            slot.samples.append(samples);
            if slot.samples.len() >= FOLD_AT {
                let PendingLatency { samples, folded } = &mut *slot;
                let h = folded.get_or_insert_with(Latency::new);
                samples.drain(..).for_each(|ns| h.record_ns(ns));
            }
        }
    }

    /// Takes the round trips handed over since the last call, as a histogram.
    pub fn take_latency(&self) -> Option<Latency> {
        let PendingLatency { samples, folded } = std::mem::take(&mut *self.latency.lock().ok()?);
        if samples.is_empty() && folded.is_none() {
            return None;
        }
        let mut h = folded.unwrap_or_default();
        samples.into_iter().for_each(|ns| h.record_ns(ns));
        Some(h)
    }

    /// The last published byte total.
    #[inline]
    pub fn get(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Everything published so far.
    pub fn snapshot(&self) -> StreamCounts {
        StreamCounts {
            bytes: self.bytes.load(Ordering::Relaxed),
            packets: self.packets.load(Ordering::Relaxed),
            rx: self.rx.lock().ok().and_then(|r| *r),
            tcp_info: None,
            receive: None,
            send_mode: None,
            send_drops: None,
        }
    }
}

/// A worker thread's CPU time, for the orchestrator to read each interval without the worker
/// doing anything on its data path: the worker registers its thread's clock when it starts
/// ([`ThreadCpu::start`]) and leaves its final reading when it ends. The lock is taken twice
/// by the worker and once per reading by the orchestrator, so a reading always names a live
/// thread (the worker cannot end, and its thread id be reused, while a reading holds it).
#[derive(Debug, Default)]
pub struct ThreadCpu(Mutex<ThreadCpuState>);

#[derive(Debug, Default, Clone, Copy)]
enum ThreadCpuState {
    /// The worker has not started yet: nothing used.
    #[default]
    NotStarted,
    /// The worker runs on the thread of this clock.
    Running(ThreadClock),
    /// The worker ended, having used this much.
    Ended(Duration),
}

/// Held by a worker while it runs; dropping it (on the worker's thread, also when unwinding)
/// leaves the thread's final CPU time.
#[must_use = "the worker's CPU stops being readable when this is dropped"]
pub struct ThreadCpuGuard<'a>(&'a ThreadCpu);

impl ThreadCpu {
    fn state(&self) -> MutexGuard<'_, ThreadCpuState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Called first on the worker's own thread: from now on [`ThreadCpu::used`] reads its clock.
    pub fn start(&self) -> ThreadCpuGuard<'_> {
        if let Ok(clock) = ThreadClock::current() {
            *self.state() = ThreadCpuState::Running(clock);
        }
        ThreadCpuGuard(self)
    }

    /// The CPU time (user + system) the worker's thread used so far: 0 before it started,
    /// its final figure once it has ended.
    pub fn used(&self) -> Duration {
        match *self.state() {
            ThreadCpuState::NotStarted => Duration::ZERO,
            ThreadCpuState::Running(clock) => clock.read().unwrap_or_default(),
            ThreadCpuState::Ended(used) => used,
        }
    }
}

impl Drop for ThreadCpuGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        // On the worker's own thread: its clock, or its rusage should the clock fail.
        let used = match *state {
            ThreadCpuState::Running(clock) => clock.read().ok(),
            _ => None,
        }
        .unwrap_or_else(|| Duration::from_micros(CpuTime::thread_now().total_us()));
        *state = ThreadCpuState::Ended(used);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn handed_over_round_trips_are_taken_once() {
        let c = StreamCounters::default();
        assert!(c.take_latency().is_none());
        let mut recent = vec![1_000, 2_000];
        c.hand_over_latency(&mut recent);
        assert!(recent.is_empty());
        recent.push(3_000);
        c.hand_over_latency(&mut recent);
        let got = c.take_latency().unwrap().summary().unwrap();
        assert_eq!((got.samples, got.min), (3, 1.0));
        assert!((got.max - 3.0).abs() <= 0.003, "{got:?}");
        assert!(c.take_latency().is_none());
    }

    /// Past FOLD_AT samples the raw values become a histogram; nothing is lost.
    #[test]
    fn samples_nobody_takes_fold_into_a_histogram() {
        let c = StreamCounters::default();
        let mut recent: Vec<u64> = (1..=(FOLD_AT as u64 + 10)).collect();
        c.hand_over_latency(&mut recent);
        assert!(c.latency.lock().unwrap().samples.is_empty());
        c.hand_over_latency(&mut vec![7]);
        let got = c.take_latency().unwrap();
        assert_eq!(got.len(), FOLD_AT as u64 + 11);
    }

    #[test]
    fn a_workers_cpu_is_read_while_it_runs_and_kept_when_it_ends() {
        let cpu = Arc::new(ThreadCpu::default());
        assert_eq!(cpu.used(), Duration::ZERO);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let worker = {
            let cpu = Arc::clone(&cpu);
            std::thread::spawn(move || {
                let _guard = cpu.start();
                started_tx.send(()).unwrap();
                let mut x = 0u64;
                while stop_rx.try_recv().is_err() {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                std::hint::black_box(x);
            })
        };
        started_rx.recv().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while cpu.used() < Duration::from_millis(20) {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
        stop_tx.send(()).unwrap();
        worker.join().unwrap();
        let kept = cpu.used();
        assert!(kept >= Duration::from_millis(20), "{kept:?}");
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cpu.used(), kept, "the figure of an ended worker stays");
    }

    #[test]
    fn counters_snapshot() {
        let c = StreamCounters::default();
        c.publish(5);
        assert_eq!(c.get(), 5);
        c.publish_packets(10, 2);
        assert_eq!(
            c.snapshot(),
            StreamCounts {
                bytes: 10,
                packets: 2,
                rx: None,
                tcp_info: None,
                receive: None,
                send_mode: None,
                send_drops: None,
            }
        );
        let rx = UdpCounts {
            bytes: 30,
            packets: 3,
            ..Default::default()
        };
        c.publish_rx(rx);
        assert_eq!(
            c.snapshot(),
            StreamCounts {
                bytes: 30,
                packets: 3,
                rx: Some(rx),
                tcp_info: None,
                receive: None,
                send_mode: None,
                send_drops: None,
            }
        );
    }
}
