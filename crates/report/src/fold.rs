//! Text that fits the terminal: a writer that folds each line wider than the terminal at its
//! last space before the edge, the rest continuing under the line's value (after its label's
//! gap of two spaces or more) or two spaces in from its indent, so a summary, a live row or the
//! full report reads whole in an 80-column window. With no width (a pipe, a file) every line
//! goes out as written, so what a script reads or greps stays one line.
//!
//! Invariants: only spaces become line breaks (no other byte is added, dropped or moved but the
//! spaces at a break); a word wider than the room is left whole and overflows; an escape
//! sequence (bold) takes no columns.

use std::io::{IsTerminal, Write};

/// The width text may take on stdout: `$COLUMNS` when it is a number (so a test or a user can
/// ask for one), else the terminal's own when stdout is one, else none.
pub fn terminal_width() -> Option<u16> {
    let columns = std::env::var("COLUMNS").ok();
    if let Some(w) = columns.and_then(|c| c.trim().parse::<u16>().ok()) {
        return (w > 0).then_some(w);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which is to a live local.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_col > 0).then_some(size.ws_col)
}

/// A writer that folds its lines at a width (see the module); lines are written whole, one
/// write each, when their newline arrives, and a partial line when flushed or dropped.
pub struct Fold<W: Write> {
    out: W,
    width: Option<usize>,
    line: Vec<u8>,
}

impl<W: Write> Fold<W> {
    /// Lines to `out` folded at `width` columns (none: as written). A width under 20 is taken
    /// as 20: narrower, folding would scatter the figures more than it helps.
    pub fn new(out: W, width: Option<u16>) -> Self {
        Self {
            out,
            width: width.map(|w| usize::from(w).max(20)),
            line: Vec::new(),
        }
    }

    fn emit_line(&mut self) -> std::io::Result<()> {
        let line = std::mem::take(&mut self.line);
        match (self.width, std::str::from_utf8(&line)) {
            (Some(width), Ok(text)) => self.out.write_all(fold_line(text, width).as_bytes()),
            _ => self.out.write_all(&line),
        }
    }
}

impl<W: Write> Write for Fold<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..=at]);
            rest = &rest[at + 1..];
            self.emit_line()?;
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.emit_line()?;
        }
        self.out.flush()
    }
}

impl<W: Write> Drop for Fold<W> {
    fn drop(&mut self) {
        // A partial line left at the end; an error here has no one to go to.
        let _ = self.flush();
    }
}

/// `line` (its newline, if any, kept at the end) folded at `width` columns.
pub fn fold_line(line: &str, width: usize) -> String {
    let (body, newline) = match line.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (line, ""),
    };
    let hang = " ".repeat(hang_of(body).min(width / 2));
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = body;
    let mut room = width;
    while let Some(at) = break_at(rest, room) {
        out.push_str(rest[..at].trim_end_matches(' '));
        out.push('\n');
        out.push_str(&hang);
        rest = rest[at..].trim_start_matches(' ');
        room = width - hang.len();
    }
    out.push_str(rest);
    out.push_str(newline);
    out
}

/// Where a folded line's rest begins: under the value of a labelled line (`  TCP_INFO   retrans
/// 52`: the text after the label's run of two or more spaces), else two spaces in from the
/// line's own indent.
fn hang_of(line: &str) -> usize {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let text = &line[indent..];
    let gap = text.find("  ");
    let value = gap.and_then(|gap| text[gap..].find(|c| c != ' ').map(|v| gap + v));
    match value {
        Some(v) if text[..v].is_ascii() => indent + v,
        _ => indent + 2,
    }
}

/// Where `text` breaks to fit `room` columns: the last space (after some text) at which what
/// comes before it fits, else the first space after the word too wide for the room; none when
/// all of it fits, or when no space allows a break.
fn break_at(text: &str, room: usize) -> Option<usize> {
    let mut columns = 0;
    let mut space = None;
    let mut seen_text = false;
    let mut escape = Escape::None;
    for (i, c) in text.char_indices() {
        escape = match (escape, c) {
            (Escape::None, '\x1b') => Escape::Started,
            (Escape::Started, '[') => Escape::Csi,
            (Escape::Csi, '\x40'..='\x7e') | (Escape::Started, _) => Escape::None,
            (Escape::Csi, _) => Escape::Csi,
            (Escape::None, _) => {
                if c == ' ' && seen_text {
                    if columns > room {
                        return Some(i);
                    }
                    space = Some(i);
                }
                seen_text |= c != ' ';
                columns += 1;
                if columns > room && space.is_some() {
                    return space;
                }
                Escape::None
            }
        };
    }
    None
}

/// Where the scan is in an ANSI escape sequence (`ESC [ … m`).
#[derive(Clone, Copy)]
enum Escape {
    None,
    Started,
    Csi,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str, width: u16) -> String {
        let mut out = Vec::new();
        {
            let mut fold = Fold::new(&mut out, Some(width));
            fold.write_all(text.as_bytes()).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_long_line_folds_at_spaces_under_its_labels_value() {
        let line =
            "  up    RPM   66172  9.58 Gbit/s over 3 conns  loaded 3.76 ms, foreign 0.52 ms\n";
        let out = folded(line, 40);
        assert_eq!(
            out,
            "  up    RPM   66172  9.58 Gbit/s over 3\n        conns  loaded 3.76 ms, foreign\n        0.52 ms\n"
        );
        assert!(out.lines().all(|l| l.chars().count() <= 40), "{out}");
        // Only spaces changed: the words are the same, in order.
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&out), words(line));
    }

    #[test]
    fn lines_that_fit_and_lines_without_a_width_go_out_as_written() {
        let text = "short line\n\nanother\n";
        assert_eq!(folded(text, 80), text);
        let long = "x ".repeat(100) + "\n";
        let mut out = Vec::new();
        Fold::new(&mut out, None)
            .write_all(long.as_bytes())
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), long);
    }

    #[test]
    fn bold_takes_no_columns_and_a_long_word_overflows_whole() {
        let bold = "\x1b[1mRESULT\x1b[0m 9.41 Gbit/s\n";
        assert_eq!(folded(bold, 20), bold);
        let word = "a-very-long-word-with-no-space-in-it-at-all next\n";
        assert_eq!(
            folded(word, 20),
            "a-very-long-word-with-no-space-in-it-at-all\n  next\n"
        );
    }

    #[test]
    fn a_partial_line_waits_for_its_newline_or_a_flush() {
        let mut out = Vec::new();
        {
            let mut fold = Fold::new(&mut out, Some(20));
            fold.write_all(b"one two three ").unwrap();
            fold.write_all(b"four five six seven\nrest").unwrap();
            fold.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "one two three four\n  five six seven\nrest"
        );
    }
}
