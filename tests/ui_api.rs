//! `linerate ui`'s API (docs/API.md) through the binary, on loopback: a test started with
//! `POST /api/tests` (a child process of the binary) streams its intervals and summary as
//! Server-Sent Events and is stored; sweeps and repetitions stream their points; a stopped
//! test, or one running when the UI is interrupted, keeps its partial run; stored runs are
//! compared and reported; bad requests are 400s that say why; two UIs share a database; the
//! key and the loopback rule hold.
//!
//! The HTTP client is a few lines over `TcpStream` (HTTP/1.0, so every body, the event stream
//! too, ends when the connection closes).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// A running `linerate ui`, killed when dropped.
pub(crate) struct Ui {
    child: Child,
    pub(crate) addr: String,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ui {
    /// `linerate ui --listen 127.0.0.1:0 --db DB [extra]`, once it has printed its URL.
    pub(crate) fn start(db: &std::path::Path, extra: &[&str]) -> Ui {
        Ui::start_with(db, extra, |_| {})
    }

    /// [`Ui::start`], with `setup` given the command before it is spawned.
    pub(crate) fn start_with(
        db: &std::path::Path,
        extra: &[&str],
        setup: impl FnOnce(&mut Command),
    ) -> Ui {
        let mut command = Command::new(env!("CARGO_BIN_EXE_linerate"));
        command
            .args(["ui", "--listen", "127.0.0.1:0", "--db"])
            .arg(db)
            .args(extra);
        setup(&mut command);
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no URL printed: {line:?}"))
            .to_string();
        Ui {
            child,
            addr,
            _dir: None,
        }
    }

    /// The UI's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A UI over a new, empty database of its own.
    pub(crate) fn fresh() -> Ui {
        let dir = tempfile::tempdir().unwrap();
        let mut ui = Ui::start(&dir.path().join("runs.sqlite"), &[]);
        ui._dir = Some(dir);
        ui
    }

    /// One request; the status, the headers and the body.
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[&str],
        body: &str,
    ) -> (u16, String, String) {
        let mut conn = TcpStream::connect(&self.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {}\r\n", self.addr);
        for h in headers {
            head.push_str(&format!("{h}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        conn.write_all(head.as_bytes()).unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, head.to_string(), body.to_string())
    }

    pub(crate) fn get_json(&self, path: &str) -> Value {
        let (status, _, body) = self.call("GET", path, &[], "");
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// `POST /api/tests`: the status and the JSON answer.
    pub(crate) fn post_test(&self, json: &str) -> (u16, Value) {
        let (status, _, body) = self.call(
            "POST",
            "/api/tests",
            &["Content-Type: application/json"],
            json,
        );
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    pub(crate) fn start_test(&self, json: &str) -> u64 {
        let (status, answer) = self.post_test(json);
        assert_eq!(status, 201, "{answer}");
        answer["id"].as_u64().unwrap()
    }

    /// The test's event stream to its end, as (event name, data) pairs.
    pub(crate) fn events(&self, id: u64) -> Vec<(String, Value)> {
        let (status, _, body) = self.call("GET", &format!("/api/tests/{id}/events"), &[], "");
        assert_eq!(status, 200, "{body}");
        let mut events = Vec::new();
        for block in body.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let mut name = "message".to_string();
            let mut data = None;
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(d).unwrap());
                }
            }
            if let Some(data) = data {
                events.push((name, data));
            }
        }
        events
    }
}

/// Waits until test `id` has its first interval.
fn wait_interval(ui: &Ui, id: u64) {
    let started = std::time::Instant::now();
    while ui.get_json(&format!("/api/tests/{id}"))["intervals"] == 0 {
        assert!(started.elapsed() < Duration::from_secs(8), "no interval");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn a_test_from_the_api_streams_its_intervals_then_its_summary_and_is_stored() {
    let ui = Ui::fresh();
    let id = ui.start_test(r#"{"kind":"tcp","time":2,"tags":{"case":"stream"}}"#);
    let events = ui.events(id);
    let n = names(&events);
    assert_eq!(n.first(), Some(&"started"), "{n:?}");
    assert_eq!(n.last(), Some(&"summary"), "{n:?}");
    let intervals: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "message")
        .map(|(_, d)| d)
        .collect();
    assert!(!intervals.is_empty(), "{n:?}");
    assert!(intervals[0]["flows"][0]["throughput_bps"].as_f64().unwrap() > 0.0);
    let summary = &events.last().unwrap().1;
    assert_eq!(summary["interrupted"], false);
    let run_id = summary["run_id"].as_i64().unwrap();

    let runs = ui.get_json("/api/runs?tag=case=stream&kind=tcp_stream");
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["id"], run_id);
    assert_eq!(runs[0]["tags"]["source"], "ui");
    let run = ui.get_json(&format!("/api/runs/{run_id}"));
    assert_eq!(run["record"]["kind"], "tcp_stream");
    assert_eq!(run["tags"]["case"], "stream");
    // As `linerate show` prints it, plain text; an unknown run is a 404 there too.
    let (status, _, text) = ui.call("GET", &format!("/api/runs/{run_id}/text"), &[], "");
    assert_eq!(status, 200, "{text}");
    assert!(
        text.starts_with(&format!("run #{run_id}: tcp_stream")),
        "{text}"
    );
    assert!(text.contains("\ncongestion "), "{text}");
    let (status, _, text) = ui.call("GET", "/api/runs/999/text", &[], "");
    assert_eq!(status, 404, "{text}");
    // Not a run id at all: a 400 that says so.
    let (status, _, text) = ui.call("GET", "/api/runs/twelve/text", &[], "");
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("twelve"), "{text}");

    // A reader that comes after the end is told it all again.
    assert_eq!(names(&ui.events(id)), n);
    assert_eq!(
        ui.get_json(&format!("/api/tests/{id}"))["state"],
        "finished"
    );
}

#[test]
fn a_stopped_test_keeps_its_partial_run() {
    let ui = Ui::fresh();
    let id = ui.start_test(r#"{"kind":"udp","host":"","time":10,"rate":"10M","parallel":2}"#);
    // Stop once the first interval is in.
    let started = std::time::Instant::now();
    while ui.get_json(&format!("/api/tests/{id}"))["intervals"] == 0 {
        assert!(started.elapsed() < Duration::from_secs(8), "no interval");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, _, body) = ui.call("POST", &format!("/api/tests/{id}/stop"), &[], "");
    assert_eq!(status, 202, "{body}");
    let events = ui.events(id);
    let summary = &events.last().unwrap().1;
    assert_eq!(events.last().unwrap().0, "summary", "{events:?}");
    assert_eq!(summary["interrupted"], true);
    assert!(started.elapsed() < Duration::from_secs(8));
    let run = ui.get_json(&format!("/api/runs/{}", summary["run_id"]));
    assert_eq!(run["record"]["summary"]["interrupted"], true);
    assert!(run["record"]["summary"]["duration_s"].as_f64().unwrap() < 8.0);
}

#[test]
fn bad_requests_are_400s_that_say_why() {
    let ui = Ui::fresh();
    let cases = [
        (r#"{"kind":"tcp","#, "not JSON"),
        (
            r#"{"kind":"tcp","bogus":1}"#,
            "unexpected argument '--bogus'",
        ),
        (r#"{"kind":"tcp","time":"x"}"#, "--time"),
        (r#"{"kind":"sweep"}"#, "kind sweep"),
        (r#"{"kind":"tcp","db":"/tmp/x"}"#, "db: "),
        (r#"{"kind":"tcp","json_stream":true}"#, "json_stream: "),
        (
            r#"{"args":["runs","--json"]}"#,
            "runs: not a measuring command",
        ),
        (
            r#"{"args":["sweep","streams","--values","1","--","tcp","--no-store"]}"#,
            "--no-store",
        ),
        (r#"{"args":["tcp","--time"]}"#, "--time"),
        // The command's own checks, before the test has an id.
        (
            r#"{"kind":"tcp","congestion":"nosuchcc","time":1}"#,
            "nosuchcc",
        ),
        // A server that is not there (no name to resolve, so no DNS to wait for).
        (
            r#"{"kind":"tcp","host":"127.0.0.1:1","time":1}"#,
            "cannot connect to 127.0.0.1:1",
        ),
    ];
    for (json, needle) in cases {
        let (status, answer) = ui.post_test(json);
        assert_eq!(status, 400, "{json}: {answer}");
        let message = answer["error"].as_str().unwrap();
        assert!(message.contains(needle), "{json}: {message}");
    }
    let (status, _, _) = ui.call("POST", "/api/tests", &[], r#"{"kind":"tcp"}"#);
    assert_eq!(status, 415);
    let (status, _, body) = ui.call("GET", "/api/runs?kind=nope", &[], "");
    assert_eq!(status, 400, "{body}");
    let (status, _, _) = ui.call("GET", "/api/tests/99/events", &[], "");
    assert_eq!(status, 404);
    let (status, _, body) = ui.call("GET", "/api/tests/abc", &[], "");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(r#"test id \"abc\""#), "{body}");
    // Another site's page, even without an Origin header, cannot start or stop tests; no
    // other site may frame the page.
    let (status, head, _) = ui.call(
        "POST",
        "/api/tests/1/stop",
        &["Sec-Fetch-Site: cross-site"],
        "",
    );
    assert_eq!(status, 403, "{head}");
    let (_, head, _) = ui.call("GET", "/", &[], "");
    assert!(
        head.to_ascii_lowercase().contains("x-frame-options: deny"),
        "{head}"
    );
    assert_eq!(ui.get_json("/api/runs"), serde_json::json!([]));
}

/// `GET /api/record-kinds`: the kinds a stored run may be of, the kind table's, each with its
/// family of figures (the page's filters and charts: a `tcp_cc` run charts as transactions).
#[test]
fn the_stored_kinds_are_the_kind_tables_with_their_families() {
    let ui = Ui::fresh();
    let kinds = ui.get_json("/api/record-kinds");
    let names: Vec<&str> = (kinds.as_array().unwrap().iter())
        .filter_map(|k| k["kind"].as_str())
        .collect();
    let table: Vec<&str> = wire::spec::KINDS.iter().map(|r| r.name).collect();
    assert_eq!(names, table);
    assert!(kinds
        .as_array()
        .unwrap()
        .contains(&json!({"kind": "tcp_cc", "family": "transaction"})));
    assert!(kinds
        .as_array()
        .unwrap()
        .contains(&json!({"kind": "udp_stream", "family": "datagram"})));
}

#[test]
fn a_request_without_a_host_header_is_refused() {
    let ui = Ui::fresh();
    let mut conn = TcpStream::connect(&ui.addr).unwrap();
    conn.write_all(b"GET /api/runs HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    assert!(
        text.starts_with("HTTP/1.0 403") || text.starts_with("HTTP/1.1 403"),
        "{text}"
    );
    assert!(text.contains("without a Host header"), "{text}");
}

#[test]
fn two_uis_on_one_database_both_see_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let (a, b) = (Ui::start(&db, &[]), Ui::start(&db, &[]));
    let id = a.start_test(r#"{"kind":"rr","time":1}"#);
    let run_id = a.events(id).last().unwrap().1["run_id"].clone();
    let id = b.start_test(r#"{"kind":"tcp","time":1}"#);
    let other = b.events(id).last().unwrap().1["run_id"].clone();
    for ui in [&a, &b] {
        let ids: Vec<Value> = ui
            .get_json("/api/runs")
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect();
        assert_eq!(ids, [run_id.clone(), other.clone()]);
    }
}

#[test]
fn the_ui_stays_on_loopback_unless_it_has_a_key_and_then_asks_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["ui", "--listen", "0.0.0.0:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("--ui-key"),
        "{err}"
    );

    let key_file = dir.path().join("ui.key");
    std::fs::write(&key_file, "s3cret-s3cret-s3cret\n").unwrap();
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let ui = Ui::start(&db, &["--ui-key", key_file.to_str().unwrap()]);
    let (status, _, body) = ui.call("GET", "/api/runs", &[], "");
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("key"), "{body}");
    let (status, head, _) = ui.call("GET", "/?key=s3cret-s3cret-s3cret", &[], "");
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("set-cookie: linerate_ui_key=s3cret-s3cret-s3cret"),
        "{head}"
    );
    let (status, _, _) = ui.call(
        "GET",
        "/api/runs",
        &["Cookie: linerate_ui_key=s3cret-s3cret-s3cret"],
        "",
    );
    assert_eq!(status, 200);
    let (status, _, _) = ui.call(
        "GET",
        "/api/runs",
        &["Authorization: Bearer s3cret-s3cret-s3cret"],
        "",
    );
    assert_eq!(status, 200);
    let (status, _, _) = ui.call(
        "GET",
        "/api/runs",
        &["Authorization: Bearer wrong-wrong-wrong-x"],
        "",
    );
    assert_eq!(status, 401);
}

#[test]
fn a_sweep_streams_its_points_and_ends_with_its_runs() {
    let ui = Ui::fresh();
    let id = ui.start_test(
        r#"{"args":["sweep","streams","--values","1,2","--","tcp","-t","1"],"tags":{"case":"sweep"}}"#,
    );
    let events = ui.events(id);
    let n = names(&events);
    assert_eq!(n.first(), Some(&"begin"), "{n:?}");
    assert_eq!(n.iter().filter(|n| **n == "point").count(), 2, "{n:?}");
    assert_eq!(n.last(), Some(&"summary"), "{n:?}");
    let points: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "point")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        (points[0]["id"].as_u64(), &points[1]["index"]),
        (Some(id), &Value::from(1))
    );
    let summary = &events.last().unwrap().1;
    assert_eq!(summary["interrupted"], false);
    let run_ids = summary["run_ids"].as_array().unwrap().clone();
    assert_eq!(run_ids.len(), 2, "{summary}");
    assert_eq!(
        summary["document"]["points"].as_array().map(Vec::len),
        Some(2)
    );
    let stored: Vec<Value> = ui
        .get_json("/api/runs?tag=case=sweep&tag=source=ui")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(stored, run_ids);
    let status = ui.get_json(&format!("/api/tests/{id}"));
    assert_eq!(
        (&status["state"], &status["points"]),
        (&"finished".into(), &2.into())
    );
    assert_eq!(status["run_ids"], Value::Array(run_ids));
}

#[test]
fn repetitions_run_and_their_runs_compare_and_report() {
    let ui = Ui::fresh();
    let id = ui.start_test(r#"{"kind":"tcp","time":1,"repeat":2}"#);
    let events = ui.events(id);
    let n = names(&events);
    assert_eq!(n.iter().filter(|n| **n == "point").count(), 2, "{n:?}");
    let summary = &events.last().unwrap().1;
    assert_eq!(n.last(), Some(&"summary"), "{n:?}");
    let ids: Vec<String> = summary["run_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{summary}");

    let compared = ui.get_json(&format!("/api/compare?runs={}", ids.join(",")));
    assert_eq!(
        compared["columns"].as_array().map(Vec::len),
        Some(2),
        "{compared}"
    );
    let (status, head, body) = ui.call(
        "GET",
        &format!("/api/report?runs={}&runs=%23{}", ids[0], ids[1]),
        &[],
        "",
    );
    assert_eq!(status, 200, "{body}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("content-disposition: attachment; filename=\"linerate-report.html\""),
        "{head}"
    );
    assert!(
        body.to_ascii_lowercase().contains("<html"),
        "{}",
        &body[..200.min(body.len())]
    );

    let (status, _, body) = ui.call("GET", "/api/compare?runs=12;rm", &[], "");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("neither a run id"), "{body}");
    let (status, _, body) = ui.call("GET", "/api/compare?runs=999,998", &[], "");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("999"), "{body}");
}

#[test]
fn a_stopped_tcp_test_ends_in_a_summary_and_is_stored() {
    let ui = Ui::fresh();
    let id = ui.start_test(r#"{"kind":"tcp","time":30}"#);
    wait_interval(&ui, id);
    let stopped = std::time::Instant::now();
    let (status, _, body) = ui.call("POST", &format!("/api/tests/{id}/stop"), &[], "");
    assert_eq!(status, 202, "{body}");
    assert!(body.contains(r#""state":"stopping""#), "{body}");
    let events = ui.events(id);
    assert!(stopped.elapsed() < Duration::from_secs(5));
    let (name, summary) = events.last().unwrap();
    assert_eq!(name, "summary", "{events:?}");
    assert_eq!(summary["interrupted"], true);
    let run = ui.get_json(&format!("/api/runs/{}", summary["run_id"]));
    assert_eq!(run["record"]["summary"]["interrupted"], true);
}

#[test]
fn an_interrupted_ui_stops_its_tests_and_they_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let mut ui = ui_running_a_test(&db);
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(ui.child.id() as libc::pid_t, libc::SIGINT) };
    let stopped = std::time::Instant::now();
    while ui.child.try_wait().unwrap().is_none() {
        assert!(
            stopped.elapsed() < Duration::from_secs(10),
            "the UI did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_one_interrupted_run(&db);
}

#[test]
fn a_killed_ui_leaves_no_test_running_and_the_test_stores_its_partial_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let mut ui = ui_running_a_test(&db);
    // The UI's children: the test (its own process group) is one of them.
    let children = crate::sh(&format!("ps -o pid= --ppid {}", ui.child.id()));
    let test_pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    ui.child.kill().unwrap();
    ui.child.wait().unwrap();
    let killed = std::time::Instant::now();
    // SAFETY: kill(2) with signal 0 only asks whether the process exists.
    while unsafe { libc::kill(test_pid, 0) } == 0 {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "the test outlived its UI by 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_one_interrupted_run(&db);
}

/// A UI on `db` with a 30 s TCP test that has sent its first interval.
fn ui_running_a_test(db: &std::path::Path) -> Ui {
    let ui = Ui::start(db, &[]);
    let id = ui.start_test(r#"{"kind":"tcp","time":30}"#);
    wait_interval(&ui, id);
    ui
}

/// `db` holds one run, marked interrupted (a test stopped early stored what ran).
fn assert_one_interrupted_run(db: &std::path::Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["runs", "--json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["interrupted"], true);
}
