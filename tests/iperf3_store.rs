//! Stock iperf3 clients at `linerate serve`, as the server keeps them (issue 16): each finished
//! test stored in the server's database, tagged, with the receivers' counts iperf3 itself
//! prints; `--iperf3-open` at a server with keys; `--get-server-output`; a bad `--db`.

use super::iperf3::iperf3_client;
use super::*;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// `linerate ARGS` as JSON, for the store commands.
fn json(args: &[&str]) -> serde_json::Value {
    linerate_json(args)
}

/// The runs tagged `client=iperf3` in `db`, waiting until there are `n`: the server stores a
/// run once its streams have drained, which may be after the client has exited.
fn stored_runs(db: &str, n: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = json(&["runs", "--db", db, "--tag", "client=iperf3", "--json"]);
        let rows = rows.as_array().cloned().unwrap_or_default();
        if rows.len() >= n || Instant::now() > deadline {
            return rows
                .iter()
                .map(|r| {
                    let id = r["id"].as_i64().unwrap().to_string();
                    json(&["show", &id, "--db", db, "--json"])
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn iperf3_clients_runs_are_stored_with_the_receivers_counts_iperf3_prints() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.sqlite").display().to_string();
    let (_server, port) = crate::proc::serve_child(&["--db", &db]);
    let modes: [&[&str]; 4] = [
        &["-t", "1"],
        &["-t", "1", "-R"],
        &["-u", "-b", "50M", "-t", "1"],
        &["-u", "-b", "50M", "-t", "1", "-R"],
    ];
    let mut printed = Vec::new();
    for mode in modes {
        let Some((ok, v, text)) = iperf3_client(port, mode) else {
            return;
        };
        assert!(ok && v["error"].is_null(), "{mode:?}: {text}");
        printed.push(v);
    }
    let runs = stored_runs(&db, modes.len());
    assert_eq!(runs.len(), modes.len(), "every test stored");
    for ((mode, v), run) in modes.iter().zip(&printed).zip(&runs) {
        let (tags, record) = (&run["tags"], &run["record"]);
        assert_eq!(tags["client"], "iperf3", "{tags}");
        assert_eq!(tags["client_address"], "127.0.0.1", "{tags}");
        // iperf3 names itself "iperf 3.12" in its output, "3.12" in its parameters.
        let version = v["start"]["version"].as_str().unwrap_or("");
        assert_eq!(
            Some(tags["client_version"].as_str().unwrap_or("?")),
            version.strip_prefix("iperf "),
            "{tags}"
        );
        assert!(
            record["target"]
                .as_str()
                .unwrap()
                .starts_with("iperf3 client at 127.0.0.1:"),
            "{}",
            record["target"]
        );
        let end = &v["end"];
        let flows = record["summary"]["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 1, "{mode:?}");
        let f = &flows[0];
        let expected = if mode.contains(&"-R") {
            "server_to_client"
        } else {
            "client_to_server"
        };
        assert_eq!(f["flow"], expected, "{mode:?}");
        let (sent, received) = (&end["sum_sent"], &end["sum_received"]);
        eprintln!("{mode:?}: iperf3 {sent} / {received}; stored {f}");
        // Both ends' figures, as iperf3 printed them: the sender's and the receiver's bytes.
        assert_eq!(
            count(&f["bytes_received"]),
            count(&received["bytes"]),
            "{mode:?}"
        );
        assert_eq!(count(&f["bytes_sent"]), count(&sent["bytes"]), "{mode:?}");
        if mode.contains(&"-u") {
            // (A flow's datagram figures sit beside its bytes.)
            let u = f;
            let (lost, total) = (
                count(&received["lost_packets"]),
                count(&received["packets"]),
            );
            assert_eq!(
                count(&u["packets_sent"]),
                count(&sent["packets"]),
                "{mode:?}"
            );
            // The receiver's own accounting: `packets` up to its highest sequence number,
            // `lost_packets` missing below it.
            assert_eq!(count(&u["packets_received"]), total - lost, "{mode:?}: {u}");
            // What iperf3 does not count at all (sent after the receiver's last) is lost here.
            let stored_lost = count(&u["packets_lost"]);
            assert_eq!(stored_lost, count(&u["packets_sent"]) - (total - lost));
            assert!(stored_lost >= lost, "{mode:?}: {u}");
        } else {
            assert!(record["intervals"]
                .as_array()
                .is_some_and(|i| !i.is_empty()));
        }
        let hosts = &record["hosts"];
        assert!(hosts["server"]["kernel_release"].is_string(), "{hosts}");
    }
    let shown = linerate_ok(&["show", "1", "--db", &db]);
    assert!(
        shown.contains("tcp_stream to iperf3 client at 127.0.0.1:"),
        "{shown}"
    );
    assert!(shown.contains("tags      client=iperf3,"), "{shown}");
}

/// A keys file (mode 600) with one key, in `dir`.
fn keys_file(dir: &Path) -> String {
    let path = dir.join("keys");
    std::fs::write(&path, linerate_ok(&["keygen", "alice"])).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.display().to_string()
}

#[test]
fn with_keys_iperf3_clients_are_refused_unless_the_server_is_iperf3_open() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_file(dir.path());
    let db = dir.path().join("server.sqlite").display().to_string();
    let (closed, port) = crate::proc::serve_child(&["--auth-keys", &keys, "--db", &db]);
    let Some((_, v, text)) = iperf3_client(port, &["-t", "1"]) else {
        return;
    };
    assert!(
        v["error"]
            .as_str()
            .unwrap_or("")
            .contains("test authorization failed"),
        "{text}"
    );
    drop(closed);
    let (_open, port) =
        crate::proc::serve_child(&["--auth-keys", &keys, "--iperf3-open", "--db", &db]);
    let (ok, v, text) = iperf3_client(port, &["-t", "1"]).unwrap();
    assert!(ok && v["error"].is_null(), "{text}");
    assert!(count(&v["end"]["sum_received"]["bytes"]) > 0, "{text}");
    assert_eq!(
        stored_runs(&db, 1).len(),
        1,
        "the open server's run, stored"
    );
}

#[test]
fn get_server_output_prints_the_servers_lines() {
    let server = test_server();
    let port = server.addr.port().to_string();
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "-P", "2"])
        .arg("--get-server-output")
        .output();
    let Ok(out) = out else {
        return skip("iperf3 is not installed (scripts/test.sh installs it as root)");
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let server_part = text.split("Server output:").nth(1).unwrap_or("");
    assert!(server_part.contains("this server's figures"), "{text}");
    for id in ["[  1]", "[  3]", "[SUM]"] {
        assert!(
            server_part
                .lines()
                .any(|l| l.starts_with(id) && l.ends_with("receiver")),
            "{id}: {text}"
        );
    }
    // In JSON mode iperf3 puts the text in its document.
    let (ok, v, text) = iperf3_client(
        server.addr.port(),
        &["-u", "-b", "10M", "-t", "1", "--get-server-output"],
    )
    .unwrap();
    assert!(ok, "{text}");
    let lines = v["server_output_text"].as_str().unwrap_or("");
    assert!(lines.contains("Lost/Total Datagrams"), "{text}");
    assert!(lines.contains("[  1]"), "{text}");
    // A client that does not ask gets nothing of it.
    let (_, v, _) = iperf3_client(server.addr.port(), &["-t", "1"]).unwrap();
    assert!(v["server_output_text"].is_null());
}

#[test]
fn a_database_serve_cannot_open_is_one_line_before_the_port() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, b"not a database at all, just text").unwrap();
    // The port is taken: the database is refused first, so the error names it, not the port.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let junk = junk.display().to_string();
    fails_in_one_line(
        &["serve", "--bind", "127.0.0.1", "-p", &port, "--db", &junk],
        "--no-store skips storing",
    );
    let not_dir = format!("{junk}/runs.sqlite");
    fails_in_one_line(
        &[
            "serve",
            "--bind",
            "127.0.0.1",
            "-p",
            &port,
            "--db",
            &not_dir,
        ],
        &junk,
    );
    // Without a database, the port is the error.
    fails_in_one_line(
        &["serve", "--bind", "127.0.0.1", "-p", &port, "--no-store"],
        "cannot listen on port",
    );
}
