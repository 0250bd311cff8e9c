//! The page's run form held against the API (docs/API.md, `POST /api/tests`). Which kinds take
//! each field (its label's `data-field`) is the server's word, `GET /api/kinds`; here, for every
//! kind the form runs as options:
//! - a request made of every field `/api/kinds` lists for it (each select at each of its values)
//!   is one the API takes (`201`: past the UI's refusals and the command's own checks), so the
//!   page never shows a field the API refuses (`rr --rate`, `rr -R`);
//! - a request with a field it does not list is one the API refuses (`400`), so the page never
//!   hides a field the command takes;
//! - every field it lists is one of the page's, and the page's fields are `ui::form::FIELDS`.
//!
//! A new field needs a sample value below, so it cannot slip in untested. How the page turns its
//! fields into a request is `form.js` (run by Chromium in `ui_browser::follow`);
//! `request_field` below says the same for its option fields.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::ui_api::Ui;

/// One field of the run form: its name, whether the kind decides if it shows (its label's
/// `data-field`), and a select's non-empty values.
#[derive(Debug)]
struct Field {
    name: String,
    by_kind: bool,
    values: Vec<String>,
}

/// The first `attr="…"` in `text`.
fn attr<'a>(text: &'a str, attr: &str) -> Option<&'a str> {
    let start = text.find(&format!("{attr}=\""))? + attr.len() + 2;
    text[start..].split('"').next()
}

/// The run form's fields.
fn form(html: &str) -> Vec<Field> {
    let start = html.find("<form id=\"run-form\"").expect("the run form");
    let form = &html[start..start + html[start..].find("</form>").expect("its end")];
    let fields: Vec<Field> = form
        .split("<label")
        .skip(1)
        .filter_map(|label| {
            let open = &label[..label.find('>')?];
            let name = attr(label, "name")?.to_string();
            if let Some(field) = attr(open, "data-field") {
                assert_eq!(field, name, "a label's data-field names its input");
            }
            Some(Field {
                name,
                by_kind: attr(open, "data-field").is_some(),
                values: label
                    .split("<option")
                    .skip(1)
                    .filter_map(|o| attr(o, "value"))
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect(),
            })
        })
        .collect();
    fields
}

/// The kinds the form runs as options (its "One test" group): those `GET /api/kinds` says the
/// options form takes, but for the ones form.js sends as words (its `SERIES`), in the API's
/// order, as form.js puts them in the page.
fn single_tests(ui: &Ui, taken: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let (status, _, js) = ui.call("GET", "/form.js", &[], "");
    assert_eq!(status, 200);
    let start = js
        .find("export const SERIES = {")
        .expect("form.js's SERIES");
    let series: Vec<&str> = js[start..start + js[start..].find("};").unwrap()]
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().split(':').next())
        .collect();
    let kinds = ui.get_json("/api/kinds");
    let names = kinds.as_array().expect("a list of kinds").iter();
    names
        .map(|k| k["kind"].as_str().unwrap().to_string())
        .filter(|k| taken.contains_key(k) && !series.contains(&k.as_str()))
        .collect()
}

/// What field `name` at `value` adds to a request for `kind`, as form.js makes it; `None`: a
/// field that is not an option (the page's own: the kind, the tags, the words, free JSON).
fn request_field(kind: &str, name: &str, value: Option<&str>) -> Option<Vec<(String, Value)>> {
    let sample = match (name, value) {
        ("kind" | "tags" | "args" | "extra", _) => return None,
        // The in-process server: the host goes after `--`, as on the command line.
        ("host", _) => json!(""),
        // rpm's seconds are per direction, 2 at least.
        ("time", _) if kind == "rpm" => json!(2),
        ("time", _) => json!(1),
        ("parallel", _) => json!(2),
        ("repeat", _) => json!(2),
        ("rate", _) => json!("20M"),
        ("length", _) => json!("1000"),
        // Direction: a flag (-R, --bidir); rpm's download alone is `direction: down`, and
        // both ways its default.
        ("direction", Some(v)) if kind == "rpm" => {
            return Some(match v {
                "reverse" => vec![("direction".into(), json!("down"))],
                _ => Vec::new(),
            })
        }
        ("direction", Some(v)) => return Some(vec![(v.to_string(), json!(true))]),
        (_, Some(v)) => json!(v),
        (other, None) => panic!(
            "the run form's field {other}: give it a sample value here, so this test holds it against the API"
        ),
    };
    Some(vec![(name.to_string(), sample)])
}

/// A request for `kind` with `fields`, select `i` at its `i`th value (modulo its count).
fn request(kind: &str, fields: &[&Field], i: usize) -> Map<String, Value> {
    let mut request = Map::new();
    request.insert("kind".into(), json!(kind));
    request.insert("tags".into(), json!({"case": "form"}));
    for field in fields {
        let value =
            (!field.values.is_empty()).then(|| field.values[i % field.values.len()].as_str());
        for (key, v) in request_field(kind, &field.name, value).unwrap_or_default() {
            request.insert(key, v);
        }
    }
    request
}

/// The requests for `kind`: every field it shows, each select at each of its values.
fn requests(kind: &str, shown: &[&Field]) -> Vec<Map<String, Value>> {
    let variants = shown
        .iter()
        .map(|f| f.values.len())
        .max()
        .unwrap_or(1)
        .max(1);
    (0..variants).map(|i| request(kind, shown, i)).collect()
}

/// Stops test `id` and waits for its end, so the next one has a slot.
fn stop(ui: &Ui, id: u64) {
    let _ = ui.call("POST", &format!("/api/tests/{id}/stop"), &[], "");
    let started = Instant::now();
    loop {
        let state = ui.get_json(&format!("/api/tests/{id}"))["state"].clone();
        if state == "finished" || state == "failed" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "test {id}: {state}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `GET /api/kinds`: each options kind's fields, by its command's name.
fn kinds_fields(ui: &Ui) -> BTreeMap<String, Vec<String>> {
    let kinds = ui.get_json("/api/kinds");
    let fields = |k: &Value| -> Vec<String> {
        let list = k["fields"].as_array().expect("fields");
        list.iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    kinds
        .as_array()
        .expect("a list of kinds")
        .iter()
        .filter(|k| k["options"] == true)
        .map(|k| (k["kind"].as_str().unwrap().to_string(), fields(k)))
        .collect()
}

#[test]
fn every_field_the_run_form_shows_for_each_kind_is_taken_by_the_api_and_no_other() {
    let ui = Ui::fresh();
    let (status, _, html) = ui.call("GET", "/", &[], "");
    assert_eq!(status, 200);
    let fields = form(&html);
    let taken = kinds_fields(&ui);
    let kinds = single_tests(&ui, &taken);
    assert_eq!(kinds, ["tcp", "udp", "rr", "crr", "cc", "rpm"]);
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    // What the UI refuses from a page never is a field of its own page.
    assert!(
        !names.contains(&"auth_key") && !names.contains(&"unix"),
        "{names:?}"
    );
    let by_kind: Vec<&str> = fields
        .iter()
        .filter(|f| f.by_kind)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(
        by_kind,
        ui::form::FIELDS.map(|f| f.name),
        "the page's fields"
    );
    // What the commands' own checks refuse, though clap parses it, is no field of theirs.
    assert!(!taken["rr"].contains(&"direction".into()), "{taken:?}");
    assert!(!taken["cc"].contains(&"length".into()), "{taken:?}");
    assert!(taken["rpm"].contains(&"direction".into()), "{taken:?}");
    assert!(taken["tcp"].len() == by_kind.len(), "{taken:?}");
    let mut sent = 0;
    for kind in &kinds {
        let listed = taken
            .get(kind)
            .unwrap_or_else(|| panic!("{kind}: {taken:?}"));
        for name in listed {
            assert!(
                by_kind.contains(&name.as_str()),
                "{kind}: {name} is not the page's"
            );
        }
        let shown: Vec<&Field> = fields
            .iter()
            .filter(|f| f.name != "kind")
            .filter(|f| !f.by_kind || listed.contains(&f.name))
            .collect();
        for request in requests(kind, &shown) {
            let body = Value::Object(request).to_string();
            let (status, answer) = ui.post_test(&body);
            assert_eq!(status, 201, "the form's request {body}: {answer}");
            stop(&ui, answer["id"].as_u64().unwrap());
            sent += 1;
        }
        // Each field the page hides for this kind, alone: the API refuses it.
        let hidden = fields
            .iter()
            .filter(|f| f.by_kind && !listed.contains(&f.name));
        for field in hidden {
            for i in 0..field.values.len().max(1) {
                let asked = request(kind, &[field], i);
                if asked.len() == 2 {
                    continue; // this value adds nothing (rpm's "both ways", its default)
                }
                let body = Value::Object(asked).to_string();
                let (status, answer) = ui.post_test(&body);
                assert_eq!(status, 400, "{body}: a field hidden for {kind}: {answer}");
            }
        }
    }
    // One request per kind, more where a select has several values.
    assert!(sent > kinds.len(), "{sent} requests");
    // The field the page once offered, the API refuses: so it is none of the page's.
    let (status, answer) = ui.post_test(r#"{"kind":"tcp","auth_key":"/home/me/alice.key"}"#);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("--auth-key"),
        "{answer}"
    );
}

/// A key file (0600) with `text` in `dir`.
fn key_file(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// The key a test proves to a server with keys is the UI's own (`linerate ui --auth-key`),
/// never one a request names: the UI with it runs a test at a keyed server as that key's user;
/// one without it is refused there; a key file open to others stops the UI at its start.
#[test]
fn tests_from_the_ui_prove_the_key_it_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let line = crate::util::linerate_ok(&["keygen", "alice"]);
    let alice = key_file(dir.path(), "alice.key", &line);
    let keys = key_file(dir.path(), "keys", &line);
    let (_server, port) = crate::proc::serve_child(&["--auth-keys", keys.to_str().unwrap()]);
    let test = format!(r#"{{"kind":"tcp","host":"127.0.0.1","port":{port},"time":0.5}}"#);

    let keyed = Ui::start(
        &dir.path().join("runs.sqlite"),
        &["--auth-key", alice.to_str().unwrap()],
    );
    let id = keyed.start_test(&test);
    let events = keyed.events(id);
    let (name, summary) = events.last().unwrap();
    assert_eq!(name, "summary", "{events:?}");
    let run = keyed.get_json(&format!("/api/runs/{}", summary["run_id"]));
    assert_eq!(run["record"]["user"], "alice", "the run's proven key");

    let plain = Ui::fresh();
    let (status, answer) = plain.post_test(&test);
    assert_eq!(
        status, 400,
        "a UI without a key, at a server with keys: {answer}"
    );

    let open = dir.path().join("open.key");
    std::fs::write(&open, &line).unwrap();
    let mut ui = crate::util::linerate()
        .args(["ui", "--listen", "127.0.0.1:0", "--auth-key"])
        .arg(&open)
        .env_remove("LINERATE_AUTH_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = ui.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = ui.kill();
            let _ = ui.wait();
            panic!("linerate ui started with a key file open to others");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut ui.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--auth-key") && stderr.lines().count() == 1,
        "{stderr}"
    );
}
