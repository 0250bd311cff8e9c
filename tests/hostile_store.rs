//! Issue 48, row 3's store and "one bad row": a results database holding, among good runs, one
//! row whose record is not JSON and one whose record is 64 MiB (a 24 h run stored about
//! 100 MB as one record, and reading 111 MB took 1.29 GB in `show`). `runs`, `report` and
//! `export` list the good runs and name the bad ids on stderr; `show` of either fails naming
//! it, and of the large one without reading it (its peak memory stays below the record's own
//! size).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::util::linerate_at;
use record::bounds::MAX_RECORD_BYTES;
use record::{HostFacts, RunRecord, Tags};

fn fixture(name: &str) -> RunRecord {
    let path = format!(
        "{}/crates/results/tests/fixtures/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The large record's padding: 32 MiB of bytes as 64 MiB of hex digits.
const PAD_BYTES: usize = 32 << 20;
// The padded record (hex doubles it) is over the stores' limit.
const _: () = assert!(2 * PAD_BYTES > MAX_RECORD_BYTES);

/// #1 tcp, #2 udp, #3 rr (good), #4 a record that is not JSON, #5 a tcp record with 64 MiB of
/// padding (a valid record this linerate would read, were it not over the limit); all `a=1`.
fn hostile_db(dir: &Path) -> PathBuf {
    let db = dir.join("hostile.sqlite");
    let mut store = results::store::Store::open(&db).unwrap();
    let tags = Tags::parse(["a=1"]).unwrap();
    for name in ["tcp", "udp", "rr", "tcp", "tcp"] {
        store
            .insert(&fixture(name), &tags, &HostFacts::default())
            .unwrap();
    }
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let spoil = [
        "UPDATE runs SET record_json = '{\"schema_version\": 2, \"spec\": ' WHERE id = 4"
            .to_string(),
        format!(
            "UPDATE runs SET record_json = \
             json_set(record_json, '$.pad', hex(zeroblob({PAD_BYTES}))) WHERE id = 5"
        ),
    ];
    for sql in spoil {
        assert_eq!(conn.execute(&sql, []).unwrap(), 1, "{sql}");
    }
    db
}

fn names_both(stderr: &str) {
    assert!(
        stderr.contains("linerate: skipped run #4: its stored record cannot be read"),
        "{stderr}"
    );
    assert!(
        stderr.contains("linerate: skipped run #5: its stored record is ")
            && stderr.contains("over the limit of 16777216 bytes (16 MiB)"),
        "{stderr}"
    );
}

#[test]
fn runs_report_and_export_list_the_good_runs_and_name_the_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = hostile_db(dir.path());
    let (code, out, err) = linerate_at(&db, &["runs", "--json"]);
    assert_eq!(code, 0, "{err}");
    let ids: Vec<i64> = (serde_json::from_str::<serde_json::Value>(&out).unwrap())
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3]);
    names_both(&err);
    let (code, out, err) = linerate_at(&db, &["runs"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("#3") && !out.contains("#4"), "{out}");
    names_both(&err);

    // A report of the whole store, and of a tag set: the good runs in it, the bad named.
    for items in [&[][..], &["a=1"][..]] {
        let html = dir.path().join("r.html");
        let mut args = vec!["report", "--out", html.to_str().unwrap()];
        args.extend(items);
        let (code, _, err) = linerate_at(&db, &args);
        assert_eq!(code, 0, "{items:?}: {err}");
        names_both(&err);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains("tcp_stream") && page.contains("udp_stream"),
            "{items:?}"
        );
    }
    let (code, out, err) = linerate_at(&db, &["export", "--format", "stored"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 3);
    names_both(&err);
    let (code, out, err) = linerate_at(&db, &["compare", "1", "a=1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("#1"), "{out}");
    names_both(&err);
}

/// The peak resident memory of `linerate ARGS --db DB`, KiB, as GNU time measures it (a
/// child's own `wait4` accounting: this test process's peak would leak into a child forked
/// from it, so the measured child is forked by `time`); `None` without /usr/bin/time.
fn peak_memory_kib(db: &Path, args: &[&str]) -> Option<u64> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("peak");
    let out = std::process::Command::new(time)
        .args(["-f", "%M", "-o", report.to_str().unwrap()])
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .args(args)
        .args(["--db", &db.display().to_string()])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&report).unwrap();
    Some(text.lines().last().unwrap().trim().parse().unwrap())
}

#[test]
fn show_of_a_bad_row_fails_naming_it_and_never_reads_one_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = hostile_db(dir.path());
    let (code, _, err) = linerate_at(&db, &["show", "4"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("linerate: run #4: its stored record cannot be read by this linerate: "),
        "{err}"
    );
    let (code, _, err) = linerate_at(&db, &["show", "5"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("linerate: run #5: its stored record is ")
            && err.contains("over the limit of 16777216 bytes (16 MiB) a results store reads"),
        "{err}"
    );
    // Reading the record at all holds its 64 MiB (twice: SQLite's copy and ours), and decoding
    // it about twelve times that: a peak below the record's own size means it was left unread.
    let record_kib = (2 * PAD_BYTES / 1024) as u64;
    match peak_memory_kib(&db, &["show", "5"]) {
        Some(peak_kib) => assert!(
            peak_kib < record_kib / 2,
            "show of an over-limit run peaked at {peak_kib} KiB; the record is {record_kib} KiB"
        ),
        None => super::skip::skip("no /usr/bin/time to measure show's peak memory with"),
    }
    // The good runs still show.
    let (code, out, err) = linerate_at(&db, &["show", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("udp_stream"), "{out}");
}
