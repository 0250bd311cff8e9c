//! [`Observer`]: what a running test, sweep, search, repetition or rpm run reports as it
//! goes, to whoever shows it (a terminal's live rows or bar, `--json-stream`, the UI's log).
//! Every method has a no-op default, so a sink implements only what it shows; [`Silent`]
//! shows nothing.
//!
//! Invariants: a runner reports, it never waits on the sink's answer (a sink that fails keeps
//! its failure to itself, as [`JsonLines`](crate::JsonLines) does); a point's document is
//! handed over unserialized ([`ToJson`]), so only a sink that writes it pays for it.

use record::rpm::{RpmTick, RpmWay};
use record::IntervalSample;
use serde::Serialize;
use serde_json::value::RawValue;
use wire::msg::ServerInfo;
use wire::TestSpec;

/// Receives a run's progress. A single test gives `started` then an `interval` per interval;
/// a sweep (search, repetition) gives `begin`, then per point `point_started`, the point's own
/// test's `started`/`interval`s, `point_done`, a `stored` per run stored and `point`, with
/// `note`s between, and `finish`; an rpm run gives a `tick` per interval of each direction.
pub trait Observer {
    /// The server accepted a test.
    fn started(&mut self, _server: &ServerInfo, _spec: &TestSpec) {}
    /// One interval of the test finished.
    fn interval(&mut self, _sample: &IntervalSample) {}
    /// A sweep, search, repetition, matrix or mesh starts: its points planned to take
    /// `planned_s` seconds each, or (a mesh) the ordered pairs of `hosts`.
    fn begin(&mut self, _title: &str, _planned_s: &[f64], _hosts: &[String]) {}
    /// Point `index` (0-based) starts.
    fn point_started(&mut self, _index: usize, _label: &str) {}
    /// Point `index` finished after `seconds`.
    fn point_done(&mut self, _index: usize, _label: &str, _seconds: f64) {}
    /// What point `index` gave, as the end document keeps it (after
    /// [`point_done`](Self::point_done); not for a point that failed before measuring).
    fn point(&mut self, _index: usize, _label: &str, _data: &dyn ToJson) {}
    /// An rpm direction's interval closed.
    fn tick(&mut self, _way: RpmWay, _tick: &RpmTick) {}
    /// A line for the user (a dropped size, a failed command).
    fn note(&mut self, _line: &str) {}
    /// A run was stored.
    fn stored(&mut self, _run_id: i64) {}
    /// The sweep (search, repetition) ended: finished, stopped or interrupted.
    fn finish(&mut self) {}
}

/// Shows nothing (tests, a point's own test inside a sweep, callers that want silence).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Observer for Silent {}

/// A document an observer may serialize: anything [`Serialize`], behind a pointer that keeps
/// [`Observer`] usable as `dyn`.
pub trait ToJson {
    /// The document as JSON text.
    fn to_json(&self) -> serde_json::Result<Box<RawValue>>;
}

impl<T: Serialize + ?Sized> ToJson for T {
    fn to_json(&self) -> serde_json::Result<Box<RawValue>> {
        serde_json::value::to_raw_value(self)
    }
}
