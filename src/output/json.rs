//! One JSON document per run: `{"kind", "spec", "intervals", "summary", …}` (docs/RESULTS.md),
//! and for a test command's `--json` the id it was stored under, `stored_run_id`.

use std::io::Write;

use results::RunRecord;
use serde::Serialize;

/// A test's record as `--json` prints it: the record's own fields, then the id `linerate show`
/// takes (`null` when it was not stored: `--no-store`, or the store refused it).
#[derive(Serialize)]
struct Stored<'a> {
    #[serde(flatten)]
    record: &'a RunRecord,
    stored_run_id: Option<i64>,
}

/// Writes a test's record with the id it was stored under, as pretty JSON and a newline.
pub fn write_stored(
    w: &mut dyn Write,
    record: &RunRecord,
    stored_run_id: Option<i64>,
) -> std::io::Result<()> {
    let doc = Stored {
        record,
        stored_run_id,
    };
    serde_json::to_writer_pretty(&mut *w, &doc)?;
    writeln!(w)
}
