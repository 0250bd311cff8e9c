//! The two entry points of the text exporters: a comparison in one of four formats, and runs
//! themselves in one of four.

use std::io::Write;

use crate::{csv_out, json, markdown, table, Comparison, LabeledRuns, Result, RunsTable};

/// How `linerate compare` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    /// A terminal table (comfy-table).
    Table,
    /// A GitHub-flavoured Markdown table.
    Markdown,
    /// CSV with raw numbers.
    Csv,
    /// JSON: the [`Comparison`] as held.
    Json,
}

/// How `linerate export` writes runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One JSON array of `{label, tags, run}`, `run` being the stored record.
    Json,
    /// One `{label, tags, run}` object per line.
    JsonLines,
    /// One row per interval per direction per run.
    Csv,
    /// A Markdown table, one line per run.
    Markdown,
}

/// Writes `cmp` as `format`; `width` bounds the terminal table (`None`: natural width).
pub fn write_comparison(
    w: &mut dyn Write,
    cmp: &Comparison,
    format: CompareFormat,
    width: Option<u16>,
) -> Result<()> {
    match format {
        CompareFormat::Table => {
            if !cmp.differences.is_empty() {
                writeln!(w, "what differed:")?;
                for d in &cmp.differences {
                    writeln!(w, "  {}", d.line())?;
                }
            }
            writeln!(w, "{}", table::comparison_table(cmp, width))?
        }
        CompareFormat::Markdown => {
            for d in &cmp.differences {
                writeln!(w, "- differed: `{}`", d.line())?;
            }
            if !cmp.differences.is_empty() {
                writeln!(w)?;
            }
            w.write_all(markdown::comparison(cmp).as_bytes())?
        }
        CompareFormat::Csv => csv_out::comparison(w, cmp)?,
        CompareFormat::Json => json::comparison(w, cmp)?,
    }
    Ok(())
}

/// Writes the runs of `columns` as `format`.
pub fn export_runs(w: &mut dyn Write, columns: &[LabeledRuns], format: ExportFormat) -> Result<()> {
    match format {
        ExportFormat::Json => json::runs(w, columns)?,
        ExportFormat::JsonLines => json::runs_lines(w, columns)?,
        ExportFormat::Csv => csv_out::intervals(w, columns)?,
        ExportFormat::Markdown => {
            w.write_all(markdown::runs(&RunsTable::new(columns)).as_bytes())?
        }
    }
    Ok(())
}
