//! The size budgets of docs/ARCHITECTURE.md, checked over the source tree: no source file over
//! 600 lines, no function over 80 lines outside tests, and the binary's `src/` under 6,000 lines.
//!
//! Functions are found by their `fn` line and measured to the brace that closes them, with
//! strings, character literals and comments blanked first so their braces do not count. Test
//! code is left out of the function budget: files under a `tests/` directory, `tests.rs` files
//! and everything from a `#[cfg(test)]` module on. Generated and fetched trees (`target/`,
//! `fuzz/`) are not read.

use std::path::{Path, PathBuf};

const FILE_LINES: usize = 600;
const FN_LINES: usize = 80;
const BINARY_LINES: usize = 6_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, skipping build output.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != "fuzz" && name != ".git" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

pub(crate) fn is_test_file(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "tests")
        || path.file_name().is_some_and(|n| n == "tests.rs")
}

/// `line` with string and character literals emptied and a trailing `//` comment cut, so
/// only code braces remain. Raw strings and block comments spanning lines are rare in this
/// tree; a line with `r#"` is taken as brace-free.
pub(crate) fn code_of(line: &str) -> String {
    if line.contains("r#\"") {
        return String::new();
    }
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                // A char literal ('x', '\n', '{') or a lifetime ('a): skip a literal only.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    for d in chars.by_ref() {
                        if d == '\'' {
                            break;
                        }
                    }
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                }
            }
            '/' if chars.peek() == Some(&'/') => break,
            _ => out.push(c),
        }
    }
    out
}

fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    let t = t
        .strip_prefix("pub(crate) ")
        .or(t.strip_prefix("pub(super) "))
        .unwrap_or(t);
    let t = t.strip_prefix("pub ").unwrap_or(t);
    let t = t.strip_prefix("const ").unwrap_or(t);
    let t = t.strip_prefix("unsafe ").unwrap_or(t);
    let t = t.strip_prefix("fn ")?;
    Some(
        t.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect(),
    )
}

/// The functions of `text` longer than the budget, as `name (N lines)`.
/// Adds `line`'s braces to `depth`; `opened` once one has opened.
pub(crate) fn braces(line: &str, depth: &mut i32, opened: &mut bool) {
    for c in line.chars() {
        match c {
            '{' => {
                *depth += 1;
                *opened = true;
            }
            '}' => *depth -= 1,
            _ => {}
        }
    }
}

fn long_functions(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    let mut long = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let (mut depth, mut opened) = (0i32, false);
        for (j, l) in lines[i..].iter().enumerate() {
            let code = code_of(l);
            if !opened && code.contains(';') && !code.contains('{') {
                break; // a declaration without a body (trait method, extern)
            }
            braces(&code, &mut depth, &mut opened);
            if opened && depth == 0 {
                if j + 1 > FN_LINES {
                    long.push(format!("{name} ({} lines, from line {})", j + 1, i + 1));
                }
                break;
            }
        }
    }
    long
}

#[test]
fn source_files_and_functions_stay_within_budget() {
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests"] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut over = Vec::new();
    let mut binary_lines = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let n = text.lines().count();
        let shown = path.strip_prefix(root()).unwrap_or(path).display();
        if path.starts_with(root().join("src")) {
            binary_lines += n;
        }
        if n > FILE_LINES {
            over.push(format!("{shown}: {n} lines (budget {FILE_LINES})"));
        }
        if !is_test_file(path) {
            for f in long_functions(&text) {
                over.push(format!("{shown}: fn {f} (budget {FN_LINES})"));
            }
        }
    }
    if binary_lines > BINARY_LINES {
        over.push(format!(
            "src/: {binary_lines} lines in the binary (budget {BINARY_LINES}): move domain logic into a crate"
        ));
    }
    assert!(
        over.is_empty(),
        "over the size budgets of docs/ARCHITECTURE.md:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_function_measure_sees_bodies_not_strings() {
    let body = "    let s = \"}}}\";\n".repeat(FN_LINES);
    let text = format!("fn long() {{\n{body}}}\nfn short() {{ '{{'; }}\nfn decl();\n");
    assert_eq!(
        long_functions(&text),
        vec![format!("long ({} lines, from line 1)", FN_LINES + 2)]
    );
    let tests = format!("#[cfg(test)]\nmod tests {{\n{text}}}\n");
    assert!(long_functions(&tests).is_empty());
}
