//! The budget "no `Result<_, String>` outside tests" (issue 37): an error that is only a
//! string cannot be matched on, tested by kind or told apart from another; library crates
//! say what failed with a typed error (thiserror), the binary with `anyhow`.
//!
//! Every `Result<T, String>` in non-test code of `src/` and `crates/*/src` is found (across
//! line breaks, nested ones too) and named by its file and the function around it. The ones
//! that were there when the budget came in are [`KNOWN`], a ceiling: a new one fails, and so
//! does an entry that is gone or has fewer, so the list only shrinks.

use std::collections::BTreeMap;
use std::path::Path;

use super::source::{sources, Source};

/// The `Result<_, String>`s the budget started with: (file, item, how many there). Each of
/// the 18 it began with has a typed error now; the list stays, empty, so an entry is what a
/// new one would need (it should not get one).
const KNOWN: &[(&str, &str, usize)] = &[];

/// The byte offsets in `text` of each `Result<...>` whose error type is `String`.
fn string_results(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("Result<").map(|i| i + from) {
        from = at + "Result<".len();
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let (mut depth, mut args, mut arg) = (0i32, Vec::new(), String::new());
        for (i, &c) in b[from..].iter().enumerate() {
            match c {
                b'<' | b'(' | b'[' => depth += 1,
                b'>' if i > 0 && b[from + i - 1] == b'-' => {}
                b'>' | b')' | b']' if depth == 0 => break,
                b'>' | b')' | b']' => depth -= 1,
                b',' if depth == 0 => {
                    args.push(std::mem::take(&mut arg));
                    continue;
                }
                _ => {}
            }
            arg.push(c as char);
        }
        args.push(arg);
        let error: String = args
            .get(1)
            .map(|a| a.chars().filter(|c| !c.is_whitespace()).collect())
            .unwrap_or_default();
        if args.len() == 2 && (error == "String" || error == "std::string::String") {
            found.push(at);
        }
    }
    found
}

/// (file, item) → how many `Result<_, String>` there.
fn found_in(files: &[Source]) -> BTreeMap<(String, String), usize> {
    let mut found = BTreeMap::new();
    for file in files {
        let text = file.text();
        for at in string_results(&text) {
            let line = text[..at].matches('\n').count();
            *found
                .entry((file.path.clone(), file.item_at(line)))
                .or_default() += 1;
        }
    }
    found
}

pub fn check(root: &Path) -> Vec<String> {
    let mut files = sources(root, &root.join("src"));
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .map(|d| d.flatten().map(|e| e.path().join("src")).collect())
        .unwrap_or_default();
    crates.sort();
    for dir in crates {
        files.extend(sources(root, &dir));
    }
    let found = found_in(&files);
    let known: BTreeMap<(String, String), usize> = KNOWN
        .iter()
        .map(|(f, i, n)| ((f.to_string(), i.to_string()), *n))
        .collect();
    let mut problems = Vec::new();
    for ((file, item), n) in &found {
        let ceiling = known
            .get(&(file.clone(), item.clone()))
            .copied()
            .unwrap_or(0);
        if *n > ceiling {
            problems.push(format!(
                "{file}: {item} has {n} `Result<_, String>` (allowed {ceiling}): \
                 give it a typed error (thiserror in a library crate, anyhow in src/)"
            ));
        }
    }
    for ((file, item), n) in &known {
        let now = found
            .get(&(file.clone(), item.clone()))
            .copied()
            .unwrap_or(0);
        if now < *n {
            problems.push(format!(
                "{file}: {item} has {now} `Result<_, String>`, the known list says {n}: \
                 lower its entry in tests/architecture/string_errors.rs (the list only shrinks)"
            ));
        }
    }
    if !problems.is_empty() {
        let now: Vec<String> = found
            .iter()
            .map(|((f, i), n)| format!("    ({f:?}, {i:?}, {n}),"))
            .collect();
        problems.push(format!("the list as it is now:\n{}", now.join("\n")));
    }
    problems
}

#[test]
fn the_string_error_scan_sees_types_not_words() {
    let text = "fn a() -> Result<Vec<u8>, String> {}\n\
                fn b() -> Result<Result<u8, String>, E> {}\n\
                fn c() -> io::Result<String> {}\n\
                fn d() -> Result<Box<dyn Fn() -> u8>,\n    String> {}\n\
                fn e() -> MyResult<u8, String> {}\n";
    let at: Vec<usize> = string_results(text)
        .into_iter()
        .map(|at| text[..at].matches('\n').count())
        .collect();
    assert_eq!(at, vec![0, 1, 3]);
}
