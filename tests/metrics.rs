//! `serve --metrics`: the OpenMetrics endpoint parses with the Prometheus project's own parser
//! (`prometheus_client`, Python), its classic text format passes `promtool check metrics`, and
//! its counters match the tests that ran against the server:
//! tests started by kind, one refused over a limit, bytes and datagrams the server moved.

use super::*;
use std::process::Stdio;

/// The Accept header Prometheus (2.x) sends with every scrape.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,\
    application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// GET `path` from `addr` as Prometheus asks for it (OpenMetrics); the whole answer.
fn get(addr: &str, path: &str) -> String {
    get_as(addr, path, Some(PROMETHEUS_ACCEPT))
}

/// GET `path` from `addr` with `accept` as its Accept header (`None`: no header, as curl).
fn get_as(addr: &str, path: &str, accept: Option<&str>) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\n{accept}\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    text
}

/// `promtool check metrics` on `body` (classic text format): `Ok` when clean, `Err(what it said)` otherwise;
/// `None` (a skip) where promtool is not installed (Debian's `prometheus` package, which
/// scripts/test.sh installs).
fn promtool(body: &str) -> Option<Result<(), String>> {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        skip(
            "promtool is not installed (Debian's prometheus package; scripts/test.sh installs it)",
        );
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(if out.status.success() && said.trim().is_empty() {
        Ok(())
    } else {
        Err(said)
    })
}

/// The samples of an OpenMetrics text as `name{labels} value` lines, sorted, as
/// `prometheus_client`'s OpenMetrics parser reads them (it refuses text that is not valid).
fn parsed(text: &str) -> Result<Vec<String>, String> {
    let script = "import sys\n\
        from prometheus_client.openmetrics.parser import text_string_to_metric_families as p\n\
        out = []\n\
        for f in p(sys.stdin.read()):\n\
        \x20   for s in f.samples:\n\
        \x20       labels = ','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))\n\
        \x20       v = int(s.value) if float(s.value).is_integer() else s.value\n\
        \x20       out.append(f'{s.name}{{{labels}}} {v}')\n\
        print('\\n'.join(sorted(out)))\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3: {e}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect())
}

fn has_parser() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import prometheus_client.openmetrics.parser"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("python3 with prometheus_client is not installed (scripts/test.sh installs it)");
    }
    ok
}

#[test]
fn metrics_parse_as_openmetrics_and_count_the_tests_that_ran() {
    if !has_parser() {
        return;
    }
    // Both ports chosen while both are held: a port freed at once can be handed out again,
    // and the server would then find its two ports the same.
    let held = [(); 2].map(|()| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    let [port, mport] = held.each_ref().map(|l| l.local_addr().unwrap().port());
    drop(held);
    let metrics = format!("127.0.0.1:{mport}");
    let _server = ServerProcess(
        linerate()
            .args([
                "serve",
                "-B",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "--no-store",
            ])
            .args(["--max-streams", "2", "--metrics", &metrics])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening("", port);
    let port = port.to_string();
    let run = |kind: &str, args: &[&str]| {
        let mut all = vec![
            kind,
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "0.3",
            "--no-store",
            "--json",
        ];
        all.extend(args);
        linerate_json(&all)
    };
    let tcp = [run("tcp", &[]), run("tcp", &["-P", "2"])];
    let udp = run("udp", &["-b", "20M"]);
    let refused = linerate()
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port,
            "-P",
            "4",
            "-t",
            "0.3",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let received = |v: &serde_json::Value| {
        v["summary"]["flows"][0]["bytes_received_after_drain"]
            .as_u64()
            .unwrap()
    };
    let tcp_bytes: u64 = tcp.iter().map(received).sum();
    // A stock iperf3 client's test counts as well: its bytes as the server sent them, which
    // the client was told.
    let iperf3 = std::process::Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "0.5", "-R", "-J"])
        .output();
    let iperf3_sent = match iperf3 {
        Ok(out) => {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            v["end"]["sum_sent"]["bytes"].as_u64()
        }
        Err(_) => {
            eprintln!("iperf3 is not installed (scripts/test.sh installs it): its part skipped");
            None
        }
    };
    // A client's exit does not wait for the server to close its side: the last session may
    // still be winding down, so the page is read again (at most 5 s) until it shows none.
    let idle = |t: &String| t.contains("\nlinerate_sessions_running 0\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut text = get(&metrics, "/metrics");
    while !idle(&text) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        text = get(&metrics, "/metrics");
    }
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 200") && text.contains("application/openmetrics-text"),
        "{text}"
    );
    let samples = parsed(body).unwrap_or_else(|e| panic!("not OpenMetrics: {e}\n{body}"));
    let has = |line: String| assert!(samples.contains(&line), "{line} not in {samples:#?}");
    has("linerate_sessions_started_total{kind=tcp_stream} 2".into());
    has("linerate_sessions_started_total{kind=udp_stream} 1".into());
    has("linerate_sessions_refused_total{reason=limits} 1".into());
    has("linerate_sessions_running{} 0".into());
    has(format!(
        "linerate_bytes_total{{direction=received,transport=tcp}} {tcp_bytes}"
    ));
    has(format!(
        "linerate_bytes_total{{direction=received,transport=udp}} {}",
        received(&udp)
    ));
    if let Some(sent) = iperf3_sent {
        has("linerate_sessions_started_total{kind=iperf3} 1".into());
        has(format!(
            "linerate_bytes_total{{direction=sent,transport=tcp}} {sent}"
        ));
    }
    let datagrams = udp["summary"]["flows"][0]["packets_received"]
        .as_u64()
        .unwrap();
    has(format!(
        "linerate_datagrams_total{{direction=received,transport=udp}} {datagrams}"
    ));
    assert!(samples.iter().any(
        |s| s.starts_with("linerate_last_test_throughput_bytes_per_second{client=127.0.0.1} ")
    ));
    assert!(get(&metrics, "/other").starts_with("HTTP/1.1 404"));
    // issue 35: Prometheus reads both formats as written, promtool clean on each.
    let classic = get_as(&metrics, "/metrics", None);
    assert!(
        // Header names are case-insensitive (hyper writes them in lower case).
        classic
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{classic}"
    );
    let classic = classic.split("\r\n\r\n").nth(1).unwrap();
    assert!(
        classic.contains("# TYPE linerate_bytes_total counter\n") && !classic.contains("# EOF"),
        "{classic}"
    );
    // promtool (2.42, Debian 12) lints the classic format only: it reads OpenMetrics counters
    // as untyped ("no help text"), as Prometheus did when this text came as text/plain. The
    // OpenMetrics text is held by prometheus_client's strict OpenMetrics parser above.
    if let Some(checked) = promtool(classic) {
        checked.unwrap_or_else(|said| panic!("promtool on the classic text: {said}\n{classic}"));
    }
}
