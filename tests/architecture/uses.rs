//! The budget "no crate depends on another for a single item" (issue 37): an edge of the
//! crate graph that carries one trait or one type costs a whole crate's compile and couples two
//! roles; the item belongs lower in the graph, or the edge is a sign of a crate with two roles.
//!
//! For each edge A → B of the graph, the items of B that A's non-test code names are counted:
//! every `b::path` (a `use` tree expanded), cut after its first capitalised segment (a type,
//! trait or enum: `engine::Signal::new` is `Signal`), and a module brought in by `use`
//! followed into the file's `module::Item` paths. An edge must carry at least [`MIN_ITEMS`]:
//! the issue counts "a trait and a struct" and "one `Progress` impl" as the same fault as a
//! single item, and a trait with the one type it takes is one item in all but name. The thin
//! edges that were there when the budget came in are [`KNOWN`], a ceiling like
//! `string_errors`: a new thin edge fails, and so does a known edge that is gone or thick.

use std::collections::{BTreeMap, BTreeSet};

use super::source::Source;

/// The fewest items of B a crate A may depend on B for.
pub const MIN_ITEMS: usize = 3;

/// The thin edges the budget started with, and those of the events crate: (from, to), with
/// the items they carry and why each is the right dependency (issue 37 looked at each again:
/// none has a better home for its item).
const KNOWN: &[(&str, &str)] = &[
    // `split_words` and its `SplitError`: a knob's `--pre`/`--post` reads as a plan file's
    // `run` does, by one splitter (no shell). plan is a leaf (thiserror, toml): the edge points
    // down and costs no build; a crate of its own for one 190-line file would cost more.
    ("sweep", "plan"),
    // `open` and its `Access`: the runs API reads whatever `--db` names (an SQLite path or a
    // postgres:// URL); the choice between the two stores lives in pgstore, the one crate
    // that knows both, and is the binary's one way to open a store too.
    ("ui", "pgstore"),
    // The live-event vocabulary (issue 37's events crate) is a trait its users implement or
    // call and the types its events carry: fewer than MIN_ITEMS by nature, in a crate that is
    // small and low (no SQLite of its own, no sockets).
    ("events", "wire"),    // `TestSpec` and `ServerInfo`, what `started` carries
    ("events", "measure"), // `Signal`, re-exported: its home is below `engine`, which stops on it
    ("report", "events"),  // `Observer`, what `LiveTable` implements (a sink of the vocabulary)
    ("session", "events"), // `Observer` and its no-op `Silent`: what the client reports to
];

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// A path from `i` (after a `crate::`): its segments, and a `use` tree's leaves when it ends
/// in `{...}`. Each leaf is (segments, local name if it is a module that a later `name::`
/// may name). Returns the position after the path.
fn parse_tree(b: &[u8], mut i: usize, prefix: &[String], leaves: &mut Vec<Leaf>) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        i = skip_space(b, i);
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                i = skip_space(b, i);
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                i = parse_tree(b, i, &segs, leaves);
                i = skip_space(b, i);
                if i < b.len() && b[i] == b',' {
                    i += 1;
                }
            }
        }
        if i < b.len() && b[i] == b'*' {
            segs.push("*".into());
            leaves.push(Leaf { segs, alias: None });
            return i + 1;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let seg = String::from_utf8_lossy(&b[start..i]).to_string();
        if seg != "self" && !seg.is_empty() {
            segs.push(seg);
        }
        let j = skip_space(b, i);
        if b[j..].starts_with(b"::") {
            i = j + 2;
            continue;
        }
        let mut alias = None;
        if b[j..].starts_with(b"as ") {
            let k = skip_space(b, j + 3);
            let mut e = k;
            while e < b.len() && is_ident(b[e]) {
                e += 1;
            }
            alias = Some(String::from_utf8_lossy(&b[k..e]).to_string());
            i = e;
        }
        leaves.push(Leaf { segs, alias });
        return i;
    }
}

struct Leaf {
    segs: Vec<String>,
    alias: Option<String>,
}

/// `segs` cut after the first capitalised segment, as `a::B`.
fn item(segs: &[String]) -> String {
    let end = segs
        .iter()
        .position(|s| s.starts_with(|c: char| c.is_ascii_uppercase()))
        .map_or(segs.len(), |p| p + 1);
    segs[..end].join("::")
}

/// The starts of `name::` paths in `b` that are not the tail of a longer path.
fn path_starts<'a>(b: &'a [u8], name: &'a str) -> impl Iterator<Item = usize> + 'a {
    let pat = format!("{name}::");
    (0..b.len()).filter(move |&i| {
        b[i..].starts_with(pat.as_bytes()) && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':'))
    })
}

/// Whether `file` is a crate root with a module of its own named `lib`, whose `lib::` paths
/// are then that module's (the sweep crate's `plan` module beside the plan crate).
fn shadows(file: &Source, lib: &str) -> bool {
    let root = file.path.ends_with("src/lib.rs") || file.path.ends_with("src/main.rs");
    root && file.lines.iter().any(|l| {
        let t = l.trim().trim_start_matches("pub ");
        t == format!("mod {lib};") || t == format!("mod {lib} {{")
    })
}

/// The items of crate `lib` that `files` name.
pub fn items_used(files: &[Source], lib: &str) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    for file in files {
        if shadows(file, lib) {
            continue;
        }
        let text = file.text();
        let b = text.as_bytes();
        let mut leaves = Vec::new();
        for at in path_starts(b, lib) {
            parse_tree(b, at + lib.len() + 2, &[], &mut leaves);
        }
        for leaf in leaves {
            let whole = item(&leaf.segs);
            let is_module =
                whole == leaf.segs.join("::") && leaf.segs.last().is_some_and(|s| s != "*");
            let local = leaf.alias.clone().or(leaf.segs.last().cloned());
            let mut inner = Vec::new();
            if let (true, Some(local)) = (is_module, &local) {
                for at in path_starts(b, local) {
                    parse_tree(b, at + local.len() + 2, &leaf.segs, &mut inner);
                }
            }
            inner.retain(|l| l.segs.len() > leaf.segs.len());
            if inner.is_empty() {
                items.insert(whole);
            }
            items.extend(inner.iter().map(|l| item(&l.segs)));
        }
    }
    items.remove("");
    items
}

/// `edges`: (from, to) → the items `from` uses of `to`. The problems with the budget.
pub fn check(edges: &BTreeMap<(String, String), BTreeSet<String>>) -> Vec<String> {
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let mut problems = Vec::new();
    for ((from, to), items) in edges {
        let thin = items.len() < MIN_ITEMS && !items.contains("*");
        let listed = known.contains(&(from.clone(), to.clone()));
        let names: Vec<&str> = items.iter().map(String::as_str).collect();
        if thin && !listed {
            problems.push(format!(
                "{from} depends on {to} for {} item(s) ({}), under {MIN_ITEMS}: move the item \
                 lower in the graph or into {from}, and drop the dependency",
                items.len(),
                names.join(", ")
            ));
        } else if !thin && listed {
            problems.push(format!(
                "{from} → {to} now uses {} items ({}): remove it from KNOWN in \
                 tests/architecture/uses.rs (the list only shrinks)",
                items.len(),
                names.join(", ")
            ));
        }
    }
    for (from, to) in &known {
        if !edges.contains_key(&(from.clone(), to.clone())) {
            problems.push(format!(
                "{from} no longer depends on {to}: remove the edge from KNOWN in \
                 tests/architecture/uses.rs (the list only shrinks)"
            ));
        }
    }
    problems
}

#[test]
fn the_item_count_expands_use_trees_and_follows_modules() {
    let code = "use sweep::{mesh::{self, PairRunner as P}, ProbePlan};\n\
                use sweep::output;\n\
                fn f() { output::write(); output::Format::Csv; sweep::run::Point::new(); }\n\
                fn g(_: &dyn crate::sweep::Other, _: xsweep::Not) {}\n";
    let files = [Source {
        path: "a.rs".into(),
        lines: code.lines().map(String::from).collect(),
    }];
    let got: Vec<String> = items_used(&files, "sweep").into_iter().collect();
    assert_eq!(
        got,
        [
            "ProbePlan",
            "mesh::PairRunner",
            "output::Format",
            "output::write",
            "run::Point"
        ]
    );
}
