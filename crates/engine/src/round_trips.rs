//! What every request/response engine shares: [`RrShape`], the transaction it is asked to
//! repeat (sizes, warm-up, pacing); `Transactions` counts and publishes completed
//! transactions (both ends); `RoundTrips` adds the requester's timing: the run's histogram
//! (warm-up left out) and recent round trips handed to the orchestrator every 10 ms for
//! per-interval percentiles.

use std::time::{Duration, Instant};

use measure::latency::Latency;
use wire::msg::StreamCounts;

use crate::{StreamControl, StreamReport};

/// How often recent round trips are handed over.
const PUBLISH_EVERY: Duration = Duration::from_millis(10);

/// One request/response engine's transaction: `request` bytes answered by `response` bytes;
/// round trips that start within `omit` of the first are warm-up and stay out of the run's
/// histogram; with a `gap`, requests start that far apart instead of back to back (see
/// [`crate::pace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RrShape {
    /// Request bytes, at least 1.
    pub request: usize,
    /// Response bytes, at least 1.
    pub response: usize,
    /// Warm-up left out of the run's histogram.
    pub omit: Duration,
    /// Time between request starts; `None`: back to back.
    pub gap: Option<Duration>,
}

impl RrShape {
    /// Back-to-back transactions of `request` and `response` bytes (each at least 1).
    pub fn new(request: usize, response: usize, omit: Duration) -> Self {
        Self {
            request: request.max(1),
            response: response.max(1),
            omit,
            gap: None,
        }
    }

    /// The transaction a spec asks for: its sizes, warm-up and rate.
    pub fn of(rr: &wire::spec::RrParams) -> Self {
        Self::new(
            rr.request_len_bytes as usize,
            rr.response_len_bytes as usize,
            Duration::from_millis(rr.omit_ms),
        )
        .with_gap(crate::pace::gap_for(rr.transactions_per_sec))
    }

    /// Starts requests `gap` apart instead of back to back.
    pub fn with_gap(mut self, gap: Option<Duration>) -> Self {
        self.gap = gap;
        self
    }

    /// Request and response bytes together.
    pub(crate) fn bytes_per_transaction(&self) -> u64 {
        (self.request + self.response) as u64
    }
}

/// Completed transactions of one end, published as bytes and packets.
pub(crate) struct Transactions {
    per_transaction: u64,
    done: u64,
}

impl Transactions {
    /// None yet; each moves `bytes_per_transaction` bytes (request + response).
    pub(crate) fn new(bytes_per_transaction: u64) -> Self {
        Self {
            per_transaction: bytes_per_transaction,
            done: 0,
        }
    }

    /// Counts one more and publishes the totals.
    #[inline]
    pub(crate) fn count(&mut self, ctl: &StreamControl<'_>) {
        self.done += 1;
        ctl.counter
            .publish_packets(self.done * self.per_transaction, self.done);
    }

    /// This end's report: transactions as packets, their bytes as bytes.
    pub(crate) fn report(&self) -> StreamReport {
        let bytes = self.done * self.per_transaction;
        StreamReport {
            bytes_total: bytes,
            counts: StreamCounts {
                bytes,
                packets: self.done,
                rx: None,
                tcp_info: None,
                receive: None,
                send_mode: None,
                send_drops: None,
            },
            ..Default::default()
        }
    }
}

/// Room for the round trips of one hand-over at up to ~400,000 transactions/s.
const RECENT_CAPACITY: usize = 4096;

/// A requester's round trips so far.
pub(crate) struct RoundTrips {
    all: Latency,
    /// Round trips (ns) since the last hand-over.
    recent: Vec<u64>,
    published: Instant,
    warm_until: Instant,
    transactions: Transactions,
}

impl RoundTrips {
    /// Starts counting now; round trips starting within `omit` are warm-up.
    pub(crate) fn new(omit: Duration, bytes_per_transaction: u64) -> Self {
        let now = Instant::now();
        Self {
            all: Latency::new(),
            recent: Vec::with_capacity(RECENT_CAPACITY),
            published: now,
            warm_until: now + omit,
            transactions: Transactions::new(bytes_per_transaction),
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
        self.recent.push(ns);
        self.transactions.count(ctl);
        // `end` is a fresh enough clock: one read fewer per transaction.
        if end.saturating_duration_since(self.published) >= PUBLISH_EVERY {
            ctl.counter.hand_over_latency(&mut self.recent);
            self.published = end;
        }
    }

    /// Hands over the last round trips and builds the requester's report.
    pub(crate) fn finish(
        mut self,
        ctl: &StreamControl<'_>,
        lost_transactions: u64,
        slots_missed: u64,
    ) -> StreamReport {
        ctl.counter.hand_over_latency(&mut self.recent);
        StreamReport {
            latency: Some(self.all),
            lost_transactions,
            slots_missed,
            ..self.transactions.report()
        }
    }
}
