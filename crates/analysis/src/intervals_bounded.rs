//! A run's interval samples as its record keeps them: at most a fixed number, whatever the
//! run's length or interval, so the memory a test holds for them and the record it stores
//! stay bounded (SECURITY.md, "Budgets"; docs/RESULTS.md, "At most 1,024 intervals").
//!
//! Invariants: it never holds more than its capacity; when full, adjacent pairs merge
//! ([`merge_pair`](crate::intervals_merge::merge_pair)) into intervals twice as long, and the
//! intervals that follow go into the last kept one until it is as long (the grain), so every
//! kept interval spans the same number of the producer's intervals but the last and the
//! warm-up's last; they still cover the whole run, in order, without gaps, and add up to
//! exactly the counts they were handed; a warm-up interval (`omitted`) merges only with
//! another. The
//! round trips the intervals list (`self_probe_round_trips_us`) are at most its round-trip
//! bound together and [`MAX_PROBE_ROUND_TRIPS`] each: past either, every list keeps every
//! other round trip by rank (the first, third, …), and every interval added later is thinned
//! as much, so each list is the same rank-even share of its interval's round trips. Only the
//! kept copy is merged: what a producer shows as each interval happens is unchanged.

use record::bounds::{MAX_INTERVALS, MAX_KEPT_ROUND_TRIPS};
use record::schema::MAX_PROBE_ROUND_TRIPS;
use record::IntervalSample;

use crate::intervals_merge::merge_pair;

/// A run's intervals, at most `capacity` of them (see the module's invariants).
#[derive(Debug, Clone)]
pub struct BoundedIntervals {
    kept: Vec<IntervalSample>,
    /// How many intervals each kept one holds, in step with `kept`.
    inputs: Vec<usize>,
    /// How many intervals a kept one holds at most: 1, doubled at each merge of pairs.
    grain: usize,
    capacity: usize,
    max_round_trips: usize,
    /// Round trips the kept intervals list together.
    round_trips: usize,
    /// Each list keeps one round trip in 2^`thinned`, by rank.
    thinned: u32,
}

impl Default for BoundedIntervals {
    /// The record's bounds: [`MAX_INTERVALS`] intervals, [`MAX_KEPT_ROUND_TRIPS`] round trips.
    fn default() -> Self {
        Self::new(MAX_INTERVALS, MAX_KEPT_ROUND_TRIPS)
    }
}

impl BoundedIntervals {
    /// At most `capacity` intervals (4 at least, so a merge always makes room) listing at most
    /// `max_round_trips` round trips together (at least two per interval). The producers use
    /// [`BoundedIntervals::default`]; a smaller bound is for tests.
    pub fn new(capacity: usize, max_round_trips: usize) -> Self {
        let capacity = capacity.max(4);
        Self {
            kept: Vec::new(),
            inputs: Vec::new(),
            grain: 1,
            capacity,
            max_round_trips: max_round_trips.max(2 * capacity),
            round_trips: 0,
            thinned: 0,
        }
    }

    /// Adds the interval after the last one: into the last kept while that holds fewer than
    /// the grain, else as a new one, merging pairs first when full.
    pub fn push(&mut self, mut sample: IntervalSample) {
        let step = 1usize.checked_shl(self.thinned).unwrap_or(usize::MAX);
        for f in &mut sample.flows {
            keep_every(&mut f.self_probe_round_trips_us, step);
            self.round_trips += f.self_probe_round_trips_us.len();
        }
        if !self.joins_last(&sample) && self.kept.len() >= self.capacity {
            self.merge_pairs();
        }
        match (self.joins_last(&sample), self.kept.pop()) {
            (true, Some(last)) => {
                self.kept.push(merge_pair(last, sample));
                if let Some(n) = self.inputs.last_mut() {
                    *n += 1;
                }
            }
            (_, last) => {
                self.kept.extend(last);
                self.kept.push(sample);
                self.inputs.push(1);
            }
        }
        self.thin_to_bounds();
    }

    /// Whether `sample` goes into the last kept interval: that one holds fewer than the grain,
    /// on the same side of the warm-up's end.
    fn joins_last(&self, sample: &IntervalSample) -> bool {
        match (self.kept.last(), self.inputs.last()) {
            (Some(last), Some(&n)) => n < self.grain && last.omitted == sample.omitted,
            _ => false,
        }
    }

    /// The intervals kept, in order.
    pub fn as_slice(&self) -> &[IntervalSample] {
        &self.kept
    }

    /// How many intervals are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The intervals kept, for the record.
    pub fn into_vec(self) -> Vec<IntervalSample> {
        self.kept
    }

    /// Merges adjacent pairs, front to back, and doubles the grain; an interval whose
    /// neighbour is on the other side of the warm-up's end stays as it is.
    fn merge_pairs(&mut self) {
        let mut merged = Vec::with_capacity(self.capacity / 2 + 2);
        let mut inputs = Vec::with_capacity(self.capacity / 2 + 2);
        let kept = std::mem::take(&mut self.kept).into_iter();
        let mut rest = kept.zip(std::mem::take(&mut self.inputs)).peekable();
        while let Some((a, n)) = rest.next() {
            match rest.next_if(|(b, _)| b.omitted == a.omitted) {
                Some((b, m)) => {
                    merged.push(merge_pair(a, b));
                    inputs.push(n + m);
                }
                None => {
                    merged.push(a);
                    inputs.push(n);
                }
            }
        }
        (self.kept, self.inputs) = (merged, inputs);
        self.grain = self.grain.saturating_mul(2);
    }

    /// Halves every round-trip list while they are over either bound.
    fn thin_to_bounds(&mut self) {
        loop {
            let longest = self.lists().map(Vec::len).max().unwrap_or(0);
            if self.round_trips <= self.max_round_trips && longest <= MAX_PROBE_ROUND_TRIPS {
                return;
            }
            let before = self.round_trips;
            self.round_trips = 0;
            for f in self.kept.iter_mut().flat_map(|s| s.flows.iter_mut()) {
                keep_every(&mut f.self_probe_round_trips_us, 2);
                self.round_trips += f.self_probe_round_trips_us.len();
            }
            self.thinned += 1;
            if self.round_trips == before {
                // Every list is down to one round trip: nothing left to halve.
                return;
            }
        }
    }

    fn lists(&self) -> impl Iterator<Item = &Vec<f64>> {
        (self.kept.iter().flat_map(|s| s.flows.iter())).map(|f| &f.self_probe_round_trips_us)
    }
}

/// Keeps the first of every `step` values (the first, the `step + 1`-th, …).
fn keep_every(values: &mut Vec<f64>, step: usize) {
    if step > 1 {
        let mut i = 0usize;
        values.retain(|_| {
            i += 1;
            (i - 1) % step == 0
        });
    }
}
