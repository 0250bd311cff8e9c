//! The two entry points of the text exporters: a comparison in one of four formats, and runs
//! themselves in one of four.

use std::io::Write;

use crate::{
    csv_out, json, markdown, table, Align, Comparison, LabeledRuns, Result, RunsTable, TableStyle,
    TextTable,
};

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

/// "What differed" as a plain table, fields × columns.
fn differences_table(cmp: &Comparison) -> String {
    let labels: Vec<String> = cmp.columns.iter().map(|c| c.label.clone()).collect();
    let (header, rows) = crate::differences_cells(&labels, &cmp.differences);
    let mut t = header
        .into_iter()
        .fold(TextTable::new(), |t, h| t.column(h, Align::Left));
    for row in rows {
        t.row(row);
    }
    t.render(TableStyle::Plain)
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
                for line in differences_table(cmp).lines() {
                    writeln!(w, "  {line}")?;
                }
            }
            writeln!(w, "{}", table::comparison_table(cmp, width))?
        }
        CompareFormat::Markdown => {
            if !cmp.differences.is_empty() {
                writeln!(w, "What differed:\n")?;
                let labels: Vec<String> = cmp.columns.iter().map(|c| c.label.clone()).collect();
                let (header, rows) = crate::differences_cells(&labels, &cmp.differences);
                w.write_all(markdown::table(&header, &rows, 1).as_bytes())?;
                writeln!(w)?;
            }
            w.write_all(markdown::comparison(cmp).as_bytes())?
        }
        CompareFormat::Csv => csv_out::comparison(w, cmp)?,
        CompareFormat::Json => json::comparison(w, cmp)?,
    }
    Ok(())
}

/// Writes one comparison per kind ([`Comparison::by_kind`]): a single one exactly as
/// [`write_comparison`] does; several each under its kind's heading (table, Markdown), or as
/// one JSON array. CSV holds one kind: several are refused, naming them.
pub fn write_comparisons(
    w: &mut dyn Write,
    cmps: &[Comparison],
    format: CompareFormat,
    width: Option<u16>,
) -> Result<()> {
    if let [one] = cmps {
        return write_comparison(w, one, format, width);
    }
    let kind = |c: &Comparison| c.kind.map_or("mixed", |k| k.as_str());
    match format {
        CompareFormat::Json => json::comparisons(w, cmps)?,
        CompareFormat::Csv => {
            let kinds: Vec<&str> = cmps.iter().map(kind).collect();
            return Err(crate::Error::MixedKinds {
                kinds: kinds.join(", "),
            });
        }
        CompareFormat::Table | CompareFormat::Markdown => {
            for (i, cmp) in cmps.iter().enumerate() {
                if i > 0 {
                    writeln!(w)?;
                }
                if format == CompareFormat::Table {
                    writeln!(w, "== {} ==", kind(cmp))?;
                } else {
                    writeln!(w, "## {}\n", kind(cmp))?;
                }
                write_comparison(w, cmp, format, width)?;
            }
        }
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
