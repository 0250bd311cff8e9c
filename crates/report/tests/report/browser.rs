//! The HTML report: self-contained, and rendered by headless Chromium with every chart in
//! place, its script run and nothing on the console.
//!
//! Chromium (Debian package `chromium`; scripts/test.sh installs it when run as root) prints
//! each console message, errors and uncaught exceptions included, to stderr as a `CONSOLE`
//! log line with `--enable-logging=stderr`. Without Chromium the browser tests report themselves
//! skipped (`tests/skip.rs`), unless running as root, where its absence is a setup error.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use report::html::{self, Report};
use report::LabeledRuns;

use crate::fixtures;

/// Columns that between them have data for every chart.
fn report_columns() -> Vec<LabeledRuns> {
    let mut columns = fixtures::driver_columns();
    columns.extend(fixtures::msg_size_columns());
    columns.push(fixtures::rr_columns().remove(0));
    columns
}

fn render_report() -> String {
    let columns = report_columns();
    let pps = fixtures::pps_matrix();
    html::render(&Report {
        title: "Drivers <compared>",
        subtitle: Some("fixed synthetic runs"),
        columns: &columns,
        pps: std::slice::from_ref(&pps),
        meshes: &[],
        include_unfinished: false,
    })
    .unwrap()
}

#[test]
fn report_is_one_self_contained_file() {
    let page = render_report();
    for attr in ["src=", "href=", "url("] {
        assert!(
            !page.contains(attr),
            "the report refers to something by {attr}"
        );
    }
    // The only URL is the SVG namespace, which is a name and never fetched.
    let urls = page.matches("http://").count() + page.matches("https://").count();
    let namespaces = page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(urls, namespaces, "a URL other than the SVG namespace");
    assert_eq!(namespaces, 7, "one inline SVG per chart");
    assert!(
        page.contains("<title>Drivers &lt;compared&gt;</title>"),
        "the title is escaped"
    );
    // tcp_stream's charts, then tcp_rr's in the second section.
    for id in [
        "throughput",
        "throughput-cpu",
        "latency-cdf-2",
        "message-size",
        "pps",
    ] {
        assert!(
            page.contains(&format!("id=\"chart-{id}\"")),
            "no {id} chart"
        );
    }
    assert!(
        page.contains("<td class=\"num\">0.987×</td>"),
        "the ratio column"
    );
    assert_eq!(page, render_report(), "deterministic");
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// The browser, or `None` (the running test reported skipped) when the test should be skipped.
fn browser_or_skip() -> Option<PathBuf> {
    match chromium() {
        Some(p) => Some(p),
        None if is_root() => panic!(
            "chromium is not installed; as root, install it (apt-get install chromium, or run \
             scripts/test.sh, which does)"
        ),
        None => {
            crate::skip::skip(
                "chromium is not installed and this is not root (apt-get install chromium)",
            );
            None
        }
    }
}

struct Loaded {
    dom: String,
    console: Vec<String>,
}

/// Opens `page` in headless Chromium and returns the DOM after load and the console lines.
fn load(browser: &Path, page: &Path, profile: &Path) -> Loaded {
    let url = format!("file://{}", page.display());
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Any name lookup fails: the page must not need the network.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--log-level=0",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = out.join().unwrap();
    let log = err.join().unwrap();
    assert!(status.success(), "chromium failed ({status}):\n{log}");
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("CONSOLE(") || l.contains("Uncaught"))
        .map(String::from)
        .collect();
    Loaded { dom, console }
}

#[test]
fn report_renders_in_chromium_without_console_errors() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, render_report()).unwrap();
    let loaded = load(&browser, &page, &dir.path().join("profile"));
    assert!(
        loaded.console.is_empty(),
        "console messages:\n{}",
        loaded.console.join("\n")
    );
    // The page's script ran to its end: it counted the charts into the body.
    assert!(
        loaded.dom.contains("data-charts=\"7\""),
        "the script did not count 7 charts:\n{}",
        &loaded.dom[..loaded.dom.len().min(2000)]
    );
    assert!(loaded.dom.contains("7 charts drawn"));
    assert_eq!(
        loaded.dom.matches("<svg").count(),
        7,
        "seven inline charts in the DOM"
    );
    for id in ["comparison", "runs", "pps", "columns"] {
        assert!(
            loaded.dom.contains(&format!("<table id=\"{id}\"")),
            "no {id} table"
        );
    }
}

/// The console check above would see an error: a page that logs one and throws is caught.
#[test]
fn chromium_console_errors_are_detected() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><title>bad</title><script>console.error('boom'); missing();</script>",
    )
    .unwrap();
    let loaded = load(&browser, &page, &dir.path().join("profile"));
    let text = loaded.console.join("\n");
    assert!(text.contains("boom"), "console.error not seen:\n{text}");
    assert!(
        text.contains("Uncaught ReferenceError"),
        "exception not seen:\n{text}"
    );
}

fn mixed_report() -> String {
    let columns = fixtures::mixed_columns();
    html::render(&Report {
        title: "Mixed kinds",
        subtitle: None,
        columns: &columns,
        pps: &[],
        meshes: &[],
        include_unfinished: false,
    })
    .unwrap()
}

/// A report over tcp_stream, udp_stream and tcp_rr runs: a section per kind, each with its own
/// comparison (no ratio between kinds) and charts whose legends name the series.
#[test]
fn a_report_over_mixed_kinds_has_a_section_per_kind() {
    let page = mixed_report();
    for kind in ["tcp_stream", "udp_stream", "tcp_rr"] {
        assert_eq!(
            page.matches(&format!("<section class=\"kind\" id=\"kind-{kind}\">"))
                .count(),
            1,
            "no section for {kind}"
        );
        assert!(page.contains(&format!("<h2>{kind}</h2>")));
    }
    assert!(!page.contains(" / #"), "a ratio across kinds");
    assert!(
        !page.contains("What differed"),
        "one run per kind: nothing to tell apart"
    );
    // Each throughput chart names its series in its legend.
    assert!(page.contains("id=\"chart-throughput\""));
    assert!(page.contains("id=\"chart-throughput-2\""));
    let chart = &page[page.find("id=\"chart-throughput\"").unwrap()..];
    let chart = &chart[..chart.find("</figure>").unwrap()];
    assert!(chart.contains("#1 (host=a)"), "the legend names the series");
}

/// The mixed report in Chromium: no console error, every chart drawn, and a screenshot under
/// target/ for people to look at (target/report-mixed-kinds.png).
#[test]
fn a_mixed_kind_report_renders_in_chromium_with_a_screenshot() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("mixed.html");
    std::fs::write(&page, mixed_report()).unwrap();
    let loaded = load(&browser, &page, &dir.path().join("profile"));
    assert!(loaded.console.is_empty(), "{}", loaded.console.join("\n"));
    assert_eq!(loaded.dom.matches("<section class=\"kind\"").count(), 3);
    // The build directory's (target/ unless CARGO_TARGET_DIR says otherwise; its tmp/ is
    // CARGO_TARGET_TMPDIR), which exists wherever the tests were built.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../report-mixed-kinds.png");
    let status = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars",
            "--window-size=1200,4200",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("shot").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium starts");
    assert!(status.success(), "chromium screenshot failed ({status})");
    let png = std::fs::read(&shot).expect("the screenshot is written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
}
