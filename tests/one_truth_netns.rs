//! Issue 47, "one truth per run": for a stored UDP run of each engine (socket, packet, xdp)
//! (and a TCP stream's goodput and a request/response test's rate)
//! over a veth pair with an nft rule dropping 3 % of the data datagrams in the receiving
//! namespace, every place that shows the run's received and lost figures shows the same ones:
//! the client's `--json`, `show --json`, `show`'s text, `runs --json`, the HTML report, and
//! the web UI's API (`/api/runs`, `/api/runs/N`, `/api/runs/N/text`, what its pages draw).
//!
//! Root only (skipped with a reason otherwise); each run is one second; the namespaces go with
//! the pair and the UI with its guard.

use super::ui_api::Ui;
use super::*;
use serde_json::Value;

/// The figures every view must agree on, from a summary (a run's or a flow's).
fn figures(s: &Value) -> [Value; 5] {
    [
        "packets_sent",
        "packets_received",
        "packets_lost",
        "loss_pct",
        "pps_received",
    ]
    .map(|k| s[k].clone())
}

/// The HTML report's cell of metric `name` (`<td>loss</td><td>%</td><td class="num">X</td>`).
fn html_metric(html: &str, name: &str) -> f64 {
    let head = format!("<td>{name}</td><td>");
    let at = html.find(&head).unwrap_or_else(|| panic!("no {name} row"));
    let rest = &html[at..];
    let cell = rest.find("class=\"num\">").unwrap() + 12;
    rest[cell..].split('<').next().unwrap().parse().unwrap()
}

/// Whether `shown`, a table cell of `format::value`'s digits, is `v` rounded.
fn rounds_to(shown: f64, v: f64) -> bool {
    let a = v.abs();
    let half = if a >= 1000.0 {
        0.5
    } else if a >= 10.0 {
        0.05
    } else if a >= 1.0 {
        0.005
    } else {
        0.0005
    };
    (shown - v).abs() <= half + 1e-9
}

/// `linerate ARGS` (a store command) as JSON.
fn stored_json(pair: &VethPair, args: &[&str]) -> Value {
    let out = pair.client(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run `id`'s row in `runs --json` and in the UI's `/api/runs`, each with its name.
fn list_rows(pair: &VethPair, ui: &Ui, id: &Value) -> [(&'static str, Value); 2] {
    let find = |list: Value| {
        let row = list.as_array().unwrap().iter().find(|r| r["id"] == *id);
        row.cloned().unwrap()
    };
    [
        ("runs --json", find(stored_json(pair, &["runs", "--json"]))),
        ("UI list", find(ui.get_json("/api/runs"))),
    ]
}

/// Every view of stored run `id` against the client's own `--json` summary `s`.
fn every_view_agrees(pair: &VethPair, ui: &Ui, engine: &str, id_json: &Value, s: &Value) {
    let id = &id_json.to_string();
    let stored = stored_json(pair, &["show", id, "--json"]);
    let summary = &stored["record"]["summary"];
    assert_eq!(figures(summary), figures(s), "{engine}: show --json");
    for (view, row) in list_rows(pair, ui, id_json) {
        assert_eq!(
            (&row["loss_pct"], &row["pps_received"]),
            (&s["loss_pct"], &s["pps_received"]),
            "{engine}: {view}"
        );
    }
    let line = format!(
        "datagrams  sent {} = received {} + lost {} ({:.3} %)",
        s["packets_sent"],
        s["packets_received"],
        s["packets_lost"],
        num(&s["loss_pct"])
    );
    let text = String::from_utf8_lossy(&pair.client(&["show", id]).stdout).into_owned();
    assert!(
        text.contains(&line),
        "{engine}: show's text, not {line}:\n{text}"
    );
    let ui_run = ui.get_json(&format!("/api/runs/{id}"));
    assert_eq!(
        figures(&ui_run["record"]["summary"]),
        figures(s),
        "{engine}: UI run"
    );
    let (_, _, ui_text) = ui.call("GET", &format!("/api/runs/{id}/text"), &[], "");
    assert!(ui_text.contains(&line), "{engine}: UI text:\n{ui_text}");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join(format!("{engine}.html"));
    pair.client(&["report", id, "-o", html.to_str().unwrap()]);
    let html = std::fs::read_to_string(&html).unwrap();
    for (name, key) in [("loss", "loss_pct"), ("received", "pps_received")] {
        let shown = html_metric(&html, name);
        assert!(
            rounds_to(shown, num(&s[key])),
            "{engine}: report's {name} {shown}, run's {}",
            s[key]
        );
    }
}

#[test]
fn issue47_every_view_of_a_run_shows_one_received_count_and_one_loss() {
    if !can_use_netns() {
        return skip("no network namespaces here: the views of a lossy run are not compared");
    }
    let pair = VethPair::new("ot");
    let _server = pair.serve_with(&["--frames"]);
    nft_drop_data(&pair.b, 3);
    let ui = Ui::start(&test_db(), &[]);
    for engine in ["socket", "packet", "xdp"] {
        let args = [
            "udp", "--engine", engine, "-b", "200M", "-l", "1000", "-t", "1", "-i", "0",
        ];
        let run = pair.client_json(&args);
        let id = &run["stored_run_id"];
        assert!(id.is_u64(), "{engine}: not stored: {run}");
        let s = &run["summary"];
        assert_eq!(
            figures(s),
            figures(&s["flows"][0]),
            "{engine}: the run is its one flow"
        );
        every_view_agrees(&pair, &ui, engine, id, s);
    }
    // The other kinds' one figure: goodput, transactions.
    for (args, key) in [
        (&["tcp", "-t", "1", "-i", "0"][..], "throughput_bps"),
        (&["rr", "-t", "1", "-i", "0"][..], "transactions_per_s"),
    ] {
        let run = pair.client_json(args);
        let (id, figure) = (&run["stored_run_id"], &run["summary"][key]);
        assert!(figure.is_f64(), "{args:?}: {run}");
        let stored = stored_json(&pair, &["show", &id.to_string(), "--json"]);
        assert_eq!(&stored["record"]["summary"][key], figure, "{args:?}: show");
        for (view, row) in list_rows(&pair, &ui, id) {
            assert_eq!(&row[key], figure, "{args:?}: {view}");
        }
        let ui_run = ui.get_json(&format!("/api/runs/{id}"));
        assert_eq!(
            &ui_run["record"]["summary"][key], figure,
            "{args:?}: UI run"
        );
    }
}
