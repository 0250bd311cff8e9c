//! Snapshots of the text exporters and of chart SVG, from the fixtures; and the properties
//! snapshots cannot show (PNG size, errors, which charts apply).

use report::chart::{self, ChartKind};
use report::{
    comparison_table, runs_table, write, Comparison, Comparisons, Error, Format, LabeledRuns, Runs,
};

use crate::fixtures;

fn compare(columns: &[LabeledRuns], format: Format) -> String {
    let mut out = Vec::new();
    let one = [Comparison::new(columns)];
    write(&mut out, &Comparisons(&one), format, None).unwrap();
    String::from_utf8(out).unwrap()
}

fn export(columns: &[LabeledRuns], format: Format) -> String {
    let mut out = Vec::new();
    write(&mut out, &Runs(columns), format, None).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn compare_tag_groups_as_a_table() {
    insta::assert_snapshot!(compare(&fixtures::driver_columns(), Format::Table));
}

/// Three kinds: a section each, and no ratio between runs of two kinds.
#[test]
fn compare_runs_of_three_kinds_as_a_table() {
    let cmps = Comparison::by_kind(&fixtures::mixed_columns(), false);
    assert_eq!(cmps.len(), 3);
    let mut out = Vec::new();
    write(&mut out, &Comparisons(&cmps), Format::Table, None).unwrap();
    let text = String::from_utf8(out).unwrap();
    for kind in ["== tcp_stream ==", "== udp_stream ==", "== tcp_rr =="] {
        assert_eq!(text.matches(kind).count(), 1, "{text}");
    }
    assert!(!text.contains(" / "), "a ratio across kinds:\n{text}");
    assert!(cmps
        .iter()
        .all(|c| c.rows.iter().all(|r| r.ratios.iter().all(Option::is_none))));
    // CSV holds one kind: refused, naming them.
    let err = write(&mut Vec::new(), &Comparisons(&cmps), Format::Csv, None).unwrap_err();
    assert!(
        err.to_string().contains("tcp_stream, udp_stream, tcp_rr"),
        "{err}"
    );
    let mut json = Vec::new();
    write(&mut json, &Comparisons(&cmps), Format::Json, None).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json[2]["kind"], "tcp_rr");
    insta::assert_snapshot!(text);
}

#[test]
fn compare_table_wraps_to_a_given_width() {
    let cmp = Comparison::new(&fixtures::driver_columns());
    let table = comparison_table(&cmp, Some(80));
    assert!(
        table.lines().all(|l| l.chars().count() <= 80),
        "wider than 80 columns:\n{table}"
    );
    insta::assert_snapshot!(table);
}

#[test]
fn compare_as_markdown() {
    insta::assert_snapshot!(compare(&fixtures::rr_columns(), Format::Markdown));
}

#[test]
fn compare_as_csv() {
    insta::assert_snapshot!(compare(&fixtures::driver_columns(), Format::Csv));
}

#[test]
fn compare_as_json() {
    insta::assert_snapshot!(compare(&fixtures::rr_columns(), Format::Json));
}

#[test]
fn comparison_medians_and_ratios() {
    let cmp = Comparison::new(&fixtures::driver_columns());
    let tput = cmp.row("throughput").unwrap();
    // velocityget: 9410, 9390, 9420 → 9410; via-velocity: 9290, 9310 → 9300… as averaged
    // intervals: 9280 and 9300 → 9290.
    assert_eq!(tput.values, vec![Some(9410.0), Some(9290.0)]);
    let ratio = tput.ratios[1].unwrap();
    assert!((ratio - 9290.0 / 9410.0).abs() < 1e-12, "{ratio}");
    assert_eq!(tput.ratios[0], None);
    assert_eq!(cmp.columns[0].runs, 3);
    // A bulk transfer has no latency rows; sender CPU only repeats client CPU here.
    assert!(cmp.row("latency p99").is_none());
    assert!(cmp.row("sender CPU").is_none());
}

#[test]
fn run_list_as_a_table() {
    insta::assert_snapshot!(runs_table(&fixtures::mixed_columns(), None));
}

#[test]
fn export_as_markdown() {
    insta::assert_snapshot!(export(&fixtures::driver_columns(), Format::Markdown));
}

#[test]
fn export_as_csv() {
    insta::assert_snapshot!(export(&fixtures::mixed_columns(), Format::Csv));
}

#[test]
fn export_as_json_keeps_the_records() {
    let columns = fixtures::mixed_columns();
    let parsed: Vec<serde_json::Value> =
        serde_json::from_str(&export(&columns, Format::Json)).unwrap();
    assert_eq!(parsed.len(), 3);
    for (value, column) in parsed.iter().zip(&columns) {
        assert_eq!(value["label"], column.label.as_str());
        assert_eq!(value["tags"]["host"], "a");
        let run: record::RunRecord = serde_json::from_value(value["run"].clone()).unwrap();
        assert_eq!(run, column.runs[0]);
    }
    let lines = export(&columns, Format::JsonLines);
    assert_eq!(lines.lines().count(), 3);
}

#[test]
fn throughput_and_cpu_chart_svg() {
    let c = chart::render(ChartKind::ThroughputCpu, &fixtures::driver_columns()).unwrap();
    insta::assert_snapshot!(c.svg);
}

#[test]
fn latency_cdf_chart_svg() {
    let c = chart::render(ChartKind::LatencyCdf, &fixtures::rr_columns()).unwrap();
    insta::assert_snapshot!(c.svg);
}

#[test]
fn every_chart_names_its_axes_units_and_series() {
    let drivers = fixtures::driver_columns();
    let cases = [
        (
            ChartKind::Throughput,
            drivers.clone(),
            vec!["time (s)", "Gbit/s", "driver=via-velocity [2/2]"],
        ),
        (
            ChartKind::ThroughputCpu,
            drivers,
            vec!["Gbit/s", "CPU (% of one core)", "client", "server"],
        ),
        (
            ChartKind::LatencyCdf,
            fixtures::rr_columns(),
            vec!["µs", "99.9%", "busy_poll=50"],
        ),
        (
            ChartKind::MessageSize,
            fixtures::msg_size_columns(),
            vec![
                "write size (bytes",
                "Gbit/s",
                "512K",
                "len sweep (sweep=len)",
            ],
        ),
    ];
    for (kind, columns, wanted) in cases {
        let svg = chart::render(kind, &columns).unwrap().svg;
        assert_eq!(
            svg,
            chart::render(kind, &columns).unwrap().svg,
            "{kind:?} is deterministic"
        );
        for w in wanted {
            assert!(svg.contains(w), "{kind:?} lacks {w:?}");
        }
    }
    let pps = chart::pps_chart(&[fixtures::pps_matrix()]).unwrap().svg;
    for w in [
        "frame size (bytes",
        "Mpackets/s",
        "flows=100",
        "line rate at 10.0 Gbit/s",
        "\n1518\n",
    ] {
        assert!(pps.contains(w), "pps lacks {w:?}");
    }
}

#[test]
fn charts_apply_only_where_the_runs_have_the_data() {
    use ChartKind::*;
    assert_eq!(
        chart::applicable(&fixtures::driver_columns()),
        [Throughput, ThroughputCpu]
    );
    assert_eq!(
        chart::applicable(&fixtures::mixed_columns()),
        [Throughput, ThroughputCpu, LatencyCdf]
    );
    assert_eq!(
        chart::applicable(&fixtures::msg_size_columns()),
        [Throughput, ThroughputCpu, MessageSize]
    );
    match chart::render(LatencyCdf, &fixtures::driver_columns()) {
        Err(Error::NoData { chart, reason }) => {
            assert_eq!(chart, "latency-cdf");
            assert!(reason.contains("linerate rr"), "{reason}");
        }
        other => panic!("expected NoData, got {other:?}"),
    }
    assert!(matches!(chart::render(Pps, &[]), Err(Error::NoData { .. })));
    assert_eq!(ChartKind::from_name("latency-cdf"), Some(LatencyCdf));
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn png_is_the_svg_rasterised_at_scale() {
    let c = chart::render(ChartKind::Throughput, &fixtures::driver_columns()).unwrap();
    assert_eq!(
        png_size(&c.to_png(1.0).unwrap()),
        (chart::WIDTH, chart::HEIGHT)
    );
    assert_eq!(png_size(&c.to_png(2.0).unwrap()), (1600, 900));
    assert!(matches!(c.to_png(0.0), Err(Error::Png(_))));
}
