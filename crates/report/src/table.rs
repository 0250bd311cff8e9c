//! Terminal tables, one renderer for every table linerate prints: the comparison, the run
//! lists, sweeps and the stored-runs list.
//!
//! Two styles over the same cells. [`TableStyle::Plain`] aligns columns two spaces apart with
//! no rules and no trailing blanks: what `linerate runs` and sweeps print, stable for scripts
//! that cut columns. [`TableStyle::Boxed`] draws rules (comfy-table) and, given a width, wraps
//! to it; the binary measures the terminal and passes the width in, `None` lays the table out
//! at its natural width (what snapshots and pipes get).

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::format::comparison_cells;
use crate::{Comparison, LabeledRuns, RunsTable};

/// Which side of its column a cell keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: names, labels, lists.
    Left,
    /// Figures, so their digits line up.
    Right,
}

/// How a table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableStyle {
    /// Aligned columns two spaces apart, no rules.
    Plain,
    /// Box-drawing rules, wrapped to `width` columns when given.
    Boxed {
        /// The terminal's width, or `None` for the table's natural width.
        width: Option<u16>,
    },
}

/// A table's cells: a header and an alignment per column, then rows of the same length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextTable {
    headers: Vec<String>,
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// An empty table with no columns.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a column; rows added later hold one cell per column, in this order.
    pub fn column(mut self, header: impl Into<String>, align: Align) -> Self {
        self.headers.push(header.into());
        self.aligns.push(align);
        self
    }

    /// Adds a row; missing cells read as empty and extra ones are dropped.
    pub fn row(&mut self, mut cells: Vec<String>) {
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table in `style`, each line ending in a newline.
    pub fn render(&self, style: TableStyle) -> String {
        match style {
            TableStyle::Plain => self.plain(),
            TableStyle::Boxed { width } => self.boxed(width),
        }
    }

    fn plain(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([self.headers[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for cells in std::iter::once(&self.headers).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
                match self.aligns[i] {
                    Align::Left => line.extend([cell.as_str(), &pad]),
                    Align::Right => line.extend([pad.as_str(), cell]),
                }
                line.push_str("  ");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    fn boxed(&self, width: Option<u16>) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        match width {
            Some(w) => {
                t.set_content_arrangement(ContentArrangement::Dynamic);
                t.set_width(w);
            }
            None => {
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        t.set_header(self.headers.clone());
        for row in &self.rows {
            t.add_row(row.clone());
        }
        for (i, align) in self.aligns.iter().enumerate() {
            if let (Align::Right, Some(c)) = (align, t.column_mut(i)) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut s = t.to_string();
        s.push('\n');
        s
    }
}

/// A table whose first `text_columns` columns are text and the rest figures.
fn with_text_columns(header: Vec<String>, rows: Vec<Vec<String>>, text: usize) -> TextTable {
    let mut t = header
        .into_iter()
        .enumerate()
        .fold(TextTable::new(), |t, (i, h)| {
            t.column(h, if i < text { Align::Left } else { Align::Right })
        });
    for row in rows {
        t.row(row);
    }
    t
}

/// The comparison as a terminal table: metric, unit, then each column's value, each later one
/// followed by its ratio to the first (`0.986×`).
pub fn comparison_table(cmp: &Comparison, width: Option<u16>) -> String {
    let (header, rows) = comparison_cells(cmp);
    let s = with_text_columns(header, rows, 2).render(TableStyle::Boxed { width });
    s.trim_end_matches('\n').to_string()
}

/// The runs of `columns`, one line each, as a terminal table.
pub fn runs_table(columns: &[LabeledRuns], width: Option<u16>) -> String {
    let t = RunsTable::new(columns);
    let s =
        with_text_columns(t.headers, t.rows, t.text_columns).render(TableStyle::Boxed { width });
    s.trim_end_matches('\n').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TextTable {
        let mut t = TextTable::new()
            .column("NAME", Align::Left)
            .column("MBIT/S", Align::Right)
            .column("TAGS", Align::Left);
        t.row(vec!["a".into(), "1.5".into(), String::new()]);
        t.row(vec!["longer".into(), "1234.0".into(), "x=1".into()]);
        t
    }

    #[test]
    fn plain_aligns_two_spaces_apart_without_trailing_blanks() {
        assert_eq!(
            sample().render(TableStyle::Plain),
            "NAME    MBIT/S  TAGS\na          1.5\nlonger  1234.0  x=1\n"
        );
    }

    #[test]
    fn short_rows_are_filled() {
        let mut t = TextTable::new()
            .column("A", Align::Left)
            .column("B", Align::Left);
        t.row(vec!["1".into()]);
        assert_eq!(t.render(TableStyle::Plain), "A  B\n1\n");
    }

    #[test]
    fn boxed_right_aligns_figures() {
        let s = sample().render(TableStyle::Boxed { width: None });
        assert!(s.contains("┆    1.5 ┆"), "{s}");
        assert!(s.ends_with('\n'));
    }
}
