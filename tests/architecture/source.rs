//! A crate's non-test source as code only, for the architecture budgets' textual scans.
//!
//! Strings, character literals and `//` comments are blanked (with the size budgets'
//! `code_of`), so a doc comment's `[engine::Signal]` or a message's words never count as code.
//! Test code is left out: files under a `tests/` directory and `tests.rs` files, items under
//! `#[cfg(test)]` or `#[cfg(any(test, feature = "testing"))]` (a block to its closing brace,
//! or a `mod x;` line, whose file, or the one its `#[path]` names, is then left out too). Lines keep their numbers, so a finding
//! can name the function around it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::budgets::{braces, code_of, is_test_file, rust_files};

/// One non-test source file: its path from the workspace root and its code lines.
pub struct Source {
    pub path: String,
    pub lines: Vec<String>,
}

impl Source {
    /// The code as one text, lines joined, for scans across line breaks.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The function (or type) around line `at` (0-based): the nearest `fn`, `struct`, `enum`,
    /// `type`, `trait` or `impl` above it, as `fn name`.
    pub fn item_at(&self, at: usize) -> String {
        for line in self.lines[..=at].iter().rev() {
            if let Some(item) = item_of(line) {
                return item;
            }
        }
        "(file scope)".to_string()
    }
}

/// `fn name`, `struct Name`, ... if `line` declares one (not a `fn(&str)` pointer type).
fn item_of(line: &str) -> Option<String> {
    for keyword in ["fn", "struct", "enum", "type", "trait"] {
        let mut from = 0;
        while let Some(at) = line[from..].find(keyword).map(|i| i + from) {
            from = at + keyword.len();
            let before = line[..at].chars().next_back();
            let rest = &line[from..];
            let name: String = rest
                .strip_prefix(' ')
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if before.is_none_or(|c| c == ' ') && !name.is_empty() {
                return Some(format!("{keyword} {name}"));
            }
        }
    }
    let t = line.trim_start();
    (t.starts_with("impl") && t.contains('{')).then(|| t.trim_end_matches('{').trim().to_string())
}

fn is_test_attribute(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t == "#[cfg(test)]" || t.starts_with("#[cfg(any(test,")
}

/// The file a `#[path = "x.rs"]` attribute names (`raw` is the line as written: `code_of`
/// blanks the string), beside the file that holds it.
fn path_attribute(file: &Path, raw: &str) -> Option<PathBuf> {
    let named = raw.trim().strip_prefix("#[path")?.split('"').nth(1)?;
    Some(file.parent().unwrap_or(Path::new("")).join(named))
}

/// `lines` with every test-only item blanked; the files of test-only `mod x;` lines are
/// added to `skipped` (as `dir/x.rs` and `dir/x/`, or the file a `#[path]` names).
fn strip_tests(file: &Path, raw: &[&str], lines: &mut [String], skipped: &mut BTreeSet<PathBuf>) {
    let mut i = 0;
    while i < lines.len() {
        if !is_test_attribute(&lines[i]) {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut depth = 0i32;
        let mut opened = false;
        while j < lines.len() {
            let line = std::mem::take(&mut lines[j]);
            if !opened && j > i && !line.contains('{') && line.trim_end().ends_with(';') {
                if let Some(name) = line
                    .trim()
                    .strip_prefix("mod ")
                    .or(line.trim().strip_prefix("pub mod "))
                {
                    let name = name.trim_end_matches(';').trim();
                    let dir = module_dir(file);
                    skipped.insert(dir.join(format!("{name}.rs")));
                    skipped.insert(dir.join(name));
                    let attributes = raw.get(i..j).unwrap_or_default();
                    skipped.extend(attributes.iter().filter_map(|a| path_attribute(file, a)));
                }
                break;
            }
            braces(&line, &mut depth, &mut opened);
            if opened && depth == 0 {
                break;
            }
            j += 1;
        }
        i = j + 1;
    }
}

/// Where the files of `file`'s `mod x;` lines are: beside a `lib.rs`, `main.rs` or `mod.rs`,
/// else in the directory named after the file.
fn module_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "main" | "mod") | None => dir,
        Some(stem) => dir.join(stem),
    }
}

/// The non-test sources under `dir`, in path order.
pub fn sources(root: &Path, dir: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut skipped = BTreeSet::new();
    let mut read = Vec::new();
    for path in files.into_iter().filter(|p| !is_test_file(p)) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let raw: Vec<&str> = text.lines().collect();
        let mut lines: Vec<String> = raw.iter().map(|l| code_of(l)).collect();
        strip_tests(&path, &raw, &mut lines, &mut skipped);
        read.push((path, lines));
    }
    read.into_iter()
        .filter(|(path, _)| !skipped.iter().any(|s| path.starts_with(s)))
        .map(|(path, lines)| Source {
            path: path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string(),
            lines,
        })
        .collect()
}
