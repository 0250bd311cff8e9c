//! The terminal's say on bold; live rows and summaries are `report`'s.

/// Whether `RESULT` may be bold: stdout is a terminal, `NO_COLOR` unset or empty (no-color.org).
pub fn bold_on_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
