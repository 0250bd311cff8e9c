//! The terminal's say on bold, a document printed in the format a flag names, and a file a flag
//! names written whole; live rows, summaries and the documents' formats are `report`'s.

/// Whether `RESULT` may be bold: stdout is a terminal, `NO_COLOR` unset or empty (no-color.org).
pub fn bold_on_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Stdout for what a command prints: text folded at the terminal's width (report::fold), JSON
/// and the other formats as written.
pub fn stdout(text: bool) -> report::fold::Fold<std::io::Stdout> {
    let width = if text {
        report::fold::terminal_width()
    } else {
        None
    };
    report::fold::Fold::new(std::io::stdout(), width)
}

/// `--json`, beside `--format` on every command that has it: the same as `--format json`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct JsonFlag {
    /// Print JSON: the same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

/// A listing's formats (`runs`, a sweep's points): `--format`, with `--json` and `--csv` for
/// two of them (clap lets at most one of the three be given).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    /// A terminal table.
    #[default]
    Table,
    /// One JSON document.
    Json,
    /// A header line, then one line per row.
    Csv,
}

impl TableFormat {
    /// The format `--format`, `--json` and `--csv` name together.
    /// `--json` decides as [`format_of`] does for every other `--format`.
    pub fn with(self, json: bool, csv: bool) -> report::Format {
        let value = if csv { Self::Csv } else { self };
        format_of(value, JsonFlag { json }).expect("each listing format names a report format")
    }
}

/// The format a command's `--format` value names (its clap name is the format's: `jsonl`),
/// or JSON with `--json`.
pub fn format_of(value: impl clap::ValueEnum, json: JsonFlag) -> anyhow::Result<report::Format> {
    if json.json {
        return Ok(report::Format::Json);
    }
    let name = value.to_possible_value().map(|v| v.get_name().to_owned());
    let format = name.as_deref().and_then(report::Format::named);
    format.ok_or_else(|| anyhow::anyhow!("--format {}: no output format", name.unwrap_or_default()))
}

/// Writes `doc` to stdout in `format` (a table at most `width` wide), flushed.
pub fn print(
    doc: &dyn report::Exporter,
    format: report::Format,
    width: Option<u16>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    report::write(&mut out, doc, format, width)?;
    Ok(out.flush()?)
}

/// Writes `bytes` to the file `flag PATH` names, whole or not at all (report::file).
pub fn write_file(flag: &str, path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    report::file::write_whole(path, bytes).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => anyhow::anyhow!("{flag} {}: {e}", path.display()),
        _ => anyhow::anyhow!("{flag} {}: cannot write it: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::TableFormat::{Csv, Json, Table};
    use report::Format;

    #[test]
    fn a_listings_flags_name_one_format_as_every_other_format_flag_does() {
        let cases = [
            (Table, false, false, Format::Table),
            (Json, false, false, Format::Json),
        ];
        let flags = [
            (Csv, false, false, Format::Csv),
            (Table, true, false, Format::Json),
        ];
        for (value, json, csv, want) in cases.into_iter().chain(flags) {
            assert_eq!(
                value.with(json, csv),
                want,
                "{value:?} json={json} csv={csv}"
            );
        }
        assert_eq!(Table.with(false, true), Format::Csv);
    }
}
