//! What the executors report while a sweep, a repetition or an rfc2544 search runs. The
//! binary draws it (a progress bar on stderr, or `--json-stream`'s events through
//! [`report::stream::JsonLines`]); [`Quiet`] shows nothing. [`Eta`] estimates the time left.
//!
//! The estimate scales the planned time of the points left (their test durations) by how long
//! the finished points really took against their plan, so setup and drain overheads and
//! `--until-ci` repetitions are accounted for as soon as one point has finished.

use std::io::Write;
use std::time::Duration;

use report::stream::JsonLines;
use serde::Serialize;

use crate::result::{PointRun, SweepPoint};
use crate::rfc2544::FrameResult;

/// A finished point as the end document keeps it.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(untagged)]
pub enum PointData<'a> {
    /// A sweep's point (its value, runs and figures).
    Sweep(&'a SweepPoint),
    /// One run of a repetition.
    Run(&'a PointRun),
    /// One frame size of an rfc2544 search.
    Frame(&'a FrameResult),
}

/// Receives a sweep's progress.
pub trait SweepProgress {
    /// The sweep starts: `points` points, planned to take `planned` seconds each.
    fn begin(&mut self, title: &str, planned: &[f64]);
    /// Point `index` (0-based) starts.
    fn point_started(&mut self, index: usize, label: &str);
    /// Point `index` finished after `seconds`.
    fn point_done(&mut self, index: usize, label: &str, seconds: f64);
    /// What point `index` gave (after [`point_done`](Self::point_done); not for a point that
    /// failed before measuring).
    fn point_data(&mut self, _index: usize, _label: &str, _data: PointData<'_>) {}
    /// A line for the user (a dropped size, a failed command).
    fn note(&mut self, line: &str);
    /// A run outside the points was stored (a load sweep's capacity run).
    fn stored(&mut self, _run_id: i64) {}
    /// The sweep ended (finished, stopped or interrupted).
    fn finish(&mut self);
}

/// Shows nothing (tests, `--json` to a pipe when the caller wants silence).
pub struct Quiet;

impl SweepProgress for Quiet {
    fn begin(&mut self, _: &str, _: &[f64]) {}
    fn point_started(&mut self, _: usize, _: &str) {}
    fn point_done(&mut self, _: usize, _: &str, _: f64) {}
    fn note(&mut self, _: &str) {}
    fn finish(&mut self) {}
}

impl PointData<'_> {
    /// The stored runs of the point.
    pub fn run_ids(&self) -> Vec<i64> {
        match self {
            PointData::Sweep(p) => p.run_ids(),
            PointData::Run(r) => r.run_id.into_iter().collect(),
            PointData::Frame(f) => f.run_ids.iter().flatten().copied().collect(),
        }
    }
}

/// `--json-stream`: `begin`, then per finished point a `stored` per run and a `point`, `note`s.
impl<W: Write> SweepProgress for JsonLines<W> {
    fn begin(&mut self, title: &str, planned: &[f64]) {
        JsonLines::begin(self, title, planned, &[]);
    }
    fn point_started(&mut self, _: usize, _: &str) {}
    fn point_done(&mut self, _: usize, _: &str, _: f64) {}
    fn point_data(&mut self, index: usize, label: &str, data: PointData<'_>) {
        for id in data.run_ids() {
            self.stored(id);
        }
        self.point(index, label, &data);
    }
    fn note(&mut self, line: &str) {
        JsonLines::note(self, line);
    }
    fn stored(&mut self, run_id: i64) {
        JsonLines::stored(self, run_id);
    }
    fn finish(&mut self) {}
}

/// Time left from planned and actual point durations.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Eta {
    planned: Vec<f64>,
    actual: Vec<f64>,
}

impl Eta {
    /// An estimate over points planned to take `planned` seconds each.
    pub fn new(planned: &[f64]) -> Self {
        Self {
            planned: planned.to_vec(),
            actual: Vec::new(),
        }
    }

    /// The next point finished after `seconds`.
    pub fn done(&mut self, seconds: f64) {
        if self.actual.len() < self.planned.len() {
            self.actual.push(seconds.max(0.0));
        }
    }

    /// Points finished.
    pub fn finished(&self) -> usize {
        self.actual.len()
    }

    /// Points planned.
    pub fn total(&self) -> usize {
        self.planned.len()
    }

    /// The time the points left should take: their plan × (actual / planned so far).
    pub fn left(&self) -> Duration {
        let n = self.actual.len();
        let planned_done: f64 = self.planned[..n].iter().sum();
        let actual_done: f64 = self.actual.iter().sum();
        let ratio = if n > 0 && planned_done > 0.0 {
            actual_done / planned_done
        } else {
            1.0
        };
        let left: f64 = self.planned[n..].iter().sum::<f64>() * ratio;
        Duration::from_secs_f64(left.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_scales_with_what_points_really_took() {
        let mut eta = Eta::new(&[10.0, 10.0, 10.0, 10.0]);
        assert_eq!(eta.left(), Duration::from_secs(40));
        // The first point took 12 s of its planned 10 (setup, drain): 3 × 12 s left.
        eta.done(12.0);
        assert_eq!(eta.left(), Duration::from_secs(36));
        eta.done(14.0);
        assert_eq!(eta.left(), Duration::from_secs(26));
        eta.done(13.0);
        eta.done(13.0);
        assert_eq!(eta.left(), Duration::ZERO);
        eta.done(1.0);
        assert_eq!(eta.finished(), 4, "extra reports are ignored");
    }
}
