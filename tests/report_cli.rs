//! `linerate compare`, `report`, `chart` and `export` through the binary, over a few short
//! tagged loopback runs in a database of their own; and the bad input the issue names,
//! refused in one line with exit 2 and the database file left as it was.

use std::path::Path;
use std::process::Output;

use super::*;

fn run_cmd(db: &Path, args: &[&str]) -> Output {
    linerate().args(args).arg("--db").arg(db).output().unwrap()
}

fn ok(db: &Path, args: &[&str]) -> String {
    let db = db.display().to_string();
    linerate_ok(&[args, &["--db", &db]].concat())
}

fn fails(db: &Path, args: &[&str], needle: &str) {
    let out = run_cmd(db, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
}

/// Three short loopback runs: one tagged driver=a, two driver=b. Returns their ids.
fn three_runs(db: &Path) -> Vec<String> {
    for driver in ["a", "b", "b"] {
        let tag = format!("driver={driver}");
        ok(db, &["tcp", "-t", "0.3", "-i", "0", "--tag", &tag]);
    }
    let rows: serde_json::Value = serde_json::from_str(&ok(db, &["runs", "--json"])).unwrap();
    let ids: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{rows}");
    ids
}

#[test]
fn compare_export_chart_and_report_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let ids = three_runs(&db);
    let (first, second) = (format!("#{}", ids[0]), ids[1].clone());

    let table = ok(&db, &["compare", &first, &second]);
    assert!(table.contains('×'), "{table}");
    // Named by what tells them apart (their tags), not by their ids.
    assert!(table.contains("driver=b / driver=a"), "{table}");
    assert!(table.contains("throughput"), "{table}");

    let md = ok(
        &db,
        &["compare", "driver=a", "driver=b", "--format", "markdown"],
    );
    assert!(
        md.lines().all(|l| l.is_empty() || l.starts_with('|')),
        "{md}"
    );
    assert!(md.contains("driver=b (median of 2)"), "{md}");
    assert!(md.contains("driver=b / driver=a"), "{md}");

    let csv = ok(&db, &["compare", "driver=a", "driver=b", "--format", "csv"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("metric,unit,better,driver=a,driver=b,driver=b / driver=a")
    );
    assert!(
        lines.any(|l| l.starts_with("throughput,Mbit/s,higher,")),
        "{csv}"
    );

    let json: serde_json::Value = serde_json::from_str(&ok(
        &db,
        &["compare", "driver=a", "driver=b", "--format", "json"],
    ))
    .unwrap();
    assert_eq!(json["columns"][1]["runs"], 2, "{json}");
    assert_eq!(json["rows"][0]["metric"], "throughput", "{json}");
    assert!(json["rows"][0]["ratios"][1].as_f64().unwrap() > 0.0);

    // --json is --format json, on every command with --format.
    assert_eq!(
        ok(&db, &["compare", "driver=a", "driver=b", "--json"]),
        ok(
            &db,
            &["compare", "driver=a", "driver=b", "--format", "json"]
        )
    );
    // --tag keeps, in every column, the runs that also carry it.
    let tagged: serde_json::Value =
        serde_json::from_str(&ok(&db, &["export", "driver=b", "--tag", "driver=b"])).unwrap();
    assert_eq!(tagged.as_array().unwrap().len(), 2, "{tagged}");
    fails(
        &db,
        &["export", "driver=b", "--tag", "driver=a"],
        "driver=a",
    );
    let exported: serde_json::Value =
        serde_json::from_str(&ok(&db, &["export", "driver=a", "driver=b"])).unwrap();
    let exported = exported.as_array().unwrap();
    assert_eq!(exported.len(), 3);
    assert_eq!(exported[1]["label"], "driver=b [1/2]");
    assert_eq!(exported[1]["tags"]["driver"], "b");
    assert_eq!(exported[1]["run"]["kind"], "tcp_stream");
    let csv = ok(&db, &["export", &first, "--format", "csv"]);
    assert!(
        csv.starts_with("label,run,kind,start_s,end_s,flow,"),
        "{csv}"
    );
    assert!(csv.lines().count() > 1, "{csv}");
    let md = ok(&db, &["export", "driver=b", "--format", "markdown"]);
    assert!(md.starts_with('|') && md.contains("driver=b"), "{md}");
    let jsonl = dir.path().join("runs.jsonl");
    let quiet = ok(
        &db,
        &[
            "export",
            "driver=b",
            "--format",
            "jsonl",
            "--out",
            &jsonl.display().to_string(),
        ],
    );
    assert!(quiet.is_empty(), "--out writes nothing to stdout: {quiet}");
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap().lines().count(), 2);

    let svg_path = dir.path().join("chart.svg");
    ok(
        &db,
        &[
            "chart",
            "driver=a",
            "driver=b",
            "--out",
            &svg_path.display().to_string(),
        ],
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.80}"
    );
    assert!(
        svg.contains("time (s)") && svg.contains("bit/s)"),
        "axes carry units"
    );
    assert!(
        svg.contains("driver=a") && svg.contains("driver=b"),
        "series carry tags"
    );
    let png_path = dir.path().join("cpu.png");
    ok(
        &db,
        &[
            "chart",
            &first,
            "driver=b",
            "--type",
            "throughput-cpu",
            "--out",
            &png_path.display().to_string(),
        ],
    );
    let png = std::fs::read(&png_path).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "PNG magic");

    let html_path = dir.path().join("report.html");
    let html_arg = html_path.display().to_string();
    ok(
        &db,
        &[
            "report", "--tag", "driver=b", "--out", &html_arg, "--title", "Drivers",
        ],
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("<svg") && html.contains("Drivers"),
        "{html:.200}"
    );
    assert!(html.contains("Generated "), "the subtitle dates the report");
    let stripped = html.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !stripped.contains("http://") && !stripped.contains("https://"),
        "the report reaches nothing on the network"
    );
    ok(&db, &["report", "driver=a", "driver=b", "--out", &html_arg]);
    assert!(std::fs::read_to_string(&html_path)
        .unwrap()
        .contains("driver=b (median of 2)"));
}

#[test]
fn bad_report_input_is_one_line_and_the_database_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    ok(&db, &["tcp", "-t", "0.2", "-i", "0", "--tag", "driver=a"]);
    let svg = dir.path().join("c.svg").display().to_string();
    fails(&db, &["compare", "999", "driver=a"], "#999: no such run");
    fails(
        &db,
        &["compare", "driver", "driver=a"],
        "driver: neither a run id",
    );
    fails(
        &db,
        &["compare", "driver=x"],
        "driver=x: no stored run carries these tags; see `linerate runs --tag driver=x`",
    );
    fails(&db, &["export", "driver=a,mtu"], "mtu: a tag is KEY=VALUE");
    fails(
        &db,
        &["chart", "driver=a", "--out", "c.jpg"],
        "unknown image extension '.jpg'",
    );
    fails(
        &db,
        &["chart", "driver=a", "--type", "pps", "--out", &svg],
        "--kind pps",
    );
    fails(
        &db,
        &["report", "--tag", "mtu", "--out", "r.html"],
        "--tag mtu",
    );
    fails(
        &db,
        &["report", "--kind", "tcp_rr", "--out", "r.html"],
        "no stored run matches --kind tcp_rr",
    );

    // A database from a newer linerate (user_version, bytes 60..64 of the header) and a file
    // that is no database: refused, byte for byte as they were.
    let newer = dir.path().join("newer.sqlite");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&newer, &bytes).unwrap();
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, b"not a database at all, just text").unwrap();
    for (file, needle) in [
        (&newer, "newer than this linerate"),
        (&junk, "not a linerate"),
    ] {
        let before = std::fs::read(file).unwrap();
        fails(file, &["compare", "1"], needle);
        fails(file, &["report", "--out", "r.html"], needle);
        assert_eq!(
            std::fs::read(file).unwrap(),
            before,
            "{} kept",
            file.display()
        );
    }
    assert!(!Path::new("r.html").exists() && !Path::new("c.jpg").exists());
}

/// A store as a lab's looks after a while, built through the store API: tcp_stream runs of
/// driver=a (two whole, one whose server was killed: 0 bit/s) and driver=b (two), and a
/// udp_stream and a tcp_rr run of driver=a.
fn mixed_kinds_store(dir: &Path) -> std::path::PathBuf {
    use record::{HostFacts, Tags};
    use results::store::Store;
    let fixture = |name: &str| -> record::RunRecord {
        let path = format!(
            "{}/crates/results/tests/fixtures/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let tcp = |bps: f64| {
        let mut r = fixture("tcp");
        r.summary.throughput_bps = bps;
        r
    };
    let mut gone = tcp(0.0);
    gone.summary.incomplete = Some("the server went away".into());
    let runs = [
        ("driver=a", tcp(10e9)),
        ("driver=a", tcp(12e9)),
        ("driver=a", gone),
        ("driver=b", tcp(20e9)),
        ("driver=b", tcp(22e9)),
        ("driver=a", fixture("udp")),
        ("driver=a", fixture("rr")),
    ];
    let db = dir.join("mixed.sqlite");
    let mut store = Store::open(&db).unwrap();
    for (i, (tag, mut r)) in runs.into_iter().enumerate() {
        r.started_at_unix_ms = 1_779_235_200_000 + 1000 * i as u64;
        let tags = Tags::parse([tag]).unwrap();
        store.insert(&r, &tags, &HostFacts::default()).unwrap();
    }
    db
}

#[test]
fn compare_over_mixed_kinds_has_a_section_per_kind_and_leaves_out_the_incomplete_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = mixed_kinds_store(dir.path());
    let out = run_cmd(&db, &["compare", "driver=a", "driver=b"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    for kind in ["== tcp_stream ==", "== udp_stream ==", "== tcp_rr =="] {
        assert_eq!(text.matches(kind).count(), 1, "{text}");
    }
    // The only ratio is between the two tcp_stream columns.
    assert_eq!(text.matches(" / ").count(), 1, "{text}");
    assert!(text.contains("driver=b / driver=a"), "{text}");
    // driver=a's median is over its two whole runs: (10 + 12) / 2 Gbit/s, not 10.
    assert!(
        text.contains("driver=a (median of 2) [1 left out]"),
        "{text}"
    );
    let tcp = &text[..text.find("== udp_stream ==").unwrap()];
    let row = tcp.lines().find(|l| l.contains("throughput")).unwrap();
    assert!(row.contains("11000"), "{row}");
    assert!(
        stderr.contains("1 left out") && stderr.contains("--include-incomplete"),
        "{stderr}"
    );

    // With --include-incomplete the killed run counts, and is named.
    let text = ok(
        &db,
        &["compare", "driver=a", "driver=b", "--include-incomplete"],
    );
    assert!(
        text.contains("driver=a (median of 3) [1 incomplete]"),
        "{text}"
    );
    let row = text.lines().find(|l| l.contains("throughput")).unwrap();
    assert!(row.contains("10000"), "{row}");
    // One kind asked for: one section, as before.
    let text = ok(
        &db,
        &["compare", "driver=a", "driver=b", "--kind", "tcp_stream"],
    );
    assert!(!text.contains("=="), "{text}");
    fails(
        &db,
        &["compare", "driver=a", "driver=b", "--format", "csv"],
        "--kind KIND",
    );
}

#[test]
fn report_over_mixed_kinds_has_a_section_per_kind_with_legends() {
    let dir = tempfile::tempdir().unwrap();
    let db = mixed_kinds_store(dir.path());
    let html_path = dir.path().join("report.html");
    ok(&db, &["report", "--out", &html_path.display().to_string()]);
    let html = std::fs::read_to_string(&html_path).unwrap();
    for kind in ["tcp_stream", "udp_stream", "tcp_rr"] {
        let section = format!("<section class=\"kind\" id=\"kind-{kind}\">");
        assert_eq!(html.matches(&section).count(), 1, "no {kind} section");
    }
    assert!(
        !html.contains("tcp_stream: "),
        "no kind in column labels: sections say it"
    );
    assert!(
        html.contains("1 left out"),
        "the tcp_stream group's head says it"
    );
    assert!(
        html.contains("(left out: incomplete)"),
        "the run is still listed"
    );
    // Legends name the series: the throughput chart of the tcp_stream section.
    let chart = &html[html.find("id=\"chart-throughput\"").unwrap()..];
    let chart = &chart[..chart.find("</figure>").unwrap()];
    assert!(
        chart.contains("driver=a") && chart.contains("driver=b"),
        "legend"
    );
}

/// Every `--format` value of compare, export, check and trend names one of the documents'
/// formats (`report::Format`), but export's `stored`, which writes the stored rows, not a
/// document.
#[test]
fn every_format_flag_names_a_format() {
    use clap::ValueEnum;
    use linerate::output::format_of;
    use linerate::report_cmd::{CompareFormatArg, ExportFormatArg};
    for v in CompareFormatArg::value_variants() {
        format_of(*v, Default::default()).unwrap();
    }
    for v in ExportFormatArg::value_variants() {
        assert_eq!(
            format_of(*v, Default::default()).is_ok(),
            *v != ExportFormatArg::Stored,
            "{v:?}"
        );
    }
    for v in linerate::check_cmd::CheckFormat::value_variants() {
        format_of(*v, Default::default()).unwrap();
    }
    for v in linerate::trend_cmd::TrendFormat::value_variants() {
        format_of(*v, Default::default()).unwrap();
    }
}
