//! One JSON document per run: `{"kind", "spec", "intervals", "summary", …}` (docs/RESULTS.md).

use std::io::Write;

use results::RunRecord;

/// Writes the record as pretty JSON followed by a newline.
pub fn write(w: &mut dyn Write, record: &RunRecord) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, record)?;
    writeln!(w)
}
