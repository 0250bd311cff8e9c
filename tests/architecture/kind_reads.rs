//! The budget "one home for each kind of test" (issue 50): what depends on a test's kind is
//! said once, in the kind table (`wire::spec::KINDS`) or an exhaustive `match`, not by asking
//! "is this udp_stream?" wherever it matters. A new kind then fails to compile, or fails the
//! test that enumerates the table, where it would otherwise take a default in silence.
//!
//! Two counts over non-test code outside the table's own files ([`TABLE`]) and the engines'
//! dispatch: the kind decisions (a comparison with a `TestKind::` variant, a `matches!` on one,
//! a call of a kind predicate such as `is_rr()`), and the files that name `TestKind::` at all.
//! Each has a ceiling that only shrinks, as `uses::KNOWN` does: over it fails (a new decision
//! outside the table), under it fails too (lower the ceiling, so the gain is kept).

use std::collections::BTreeMap;

use super::source::Source;

/// The table's files and the engines' dispatch, where the kinds are read by design.
pub const TABLE: [&str; 2] = [
    "crates/wire/src/spec/kind.rs",
    "crates/engine/src/stream_engine.rs",
];

/// Kind decisions outside [`TABLE`]: the aim is at most 5.
pub const DECISIONS_AT_MOST: usize = 0;

/// Files outside [`TABLE`] naming `TestKind::`: the aim is at most 12.
pub const FILES_AT_MOST: usize = 7;

/// The predicates `TestKind` answered before the table, called as methods.
const PREDICATES: [&str; 4] = [
    ".is_rr()",
    ".is_udp()",
    ".carries_data()",
    ".connects_per_transaction()",
];

/// How many kind decisions one line of code holds.
pub fn decisions_in(line: &str) -> usize {
    let compared = line.matches("== TestKind::").count() + line.matches("!= TestKind::").count();
    let matched = usize::from(line.contains("matches!(") && line.contains("TestKind::"));
    let asked: usize = PREDICATES.iter().map(|p| line.matches(p).count()).sum();
    compared + matched + asked
}

/// Per file outside [`TABLE`]: (kind decisions, whether it names `TestKind::`).
pub fn counts(files: &[Source]) -> BTreeMap<String, (usize, bool)> {
    files
        .iter()
        .filter(|f| !TABLE.contains(&f.path.as_str()))
        .map(|f| {
            let decisions = f.lines.iter().map(|l| decisions_in(l)).sum();
            let names = f.lines.iter().any(|l| l.contains("TestKind::"));
            (f.path.clone(), (decisions, names))
        })
        .filter(|(_, (d, n))| *d > 0 || *n)
        .collect()
}

/// The problems with the budget, given every crate's non-test sources.
pub fn check(files: &[Source]) -> Vec<String> {
    let found = counts(files);
    let decisions: usize = found.values().map(|(d, _)| d).sum();
    let naming = found.values().filter(|(_, n)| *n).count();
    let listing = found
        .iter()
        .map(|(path, (d, n))| {
            format!(
                "  {path}: {d} decision(s){}",
                if *n { ", names TestKind::" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut problems = Vec::new();
    for (what, count, ceiling, name) in [
        (
            "kind decisions",
            decisions,
            DECISIONS_AT_MOST,
            "DECISIONS_AT_MOST",
        ),
        (
            "files naming TestKind::",
            naming,
            FILES_AT_MOST,
            "FILES_AT_MOST",
        ),
    ] {
        if count > ceiling {
            problems.push(format!(
                "{count} {what} outside the kind table, over the {ceiling} allowed: read the \
                 kind's row (wire::spec::KINDS) or match exhaustively instead"
            ));
        } else if count < ceiling {
            problems.push(format!(
                "{count} {what} outside the kind table, under the ceiling {ceiling}: lower {name} \
                 in tests/architecture/kind_reads.rs to {count} (it only shrinks)"
            ));
        }
    }
    if !problems.is_empty() {
        problems.push(format!("where they are:\n{listing}"));
    }
    problems
}

#[test]
fn a_decision_is_a_comparison_a_matches_or_a_predicate() {
    assert_eq!(decisions_in("if spec.kind() == TestKind::UdpStream {"), 1);
    assert_eq!(decisions_in("k != TestKind::TcpCc && k.is_rr()"), 2);
    assert_eq!(
        decisions_in("matches!(kind, TestKind::TcpRr | TestKind::UdpRr)"),
        1
    );
    assert_eq!(decisions_in("let row = spec.kind().row();"), 0);
    assert_eq!(decisions_in("TestKind::TcpStream => \"tcp\","), 0);
}
