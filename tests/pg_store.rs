//! The shared PostgreSQL store through the command line, against a real server the test starts
//! (`pgstore::testing`): a test run stored with `--db postgresql://…` (and `LINERATE_DB`) is
//! listed, shown, compared and reported from it; SQLite runs exported and imported into it
//! come back equal; a wrong password, a server that is not there and an unknown scheme are one
//! line each, exit 2, before any test runs.

use super::*;
use pgstore::testing::TestPg;

fn server() -> Option<TestPg> {
    TestPg::start().map_err(|why| skip(&why)).ok()
}

#[test]
fn runs_stored_in_postgresql_are_listed_shown_compared_and_reported() {
    let Some(pg) = server() else { return };
    let url = pg.create_db("cli").unwrap();
    let stored = linerate()
        .args([
            "tcp", "-t", "0.3", "-i", "0", "--db", &url, "--tag", "store=pg",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&stored.stderr);
    assert!(stored.status.success(), "{stderr}");
    assert!(
        stderr.contains("stored as #1 in postgresql://postgres:***@127.0.0.1"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(pgstore::testing::PASSWORD),
        "the password is never printed"
    );
    let rr = linerate()
        .args(["rr", "-t", "0.3", "-i", "0", "--tag", "store=pg"])
        .env("LINERATE_DB", &url)
        .output()
        .unwrap();
    assert!(
        rr.status.success(),
        "{}",
        String::from_utf8_lossy(&rr.stderr)
    );
    let runs = linerate_json(&["runs", "--db", &url, "--json", "--tag", "store=pg"]);
    let kinds: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tcp_stream", "tcp_rr"]);
    let shown = linerate_ok(&["show", "1", "--db", &url]);
    assert!(shown.contains("run #1: tcp_stream"), "{shown}");
    let cmp = linerate_ok(&["compare", "1", "2", "--db", &url]);
    assert!(cmp.contains("#1") && cmp.contains("#2"), "{cmp}");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    linerate_ok(&["report", "--db", &url, "--out", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("postgres:***@127.0.0.1") && !page.contains(pgstore::testing::PASSWORD));
}

#[test]
fn bad_databases_are_one_line_and_nothing_runs() {
    let Some(pg) = server() else { return };
    let wrong = pg
        .url("postgres")
        .replace(pgstore::testing::PASSWORD, "wrong");
    fails_in_one_line(
        &["tcp", "-t", "0.2", "--db", &wrong],
        "password authentication failed",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = format!("postgresql://u:pw@127.0.0.1:{port}/x?sslmode=disable&connect_timeout=2");
    fails_in_one_line(&["tcp", "-t", "0.2", "--db", &nowhere], "onnection refused");
    fails_in_one_line(&["runs", "--db", &nowhere], "u:***@127.0.0.1");
    fails_in_one_line(
        &["tcp", "-t", "0.2", "--db", "mysql://u@db/x"],
        "unknown database scheme",
    );
    let missing = pg.url("no_such_db");
    fails_in_one_line(&["runs", "--db", &missing], "does not exist");
}

/// `export --format stored` lines without their ids (each database numbers its own).
fn stored_lines(db: &str) -> Vec<serde_json::Value> {
    linerate_ok(&["export", "--format", "stored", "--db", db])
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("id");
            v
        })
        .collect()
}

#[test]
fn runs_exported_from_sqlite_and_imported_into_postgresql_are_equal() {
    let Some(pg) = server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("local.sqlite");
    let sqlite = sqlite.to_str().unwrap();
    linerate_ok(&[
        "tcp", "-t", "0.3", "-i", "0", "--db", sqlite, "--tag", "a=1",
    ]);
    linerate_ok(&["udp", "-t", "0.3", "-i", "0", "--db", sqlite, "-b", "10M"]);
    let file = dir.path().join("runs.jsonl");
    let file = file.to_str().unwrap();
    linerate_ok(&["export", "--format", "stored", "--db", sqlite, "-o", file]);
    let url = pg.create_db("moved").unwrap();
    let out = linerate()
        .args(["import", file, "--db", &url])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("imported 2 runs"),
        "{stderr}"
    );
    let (from, to) = (stored_lines(sqlite), stored_lines(&url));
    assert_eq!(from.len(), 2);
    assert_eq!(
        from, to,
        "records, tags, host facts and storing times all kept"
    );
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"not\": \"a run\"}\n").unwrap();
    fails_in_one_line(
        &["import", bad.to_str().unwrap(), "--db", &url],
        "bad.jsonl line 1: not a stored run",
    );
}

#[test]
fn a_newer_schema_is_one_line_and_a_server_lost_mid_test_keeps_the_run() {
    let Some(pg) = server() else { return };
    let url = pg.create_db("newer").unwrap();
    drop(pgstore::PgStore::open(&url).unwrap());
    let mut raw = pgstore::PgTarget::parse(&url).unwrap().connect().unwrap();
    raw.execute("UPDATE linerate_schema SET version = version + 1", &[])
        .unwrap();
    fails_in_one_line(&["runs", "--db", &url], "newer than this linerate supports");
    fails_in_one_line(
        &["tcp", "-t", "0.2", "--db", &url],
        "newer than this linerate supports",
    );

    // The database goes away while the test runs: the run is printed, and its record kept
    // as JSON where the error says.
    let lost = pg.create_db("lost").unwrap();
    let child = linerate()
        .args(["tcp", "-t", "2", "-i", "0", "--db", &lost])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    drop(raw);
    drop(pg);
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stdout.contains("--- summary: tcp_stream"),
        "the run is printed: {stdout}"
    );
    let kept = stderr
        .split("its record (JSON) is in ")
        .nth(1)
        .map(|rest| rest.trim().to_string())
        .unwrap_or_else(|| panic!("{stderr}"));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    assert_eq!(record["kind"], "tcp_stream");
    let _ = std::fs::remove_file(kept);
}
