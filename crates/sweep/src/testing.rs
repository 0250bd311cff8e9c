//! Test helpers (the `testing` feature, for this crate's tests and the binary's): a mock
//! [`PointRunner`] whose figures come from a closure, and a size-sweep plan. Records come from
//! `analysis::testing`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use record::RunRecord;
use wire::TestSpec;

use crate::plan::{PlannedPoint, SweepPlan};
use crate::result::SweepKind;
use crate::run::{Measured, Point, PointRunner, RunError};
use crate::values::SweepValue;
use analysis::repeat::RepeatPlan;
use wire::spec::TestKind;

/// A size sweep over `sizes`, NetPIPE-style: a stream and a request/response test per size,
/// each spec made by `spec(kind, size)`; run once, no knob, no probe.
pub fn size_plan(sizes: &[u32], spec: impl Fn(TestKind, u32) -> TestSpec) -> SweepPlan {
    SweepPlan {
        kind: SweepKind::Size,
        points: sizes
            .iter()
            .map(|&s| PlannedPoint {
                value: SweepValue::number(u64::from(s)),
                specs: vec![spec(TestKind::TcpStream, s), spec(TestKind::TcpRr, s)],
            })
            .collect(),
        repeat: RepeatPlan::once(),
        knob: None,
        probe: None,
    }
}

/// A runner that answers each spec with `figures(spec)` and remembers what it was asked.
pub struct MockRunner<F: FnMut(&TestSpec) -> RunRecord> {
    /// Produces each run's record.
    pub figures: F,
    /// Every point asked for, in order.
    pub asked: Vec<Point>,
    /// Fail the run with this index (0-based), if set.
    pub fail_at: Option<usize>,
    /// Have the server refuse the run with this index (0-based), if set.
    pub refuse_at: Option<usize>,
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
            refuse_at: None,
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
        if self.refuse_at == Some(index) {
            let why = "--flows-dst 100: more than this server's 64 (serve --max-flows-dst)";
            return Err(Box::new(session::client::ClientError::Refused(why.into())));
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

/// The value `point` is tagged with under `key`, if any.
pub fn tag<'a>(point: &'a Point, key: &str) -> Option<&'a str> {
    point
        .tags
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
