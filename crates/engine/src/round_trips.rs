//! The requester's bookkeeping shared by every request/response engine: count transactions,
//! keep the run's histogram (warm-up left out), and hand recent round trips to the
//! orchestrator every 10 ms for per-interval percentiles.

use std::time::{Duration, Instant};

use measure::latency::Latency;
use wire::msg::StreamCounts;

use crate::{StreamControl, StreamReport};

/// How often recent round trips are handed over.
const PUBLISH_EVERY: Duration = Duration::from_millis(10);

/// A requester's round trips so far.
pub(crate) struct RoundTrips {
    all: Latency,
    recent: Latency,
    published: Instant,
    warm_until: Instant,
    per_transaction: u64,
    done: u64,
}

impl RoundTrips {
    /// Starts counting now; round trips starting within `omit` are warm-up.
    pub(crate) fn new(omit: Duration, bytes_per_transaction: u64) -> Self {
        let now = Instant::now();
        Self {
            all: Latency::new(),
            recent: Latency::new(),
            published: now,
            warm_until: now + omit,
            per_transaction: bytes_per_transaction,
            done: 0,
        }
    }

    /// Records a transaction that started at `start` and has just completed.
    #[inline]
    pub(crate) fn record(&mut self, start: Instant, ctl: &StreamControl<'_>) {
        self.record_until(start, Instant::now(), ctl);
    }

    /// Records a transaction timed from `start` to `end` (work after `end` is not timed).
    #[inline]
    pub(crate) fn record_until(&mut self, start: Instant, end: Instant, ctl: &StreamControl<'_>) {
        let ns = end.saturating_duration_since(start).as_nanos() as u64;
        if start >= self.warm_until {
            self.all.record_ns(ns);
        }
        self.recent.record_ns(ns);
        self.done += 1;
        ctl.counter
            .publish_packets(self.done * self.per_transaction, self.done);
        if self.published.elapsed() >= PUBLISH_EVERY {
            ctl.counter.merge_latency(&self.recent);
            self.recent.reset();
            self.published = Instant::now();
        }
    }

    /// Hands over the last round trips and builds the requester's report.
    pub(crate) fn finish(self, ctl: &StreamControl<'_>, lost_transactions: u64) -> StreamReport {
        ctl.counter.merge_latency(&self.recent);
        let bytes = self.done * self.per_transaction;
        StreamReport {
            bytes_total: bytes,
            counts: StreamCounts {
                bytes,
                packets: self.done,
                rx: None,
            },
            latency: Some(self.all),
            lost_transactions,
            ..Default::default()
        }
    }
}
