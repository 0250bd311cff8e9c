//! A test followed by a page that did not just start it: after a reload, the last test's
//! result and its settings show again; a test another client of the UI started shows its own
//! settings, not the form's defaults. Either way the form, started again as it stands, asks
//! for the very same command.

use std::time::Duration;

use serde_json::{json, Value};

use super::cdp::Browser;
use super::{start_test, STATE, SUMMARY};
use crate::ui_api::Ui;

/// The run form's fields as the page holds them (name → value).
const FORM: &str = "Object.fromEntries([...new FormData(document.querySelector('#run-form'))].map(([k, v]) => [k, String(v)]))";

/// The live charts shown, by their ids, once each has its points.
const CHARTS: &str = "(ids => ids.length > 0 && ids.join(' '))([...document.querySelectorAll('#live-charts figure:not([hidden]) svg')].filter(s => +s.dataset.points > 0).map(s => s.id))";

/// Loads the page again (a reload: the same URL), and waits for the new page, not the old one.
fn reload(b: &mut Browser, url: &str) {
    b.eval("window.linerateOldPage = true");
    b.open(url);
    b.wait("!window.linerateOldPage", Duration::from_secs(20));
}

/// The fields of `form` named in `expected`, to compare with it.
fn fields(form: &Value, expected: &Value) -> Value {
    let names = expected.as_object().unwrap().keys();
    Value::Object(names.map(|n| (n.clone(), form[n].clone())).collect())
}

/// The command words test `id` ran.
fn command(ui: &Ui, id: u64) -> Value {
    ui.get_json(&format!("/api/tests/{id}"))["command"].clone()
}

#[test]
fn a_reload_after_a_test_shows_its_result_and_its_settings() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let ui = Ui::fresh();
    let url = format!("http://{}/", ui.addr);
    b.open(&url);
    let settings = json!({"kind": "udp", "time": "1", "parallel": "2", "rate": "20M",
        "direction": "reverse", "tags": "case=reload", "extra": "{\"interval\":0.5}",
        "host": "", "length": "", "latency": "", "repeat": "", "args": ""});
    start_test(&mut b, &settings);
    b.wait(
        &format!("{STATE}.includes('stored as run #1')"),
        Duration::from_secs(30),
    );
    let result = b.eval("document.querySelector('#summary').textContent");
    assert!(!result.as_str().unwrap().is_empty(), "a summary shown");
    let charts = b.wait(CHARTS, Duration::from_secs(5));
    b.screenshot("11-before-reload");

    reload(&mut b, &url);
    b.wait(
        &format!("{SUMMARY} > 0 && {STATE}.includes('stored as run #1')"),
        Duration::from_secs(20),
    );
    let form = b.wait(
        &format!("(f => f.kind === 'udp' && f)({FORM})"),
        Duration::from_secs(5),
    );
    assert_eq!(
        fields(&form, &settings),
        settings,
        "the form after the reload"
    );
    assert_eq!(
        b.eval("document.querySelector('#summary').textContent"),
        result,
        "the same result"
    );
    assert_eq!(
        b.wait(CHARTS, Duration::from_secs(5)),
        charts,
        "the same charts"
    );
    let rows = b.eval("document.querySelector('#intervals tbody').rows.length");
    assert!(rows.as_u64().unwrap() >= 2, "its intervals: {rows}");
    b.screenshot("11-reloaded");

    // Started again as it stands, the form asks for the same test.
    b.eval("document.querySelector('#start').click()");
    b.wait(
        &format!("{STATE}.includes('stored as run #2')"),
        Duration::from_secs(30),
    );
    assert_eq!(command(&ui, 2), command(&ui, 1));
}

#[test]
fn a_test_another_client_started_shows_its_own_settings_not_the_forms_defaults() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let ui = Ui::fresh();
    // Started by a script (or another tab): the page never saw its form.
    let id = ui.start_test(
        r#"{"kind":"tcp","time":2,"parallel":2,"bidir":true,"rate":"50M",
            "tags":{"who":"script"},"no_delay":true}"#,
    );
    b.open(&format!("http://{}/", ui.addr));
    let settings = json!({"kind": "tcp", "time": "2", "parallel": "2", "direction": "bidir",
        "rate": "50M", "tags": "who=script", "extra": "{\"no_delay\":true}", "host": "",
        "length": "", "latency": "", "repeat": "", "args": ""});
    let form = b.wait(
        &format!("(f => f.time === '2' && f)({FORM})"),
        Duration::from_secs(10),
    );
    assert_eq!(
        fields(&form, &settings),
        settings,
        "the followed test's settings"
    );
    // Followed live to its end.
    b.wait(
        &format!("{SUMMARY} > 0 && {STATE}.includes('stored as run #1')"),
        Duration::from_secs(30),
    );
    let title = b.eval("document.querySelector('#live-title').textContent");
    assert!(
        title
            .as_str()
            .unwrap()
            .starts_with(&format!("test {id}: linerate tcp")),
        "{title}"
    );
    b.screenshot("12-followed");

    b.eval("document.querySelector('#start').click()");
    b.wait(
        &format!("{STATE}.includes('stored as run #2')"),
        Duration::from_secs(30),
    );
    assert_eq!(command(&ui, 2), command(&ui, id));
}
