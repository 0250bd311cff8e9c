//! Terminal tables (comfy-table): the comparison and the run list.
//!
//! The width is the caller's: the binary measures the terminal and passes it in; `None` lays
//! the table out at its natural width (what snapshots and pipes get).

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::format::comparison_cells;
use crate::{Comparison, LabeledRuns, RunsTable};

fn table(
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    text_columns: usize,
    width: Option<u16>,
) -> String {
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
    let columns = header.len();
    t.set_header(header);
    for row in rows {
        t.add_row(row);
    }
    for i in text_columns..columns {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}

/// The comparison as a terminal table: metric, unit, then each column's value, each later one
/// followed by its ratio to the first (`0.986×`).
pub fn comparison_table(cmp: &Comparison, width: Option<u16>) -> String {
    let (header, rows) = comparison_cells(cmp);
    table(header, rows, 2, width)
}

/// The runs of `columns`, one line each, as a terminal table.
pub fn runs_table(columns: &[LabeledRuns], width: Option<u16>) -> String {
    let t = RunsTable::new(columns);
    table(t.headers, t.rows, t.text_columns, width)
}
