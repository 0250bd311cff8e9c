//! `linerate ui`'s page in a real browser: headless Chromium driven through the DevTools
//! protocol (`cdp`). A test is started from the form and its charts move live, then its
//! summary shows; the stored runs are ticked, compared and reported; an rpm's charts grow and
//! its RPM shows; a sweep, a repetition and
//! a packet rate matrix fill their points, a mesh its matrix; a long, fast test leaves the
//! page's charts, table and heap bounded; a reload, or a test another client started, shows
//! that test's result and settings (`follow`). Screenshots of each view go to
//! `target/ui-screenshots/` (their paths printed), to be looked at. Without
//! `/usr/bin/chromium` (scripts/test.sh installs it) the tests skip.

mod cdp;
mod follow;
mod labels;
mod trend;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::ui_api::Ui;
use cdp::{wait_until, Browser};

/// Chooses the kind, then fills the run form's other fields (name → value), as a user does,
/// and clicks Start.
fn start_test(b: &mut Browser, fields: &Value) {
    b.eval(&format!(
        "(() => {{
            const form = document.querySelector('#run-form'), fields = {fields};
            form.elements.namedItem('kind').value = fields.kind;
            form.elements.namedItem('kind').dispatchEvent(new Event('change'));
            for (const [name, value] of Object.entries(fields)) form.elements.namedItem(name).value = value;
            document.querySelector('#start').click();
            return true;
        }})()"
    ));
}

/// The throughput chart's points (intervals drawn), as the chart says.
const POINTS: &str =
    "+(document.querySelector('#chart-throughput')?.getAttribute('data-points') ?? 0)";
const SUMMARY: &str = "document.querySelector('#summary').childElementCount";
const ROWS: &str = "document.querySelector('#intervals tbody').rows.length";
const STATE: &str = "document.querySelector('#run-state').textContent";

/// Whether the figure around chart `id` is shown.
fn chart_shown(b: &mut Browser, id: &str) -> bool {
    b.eval(&format!(
        "(() => {{ const s = document.querySelector('#chart-{id}'); return !!s && !s.closest('figure').hidden; }})()"
    )) == json!(true)
}

/// Starts a 2 s test and watches its chart move, then its summary; screenshots of both.
fn first_test_live(b: &mut Browser) {
    start_test(
        b,
        &json!({"kind": "tcp", "time": "2", "parallel": "1", "tags": "case=browser, n=1",
                "extra": "{\"interval\": 0.5}"}),
    );
    let mut seen: Vec<u64> = Vec::new();
    let mut shot = false;
    wait_until("the first test's summary", Duration::from_secs(30), || {
        let now = b.eval(&format!("[{POINTS}, {SUMMARY}]"));
        let (points, summary) = (now[0].as_u64().unwrap(), now[1].as_u64().unwrap());
        if summary > 0 {
            return Some(());
        }
        if points > 0 && seen.last() != Some(&points) {
            seen.push(points);
        }
        if points >= 2 && !shot {
            b.screenshot("1-run-live");
            shot = true;
        }
        None
    });
    assert!(
        seen.len() >= 2,
        "the chart moved {seen:?} before the summary"
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    let state = b.eval(STATE);
    assert!(
        state.as_str().unwrap().contains("stored as run #1"),
        "{state}"
    );
    // One row per interval (one direction); the chart draws within 100 ms of the last.
    let points = b.wait(
        &format!("{POINTS} >= 3 && {POINTS} === {ROWS} && {POINTS}"),
        Duration::from_secs(5),
    );
    assert!(points.as_u64().unwrap() <= 5, "{points}");
    // Byte counts in the command line's units: binary multiples (GiB), never decimal ones (GB).
    let cells = b.eval("document.querySelector('#intervals tbody').rows[0].cells[2].textContent");
    let sent = cells.as_str().unwrap_or_default();
    assert!(sent.ends_with("iB") && sent.contains(' '), "{cells}");
    for chart in ["retransmits", "cwnd", "rtt"] {
        assert!(chart_shown(b, chart), "the {chart} chart of a tcp test");
    }
    assert!(!chart_shown(b, "loss"), "no UDP chart for tcp");
    println!("CPU chart shown: {}", chart_shown(b, "cpu"));
    b.screenshot("2-run-summary");
}

#[test]
fn the_page_runs_a_test_live_then_compares_and_reports_the_stored_runs() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let ui = Ui::fresh();
    let started = Instant::now();
    b.open(&format!("http://{}/", ui.addr));
    // The choice of test is the registry of measuring commands, each said in its few words.
    let mut want: Vec<String> = (plan::Measuring::ALL.iter())
        .map(|k| format!("{k}: {}", k.summary()))
        .collect();
    let choices =
        "[...document.querySelectorAll('#run-form [name=kind] option')].map(o => o.textContent)";
    let mut offered: Vec<String> = serde_json::from_value(b.eval(choices)).unwrap();
    want.sort();
    offered.sort();
    assert_eq!(offered, want);
    first_test_live(&mut b);

    // A second run, from the form again.
    start_test(
        &mut b,
        &json!({"kind": "tcp", "time": "1", "parallel": "2", "tags": "case=browser, n=2", "extra": ""}),
    );
    b.wait(
        &format!("{STATE}.includes('stored as run #2')"),
        Duration::from_secs(30),
    );

    // The stored runs: both ticked, the second shown in detail.
    b.eval("document.querySelector('.tab[data-view=runs]').click()");
    b.wait(
        "document.querySelectorAll('#runs tbody tr').length === 2",
        Duration::from_secs(10),
    );
    // The kind filters offer every stored kind, as the kind table has them (tcp_cc too).
    let names: Vec<&str> = std::iter::once("any")
        .chain(wire::spec::KINDS.iter().map(|r| r.name))
        .collect();
    let offered = "[...document.querySelectorAll('.record-kinds option')]\
                   .map(o => o.textContent).join(',')";
    assert_eq!(
        b.eval(offered),
        json!([names.join(","), names.join(",")].join(","))
    );
    b.eval(
        "for (const id of [1, 2]) document.querySelector(`#runs input[data-run='${id}']`).click();
         document.querySelector(\"#runs tr[data-run='2'] td:nth-child(2)\").click()",
    );
    b.wait(
        "!document.querySelector('#run-detail').hidden && !!document.querySelector('#detail-charts svg .series, #detail-charts svg circle')",
        Duration::from_secs(10),
    );
    assert_eq!(
        b.eval("document.querySelector('#ticked').textContent"),
        "#1, #2 ticked"
    );
    // Every line of its summary, as `linerate show 2` prints them (the streams, the congestion).
    b.wait(
        "document.querySelector('#detail-text').textContent.includes('congestion ')",
        Duration::from_secs(10),
    );
    b.eval("document.querySelector('#detail-text-box').open = true");
    b.screenshot("3-runs");

    // Compared: a row per metric, the second column with its ratio to the first.
    b.eval("document.querySelector('#compare-runs').click()");
    let rows = b.wait(
        "document.querySelectorAll('#compare-table tbody tr').length",
        Duration::from_secs(20),
    );
    assert!(rows.as_u64().unwrap() >= 3, "{rows}");
    // Columns are named by what tells the runs apart (their tags and stream counts), not `#N`.
    let head = b.eval("document.querySelector('#compare-table thead').textContent");
    let head = head.as_str().unwrap();
    assert!(
        head.contains("n=1 (baseline)") && head.contains("-P 2 n=2"),
        "{head}"
    );
    let ratio = b.eval("document.querySelector('#compare-table .ratio')?.textContent");
    assert!(ratio.as_str().unwrap_or("").starts_with('×'), "{ratio}");
    assert_eq!(b.eval("location.hash"), "#compare/1,2");
    b.screenshot("4-compare");

    // The report, downloaded as a file.
    b.eval("document.querySelector('#compare-report').click()");
    let dir = b.downloads.clone();
    let report = wait_until("the report's download", Duration::from_secs(30), || {
        std::fs::read_dir(&dir).ok()?.flatten().find_map(|e| {
            let p = e.path();
            (p.extension().is_some_and(|x| x == "html")).then_some(p)
        })
    });
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.to_ascii_lowercase().contains("<html"), "{report:?}");
    rpm_live(&mut b);
    stopped_live(&mut b);
    failed_pps(&mut b);
    println!("the page's whole walk took {:?}", started.elapsed());
}

/// A packet-rate matrix to a host where nothing listens: the typed host is the one tried, and
/// the page says why the command failed as the command line does, beside its exit code.
fn failed_pps(b: &mut Browser) {
    start_test(
        b,
        &json!({"kind": "pps", "host": "127.0.0.1", "time": "1", "direction": "", "rate": "",
                "tags": "case=failed", "extra": "{\"port\": 1}"}),
    );
    let state = b.wait(
        &format!("{STATE}.includes('exit code') && {STATE}"),
        Duration::from_secs(30),
    );
    let state = state.as_str().unwrap();
    assert!(
        state.contains("ended with exit code 2: ")
            && state.contains("cannot connect to 127.0.0.1:1: Connection refused"),
        "{state}"
    );
    b.screenshot("14-failed");
}

/// A rate the table shows (`200.00 Mbit/s`), in bit/s.
fn rate_of(cell: &str) -> f64 {
    let (n, unit) = cell.split_once(' ').unwrap_or((cell, ""));
    let scale = match unit.chars().next() {
        Some('k') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        _ => 1.0,
    };
    n.parse::<f64>().unwrap_or(f64::NAN) * scale
}

/// Stop, pressed as soon as a row arrives: the test ends as Ctrl-C ends it, its last row at
/// least 0.2 s long (session's MIN_STOPPED_INTERVAL) and at the paced rate as the others are,
/// never a sliver of an interval drawn as a spike (24 Gbit/s on a 1 Gbit/s test, once).
fn stopped_live(b: &mut Browser) {
    start_test(
        b,
        &json!({"kind": "tcp", "time": "30", "parallel": "1", "rate": "200M",
                "tags": "case=stop", "extra": "{\"interval\": 0.5}"}),
    );
    b.wait(&format!("{ROWS} >= 2"), Duration::from_secs(30));
    let clicked = b.eval(
        "new Promise((done) => {
            const body = document.querySelector('#intervals tbody');
            const n = body.rows.length;
            const seen = new MutationObserver(() => {
                if (body.rows.length <= n) return;
                seen.disconnect();
                document.querySelector('#stop').click();
                done(true);
            });
            seen.observe(body, { childList: true });
        })",
    );
    assert_eq!(clicked, json!(true));
    b.wait(
        &format!("{STATE}.includes('stopped early')"),
        Duration::from_secs(30),
    );
    // Newest first: the span, the direction, sent, received, rate.
    let rows = b.eval(
        "[...document.querySelectorAll('#intervals tbody tr')]
            .map((r) => [...r.cells].map((c) => c.textContent))",
    );
    let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap();
    let span = |r: &[String]| -> f64 {
        let (a, b) = r[0].split_once(" – ").unwrap();
        b.parse::<f64>().unwrap() - a.parse::<f64>().unwrap()
    };
    let last = &rows[0];
    assert!(span(last) >= 0.19, "the stopped test's last row: {last:?}");
    for r in &rows {
        let rate = rate_of(&r[4]);
        assert!((160e6..=240e6).contains(&rate), "{r:?} of {rows:?}");
    }
    b.screenshot("13-stopped");
}

/// `linerate rpm` from the form (its download direction): its charts grow with each interval,
/// then its RPM shows and its run is stored (the third).
fn rpm_live(b: &mut Browser) {
    b.eval("document.querySelector('.tab[data-view=run]').click()");
    start_test(
        b,
        &json!({"kind": "rpm", "time": "3", "parallel": "2", "direction": "reverse",
                "tags": "", "extra": "", "args": ""}),
    );
    let ticks = "+document.querySelector('#chart-rpm-goodput').getAttribute('data-points')";
    b.wait(&format!("{ticks} >= 2"), Duration::from_secs(30));
    assert_eq!(
        b.eval("document.querySelector('#rpm').hidden"),
        json!(false)
    );
    b.wait(
        &format!("{STATE}.includes('stored as run #3')"),
        Duration::from_secs(30),
    );
    let text = b.eval("document.querySelector('#rpm-summary').textContent");
    let text = text.as_str().unwrap_or_default();
    assert!(
        text.contains("down RPM") && text.contains("idle RPM"),
        "{text}"
    );
    assert!(
        b.eval("document.querySelectorAll('#chart-rpm-rtt .series').length")
            .as_u64()
            .unwrap_or(0)
            >= 1,
        "the round trips drawn"
    );
    b.screenshot("10-rpm");
}

/// What the page holds: chart points, table rows, JS heap after a GC (bytes), DOM nodes.
#[derive(Debug, Clone, Copy)]
struct PageSize {
    points: u64,
    rows: u64,
    heap: f64,
    nodes: f64,
}

fn page_size(b: &mut Browser) -> PageSize {
    PageSize {
        points: b.eval(POINTS).as_u64().unwrap(),
        rows: b.eval(ROWS).as_u64().unwrap(),
        heap: b.heap_after_gc(),
        nodes: b.dom_nodes(),
    }
}

/// Runs a paced tcp test of `seconds` at 0.05 s intervals (the fastest the command line
/// takes) from the form; what the page holds at its 140th interval (if it gets there) and after
/// its end.
fn fast_test(b: &mut Browser, seconds: u32) -> (Option<PageSize>, PageSize, u64) {
    let intervals = "fetch('/api/tests').then(r => r.json()).then(t => t[t.length - 1].intervals)";
    let before = b.eval("document.querySelectorAll('#runs tbody tr').length");
    start_test(
        b,
        &json!({"kind": "tcp", "time": seconds.to_string(), "rate": "200M", "direction": "bidir",
                "extra": "{\"interval\": 0.05}"}),
    );
    let limit = Duration::from_secs(u64::from(seconds) + 30);
    let middle = (seconds >= 10).then(|| {
        b.wait(&format!("{intervals}.then(n => n >= 140)"), limit);
        page_size(b)
    });
    // Ended: stored, and the runs list (hidden) refreshed with it.
    b.wait(
        &format!("{SUMMARY} > 0 && document.querySelectorAll('#runs tbody tr').length > {before}"),
        limit,
    );
    std::thread::sleep(Duration::from_millis(300)); // the last draw
    let end = page_size(b);
    (middle, end, b.eval(intervals).as_u64().unwrap())
}

#[test]
fn a_long_fast_test_keeps_the_page_bounded() {
    // A window of 100 (the page's ?window=, 300 by default): a 6 s test fills it (120
    // intervals), then a 12 s one passes it 2.4 times. Paced, so the browser keeps a core.
    const WINDOW: u64 = 100;
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let ui = Ui::fresh();
    let started = Instant::now();
    b.open(&format!("http://{}/?window={WINDOW}", ui.addr));
    let (_, first, n) = fast_test(&mut b, 6);
    assert!(n > WINDOW, "{n} intervals");
    let (middle, end, n) = fast_test(&mut b, 12);
    assert!(n >= 2 * WINDOW, "{n} intervals");
    let middle = middle.unwrap();
    println!(
        "{:?}: after the first test {first:?}, in the second {middle:?}, after it {end:?}",
        started.elapsed()
    );
    for size in [first, middle, end] {
        assert_eq!(size.points, WINDOW, "the chart holds the window");
        assert!(size.rows <= WINDOW, "{} rows", size.rows);
    }
    // At rest after a full window both times, the 240 intervals of the second test left
    // nothing behind: the heap grows by 30-40 KiB (one more row in the runs list, code the JIT
    // kept), where keeping every sample grows it by 130 KiB. While a test runs, the heap also
    // holds what is in flight (up to 1 MiB more), hence the looser bound in its middle.
    assert!(
        end.nodes <= first.nodes + 50.0,
        "DOM nodes {first:?} → {end:?}"
    );
    assert!(
        end.heap <= first.heap + 80.0 * 1024.0,
        "JS heap {first:?} → {end:?}"
    );
    assert!(
        end.heap <= middle.heap * 1.15,
        "JS heap {middle:?} → {end:?}"
    );
    b.screenshot("5-long-test");
}

/// `linerate serve --relay` on each address and one port, killed when dropped: a mesh's hosts.
struct Relays(Vec<Child>);

impl Drop for Relays {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Relays {
    fn start(addrs: &[&str]) -> (Relays, u16) {
        // A port the kernel found free on 127.0.0.1; the other loopback addresses are unused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let relays = Relays(
            addrs
                .iter()
                .map(|addr| {
                    Command::new(env!("CARGO_BIN_EXE_linerate"))
                        .args(["serve", "--relay", "--relay-to", "127.0.0.0/8", "-B", addr])
                        .args(["-p", &port.to_string()])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        );
        for addr in addrs {
            wait_until(
                &format!("the relay on {addr}:{port}"),
                Duration::from_secs(10),
                || TcpStream::connect((*addr, port)).ok(),
            );
        }
        (relays, port)
    }
}

#[test]
fn a_sweep_a_repetition_and_a_matrix_fill_their_points_and_a_mesh_its_matrix() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let ui = Ui::fresh();
    b.open(&format!("http://{}/", ui.addr));
    start_test(
        &mut b,
        &json!({"kind": "sweep", "args": "streams --values 1,2 -- tcp -t 0.5"}),
    );
    b.wait(
        &format!("{STATE}.includes('stored as runs')"),
        Duration::from_secs(60),
    );
    let rows = b.eval("document.querySelectorAll('#points-table tbody tr').length");
    assert_eq!(rows, 2, "a row per point");
    assert_eq!(
        b.eval("document.querySelector('#chart-points').getAttribute('data-points')"),
        "2"
    );
    let first = b.eval("document.querySelector('#points-table tbody td').textContent");
    assert!(first.as_str().unwrap().contains('1'), "{first}");
    // The live charts showed each point's test; the last one's interval is still drawn.
    b.wait(&format!("{POINTS} >= 1"), Duration::from_secs(5));
    b.screenshot("6-sweep");
    // Each kind keeps its own words: the sweep's are not left for tcp, and come back with sweep.
    let mut args_of = |kind: &str| {
        b.eval(&format!(
            "(() => {{ const f = document.querySelector('#run-form'), k = f.elements.namedItem('kind');
                k.value = '{kind}'; k.dispatchEvent(new Event('change'));
                return f.elements.namedItem('args').value; }})()"
        ))
    };
    assert_eq!(args_of("tcp"), "");
    assert_eq!(args_of("sweep"), "streams --values 1,2 -- tcp -t 0.5");

    // A repeated test: its runs are the points, each run's intervals the live charts.
    start_test(
        &mut b,
        &json!({"kind": "tcp", "time": "0.5", "repeat": "2", "args": ""}),
    );
    b.wait(
        &format!("{STATE}.includes('stored as runs')"),
        Duration::from_secs(60),
    );
    let rows = b.eval("document.querySelectorAll('#points-table tbody tr').length");
    assert_eq!(rows, 2, "a row per run");
    b.screenshot("7-repeat");

    // A packet rate matrix: a cell per frame size, its rate the figure charted.
    start_test(
        &mut b,
        &json!({"kind": "pps", "time": "0.3", "args": "--frame 64,1518 --flows 1"}),
    );
    b.wait(
        &format!("{STATE}.includes('stored as runs')"),
        Duration::from_secs(60),
    );
    let caption = b.eval("document.querySelector('#points-caption').textContent");
    assert_eq!(caption, "received/s per point");
    b.screenshot("8-pps");

    let hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"];
    let (_relays, port) = Relays::start(&hosts);
    start_test(
        &mut b,
        &json!({"kind": "mesh", "args": format!("{} -t 0.5 -- -p {port}", hosts.join(" "))}),
    );
    b.wait(
        &format!("{STATE}.startsWith('finished')"),
        Duration::from_secs(90),
    );
    let cells = b.eval(
        "[...document.querySelectorAll('#mesh-matrix td[data-from]')].map(td => td.className + ':' + td.textContent)",
    );
    let cells = cells.as_array().unwrap();
    assert_eq!(cells.len(), 6, "{cells:?}");
    assert!(
        cells.iter().all(|c| c.as_str().unwrap().contains("bit/s")),
        "every pair measured: {cells:?}"
    );
    b.screenshot("9-mesh");
}
