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
    latency: Mutex<Option<Latency>>,
}

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

    /// Adds latency samples for the orchestrator to collect per interval.
    pub fn merge_latency(&self, samples: &Latency) {
        if let Ok(mut slot) = self.latency.lock() {
            slot.get_or_insert_with(Latency::new).add(samples);
        }
    }

    /// Takes the latency samples merged since the last call.
    pub fn take_latency(&self) -> Option<Latency> {
        self.latency.lock().ok().and_then(|mut slot| slot.take())
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
                rx: None
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
                rx: Some(rx)
            }
        );
    }
}
