//! How numbers and headers read in the text exporters (table, Markdown, HTML). CSV and JSON
//! carry the raw numbers instead.

use crate::compare::{Column, Comparison};

/// A value for a table cell: whole numbers without decimals, otherwise at least three
/// significant digits (`9410`, `938.5`, `52.2`, `1.26`, `0.685`).
pub(crate) fn value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let a = v.abs();
    let digits = if a >= 1000.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}")
}

/// An optional value; `-` when absent.
pub(crate) fn opt_value(v: Option<f64>) -> String {
    v.map(value).unwrap_or_else(|| "-".into())
}

/// A ratio to the baseline: `0.986×`.
pub(crate) fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.3}×"),
        None => "-".into(),
    }
}

/// A column header: the label, how many runs its medians are over when more than one, and
/// its marks (`[1 left out]`, `[incomplete]`).
pub(crate) fn column_header(c: &Column) -> String {
    let mut head = if c.runs > 1 {
        format!("{} (median of {})", c.label, c.runs)
    } else {
        c.label.clone()
    };
    if !c.marks.is_empty() {
        head.push_str(&format!(" [{}]", c.marks.join(", ")));
    }
    head
}

/// Header of the ratio column after column `i`: `B / A`, as the seeds' tables write it.
pub(crate) fn ratio_header(cmp: &Comparison, i: usize) -> String {
    format!("{} / {}", cmp.columns[i].label, cmp.columns[0].label)
}

/// The comparison as text cells: a header row and one row per metric, with each later column
/// followed by its ratio to the first. Shared by the table, Markdown and HTML exporters.
pub(crate) fn comparison_cells(cmp: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["metric".to_string(), "unit".to_string()];
    for (i, c) in cmp.columns.iter().enumerate() {
        header.push(column_header(c));
        if i > 0 {
            header.push(ratio_header(cmp, i));
        }
    }
    let rows = cmp
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.metric.clone(), row.unit.clone()];
            for (i, v) in row.values.iter().enumerate() {
                cells.push(opt_value(*v));
                if i > 0 {
                    cells.push(ratio(row.ratios[i]));
                }
            }
            cells
        })
        .collect();
    (header, rows)
}

/// Unix epoch milliseconds as `YYYY-MM-DD HH:MM:SS` UTC (no time-zone database needed).
pub(crate) fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_three_significant_digits() {
        assert_eq!(value(9410.0), "9410");
        assert_eq!(value(9403.33), "9403");
        assert_eq!(value(52.25), "52.2");
        assert_eq!(value(1.256), "1.26");
        assert_eq!(value(0.6851), "0.685");
        assert_eq!(value(12.0), "12");
        assert_eq!(ratio(Some(0.98612)), "0.986×");
    }

    #[test]
    fn epoch_milliseconds_as_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_767_225_600_000), "2026-01-01 00:00:00");
        assert_eq!(utc(951_827_696_000), "2000-02-29 12:34:56");
    }
}
