//! JSON: runs with their labels, and a test's record as its `--json` prints it (with the id
//! it was stored under).

use std::collections::BTreeMap;
use std::io::Write;

use record::RunRecord;
use serde::Serialize;

use crate::{LabeledRuns, Result};

/// One exported run: the record as stored, with the label and tags it was asked for under.
#[derive(Serialize)]
struct Exported<'a> {
    label: String,
    tags: &'a BTreeMap<String, String>,
    run: &'a RunRecord,
}

fn exported(columns: &[LabeledRuns]) -> impl Iterator<Item = Exported<'_>> {
    columns.iter().flat_map(|c| {
        c.runs.iter().enumerate().map(move |(i, run)| Exported {
            label: c.run_label(i),
            tags: &c.tags,
            run,
        })
    })
}

/// Writes every run as one pretty-printed JSON array of `{label, tags, run}`.
pub(crate) fn runs(w: &mut dyn Write, columns: &[LabeledRuns]) -> Result<()> {
    let all: Vec<Exported> = exported(columns).collect();
    serde_json::to_writer_pretty(&mut *w, &all)?;
    writeln!(w)?;
    Ok(())
}

/// Writes every run as one compact `{label, tags, run}` object per line (JSON Lines).
pub(crate) fn runs_lines(w: &mut dyn Write, columns: &[LabeledRuns]) -> Result<()> {
    for e in exported(columns) {
        serde_json::to_writer(&mut *w, &e)?;
        writeln!(w)?;
    }
    Ok(())
}

/// A test's record as `--json` prints it: the record's own fields, then the id `linerate show`
/// takes (`null` when it was not stored: `--no-store`, or the store refused it).
#[derive(Serialize)]
struct TestRun<'a> {
    #[serde(flatten)]
    record: &'a RunRecord,
    stored_run_id: Option<i64>,
}

/// Writes a test's record with the id it was stored under, pretty-printed, and a newline.
pub fn write_test_run(
    w: &mut dyn Write,
    record: &RunRecord,
    stored_run_id: Option<i64>,
) -> std::io::Result<()> {
    let run = TestRun {
        record,
        stored_run_id,
    };
    // As an I/O error, so that a reader gone away (`| head`) stays a broken pipe.
    serde_json::to_writer_pretty(&mut *w, &run).map_err(std::io::Error::from)?;
    writeln!(w)
}
