//! Test helpers: a mock [`PointRunner`] whose figures come from a closure. Records come from
//! `analysis::testing`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use results::RunRecord;
use wire::TestSpec;

use crate::run::{Measured, Point, PointRunner, RunError};

/// A runner that answers each spec with `figures(spec)` and remembers what it was asked.
pub struct MockRunner<F: FnMut(&TestSpec) -> RunRecord> {
    /// Produces each run's record.
    pub figures: F,
    /// Every point asked for, in order.
    pub asked: Vec<Point>,
    /// Fail the run with this index (0-based), if set.
    pub fail_at: Option<usize>,
    /// Raise this interrupt flag after the run with this index.
    pub interrupt_after: Option<(usize, Arc<AtomicBool>)>,
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
    fn run(&mut self, point: &Point) -> Result<Measured, RunError> {
        let index = self.asked.len();
        self.asked.push(point.clone());
        if self.fail_at == Some(index) {
            return Err("cannot connect to 192.0.2.1:5301: connection refused".into());
        }
        let mut record = (self.figures)(&point.spec);
        record.kind = point.spec.kind();
        record.spec = point.spec.clone();
        if let Some((at, signal)) = &self.interrupt_after {
            if *at == index {
                signal.store(true, Ordering::Release);
            }
        }
        Ok(Measured {
            record,
            run_id: Some(index as i64 + 1),
        })
    }
}
