//! What the store's tests share: the fixture records and the ids a listing or a selection holds.

use std::path::{Path, PathBuf};

use record::{RunId, RunRecord, StoredRun};
use results::store::{Filter, Store};

/// The fixture directory (records captured from `linerate tcp|udp|rr --json`, old stores).
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The fixture run record `name` (`tcp`, `udp`, `rr`, …).
pub fn record(name: &str) -> RunRecord {
    let text = std::fs::read_to_string(fixture_dir().join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The ids `store` lists for `filter`, in listing order.
pub fn listed_ids(store: &Store, filter: Filter) -> Vec<RunId> {
    store
        .list(&filter)
        .unwrap()
        .rows
        .iter()
        .map(|r| r.id)
        .collect()
}

/// The ids of `runs`, in their order.
pub fn ids_of(runs: &[StoredRun]) -> Vec<i64> {
    runs.iter().map(|r| r.id.0).collect()
}
