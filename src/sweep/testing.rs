//! Test helpers: a mock [`PointRunner`] whose figures come from a closure, and (re-exported)
//! the fixture records of `analysis::testing`.

pub use analysis::testing::{record_with, rr_with_rtt, udp_trial};
use results::RunRecord;
use wire::TestSpec;

use super::run::{Measured, Point, PointRunner};

/// A runner that answers each spec with `figures(spec)` and remembers what it was asked.
pub struct MockRunner<F: FnMut(&TestSpec) -> RunRecord> {
    /// Produces each run's record.
    pub figures: F,
    /// Every point asked for, in order.
    pub asked: Vec<Point>,
    /// Fail the run with this index (0-based), if set.
    pub fail_at: Option<usize>,
    /// Raise this signal after the run with this index.
    pub interrupt_after: Option<(usize, engine::Signal)>,
}

impl<F: FnMut(&TestSpec) -> RunRecord> MockRunner<F> {
    /// A runner over `figures`.
    pub fn new(figures: F) -> Self {
        Self {
            figures,
            asked: Vec::new(),
            fail_at: None,
            interrupt_after: None,
        }
    }
}

impl<F: FnMut(&TestSpec) -> RunRecord> PointRunner for MockRunner<F> {
    fn run(&mut self, point: &Point) -> anyhow::Result<Measured> {
        let index = self.asked.len();
        self.asked.push(point.clone());
        if self.fail_at == Some(index) {
            anyhow::bail!("cannot connect to 192.0.2.1:5301: connection refused");
        }
        let mut record = (self.figures)(&point.spec);
        record.kind = point.spec.kind;
        record.spec = point.spec.clone();
        if let Some((at, signal)) = &self.interrupt_after {
            if *at == index {
                signal.raise();
            }
        }
        Ok(Measured {
            record,
            run_id: Some(index as i64 + 1),
        })
    }
}
