//! What docs/ARCHITECTURE.md names, held to exist (issue 50): every path it quotes
//! (`` `crates/report/src/live_bar.rs` ``, `` `src/commands/` ``) and every `crate::item` whose
//! first word is a workspace crate (`` `analysis::summarize` ``, `` `report::live_bar` ``).
//!
//! A quoted word is a path when it starts with a top-level directory of the repository; a
//! path with a placeholder (`<name>`, `*`) is a pattern, not a name, and is left alone, as is
//! what follows `::` after a path (`stream_engine.rs::engine_for` checks the file). An item
//! exists when its last word is declared in that crate's source (`fn`, `struct`, `enum`,
//! `trait`, `type`, `const`, `static`, `mod`, a `macro_rules!`, a re-export or a module file):
//! the words between are modules or types it is reached through, which the item's own
//! declaration makes likely enough for a map; a wrong one is the next reader's to notice.

use std::collections::BTreeSet;
use std::path::Path;

/// The top-level directories a quoted path may start with.
const ROOTS: [&str; 7] = [
    "src/", "crates/", "tests/", "docs/", "scripts/", "bench/", ".ci/",
];

/// Every word of `doc` between backquotes.
fn quoted(doc: &str) -> Vec<&str> {
    doc.split('`').skip(1).step_by(2).collect()
}

/// The paths `doc` quotes (placeholders left out), each as written.
pub fn paths(doc: &str) -> BTreeSet<String> {
    quoted(doc)
        .into_iter()
        .filter(|w| ROOTS.iter().any(|r| w.starts_with(r)))
        .filter(|w| !w.contains(['<', '*', ' ', '{']))
        .map(|w| w.split("::").next().unwrap_or(w).to_string())
        .collect()
}

/// The `crate::item` names `doc` quotes whose crate is one of `crates` (by its library name),
/// each as written (call parentheses and generics dropped).
pub fn items(doc: &str, crates: &BTreeSet<String>) -> BTreeSet<String> {
    quoted(doc)
        .into_iter()
        .filter_map(|w| {
            let w = w.split(['(', '<', ' ']).next()?;
            let (first, _) = w.split_once("::")?;
            let plain = w
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':');
            (plain && crates.contains(first)).then(|| w.to_string())
        })
        .collect()
}

/// Whether `name` (the last word of an item) is declared in `text`, one file's source.
fn declares(text: &str, name: &str) -> bool {
    let keywords = [
        "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
    ];
    let ends_word = |rest: &str| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    let declared = keywords.iter().any(|k| {
        text.match_indices(&format!("{k} {name}"))
            .any(|(at, m)| ends_word(&text[at + m.len()..]))
    });
    let macro_rules = text.contains(&format!("macro_rules! {name}"));
    let reexported = text.lines().any(|l| {
        l.trim_start().starts_with("pub use")
            && l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == name)
    });
    declared || macro_rules || reexported
}

/// The items of `names` not declared in their crate's source; `src_of` gives a crate's
/// source directory by its library name, `files_of` the Rust files under a directory.
pub fn missing_items(
    names: &BTreeSet<String>,
    src_of: impl Fn(&str) -> Option<std::path::PathBuf>,
    files_of: impl Fn(&Path) -> Vec<std::path::PathBuf>,
) -> Vec<String> {
    names
        .iter()
        .filter(|full| {
            let mut words = full.split("::");
            let krate = words.next().unwrap_or_default();
            let Some(last) = words.last() else {
                return false;
            };
            let Some(src) = src_of(krate) else {
                return true;
            };
            !files_of(&src).iter().any(|f| {
                let stem = f.file_stem().is_some_and(|s| s == last);
                let dir = f
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|d| d == last);
                stem || dir || std::fs::read_to_string(f).is_ok_and(|t| declares(&t, last))
            })
        })
        .cloned()
        .collect()
}

#[test]
fn quoted_paths_and_items_are_found_and_patterns_left_alone() {
    let doc = "see `src/commands/<name>.rs`, `crates/a/src/b.rs::run`, `src/x/` and \
               `analysis::summarize(raw)`, `Measure::run`, `wire::spec::KINDS` `-A 0`";
    let want: BTreeSet<String> = ["crates/a/src/b.rs", "src/x/"].map(String::from).into();
    assert_eq!(paths(doc), want);
    let crates: BTreeSet<String> = ["analysis", "wire"].map(String::from).into();
    let want: BTreeSet<String> = ["analysis::summarize", "wire::spec::KINDS"]
        .map(String::from)
        .into();
    assert_eq!(items(doc, &crates), want);
    assert!(declares("pub const KINDS: [KindRow; 6]", "KINDS"));
    assert!(!declares("pub const KINDS_ALL: u8", "KINDS"));
    assert!(declares("pub use kinds::{KindRow, KINDS};", "KINDS"));
}
