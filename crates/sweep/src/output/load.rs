//! The round-trip columns of a sweep table (a request/response test's p99, the `--latency`
//! probes' loaded p50 and p99) and `sweep load`'s own: the load offered at each point, and the
//! capacity and knee under the table.

use std::io::Write;

use super::{opt, Col};
use crate::load::{offered, LoadUnit};
use crate::result::{SweepPoint, SweepResult};

fn us(v: f64) -> String {
    format!("{v:.1}")
}

/// A load sweep's OFFERED column: the load each point offered, in the load's unit.
pub(super) fn offered_column(r: &SweepResult) -> Option<Col<'_>> {
    let load = r.load.as_ref()?;
    Some((
        "OFFERED".into(),
        Box::new(move |p: &SweepPoint| {
            opt(p.value.number, |pct| {
                load.unit.rate_text(offered(load.capacity, pct))
            })
        }),
        true,
    ))
}

/// The round-trip columns some point has figures for: RTT P99 (a load sweep), LOADED P50/P99.
pub(super) fn columns(r: &SweepResult) -> Vec<Col<'_>> {
    let any = |f: fn(&SweepPoint) -> bool| r.points.iter().any(f);
    let mut cols: Vec<Col> = Vec::new();
    // A request/response test's p99 beside its p50 where the round trips are the point.
    if r.load.is_some() && any(|p| p.rtt_p99_us.is_some()) {
        cols.push((
            "RTT P99 us".into(),
            Box::new(|p| opt(p.rtt_p99_us, us)),
            true,
        ));
    }
    if any(|p| p.loaded_rtt_p50_us.is_some()) {
        cols.push((
            "LOADED P50 us".into(),
            Box::new(|p| opt(p.loaded_rtt_p50_us, us)),
            true,
        ));
        cols.push((
            "LOADED P99 us".into(),
            Box::new(|p| opt(p.loaded_rtt_p99_us, us)),
            true,
        ));
    }
    cols
}

/// A load sweep's own CSV fields of point `p`: the load's unit, the capacity, the load offered
/// and whether the point is the knee; empty for other sweeps.
pub(super) fn csv_fields(r: &SweepResult, p: &SweepPoint) -> [String; 4] {
    let Some(load) = r.load.as_ref() else {
        return Default::default();
    };
    let unit = match load.unit {
        LoadUnit::BitsPerS => "bits_per_s",
        LoadUnit::TransactionsPerS => "transactions_per_s",
    };
    let known = load.capacity.is_finite() && load.capacity > 0.0;
    let capacity = known.then_some(load.capacity);
    let load_offered = capacity.zip(p.value.number).map(|(c, pct)| offered(c, pct));
    let knee = load.knee_pct.is_some() && load.knee_pct == p.value.number;
    [
        unit.to_string(),
        capacity.map_or_else(String::new, |c| c.to_string()),
        load_offered.map_or_else(String::new, |o| o.to_string()),
        knee.to_string(),
    ]
}

/// A load sweep's lines under the table: the capacity and the knee.
pub(super) fn write_summary(w: &mut dyn Write, r: &SweepResult) -> std::io::Result<()> {
    let Some(load) = &r.load else {
        return Ok(());
    };
    if load.capacity.is_nan() || load.capacity <= 0.0 {
        // Stopped at the capacity run: nothing to be a share of.
        if let Some(id) = load.capacity_run.as_ref().and_then(|run| run.run_id) {
            writeln!(
                w,
                "no capacity: the capacity run (#{id}) did not finish measuring"
            )?;
        }
        return Ok(());
    }
    let how = match (&load.capacity_run, load.capacity_given) {
        (_, true) => "given".to_string(),
        (Some(run), _) => match run.run_id {
            Some(id) => format!("measured unpaced, run #{id}"),
            None => "measured unpaced".to_string(),
        },
        (None, false) => "measured".to_string(),
    };
    writeln!(w, "capacity {} ({how})", load.unit.rate_text(load.capacity))?;
    match (load.knee_pct, load.baseline_p50_us) {
        (Some(k), Some(b)) => writeln!(
            w,
            "knee at {k}% of the capacity: the first load whose median round trip is at least {}x the lowest load's ({b:.1} us)",
            load.knee_factor
        ),
        (None, Some(b)) => writeln!(
            w,
            "no knee: every median round trip stayed under {}x the lowest load's ({b:.1} us)",
            load.knee_factor
        ),
        _ => Ok(()),
    }
}
