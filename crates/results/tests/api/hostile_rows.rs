//! Issue 48: the store's bounds against rows nobody should have written. A record over
//! `record::bounds::MAX_RECORD_BYTES` is refused when stored and left unread when found; one
//! bad row (JSON that is not JSON, a BLOB, a column of the wrong type, an unknown kind, a newer
//! layout, over the limit) is named by id and skipped by every listing, and `get` of it fails
//! naming it, while the other runs read as before.

use std::path::{Path, PathBuf};

use record::bounds::MAX_RECORD_BYTES;
use record::{HostFacts, RunId, RunRecord, StoredRun, Tags};
use results::store::{
    distinct, grouped, read_stored, select, Filter, Item, LineError, RowFault, Store, StoreError,
};

use crate::common::{ids_of, record};

/// A tcp record whose JSON is just over the limit (by less than one interval): its intervals
/// repeated.
fn record_over_limit() -> RunRecord {
    let mut r = record("tcp");
    let one = r.intervals[0].clone();
    let base = serde_json::to_vec(&r).unwrap().len();
    let each = serde_json::to_vec(&one).unwrap().len() + 1;
    let n = (MAX_RECORD_BYTES - base) / each + 1;
    r.intervals.extend(std::iter::repeat_n(one, n));
    r
}

/// What each bad row is, by id, after the three good ones (#1 tcp, #2 udp, #3 rr, all `a=1`).
const BAD: &[(i64, &str)] = &[
    (4, "UPDATE runs SET record_json = '{\"schema_version\": 2, \"spec\": ' WHERE id = 4"),
    // Valid JSON, over the limit: 2 × (MAX / 2 + 1) hex digits.
    (
        5,
        "UPDATE runs SET record_json = '{\"pad\":\"' || hex(zeroblob(8388609)) || '\"}' WHERE id = 5",
    ),
    (6, "UPDATE runs SET record_json = zeroblob(16777217) WHERE id = 6"),
    (7, "UPDATE runs SET kind = 'tcp_warp' WHERE id = 7"),
    (8, "UPDATE runs SET started_at_unix_ms = 'yesterday' WHERE id = 8"),
    (9, "UPDATE runs SET record_schema_version = 9 WHERE id = 9"),
    (10, "UPDATE runs SET record_json = x'ff00' WHERE id = 10"),
    (11, "UPDATE runs SET host_json = 'nope' WHERE id = 11"),
];

/// Three good runs, then one run per [`BAD`] row, each spoiled by its statement.
fn hostile_store(dir: &Path) -> PathBuf {
    let path = dir.join("hostile.sqlite");
    let mut store = Store::open(&path).unwrap();
    let a = Tags::parse(["a=1"]).unwrap();
    for name in ["tcp", "udp", "rr"] {
        store
            .insert(&record(name), &a, &HostFacts::default())
            .unwrap();
    }
    for _ in BAD {
        store
            .insert(&record("tcp"), &a, &HostFacts::default())
            .unwrap();
    }
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    for (_, sql) in BAD {
        assert_eq!(conn.execute(sql, []).unwrap(), 1, "{sql}");
    }
    path
}

fn bad_ids() -> Vec<i64> {
    BAD.iter().map(|(id, _)| *id).collect()
}

#[test]
fn one_bad_row_is_named_and_skipped_never_fatal_to_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&hostile_store(dir.path())).unwrap();
    let listing = store.list(&Filter::default()).unwrap();
    let listed: Vec<i64> = listing.rows.iter().map(|r| r.id.0).collect();
    assert_eq!(listed, [1, 2, 3]);
    let mut skipped: Vec<i64> = listing.skipped.iter().map(|b| b.id.0).collect();
    // In the listing's order: #8's start, a word, sorts after every number.
    skipped.sort();
    assert_eq!(skipped, bad_ids());
    let fault = |id: i64| &listing.skipped.iter().find(|b| b.id.0 == id).unwrap().fault;
    assert!(
        matches!(fault(4), RowFault::Malformed { what: "record", .. }),
        "{:?}",
        fault(4)
    );
    // '{"pad":"', the hex digits, '"}'.
    let over = 8 + 2 * 8_388_609 + 2;
    assert_eq!(
        fault(5),
        &RowFault::TooLarge {
            what: "record",
            bytes: over
        }
    );
    let blob = (MAX_RECORD_BYTES + 1) as u64;
    assert_eq!(
        fault(6),
        &RowFault::TooLarge {
            what: "record",
            bytes: blob
        }
    );
    assert!(
        matches!(fault(7), RowFault::Column { column: "kind", .. }),
        "{:?}",
        fault(7)
    );
    assert!(
        matches!(
            fault(8),
            RowFault::Column {
                column: "started_at_unix_ms",
                ..
            }
        ),
        "{:?}",
        fault(8)
    );
    assert_eq!(fault(9), &RowFault::NewerLayout { found: 9 });
    assert!(
        matches!(fault(10), RowFault::Malformed { what: "record", .. }),
        "{:?}",
        fault(10)
    );
    assert!(
        matches!(
            fault(11),
            RowFault::Malformed {
                what: "host facts",
                ..
            }
        ),
        "{:?}",
        fault(11)
    );
    for bad in &listing.skipped {
        assert!(
            bad.to_string()
                .starts_with(&format!("run #{}: its ", bad.id.0)),
            "{bad}"
        );
    }

    // find, and the selections over it, read the same three and name the same others.
    // `find` reads whole runs: it judges their JSON, lengths and layout, and the record's
    // own kind and start stand in for the listing's columns (#7, #8).
    const UNREADABLE: [i64; 6] = [4, 5, 6, 9, 10, 11];
    let all = store.find(&Tags::new()).unwrap();
    let mut read = ids_of(&all.rows);
    read.sort();
    assert_eq!(read, [1, 2, 3, 7, 8]);
    let skipped: Vec<i64> = all.skipped.iter().map(|b| b.id.0).collect();
    assert_eq!(skipped, UNREADABLE);
    let set = select(&mut store, &Item::parse("a=1").unwrap(), &Filter::default()).unwrap();
    assert_eq!(set.runs.len(), 5);
    assert_eq!(set.skipped.len(), skipped.len());
    let groups = grouped(&mut store, &Filter::default(), |_| false).unwrap();
    assert!(groups.selections.iter().all(|g| !g.runs.is_empty()));
    assert_eq!(groups.skipped.len(), skipped.len());
    assert_eq!(
        distinct(&mut store, &[]).unwrap().skipped.len(),
        skipped.len()
    );

    // get: a good run reads; a bad one fails naming its id and what is wrong.
    assert_eq!(store.get(RunId(2)).unwrap().record, record("udp"));
    for id in UNREADABLE {
        match store.get(RunId(id)) {
            Err(StoreError::BadRow(bad)) => {
                assert_eq!(bad.id, RunId(id));
                assert!(
                    bad.to_string().starts_with(&format!("run #{id}: its ")),
                    "{bad}"
                );
            }
            other => panic!("#{id}: {other:?}"),
        }
    }
    let err = store.get(RunId(5)).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "run #5: its stored record is {over} bytes, over the limit of 16777216 bytes \
             (16 MiB) a results store reads; it was left unread"
        )
    );
    // A run named by id that cannot be read is an error naming it, not a column.
    let err = select(&mut store, &Item::parse("#4").unwrap(), &Filter::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("run #4: its stored record"),
        "{err}"
    );
}

#[test]
fn a_record_over_the_limit_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let big = record_over_limit();
    let bytes = serde_json::to_vec(&big).unwrap().len() as u64;
    assert!(bytes > MAX_RECORD_BYTES as u64);
    let err = store
        .insert(&big, &Tags::new(), &HostFacts::default())
        .unwrap_err();
    assert!(
        matches!(err, StoreError::TooLarge { what: "record", bytes: b } if b == bytes),
        "{err:?}"
    );
    let listing = store.list(&Filter::default()).unwrap();
    assert!(listing.rows.is_empty() && listing.skipped.is_empty());
    // One interval fewer fits, and reads back whole.
    let mut fits = big;
    while serde_json::to_vec(&fits).unwrap().len() > MAX_RECORD_BYTES {
        fits.intervals.pop();
    }
    let id = store
        .insert(&fits, &Tags::new(), &HostFacts::default())
        .unwrap();
    assert_eq!(store.get(id).unwrap().record, fits);
}

#[test]
fn an_imported_line_over_the_limit_is_named_by_its_line() {
    let run = |record| StoredRun {
        id: RunId(7),
        stored_at_unix_ms: 1,
        tags: Tags::new(),
        host: HostFacts::default(),
        record,
    };
    let mut file = serde_json::to_vec(&run(record("udp"))).unwrap();
    file.push(b'\n');
    serde_json::to_writer(&mut file, &run(record_over_limit())).unwrap();
    file.push(b'\n');
    let got: Vec<_> = read_stored(&file[..]).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().unwrap().record, record("udp"));
    let err = got[1].as_ref().unwrap_err();
    assert!(
        matches!(
            err,
            LineError::TooLarge {
                line: 2,
                id: RunId(7),
                what: "record",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("line 2: run #7's record is "),
        "{err}"
    );
}
