//! The results database through the binary: every run stored with its tags, listed, shown,
//! and the bad input the issue names refused in one line with exit 2.

use super::*;

fn db_in(dir: &std::path::Path) -> String {
    dir.join("runs.sqlite").display().to_string()
}

#[test]
fn runs_are_stored_tagged_listed_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    let db = db.as_str();
    linerate_ok(&[
        "tcp", "-t", "0.3", "-i", "0", "--db", db, "--tag", "driver=a", "--tag", "mtu=1500",
    ]);
    linerate_ok(&[
        "rr", "-t", "0.3", "-i", "0", "--db", db, "--tag", "driver=b",
    ]);
    linerate_ok(&["tcp", "-t", "0.3", "-i", "0", "--db", db, "--no-store"]);
    let all: serde_json::Value =
        serde_json::from_str(&linerate_ok(&["runs", "--db", db, "--json"])).unwrap();
    let rows = all.as_array().unwrap();
    assert_eq!(rows.len(), 2, "--no-store stored nothing: {all}");
    let a: serde_json::Value = serde_json::from_str(&linerate_ok(&[
        "runs", "--db", db, "--tag", "driver=a", "--json",
    ]))
    .unwrap();
    assert_eq!(a.as_array().unwrap().len(), 1);
    assert_eq!(a[0]["kind"], "tcp_stream");
    let id = a[0]["id"].as_i64().unwrap().to_string();
    let shown: serde_json::Value =
        serde_json::from_str(&linerate_ok(&["show", &id, "--db", db, "--json"])).unwrap();
    assert_eq!(shown["record"]["kind"], "tcp_stream");
    assert!(shown["record"]["intervals"]
        .as_array()
        .is_some_and(|i| !i.is_empty()));
    assert!(
        shown["host"]["kernel_release"].is_string(),
        "{}",
        shown["host"]
    );
    let rr = linerate_ok(&["runs", "--db", db, "--kind", "tcp_rr"]);
    assert!(rr.contains("driver=b"), "{rr}");
    let csv = linerate_ok(&["runs", "--db", db, "--csv"]);
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

#[test]
fn bad_store_input_is_refused_and_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    fails_in_one_line(
        &["tcp", "-t", "0.2", "--db", &db, "--tag", "mtu"],
        "--tag mtu",
    );
    fails_in_one_line(&["show", "999", "--db", &db], "999");
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, b"not a database at all, just text").unwrap();
    let before = std::fs::read(&junk).unwrap();
    fails_in_one_line(
        &["tcp", "-t", "0.2", "--db", &junk.display().to_string()],
        "junk.sqlite",
    );
    assert_eq!(std::fs::read(&junk).unwrap(), before, "left as it was");
}

/// Issue 13: a live row that cannot be written (stdout on /dev/full: ENOSPC) is an error, exit
/// 2 naming it, and comes after the run was stored; a broken pipe alone still exits 0.
#[test]
fn failed_live_output_is_an_error_after_the_run_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    let full = std::fs::File::create("/dev/full").unwrap();
    let out = linerate()
        .args(["tcp", "-t", "1", "--db", &db])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("linerate: writing the live rows to stdout: No space left on device"),
        "{stderr}"
    );
    let stored = stderr.find("stored as").expect("stored");
    assert!(
        stored < stderr.find("writing the live rows").unwrap(),
        "{stderr}"
    );
    // A reader that went away (`| head`): stored, exit 0, nothing said.
    let mut child = linerate()
        .args(["tcp", "-t", "0.3", "--db", &db])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("writing"), "{stderr}");
    let runs = linerate_json(&["runs", "--db", &db, "--json"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(2), "{runs}");
}
