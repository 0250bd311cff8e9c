//! [`escape_controls`]: a peer's text made safe for one log line or one terminal line. A peer
//! chooses the bytes of an `error` message, a congestion name, a relay target, a key name; a
//! newline in them would forge a line of the server's log (`linerate serve: ...`) and an ESC
//! would drive the reader's terminal. Every control character (C0, DEL, C1) becomes a visible
//! escape (`\n`, `\r`, `\t`, `\x1b`, `\u{85}`). Backslashes are left as they are, so
//! escaping is idempotent: text escaped by the server and again by the client (or by two log
//! sinks) reads the same, not `\\n`. (A peer may write a literal `\n`; it reads as an escape
//! and, like one, forges nothing.) Text without control characters comes back unchanged and
//! unallocated.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character written as a visible escape.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_log_line_and_escape_codes_stay_on_one_visible_line() {
        let hostile = "x\n linerate serve: forged\x1b[31m\r\t\u{85}\\n\x7f";
        let out = escape_controls(hostile);
        assert_eq!(
            out,
            "x\\n linerate serve: forged\\x1b[31m\\r\\t\\u{85}\\n\\x7f"
        );
        assert_eq!(escape_controls(&out), out, "idempotent");
        assert!(!out.chars().any(char::is_control));
        assert!(matches!(
            escape_controls("cubic µs"),
            Cow::Borrowed("cubic µs")
        ));
    }
}
