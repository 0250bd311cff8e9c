//! The terminal's say on bold, and a document printed in the format a flag names; live rows,
//! summaries and the documents' formats are `report`'s.

/// Whether `RESULT` may be bold: stdout is a terminal, `NO_COLOR` unset or empty (no-color.org).
pub fn bold_on_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The format a command's `--format` value names (its clap name is the format's: `jsonl`).
pub fn format_of(value: impl clap::ValueEnum) -> anyhow::Result<report::Format> {
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
