//! Which stored runs a command is about: the command line's items (`12`, `#12`, or a tag set
//! `driver=a,mtu=9000`) resolved into labeled columns, or, for a report without items, every
//! run that passes the filters grouped by kind and tags.
//!
//! Invariants: a column is never empty (an item that matches nothing is an error naming it);
//! runs in a column are oldest first; a tag-set column is labeled with its tags in key order,
//! as `linerate runs` prints them, so a label can be pasted back as an item.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use pgstore::Access;
use report::{LabeledRuns, PpsMatrix};
use results::store::{Filter, Item, ResultStore, StoreLocation, StoredRun, Tags};

use crate::store_args::resolve_db;

/// A column of a comparison, chart or report: stored runs under one label.
#[derive(Debug, Clone)]
pub struct Column {
    /// `#12`, or the tag set.
    pub label: String,
    /// The tags a chart series carries: the run's own for one run, the set for a group.
    pub tags: Tags,
    /// The runs, oldest first; never empty.
    pub runs: Vec<StoredRun>,
}

impl Column {
    /// The column as the report crate takes it.
    pub fn labeled(&self) -> LabeledRuns {
        let tags = self
            .tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // A run stored before records carried both hosts' facts has the client's beside it.
        let runs = self
            .runs
            .iter()
            .map(|r| {
                let mut record = r.record.clone();
                if record.hosts.is_none() && r.host != results::store::HostFacts::default() {
                    record.hosts = Some(results::Hosts {
                        client: r.host.clone(),
                        server: None,
                    });
                }
                record
            })
            .collect();
        LabeledRuns::new(self.label.clone(), runs).with_tags(tags)
    }
}

/// Opens the database at `location` for reading; one line when it is missing or unusable
/// (the store refuses a newer, foreign or damaged one before writing anything to it).
fn open(location: &StoreLocation) -> Result<Box<dyn ResultStore>> {
    pgstore::open(location, Access::Read).map_err(|e| anyhow!("{e}"))
}

/// Whether `run` passes `filter`.
fn passes(filter: &Filter, run: &StoredRun) -> bool {
    run.tags.contains_all(&filter.tags)
        && filter.kind.is_none_or(|k| run.record.kind == k)
        && filter
            .since_unix_ms
            .is_none_or(|s| run.record.started_at_unix_ms >= s)
}

/// The filter's flags, for a message: `--tag a=b --kind tcp_rr --since`.
fn describe(filter: &Filter) -> String {
    let mut parts: Vec<String> = filter
        .tags
        .iter()
        .map(|(k, v)| format!("--tag {k}={v}"))
        .collect();
    if let Some(k) = filter.kind {
        parts.push(format!("--kind {}", k.as_str()));
    }
    if filter.since_unix_ms.is_some() {
        parts.push("--since".into());
    }
    parts.join(" ")
}

/// One column per item, in order. Every item is parsed before the database is opened.
pub fn columns(items: &[String], filter: &Filter, db: Option<&Path>) -> Result<Vec<Column>> {
    let parsed = items
        .iter()
        .map(|s| Item::parse(s).map_err(|e| anyhow!("{e}")))
        .collect::<Result<Vec<_>>>()?;
    let mut store = open(&resolve_db(db)?)?;
    parsed
        .iter()
        .map(|i| resolve(store.as_mut(), i, filter))
        .collect()
}

/// The stored runs of `items` in order (each run once), or every stored run without items:
/// what `export --format stored` writes.
pub fn stored(items: &[String], db: Option<&Path>) -> Result<Vec<StoredRun>> {
    let parsed = items
        .iter()
        .map(|s| Item::parse(s).map_err(|e| anyhow!("{e}")))
        .collect::<Result<Vec<_>>>()?;
    let mut store = open(&resolve_db(db)?)?;
    if parsed.is_empty() {
        return store.find(&Tags::new()).map_err(|e| anyhow!("{e}"));
    }
    let mut runs: Vec<StoredRun> = Vec::new();
    for item in &parsed {
        for run in resolve(store.as_mut(), item, &Filter::default())?.runs {
            if !runs.iter().any(|r| r.id == run.id) {
                runs.push(run);
            }
        }
    }
    Ok(runs)
}

/// The runs of one item that pass `filter`.
fn resolve(store: &mut dyn ResultStore, item: &Item, filter: &Filter) -> Result<Column> {
    let label = item.label();
    let (tags, runs) = match item {
        Item::Run(id) => {
            let run = store.get(*id).map_err(|e| anyhow!("{e}"))?;
            (run.tags.clone(), vec![run])
        }
        Item::Tags(tags) => {
            let runs = store.find(tags).map_err(|e| anyhow!("{e}"))?;
            if runs.is_empty() {
                let flags: Vec<String> =
                    tags.iter().map(|(k, v)| format!("--tag {k}={v}")).collect();
                bail!(
                    "{label}: no stored run carries these tags; see `linerate runs {}`",
                    flags.join(" ")
                );
            }
            (tags.clone(), runs)
        }
    };
    let total = runs.len();
    let runs: Vec<StoredRun> = runs.into_iter().filter(|r| passes(filter, r)).collect();
    if runs.is_empty() {
        bail!(
            "{label}: none of its {total} stored run(s) matches {}",
            describe(filter)
        );
    }
    Ok(Column { label, tags, runs })
}

/// A report's columns when no items are given: every stored run that passes `filter`, one
/// column per (kind, tag set) in order of first appearance, an untagged run in a column of its
/// own; `linerate pps` cells are left out of the columns and returned apart, for the matrix.
/// Also returns where the database is, for the report's subtitle.
pub fn grouped(
    filter: &Filter,
    db: Option<&Path>,
) -> Result<(Vec<Column>, Vec<StoredRun>, StoreLocation)> {
    let path = resolve_db(db)?;
    let mut store = open(&path)?;
    let runs: Vec<StoredRun> = store
        .find(&filter.tags)
        .map_err(|e| anyhow!("{e}"))?
        .into_iter()
        .filter(|r| passes(filter, r))
        .collect();
    if runs.is_empty() {
        let which = describe(filter);
        if which.is_empty() {
            bail!("{path}: no runs stored yet");
        }
        bail!("no stored run matches {which}; `linerate runs` lists them");
    }
    let (cells, runs): (Vec<StoredRun>, Vec<StoredRun>) = runs
        .into_iter()
        .partition(|r| PpsMatrix::cell_key(r).is_some());
    // Each kind is a section of the report of its own, so the label needs no kind.
    let mut columns: Vec<Column> = Vec::new();
    let mut index: HashMap<(String, &'static str), usize> = HashMap::new();
    for run in runs {
        if run.tags.is_empty() {
            columns.push(Column {
                label: run.id.to_string(),
                tags: Tags::new(),
                runs: vec![run],
            });
            continue;
        }
        let key = (run.tags.to_string(), run.record.kind.as_str());
        match index.get(&key) {
            Some(&i) => columns[i].runs.push(run),
            None => {
                let label = key.0.clone();
                index.insert(key, columns.len());
                columns.push(Column {
                    label,
                    tags: run.tags.clone(),
                    runs: vec![run],
                });
            }
        }
    }
    Ok((columns, cells, path))
}
