//! The store survives a kill at any moment: 200 writer processes killed at random points of
//! opening, migrating and inserting; after each, `PRAGMA integrity_check` says ok and every run
//! the writer reported stored reads back whole.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use record::{HostFacts, RunId, Tags};
use results::store::Store;

use crate::common::record;

const KILLS: usize = 200;

/// Not a test on its own: the writer `kills_at_random_moments_leave_the_store_whole` kills.
/// It stores runs until killed and prints each id once its transaction has committed.
#[test]
#[ignore = "run by kills_at_random_moments_leave_the_store_whole in a child process"]
fn killed_writer() {
    let Ok(path) = std::env::var("LINERATE_TEST_STORE") else {
        return;
    };
    let mut store = Store::open(Path::new(&path)).unwrap();
    let rec = record("tcp");
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        let tags = Tags::parse([format!("i={i}")]).unwrap();
        let id = store.insert(&rec, &tags, &HostFacts::default()).unwrap();
        writeln!(out, "stored {}", id.0).unwrap();
        out.flush().unwrap();
    }
}

/// Ids the killed writer printed as stored.
fn reported(stdout: &[u8]) -> Vec<RunId> {
    stdout
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| l.strip_prefix("stored ")?.parse().ok().map(RunId))
        .collect()
}

fn integrity(path: &PathBuf) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn kills_at_random_moments_leave_the_store_whole() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let rec = record("tcp");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut all: Vec<RunId> = Vec::new();
    let mut total = 0;
    // A fresh file now and then, so that kills also land in creation and migration.
    let mut path = dir.path().join("0.sqlite");
    for kill in 0..KILLS {
        if kill % 50 == 0 {
            path = dir.path().join(format!("{kill}.sqlite"));
            all.clear();
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "kill::killed_writer",
                "--ignored",
                "--test-threads=1",
                "--nocapture",
            ])
            .env("LINERATE_TEST_STORE", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(1_000 + rng % 30_000));
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        let stored = reported(&out.stdout);
        total += stored.len();
        all.extend(stored);
        if !path.exists() {
            continue;
        }
        assert_eq!(integrity(&path), "ok", "after kill {kill}");
        let store = Store::open(&path).unwrap();
        for id in &all {
            let stored = store
                .get(*id)
                .unwrap_or_else(|e| panic!("kill {kill}: run {id:?}: {e}"));
            assert_eq!(stored.record, rec, "kill {kill}: run {id:?}");
        }
    }
    println!("{KILLS} kills; {total} runs reported stored, every one read back whole");
    assert!(total > 0, "the writers stored nothing before their kills");
}
