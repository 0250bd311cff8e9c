//! What the executors report while a sweep, a repetition or an rfc2544 search runs, to an
//! [`events::Observer`]: the binary draws it (a progress bar on stderr, or `--json-stream`'s
//! events through [`events::JsonLines`]); [`events::Silent`] shows nothing. A finished point is
//! a [`PointData`].

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
