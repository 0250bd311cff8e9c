//! Shared progress counters and one-way signals between a worker and its orchestrator.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
        }
    }
}

/// A flag raised once and seen by every clone (stop, abort, shutdown).
#[derive(Debug, Clone, Default)]
pub struct Signal(Arc<AtomicBool>);

impl Signal {
    /// A new, lowered signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal for every clone.
    pub fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether it has been raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Lowers the signal and says whether it was raised (a request taken once).
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }

    /// The flag itself, for registering with a signal handler.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let a = Signal::new();
        let b = a.clone();
        assert!(!b.is_raised());
        a.raise();
        assert!(b.is_raised());
    }

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
                tcp_info: None
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
                tcp_info: None
            }
        );
    }
}
