//! The bar chart's labels at the page's 1280 px: each labelled bar's label is written whole
//! (RFC 2544's "1518-byte frames", a packet-rate matrix's "64-byte frames (18-byte payload),
//! 1 flow(s)"), wrapped under its bar, no two overlapping and none outside the chart.

use serde_json::{json, Value};

use super::cdp::Browser;
use crate::ui_api::Ui;

/// Draws `labels` as bars into the points chart with the page's own chart.js; for each label
/// drawn, its text (lines joined by spaces) and its box, and the chart's viewBox.
fn drawn(b: &mut Browser, labels: &[String]) -> Value {
    let bars: Vec<Value> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| json!([l, 1e6 * (i + 1) as f64]))
        .collect();
    b.eval(&format!(
        "import('/chart.js').then(({{ drawBars }}) => {{
            const svg = document.querySelector('#chart-points');
            for (let e = svg; e; e = e.parentElement) e.hidden = false;
            drawBars(svg, {bars}, (v) => String(v));
            const box = svg.viewBox.baseVal;
            return {{ view: [box.width, box.height], labels: [...svg.querySelectorAll('text.bar-label')].map(t => {{
                const r = t.getBBox();
                return {{ text: [...t.querySelectorAll('tspan')].map(s => s.textContent).join(' '),
                         x0: r.x, x1: r.x + r.width, y1: r.y + r.height }};
            }}) }};
        }})",
        bars = Value::Array(bars)
    ))
}

/// Every label drawn is one of `labels` whole, in order, the first among them; none overlaps
/// the next or leaves the viewBox.
fn assert_whole_and_apart(labels: &[String], drawn: &Value) {
    let view = &drawn["view"];
    let (width, height) = (view[0].as_f64().unwrap(), view[1].as_f64().unwrap());
    let shown = drawn["labels"].as_array().unwrap();
    assert!(!shown.is_empty(), "{drawn}");
    assert_eq!(shown[0]["text"], labels[0], "{drawn}");
    let mut at = 0;
    for label in shown {
        let text = label["text"].as_str().unwrap();
        at += labels[at..]
            .iter()
            .position(|l| l == text)
            .unwrap_or_else(|| panic!("{text:?} is not a whole label, in order: {drawn}"));
        assert!(label["x0"].as_f64().unwrap() >= 0.0, "{label}");
        assert!(label["x1"].as_f64().unwrap() <= width, "{label}");
        assert!(
            label["y1"].as_f64().unwrap() <= height,
            "{label} below {height}"
        );
    }
    for pair in shown.windows(2) {
        let (left, right) = (
            pair[0]["x1"].as_f64().unwrap(),
            pair[1]["x0"].as_f64().unwrap(),
        );
        assert!(left <= right, "{} overlaps {}", pair[0], pair[1]);
    }
}

#[test]
fn bar_labels_are_whole_and_apart_at_1280_px() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let ui = Ui::fresh();
    b.open(&format!("http://{}/", ui.addr));
    let frames = [64, 128, 256, 512, 1024, 1280, 1518];
    let rfc2544: Vec<String> = frames.iter().map(|f| format!("{f}-byte frames")).collect();
    let pps: Vec<String> = frames
        .iter()
        .flat_map(|f| {
            [1, 2, 4].map(|n| format!("{f}-byte frames ({}-byte payload), {n} flow(s)", f - 46))
        })
        .collect();
    for labels in [&rfc2544, &pps] {
        let drawn = drawn(&mut b, labels);
        assert_whole_and_apart(labels, &drawn);
    }
    // A matrix of 21 cells labels some of its bars, all of them whole.
    let labelled = b.eval("document.querySelectorAll('#chart-points text.bar-label').length");
    assert!((2..=16).contains(&labelled.as_u64().unwrap()), "{labelled}");
    b.screenshot("21-bar-labels");
}
