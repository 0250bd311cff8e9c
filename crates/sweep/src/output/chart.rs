//! The chart `--chart` draws of a sweep's result.

use crate::result::{SweepKind, SweepResult};

/// The chart of a sweep's result: the latency-against-load curve of a load sweep, throughput
/// by message size of a size sweep, else throughput against the swept value.
pub fn chart(r: &SweepResult) -> report::Result<report::chart::Chart> {
    let label = format!("{} {}", r.test.as_str(), r.target);
    if let Some(curve) = crate::load::curve(r) {
        return report::chart::load_chart(&curve);
    }
    if r.kind == SweepKind::Size {
        let runs = report::LabeledRuns::new(label, r.stream_records());
        return report::chart::render(report::chart::ChartKind::MessageSize, &[runs]);
    }
    let points: Vec<(String, f64)> = (r.points.iter())
        .filter_map(|p| Some((p.value.label.clone(), p.throughput_bps?)))
        .collect();
    report::chart::sweep_chart(r.parameter.as_str(), &label, &points)
}
