//! Which runs an item selects: a run id, a tag set, or (for a report without items) every run
//! grouped by kind and tags; and the errors that name an item selecting nothing.

use std::path::Path;

use record::{HostFacts, RunId, Tags};
use results::store::{distinct, grouped, select, Filter, Item, ResultStore, Store};
use wire::TestKind;

use crate::common::{ids_of as ids, record};

/// A store of, in order of start: #1 tcp a=1, #2 rr a=1, #3 tcp a=1, #4 tcp untagged, #5 tcp
/// a=2.
fn store(dir: &Path) -> Store {
    let mut store = Store::open(&dir.join("r.sqlite")).unwrap();
    let tags = |s: &str| match s {
        "" => Tags::new(),
        s => Tags::parse([s]).unwrap(),
    };
    let runs = [
        ("tcp", "a=1"),
        ("rr", "a=1"),
        ("tcp", "a=1"),
        ("tcp", ""),
        ("tcp", "a=2"),
    ];
    for (i, (kind, tag)) in runs.into_iter().enumerate() {
        let mut r = record(kind);
        // Started in the order stored, a second apart.
        r.started_at_unix_ms = 1_700_000_000_000 + i as u64 * 1000;
        store.insert(&r, &tags(tag), &HostFacts::default()).unwrap();
    }
    store
}

#[test]
fn an_item_selects_its_run_or_the_runs_carrying_its_tags_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    let all = Filter::default();
    let set = select(&mut store, &Item::parse("a=1").unwrap(), &all).unwrap();
    assert_eq!((set.label.as_str(), ids(&set.runs)), ("a=1", vec![1, 2, 3]));
    let one = select(&mut store, &Item::parse("#4").unwrap(), &all).unwrap();
    assert_eq!((one.label.as_str(), ids(&one.runs)), ("#4", vec![4]));
    let tcp = Filter {
        kind: Some(TestKind::TcpStream),
        ..Filter::default()
    };
    let set = select(&mut store, &Item::parse("a=1").unwrap(), &tcp).unwrap();
    assert_eq!(ids(&set.runs), vec![1, 3]);
    let items = [Item::parse("a=1").unwrap(), Item::Run(RunId(3))];
    assert_eq!(
        ids(&distinct(&mut store, &items).unwrap().rows),
        vec![1, 2, 3]
    );
    assert_eq!(ids(&distinct(&mut store, &[]).unwrap().rows).len(), 5);
}

#[test]
fn an_item_that_selects_nothing_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    let err = select(&mut store, &Item::parse("a=9").unwrap(), &Filter::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "a=9: no stored run carries these tags; see `linerate runs --tag a=9`"
    );
    let udp = Filter {
        kind: Some(TestKind::UdpStream),
        ..Filter::default()
    };
    let err = select(&mut store, &Item::parse("a=1").unwrap(), &udp)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "a=1: none of its 3 stored run(s) matches --kind udp_stream"
    );
    let err = grouped(&mut store, &udp, |_| false)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("no stored run matches --kind udp_stream"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let mut bare = Store::open(&empty.path().join("e.sqlite")).unwrap();
    let err = grouped(&mut bare, &Filter::default(), |_| false)
        .unwrap_err()
        .to_string();
    assert!(err.ends_with("e.sqlite: no runs stored yet"), "{err}");
    assert!(bare.location().ends_with("e.sqlite"));
}

#[test]
fn without_items_runs_group_by_kind_and_tags_and_the_ones_set_apart_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    let results::store::Grouped {
        selections: groups,
        apart,
        ..
    } = grouped(&mut store, &Filter::default(), |r| r.id.0 == 5).unwrap();
    let got: Vec<(String, Vec<i64>)> = groups
        .iter()
        .map(|g| (g.label.clone(), ids(&g.runs)))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a=1".to_string(), vec![1, 3]),
            ("a=1".to_string(), vec![2]),
            ("#4".to_string(), vec![4]),
        ]
    );
    assert_eq!(ids(&apart), vec![5]);
}
