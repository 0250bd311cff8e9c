//! Which stored runs a command is about: an item (`12`, `#12`, or a tag set
//! `driver=a,mtu=9000`) resolved into its runs, or every run that passes a filter grouped by
//! kind and tags (a report without items). `compare`, `check`, `trend`, `report` and `export`
//! select through here.
//!
//! Invariants: a selection is never empty (an item that matches nothing is an error naming
//! it); a run of a tag set or of the whole store that cannot be read is left out and named
//! beside the runs (`skipped`), while a run named by its id that cannot be read is an error
//! naming it; runs in a selection are oldest first; a tag-set selection is labeled with its tags in
//! key order, as `linerate runs` prints them, so a label can be pasted back as an item.

use std::collections::HashMap;

use record::{StoredRun, Tags};

use super::{BadRow, Filter, Item, Listing, ResultStore, StoreError};

/// Stored runs under one label: a column of a comparison, chart or report.
#[derive(Debug, Clone)]
pub struct Selection {
    /// `#12`, or the tag set.
    pub label: String,
    /// The tags a chart series carries: the run's own for one run, the set for a group.
    pub tags: Tags,
    /// The runs, oldest first; never empty.
    pub runs: Vec<StoredRun>,
    /// The runs of its tag set that could not be read, left out.
    pub skipped: Vec<BadRow>,
}

/// Why an item selects nothing; one line naming it and what to look at.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The store could not be read (or the run id is not stored).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A tag set no stored run carries.
    #[error("{label}: no stored run carries these tags; see `linerate runs {flags}`")]
    NoneCarry {
        /// The item.
        label: String,
        /// Its tags as `--tag K=V` flags.
        flags: String,
    },
    /// An item whose runs the filter leaves out.
    #[error("{label}: none of its {total} stored run(s) matches {flags}")]
    NoneMatch {
        /// The item.
        label: String,
        /// How many runs it has.
        total: usize,
        /// The filter as flags.
        flags: String,
    },
    /// Runs that carry the item's tags, none of which can be read.
    #[error("{label}: none of its {total} stored run(s) can be read; {first}")]
    NoneReadable {
        /// The item, or the database.
        label: String,
        /// How many it has.
        total: usize,
        /// The first of them.
        first: BadRow,
    },
    /// Nothing stored at all.
    #[error("{location}: no runs stored yet")]
    Empty {
        /// Where the database is.
        location: String,
    },
    /// Nothing stored passes the filter.
    #[error("no stored run matches {flags}; `linerate runs` lists them")]
    NoneMatchFilter {
        /// The filter as flags.
        flags: String,
    },
}

impl Filter {
    /// Whether `run` passes the filter's tags, kind and start (not `last`, which is a
    /// listing's).
    pub fn passes(&self, run: &StoredRun) -> bool {
        run.tags.contains_all(&self.tags)
            && self.kind.is_none_or(|k| run.record.kind == k)
            && self
                .since_unix_ms
                .is_none_or(|s| run.record.started_at_unix_ms >= s)
    }

    /// The filter as the flags that set it, for a message: `--tag a=b --kind tcp_rr --since`.
    pub fn flags(&self) -> String {
        let mut parts: Vec<String> = (self.tags.iter())
            .map(|(k, v)| format!("--tag {k}={v}"))
            .collect();
        if let Some(k) = self.kind {
            parts.push(format!("--kind {}", k.as_str()));
        }
        if self.since_unix_ms.is_some() {
            parts.push("--since".into());
        }
        parts.join(" ")
    }
}

/// The runs of one item that pass `filter`.
pub fn select(
    store: &mut dyn ResultStore,
    item: &Item,
    filter: &Filter,
) -> Result<Selection, SelectError> {
    let label = item.label();
    let (tags, runs, skipped) = match item {
        Item::Run(id) => {
            let run = store.get(*id)?;
            (run.tags.clone(), vec![run], vec![])
        }
        Item::Tags(tags) => {
            let Listing {
                rows: runs,
                skipped,
            } = store.find(tags)?;
            if let (true, Some(first)) = (runs.is_empty(), skipped.first()) {
                let (total, first) = (skipped.len(), first.clone());
                return Err(SelectError::NoneReadable {
                    label,
                    total,
                    first,
                });
            }
            if runs.is_empty() {
                let flags = Filter {
                    tags: tags.clone(),
                    ..Filter::default()
                };
                return Err(SelectError::NoneCarry {
                    label,
                    flags: flags.flags(),
                });
            }
            (tags.clone(), runs, skipped)
        }
    };
    let total = runs.len();
    let runs: Vec<StoredRun> = runs.into_iter().filter(|r| filter.passes(r)).collect();
    if runs.is_empty() {
        let flags = filter.flags();
        return Err(SelectError::NoneMatch {
            label,
            total,
            flags,
        });
    }
    Ok(Selection {
        label,
        tags,
        runs,
        skipped,
    })
}

/// The runs of `items` in order, each run once; every stored run without items; and the runs
/// of their tag sets that could not be read.
pub fn distinct(
    store: &mut dyn ResultStore,
    items: &[Item],
) -> Result<Listing<StoredRun>, SelectError> {
    if items.is_empty() {
        return Ok(store.find(&Tags::new())?);
    }
    let mut out: Listing<StoredRun> = Listing {
        rows: Vec::new(),
        skipped: Vec::new(),
    };
    for item in items {
        let selection = select(store, item, &Filter::default())?;
        for run in selection.runs {
            if !out.rows.iter().any(|r| r.id == run.id) {
                out.rows.push(run);
            }
        }
        for bad in selection.skipped {
            if !out.skipped.iter().any(|b| b.id == bad.id) {
                out.skipped.push(bad);
            }
        }
    }
    Ok(out)
}

/// What [`grouped`] returns.
#[derive(Debug, Clone)]
pub struct Grouped {
    /// One selection per (kind, tag set), in order of first appearance.
    pub selections: Vec<Selection>,
    /// The runs set apart.
    pub apart: Vec<StoredRun>,
    /// The runs that could not be read, left out.
    pub skipped: Vec<BadRow>,
}

/// Every stored run that passes `filter`, one selection per (kind, tag set) in order of first
/// appearance, an untagged run in a selection of its own; the runs `apart` picks (a `pps`
/// matrix's cells, say) are returned beside the selections instead, and the runs that could
/// not be read (skipped) last. Nothing stored, nothing readable, or nothing passing, is an
/// error saying which.
pub fn grouped(
    store: &mut dyn ResultStore,
    filter: &Filter,
    apart: impl Fn(&StoredRun) -> bool,
) -> Result<Grouped, SelectError> {
    let Listing { rows, skipped } = store.find(&filter.tags)?;
    if let (true, Some(first)) = (rows.is_empty(), skipped.first()) {
        return Err(SelectError::NoneReadable {
            label: store.location(),
            total: skipped.len(),
            first: first.clone(),
        });
    }
    let runs: Vec<StoredRun> = rows.into_iter().filter(|r| filter.passes(r)).collect();
    if runs.is_empty() {
        let flags = filter.flags();
        return Err(match flags.is_empty() {
            true => SelectError::Empty {
                location: store.location(),
            },
            false => SelectError::NoneMatchFilter { flags },
        });
    }
    let (set_apart, runs): (Vec<StoredRun>, Vec<StoredRun>) = runs.into_iter().partition(apart);
    let mut out: Vec<Selection> = Vec::new();
    let mut index: HashMap<(String, &'static str), usize> = HashMap::new();
    for run in runs {
        if run.tags.is_empty() {
            out.push(Selection {
                label: run.id.to_string(),
                tags: Tags::new(),
                runs: vec![run],
                skipped: vec![],
            });
            continue;
        }
        let key = (run.tags.to_string(), run.record.kind.as_str());
        match index.get(&key) {
            Some(&i) => out[i].runs.push(run),
            None => {
                index.insert(key.clone(), out.len());
                out.push(Selection {
                    label: key.0,
                    tags: run.tags.clone(),
                    runs: vec![run],
                    skipped: vec![],
                });
            }
        }
    }
    Ok(Grouped {
        selections: out,
        apart: set_apart,
        skipped,
    })
}
