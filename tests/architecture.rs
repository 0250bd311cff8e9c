//! The architecture's map held against the code, as `budgets` holds the sizes: the crate graph
//! in docs/ARCHITECTURE.md is generated from `cargo metadata` and must match it, and the
//! graph's budgets of issue 37 hold: no crate depends on another for a single item (`uses`),
//! and no `Result<_, String>` outside tests (`string_errors`); and issue 50's: what depends on
//! a test's kind is read from the kind table (`kind_reads`), and every path and `crate::item`
//! the doc names exists (`doc_names`).
//!
//! The graph is the workspace's crates and their normal `[dependencies]` on each other
//! (dev-dependencies apart: they do not ship). Each crate's role is the first sentence of its
//! `lib.rs` (`//!`), so the map says what the module docs say. When the block between
//! `<!-- crate-graph:begin -->` and `<!-- crate-graph:end -->` differs, the test prints the
//! expected one; `LINERATE_WRITE_DOCS=1 cargo test --release --test tests architecture::`
//! writes it. Runs `cargo metadata --offline --no-deps`: no network, no build.

mod doc_names;
mod kind_reads;
mod source;
mod string_errors;
mod uses;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BEGIN: &str = "<!-- crate-graph:begin -->";
const END: &str = "<!-- crate-graph:end -->";
const DOC: &str = "docs/ARCHITECTURE.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One workspace crate as the code names it.
struct Crate {
    /// The library's name in code (`session`), `linerate` for the root package.
    name: String,
    /// Its directory from the workspace root (`crates/session`, `.` for the root).
    dir: String,
    /// Where its source is (`crates/session/src`).
    src: PathBuf,
    /// The first sentence of its `lib.rs`'s `//!`.
    role: String,
    /// The workspace crates it depends on (normal dependencies), by name.
    deps: BTreeSet<String>,
    /// Its layer: 0 with no internal dependency, else one more than its highest dependency's.
    layer: usize,
}

fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs (the test is run by cargo)");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// The first sentence of the `//!` paragraph that opens `lib`.
fn role_of(lib: &Path) -> String {
    let text = std::fs::read_to_string(lib).unwrap_or_default();
    let paragraph: Vec<&str> = text
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    let paragraph = paragraph.join(" ");
    let sentence = match paragraph.find(". ") {
        Some(end) => &paragraph[..=end],
        None => paragraph.as_str(),
    };
    // Intra-doc links (`[`StreamEngine`]`) read as plain code in the table.
    sentence
        .replace("[`", "`")
        .replace("`]", "`")
        .replace('|', "\\|")
}

/// The workspace's crates, by layer then name.
fn crates() -> Vec<Crate> {
    let meta = metadata();
    let root = root();
    let packages = meta["packages"].as_array().expect("packages");
    let lib_of = |p: &serde_json::Value| -> Option<(String, PathBuf)> {
        let targets = p["targets"].as_array()?;
        let lib = targets.iter().find(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "lib"))
        })?;
        Some((
            lib["name"].as_str()?.to_string(),
            lib["src_path"].as_str()?.into(),
        ))
    };
    let names: BTreeMap<&str, String> = packages
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?, lib_of(p)?.0)))
        .collect();
    let mut crates: Vec<Crate> = packages
        .iter()
        .filter_map(|p| {
            let (name, lib) = lib_of(p)?;
            let manifest = PathBuf::from(p["manifest_path"].as_str()?);
            let dir = manifest.parent()?.to_path_buf();
            let deps = p["dependencies"]
                .as_array()?
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| names.get(d["name"].as_str()?).cloned())
                .collect();
            let shown = dir
                .strip_prefix(&root)
                .unwrap_or(&dir)
                .display()
                .to_string();
            Some(Crate {
                name,
                dir: if shown.is_empty() { ".".into() } else { shown },
                src: lib.parent()?.to_path_buf(),
                role: role_of(&lib),
                deps,
                layer: 0,
            })
        })
        .collect();
    for _ in 0..crates.len() {
        let layers: BTreeMap<String, usize> =
            crates.iter().map(|c| (c.name.clone(), c.layer)).collect();
        for c in &mut crates {
            c.layer = c.deps.iter().map(|d| layers[d] + 1).max().unwrap_or(0);
        }
    }
    crates.sort_by(|a, b| (a.layer, &a.name).cmp(&(b.layer, &b.name)));
    crates
}

fn names(list: impl IntoIterator<Item = String>) -> String {
    let list: Vec<String> = list.into_iter().map(|n| format!("`{n}`")).collect();
    if list.is_empty() {
        "—".into()
    } else {
        list.join(", ")
    }
}

/// The generated block, markers included.
fn graph_block(crates: &[Crate]) -> String {
    let layer: BTreeMap<&str, usize> = crates.iter().map(|c| (c.name.as_str(), c.layer)).collect();
    let width = crates.iter().map(|c| c.name.len()).max().unwrap_or(0) + 2;
    let mut out = format!(
        "{BEGIN}\n<!-- Generated from `cargo metadata` by tests/architecture.rs, which fails when \
         it differs; `LINERATE_WRITE_DOCS=1 cargo test --release --test tests architecture::` \
         rewrites it. -->\n\n```\n"
    );
    for c in crates {
        let mut deps: Vec<&String> = c.deps.iter().collect();
        deps.sort_by_key(|d| (std::cmp::Reverse(layer[d.as_str()]), d.as_str()));
        let deps: Vec<&str> = deps.iter().map(|d| d.as_str()).collect();
        let line = if deps.is_empty() {
            format!("{:width$} (nothing internal)", c.name)
        } else {
            let arrow = "─".repeat(width - c.name.len());
            format!("{} {arrow}► {}", c.name, deps.join(", "))
        };
        out.push_str(&format!("layer {}  {}\n", c.layer, line.trim_end()));
    }
    out.push_str("```\n\n| layer | crate | directory | role (the first sentence of its `lib.rs`) | depends on | used by |\n| --- | --- | --- | --- | --- | --- |\n");
    for c in crates {
        let users = crates
            .iter()
            .filter(|u| u.deps.contains(&c.name))
            .map(|u| u.name.clone());
        out.push_str(&format!(
            "| {} | `{}` | `{}` | {} | {} | {} |\n",
            c.layer,
            c.name,
            c.dir,
            c.role,
            names(c.deps.iter().cloned()),
            names(users)
        ));
    }
    out.push_str(END);
    out
}

#[test]
fn the_crate_graph_in_the_architecture_doc_is_the_workspaces() {
    let expected = graph_block(&crates());
    let path = root().join(DOC);
    let doc = std::fs::read_to_string(&path).expect("docs/ARCHITECTURE.md");
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!(
            "{DOC} has no {BEGIN} … {END} block; put this where the crate graph goes:\n{expected}"
        );
    };
    let current = &doc[begin..end + END.len()];
    if current == expected {
        return;
    }
    if std::env::var("LINERATE_WRITE_DOCS").is_ok_and(|v| v == "1") {
        let written = format!("{}{expected}{}", &doc[..begin], &doc[end + END.len()..]);
        std::fs::write(&path, written).expect("write docs/ARCHITECTURE.md");
        return;
    }
    panic!(
        "{DOC}'s crate graph differs from the workspace's (cargo metadata); \
         `LINERATE_WRITE_DOCS=1 cargo test --release --test tests architecture::` rewrites it \
         to:\n{expected}"
    );
}

#[test]
fn no_crate_depends_on_another_for_a_single_item() {
    let crates = crates();
    let mut edges = BTreeMap::new();
    // The binary is the composition root: a narrow entry point (`ui::Server`, `pgstore::open`)
    // is what a crate should offer it, so its edges are not counted.
    for c in crates.iter().filter(|c| c.dir != ".") {
        let files = source::sources(&root(), &c.src);
        for dep in &c.deps {
            let items = uses::items_used(&files, dep);
            edges.insert((c.name.clone(), dep.clone()), items);
        }
    }
    let problems = uses::check(&edges);
    assert!(
        problems.is_empty(),
        "the crate graph's budget (docs/ARCHITECTURE.md, Budgets and checks):\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_result_with_a_string_error_outside_tests() {
    let problems = string_errors::check(&root());
    assert!(
        problems.is_empty(),
        "`Result<_, String>` outside tests (docs/ARCHITECTURE.md, Budgets and checks):\n{}",
        problems.join("\n")
    );
}

/// Every path and `crate::item` docs/ARCHITECTURE.md names exists (issue 50): see `doc_names`.
#[test]
fn what_the_architecture_doc_names_exists() {
    let doc = std::fs::read_to_string(root().join(DOC)).expect("docs/ARCHITECTURE.md");
    let mut missing: Vec<String> = (doc_names::paths(&doc).into_iter())
        .filter(|p| !root().join(p).exists())
        .collect();
    let crates = crates();
    let names = crates.iter().map(|c| c.name.clone()).collect();
    let src_of = |name: &str| {
        crates
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.src.clone())
    };
    let files_of = |dir: &Path| {
        let mut files = Vec::new();
        crate::budgets::rust_files(dir, &mut files);
        files
    };
    let items = doc_names::items(&doc, &names);
    missing.extend(doc_names::missing_items(&items, src_of, files_of));
    assert!(
        missing.is_empty(),
        "named in docs/ARCHITECTURE.md, not found:\n{}",
        missing.join("\n")
    );
}

/// A test's kind is read from its row in the kind table, not decided again wherever it
/// matters (issue 50): see `kind_reads`.
#[test]
fn kind_decisions_stay_in_the_kind_table() {
    let files: Vec<source::Source> = crates()
        .iter()
        .flat_map(|c| source::sources(&root(), &c.src))
        .collect();
    let problems = kind_reads::check(&files);
    assert!(
        problems.is_empty(),
        "the kind table's budget (docs/ARCHITECTURE.md, Budgets and checks):\n{}",
        problems.join("\n")
    );
}

/// The record is types only (issue 37 item 7): a crate that reads or builds run records and
/// stores none reaches no store crate, so it compiles no database driver (SQLite comes with
/// `results`, PostgreSQL with `pgstore`).
#[test]
fn crates_that_only_read_records_reach_no_store() {
    const STORES: [&str; 2] = ["results", "pgstore"];
    const RECORD_ONLY: [&str; 6] = ["record", "analysis", "events", "report", "sweep", "session"];
    let crates = crates();
    let deps: BTreeMap<&str, &BTreeSet<String>> =
        crates.iter().map(|c| (c.name.as_str(), &c.deps)).collect();
    for name in RECORD_ONLY {
        let mut reached = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(next) = todo.pop() {
            for d in deps.get(next.as_str()).copied().into_iter().flatten() {
                if reached.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        let stores: Vec<&str> = STORES
            .into_iter()
            .filter(|s| reached.contains(*s))
            .collect();
        assert!(
            stores.is_empty(),
            "{name} reaches the store crate(s) {stores:?}: name the types through `record`"
        );
    }
}
