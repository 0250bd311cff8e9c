//! [`escape_controls`]: a peer's text made safe for one log line or one terminal line. A peer
//! chooses the bytes of an `error` message, a congestion name, a relay target, a key name; a
//! newline in them would forge a line of the server's log (`linerate serve: ...`) and an ESC
//! would drive the reader's terminal. Every control character (C0, DEL, C1) becomes a visible
//! escape (`\n`, `\r`, `\t`, `\\x1b`, `\u{85}`), and a backslash is doubled so an escape the
//! peer wrote cannot pass for one made here. Text without control characters or backslashes
//! comes back unchanged and unallocated.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character written as a visible escape and `\` doubled.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() || c == '\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Each line of `text` escaped, the line breaks kept: for a multi-line message made here
/// (a report, a help text) that carries a peer's words inside its lines.
pub fn escape_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| escape_controls(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_log_line_and_escape_codes_stay_on_one_visible_line() {
        let hostile = "x\n linerate serve: forged\x1b[31m\r\t\u{85}\\n\x7f";
        let out = escape_controls(hostile);
        assert_eq!(
            out,
            "x\\n linerate serve: forged\\x1b[31m\\r\\t\\u{85}\\\\n\\x7f"
        );
        assert!(!out.chars().any(char::is_control));
        assert!(matches!(escape_controls("cubic µs"), Cow::Borrowed("cubic µs")));
        assert_eq!(escape_lines("a\x1b\nb"), "a\\x1b\nb");
    }
}
