//! The output formats and the one trait the documents linerate prints implement,
//! [`Exporter`] (hyperfine's `Exporter`, turned by the document: linerate prints several kinds
//! of document where hyperfine prints one, so each document says how it reads in each format it
//! has). [`write()`] is the one place a format is chosen for them: `compare`, `export`,
//! `check`, `trend`, `runs`, `show`, a sweep's, rfc2544's and repetitions' results. (A single
//! test's `--json`, and `pps`', `mesh`'s and `rpm`'s, still choose between their text and
//! JSON themselves.) Here also the two documents of the comparison and export commands.

use std::io::Write;

use serde::Serialize;

use crate::{
    csv_out, json, markdown, table, Align, Comparison, LabeledRuns, Result, RunsTable, TableStyle,
    TextTable,
};

/// An output format, as `--format` names it ([`Format::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain text for a terminal: aligned columns and a few lines of notes.
    Table,
    /// A GitHub-flavoured Markdown table.
    Markdown,
    /// CSV with raw numbers: a header line, then one line per row.
    Csv,
    /// One pretty-printed JSON document: the document's figures as held, not text.
    Json,
    /// JSON Lines: one compact object per line.
    JsonLines,
    /// JUnit XML, for CI systems.
    Junit,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 6] = [
        Format::Table,
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::JsonLines,
        Format::Junit,
    ];

    /// The format [`Format::as_str`] names.
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The format's name on the command line: `table`, `markdown`, `csv`, `json`, `jsonl`,
    /// `junit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::JsonLines => "jsonl",
            Format::Junit => "junit",
        }
    }
}

/// A document linerate prints, written in each of its [`Exporter::formats`]; a format it does
/// not list is refused by [`write()`], naming those it has. Every document has JSON.
pub trait Exporter {
    /// What it is, for messages: `a comparison`.
    fn name(&self) -> &'static str;

    /// The formats it is written in.
    fn formats(&self) -> &'static [Format];

    /// As one pretty-printed JSON document and a newline ([`pretty_json`], for most).
    fn json(&self, w: &mut dyn Write) -> Result<()>;

    /// As plain text for a terminal, at most `width` columns wide where it can be narrowed.
    fn table(&self, _w: &mut dyn Write, _width: Option<u16>) -> Result<()> {
        Err(lacks(self.name(), self.formats(), Format::Table))
    }

    /// As Markdown.
    fn markdown(&self, _w: &mut dyn Write) -> Result<()> {
        Err(lacks(self.name(), self.formats(), Format::Markdown))
    }

    /// As CSV.
    fn csv(&self, _w: &mut dyn Write) -> Result<()> {
        Err(lacks(self.name(), self.formats(), Format::Csv))
    }

    /// As JSON Lines.
    fn json_lines(&self, _w: &mut dyn Write) -> Result<()> {
        Err(lacks(self.name(), self.formats(), Format::JsonLines))
    }

    /// As JUnit XML.
    fn junit(&self, _w: &mut dyn Write) -> Result<()> {
        Err(lacks(self.name(), self.formats(), Format::Junit))
    }
}

/// The refusal of a format a document does not have.
fn lacks(document: &'static str, formats: &[Format], format: Format) -> crate::Error {
    let have: Vec<&str> = formats.iter().map(|f| f.as_str()).collect();
    crate::Error::NoFormat {
        document,
        format: format.as_str(),
        formats: have.join(", "),
    }
}

/// Writes `doc` as `format`; `width` bounds a terminal table (`None`: natural width).
pub fn write(
    w: &mut dyn Write,
    doc: &dyn Exporter,
    format: Format,
    width: Option<u16>,
) -> Result<()> {
    if !doc.formats().contains(&format) {
        return Err(lacks(doc.name(), doc.formats(), format));
    }
    match format {
        Format::Table => doc.table(w, width),
        Format::Markdown => doc.markdown(w),
        Format::Csv => doc.csv(w),
        Format::Json => doc.json(w),
        Format::JsonLines => doc.json_lines(w),
        Format::Junit => doc.junit(w),
    }
}

/// Writes `value` as pretty-printed JSON and a newline: most documents' [`Exporter::json`].
pub fn pretty_json<T: Serialize + ?Sized>(w: &mut dyn Write, value: &T) -> Result<()> {
    serde_json::to_writer_pretty(&mut *w, value)?;
    writeln!(w)?;
    Ok(())
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

/// One comparison as `format` (one of [`Comparisons`]' formats).
fn write_comparison(
    w: &mut dyn Write,
    cmp: &Comparison,
    format: Format,
    width: Option<u16>,
) -> Result<()> {
    match format {
        Format::Table => {
            if !cmp.differences.is_empty() {
                writeln!(w, "what differed:")?;
                for line in differences_table(cmp).lines() {
                    writeln!(w, "  {line}")?;
                }
            }
            writeln!(w, "{}", table::comparison_table(cmp, width))?
        }
        Format::Markdown => {
            if !cmp.differences.is_empty() {
                writeln!(w, "What differed:\n")?;
                let labels: Vec<String> = cmp.columns.iter().map(|c| c.label.clone()).collect();
                let (header, rows) = crate::differences_cells(&labels, &cmp.differences);
                w.write_all(markdown::table(&header, &rows, 1).as_bytes())?;
                writeln!(w)?;
            }
            w.write_all(markdown::comparison(cmp).as_bytes())?
        }
        Format::Csv => csv_out::comparison(w, cmp)?,
        _ => pretty_json(w, cmp)?,
    }
    Ok(())
}

/// `linerate compare`'s document: one comparison per kind ([`Comparison::by_kind`]). A single
/// one is written alone; several each under its kind's heading (table, Markdown), or as one
/// JSON array. CSV holds one kind: several are refused, naming them.
pub struct Comparisons<'a>(pub &'a [Comparison]);

impl Comparisons<'_> {
    fn each(&self, w: &mut dyn Write, format: Format, width: Option<u16>) -> Result<()> {
        if let [one] = self.0 {
            return write_comparison(w, one, format, width);
        }
        let kind = |c: &Comparison| c.kind.map_or("mixed", |k| k.as_str());
        if format == Format::Csv {
            let kinds: Vec<&str> = self.0.iter().map(kind).collect();
            return Err(crate::Error::MixedKinds {
                kinds: kinds.join(", "),
            });
        }
        for (i, cmp) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(w)?;
            }
            if format == Format::Table {
                writeln!(w, "== {} ==", kind(cmp))?;
            } else {
                writeln!(w, "## {}\n", kind(cmp))?;
            }
            write_comparison(w, cmp, format, width)?;
        }
        Ok(())
    }
}

impl Exporter for Comparisons<'_> {
    fn name(&self) -> &'static str {
        "a comparison"
    }

    fn formats(&self) -> &'static [Format] {
        &[Format::Table, Format::Markdown, Format::Csv, Format::Json]
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        match self.0 {
            [one] => pretty_json(w, one),
            all => pretty_json(w, all),
        }
    }

    fn table(&self, w: &mut dyn Write, width: Option<u16>) -> Result<()> {
        self.each(w, Format::Table, width)
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        self.each(w, Format::Markdown, None)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        self.each(w, Format::Csv, None)
    }
}

/// `linerate export`'s document: the runs of each column, labeled.
pub struct Runs<'a>(pub &'a [LabeledRuns]);

impl Exporter for Runs<'_> {
    fn name(&self) -> &'static str {
        "an export of runs"
    }

    fn formats(&self) -> &'static [Format] {
        &[
            Format::Json,
            Format::JsonLines,
            Format::Csv,
            Format::Markdown,
        ]
    }

    /// One JSON array of `{label, tags, run}`, `run` being the stored record.
    fn json(&self, w: &mut dyn Write) -> Result<()> {
        json::runs(w, self.0)
    }

    /// One `{label, tags, run}` object per line.
    fn json_lines(&self, w: &mut dyn Write) -> Result<()> {
        json::runs_lines(w, self.0)
    }

    /// One row per interval per direction per run.
    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        csv_out::intervals(w, self.0)
    }

    /// A Markdown table, one line per run.
    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        Ok(w.write_all(markdown::runs(&RunsTable::new(self.0)).as_bytes())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_as_the_command_line_names_them() {
        for f in Format::ALL {
            assert_eq!(Format::named(f.as_str()), Some(f));
        }
        assert_eq!(Format::named("jsonl"), Some(Format::JsonLines));
        assert_eq!(Format::named("xml"), None);
    }

    /// A format a document lacks is refused, naming those it has, and nothing is written.
    #[test]
    fn a_format_a_document_lacks_is_refused_naming_its_formats() {
        let mut out = Vec::new();
        let err = write(&mut out, &Runs(&[]), Format::Table, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--format table: an export of runs is written as json, jsonl, csv, markdown"
        );
        let err = write(&mut out, &Comparisons(&[]), Format::Junit, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--format junit: a comparison is written as table, markdown, csv, json"
        );
        assert!(out.is_empty());
        write(&mut out, &Runs(&[]), Format::Json, None).unwrap();
        assert_eq!(out, b"[]\n");
    }
}
