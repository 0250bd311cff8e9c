//! What the executors report while a sweep, a repetition or an rfc2544 search runs, to an
//! [`events::Observer`]: the binary draws it (a progress bar on stderr, or `--json-stream`'s
//! events through [`events::JsonLines`]); [`events::Silent`] shows nothing. A finished point is
//! a [`PointData`]; [`Eta`] estimates the time left.
//!
//! The estimate scales the planned time of the points left (their test durations) by how long
//! the finished points really took against their plan, so setup and drain overheads and
//! `--until-ci` repetitions are accounted for as soon as one point has finished.

use std::time::Duration;

use events::Observer;
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

impl PointData<'_> {
    /// The stored runs of the point.
    pub fn run_ids(&self) -> Vec<i64> {
        match self {
            PointData::Sweep(p) => p.run_ids(),
            PointData::Run(r) => r.run_id.into_iter().collect(),
            PointData::Frame(f) => f.run_ids.iter().flatten().copied().collect(),
        }
    }

    /// Hands point `index` to `progress`: a `stored` per run stored, then the point (the
    /// order `--json-stream` documents).
    pub fn report(self, progress: &mut dyn Observer, index: usize, label: &str) {
        for id in self.run_ids() {
            progress.stored(id);
        }
        progress.point(index, label, &self);
    }
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
