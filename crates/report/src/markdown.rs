//! GitHub-flavoured Markdown tables: the comparison and the run list.

use crate::format::comparison_cells;
use crate::{Comparison, RunsTable};

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|")
}

/// A Markdown table: `text_columns` leading columns left-aligned, the rest right.
pub(crate) fn table(header: &[String], rows: &[Vec<String>], text_columns: usize) -> String {
    let mut out = String::new();
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    out.push_str(&line(header));
    let rule: Vec<String> = (0..header.len())
        .map(|i| if i < text_columns { "---" } else { "---:" }.to_string())
        .collect();
    out.push_str(&format!("|{}|\n", rule.join("|")));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

/// The comparison as a Markdown table, laid out as the terminal table.
pub(crate) fn comparison(cmp: &Comparison) -> String {
    let (header, rows) = comparison_cells(cmp);
    table(&header, &rows, 2)
}

/// The run list as a Markdown table.
pub(crate) fn runs(t: &RunsTable) -> String {
    table(&t.headers, &t.rows, t.text_columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_in_cells_are_escaped() {
        let md = table(&["a|b".into()], &[vec!["x|y".into()]], 1);
        assert_eq!(md, "| a\\|b |\n|---|\n| x\\|y |\n");
    }
}
