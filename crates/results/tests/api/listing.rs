//! What `linerate runs` lists of each stored run besides its figures: direction, streams and
//! how it ended, read from the stored record (of either layout), and the newest N.

use record::{HostFacts, RunId, Tags};
use results::store::{Filter, Store};
use wire::TestKind;

use crate::common::{fixture_dir, listed_ids as ids, record};

/// `linerate runs` tells runs apart by direction, streams and how they ended: each read from
/// the stored record, whatever it was stored with.
#[test]
fn a_listed_row_says_direction_streams_and_how_the_run_ended() {
    use record::RunStatus;
    use wire::spec::Direction;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let tcp = |direction: Direction, streams: u16| {
        let mut r = record("tcp");
        r.spec.stream_mut().unwrap().direction = direction;
        r.spec.streams = streams;
        r
    };
    let mut interrupted = tcp(Direction::Send, 1);
    interrupted.summary.interrupted = true;
    let mut incomplete = tcp(Direction::Send, 1);
    incomplete.summary.incomplete = Some("the server went away".into());
    incomplete.summary.interrupted = true;
    let mut failed = tcp(Direction::Send, 1);
    failed.summary.flows[0].streams[0].error = Some("client: connection reset".into());
    // `-t 0` stopped by Ctrl-C: its planned end.
    let mut until_stopped = interrupted.clone();
    until_stopped.summary.until_stopped = true;
    let runs = [
        (
            tcp(Direction::Send, 1),
            Some(Direction::Send),
            1,
            RunStatus::Ok,
        ),
        (
            tcp(Direction::Reverse, 1),
            Some(Direction::Reverse),
            1,
            RunStatus::Ok,
        ),
        (
            tcp(Direction::Bidir, 2),
            Some(Direction::Bidir),
            2,
            RunStatus::Ok,
        ),
        (record("udp"), Some(Direction::Send), 1, RunStatus::Ok),
        (record("rr"), None, 1, RunStatus::Ok),
        (
            interrupted,
            Some(Direction::Send),
            1,
            RunStatus::Interrupted,
        ),
        (until_stopped, Some(Direction::Send), 1, RunStatus::Ok),
        (incomplete, Some(Direction::Send), 1, RunStatus::Incomplete),
        (failed, Some(Direction::Send), 1, RunStatus::Error),
    ];
    for (i, (r, ..)) in runs.iter().enumerate() {
        let mut r = r.clone();
        r.started_at_unix_ms = 1_000 + i as u64;
        store
            .insert(&r, &Tags::new(), &HostFacts::default())
            .unwrap();
    }
    let rows = store.list(&Filter::default()).unwrap().rows;
    assert_eq!(rows.len(), runs.len());
    for (row, (r, direction, streams, status)) in rows.iter().zip(&runs) {
        assert_eq!(row.direction, *direction, "{}", row.id);
        assert_eq!(row.streams, *streams, "{}", row.id);
        assert_eq!(row.status, *status, "{}", row.id);
        assert_eq!(RunStatus::of(r), *status, "the record and the row agree");
    }
    // The newest three, still oldest first; with a kind, the newest of that kind.
    let last = |n, kind| {
        ids(
            &store,
            Filter {
                last: Some(n),
                kind,
                ..Filter::default()
            },
        )
    };
    assert_eq!(last(3, None), vec![RunId(7), RunId(8), RunId(9)]);
    assert_eq!(last(2, Some(TestKind::UdpStream)), vec![RunId(4)]);
    assert_eq!(last(100, None).len(), runs.len());
    assert_eq!(last(0, None), vec![]);
}

/// A store written by the first release: every row reads with a direction and stream count
/// from its layout-1 spec.
#[test]
fn rows_of_the_first_store_version_read_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite");
    std::fs::copy(fixture_dir().join("store-v1.sqlite"), &path).unwrap();
    let store = Store::open(&path).unwrap();
    let rows = store.list(&Filter::default()).unwrap().rows;
    assert!(!rows.is_empty());
    for row in &rows {
        assert!(row.streams >= 1, "{row:?}");
        let stream_kind = matches!(row.kind, TestKind::TcpStream | TestKind::UdpStream);
        assert_eq!(row.direction.is_some(), stream_kind, "{row:?}");
    }
}
