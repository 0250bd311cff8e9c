//! The trend view in the browser, over stored runs with a known step (`ui_trend::store_step`:
//! twelve runs at 200 Mbit/s, then twelve at 180): from the stored runs, a tag set typed in
//! opens the trend; its chart has one dashed change-point marker, between the twelfth and the
//! thirteenth run's dots, labelled "−10.0 % at #13" in the warning colour, and the table one
//! row for it; the browser's Back returns to the stored runs and Forward to the trend, and a
//! hash edited by hand shows the view it names without a reload; ticking two runs draws the
//! same series, from the tags they share.

use std::time::Duration;

use serde_json::json;

use super::cdp::Browser;
use crate::ui_api::Ui;
use crate::ui_trend::{store_step, LEVEL};

/// The markers drawn: each one's run, classes, label and x against its neighbouring dots.
const MARKERS: &str = "(ms => ms.length > 0 && ms)([...document.querySelectorAll('#trend-charts svg line.change')].map(m => {
    const svg = m.ownerSVGElement, dots = [...svg.querySelectorAll('circle.point')].map(c => +c.getAttribute('cx'));
    const label = svg.querySelector('text.change-label');
    return {run: m.dataset.run, cls: m.getAttribute('class'), label: label && label.textContent,
            labelCls: label && label.getAttribute('class'), dots: dots.length,
            between: [12, 13].map(n => dots[n - 1] < +m.getAttribute('x1') === (n === 12))};
}))";

#[test]
fn the_trend_view_marks_the_one_change_point_of_the_stored_runs() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let ids = store_step(&db);
    let step = ids[LEVEL].to_string();
    let ui = Ui::start(&db, &[]);
    b.open(&format!("http://{}/#runs", ui.addr));
    b.wait(
        &format!(
            "document.querySelectorAll('#runs tbody tr').length === {}",
            ids.len()
        ),
        Duration::from_secs(10),
    );

    b.eval(
        "document.querySelector('#runs-filter [name=tag]').value = 'series=s';
         document.querySelector('#trend-runs').click()",
    );
    let markers = b.wait(
        &format!("document.querySelectorAll('#trend-changes tbody tr').length > 0 && {MARKERS}"),
        Duration::from_secs(20),
    );
    let expected = json!([{"run": step, "cls": "change worse",
        "label": format!("−10.0 % at #{step}"), "labelCls": "change-label worse",
        "dots": ids.len(), "between": [true, true]}]);
    assert_eq!(markers, expected);
    let row =
        b.eval("[...document.querySelectorAll('#trend-changes tbody tr')].map(r => r.textContent)");
    let row = row.as_array().unwrap();
    assert_eq!(row.len(), 1, "{row:?}");
    let text = row[0].as_str().unwrap();
    for says in [
        &format!("#{step}"),
        "13 of 24",
        "200 → 180 Mbit/s",
        "−10.0 %",
    ] {
        assert!(text.contains(says), "{text}");
    }
    assert_eq!(b.eval("location.hash"), "#trend/runs=series%3Ds");
    b.screenshot("20-trend");
    back_forward_and_a_typed_hash(&mut b, &expected, (ids[0], ids[1]));

    // Two runs ticked: the tags both carry (series=s) are the series.
    b.eval("document.querySelector('#trend-back').click()");
    b.wait(
        "document.querySelectorAll('#runs tbody tr').length > 0",
        Duration::from_secs(10),
    );
    b.eval(&format!(
        "document.querySelector('#runs-filter [name=tag]').value = '';
         for (const id of [{}, {}]) document.querySelector(`#runs input[data-run='${{id}}']`).click();
         document.querySelector('#trend-runs').click()",
        ids[0],
        ids[ids.len() - 1]
    ));
    let markers = b.wait(
        &format!("location.hash === '#trend/runs=series%3Ds' && document.querySelectorAll('#trend-changes tbody tr').length > 0 && {MARKERS}"),
        Duration::from_secs(20),
    );
    assert_eq!(markers, expected);
}

/// Which of the page's views is shown, and the URL's hash.
const SHOWN: &str = "[location.hash, [...document.querySelectorAll('.view')].filter(v => !v.hidden).map(v => v.id)]";

/// The history walks the views as the user went (Back to the stored runs, Forward to the same
/// trend, its marker redrawn), and a hash typed into the address bar shows its view at once.
fn back_forward_and_a_typed_hash(b: &mut Browser, markers: &serde_json::Value, two: (i64, i64)) {
    b.eval("history.back()");
    let runs = json!(["#runs", ["view-runs"]]);
    b.wait(
        &format!("JSON.stringify({SHOWN}) === '{runs}'"),
        Duration::from_secs(10),
    );
    b.eval("history.forward()");
    let redrawn = b.wait(
        &format!("location.hash === '#trend/runs=series%3Ds' && !document.querySelector('#view-trend').hidden && {MARKERS}"),
        Duration::from_secs(20),
    );
    assert_eq!(&redrawn, markers);
    b.eval(&format!("location.hash = '#compare/{},{}'", two.0, two.1));
    let rows = b.wait(
        "!document.querySelector('#view-compare').hidden && document.querySelectorAll('#compare-table tbody tr').length",
        Duration::from_secs(20),
    );
    assert!(rows.as_u64().unwrap() >= 1, "{rows}");
    b.eval("history.back()");
    b.wait(
        "location.hash === '#trend/runs=series%3Ds' && !document.querySelector('#view-trend').hidden",
        Duration::from_secs(10),
    );
}
