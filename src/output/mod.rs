//! Exporters over a [`results::RunRecord`]: the human table (live rows and summary) and JSON.
//! Measurement code hands data here; only this module formats.

pub mod json;
pub mod table;

/// Whether the summary's `RESULT` line may be bold: stdout is a terminal and `NO_COLOR` is
/// unset or empty (no-color.org).
pub fn bold_on_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
