//! A test request, JSON of the command line's options, into the words the command line would
//! have: `{"kind":"udp","host":"h","rate":"10M","parallel":2,"tags":{"a":"b"}}` becomes
//! `udp --rate=10M --parallel=2 --tag=a=b --db=DB --tag=source=ui -- h`.
//!
//! Every option is passed on as `--name=value` (an underscore in a name is a dash; a
//! one-letter name is the short flag), so a value can never be read as another option, and
//! the command line's own parser judges the rest: an unknown option is its error, worded as
//! on the terminal. `true` is a bare flag, `false` and `null` leave it out, an array repeats
//! it. The UI stores every test in its own database, tagged `source=ui` unless the request
//! says otherwise; `db` and `no_store` are refused, and so are `latency`, `repeat`,
//! `until_ci` and `iperf3` for now (they run other paths than one client test).

use serde_json::{Map, Value};

/// The tag every test started from the UI is stored with, unless the request sets `source`.
pub const SOURCE_TAG: (&str, &str) = ("source", "ui");

/// Why a request is not a test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The body is not JSON.
    #[error("the request is not JSON: {0}")]
    Json(String),
    /// The body is JSON but not an object.
    #[error("a test is a JSON object of the command line's options, e.g. {{\"kind\":\"tcp\",\"time\":2}}")]
    NotObject,
    /// `kind` is missing or not a test the UI runs.
    #[error("kind {0}: the UI runs tcp, udp, rr and crr tests, e.g. {{\"kind\":\"tcp\"}}")]
    Kind(String),
    /// An option's name or value cannot be a command-line option.
    #[error("{key}: {why}")]
    Option {
        /// The JSON key.
        key: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An option the UI sets itself.
    #[error("{0}: the UI stores every test in its own database (linerate ui --db); leave it out")]
    Reserved(String),
    /// An option the command line has that a test from the UI cannot use yet.
    #[error("{0}: not for tests started from the UI yet; run it with the command line")]
    NotYet(String),
}

fn bad(key: &str, why: &'static str) -> RequestError {
    RequestError::Option {
        key: key.to_string(),
        why,
    }
}

/// The words (after `linerate`) of the test `body` asks for, stored in `db` (as `--db` takes
/// it).
pub fn words(body: &[u8], db: &str) -> Result<Vec<String>, RequestError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| RequestError::Json(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(RequestError::NotObject);
    };
    let mut words = vec![command(&map)?.to_string()];
    let mut host = None;
    let mut source_given = false;
    for (key, value) in &map {
        match key.replace('-', "_").as_str() {
            "kind" => {}
            "host" => host = host_of(value)?,
            "db" | "no_store" => return Err(RequestError::Reserved(key.clone())),
            // One test, run by the client (repeats, probes and iperf3 take their own paths).
            "latency" | "repeat" | "until_ci" | "iperf3" => {
                return Err(RequestError::NotYet(key.clone()))
            }
            "tags" | "tag" => {
                let tags = tags_of(key, value)?;
                source_given |= tags.iter().any(|t| t.starts_with("source="));
                words.extend(tags.into_iter().map(|t| format!("--tag={t}")));
            }
            _ => option(key, value, &mut words)?,
        }
    }
    words.push(format!("--db={db}"));
    if !source_given {
        words.push(format!("--tag={}={}", SOURCE_TAG.0, SOURCE_TAG.1));
    }
    if let Some(host) = host {
        words.extend(["--".to_string(), host]);
    }
    Ok(words)
}

/// The command of `kind`, in the command line's words or the record's.
fn command(map: &Map<String, Value>) -> Result<&'static str, RequestError> {
    let kind = match map.get("kind") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => return Err(RequestError::Kind(other.to_string())),
        None => return Err(RequestError::Kind("missing".into())),
    };
    Ok(match kind {
        "tcp" | "tcp_stream" => "tcp",
        "udp" | "udp_stream" => "udp",
        "rr" | "tcp_rr" => "rr",
        "crr" | "tcp_crr" => "crr",
        other => return Err(RequestError::Kind(other.to_string())),
    })
}

/// `host`: a string; empty or `null` is the in-process server, as on the command line.
fn host_of(value: &Value) -> Result<Option<String>, RequestError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.trim().to_string())),
        _ => Err(bad("host", "give a host name or address as a string")),
    }
}

/// `tags`: `{"k":"v"}`, or `["k=v"]` as `--tag` takes them.
fn tags_of(key: &str, value: &Value) -> Result<Vec<String>, RequestError> {
    let why = "give tags as {\"key\": \"value\"} or [\"key=value\"]";
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| scalar(v).map(|v| format!("{k}={v}")).ok_or(bad(key, why)))
            .collect(),
        Value::Array(items) => items
            .iter()
            .map(|v| scalar(v).ok_or(bad(key, why)))
            .collect(),
        other => scalar(other).map(|v| vec![v]).ok_or(bad(key, why)),
    }
}

/// A string, number or `true` as the command line would write it.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One option: `--name=value`, a bare `--name` for `true`, repeated for an array.
fn option(key: &str, value: &Value, words: &mut Vec<String>) -> Result<(), RequestError> {
    let name_ok = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !name_ok {
        return Err(bad(key, "not an option name (letters, digits, _ and -)"));
    }
    let flag = if key.len() == 1 {
        format!("-{key}")
    } else {
        format!("--{}", key.replace('_', "-"))
    };
    let items = match value {
        Value::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    for item in items {
        match item {
            Value::Bool(true) => words.push(flag.clone()),
            Value::Bool(false) | Value::Null => {}
            Value::Object(_) | Value::Array(_) => {
                return Err(bad(key, "give a string, a number or true"))
            }
            v => words.push(format!("{flag}={}", scalar(v).unwrap_or_default())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(json: &str) -> Result<Vec<String>, RequestError> {
        words(json.as_bytes(), "/tmp/r.sqlite")
    }

    #[test]
    fn options_become_the_command_lines_words() {
        assert_eq!(
            w(r#"{"kind":"tcp","time":2}"#).unwrap(),
            ["tcp", "--time=2", "--db=/tmp/r.sqlite", "--tag=source=ui"]
        );
        // Keys come in JSON-object order (sorted); the host goes last, after `--`.
        assert_eq!(
            w(
                r#"{"kind":"udp","host":"127.0.0.1","rate":"10M","parallel":2,
                  "tags":{"a":"b"},"no_gso":true,"bidir":false,"P":3,"length":null}"#
            )
            .unwrap(),
            [
                "udp",
                "-P=3",
                "--no-gso",
                "--parallel=2",
                "--rate=10M",
                "--tag=a=b",
                "--db=/tmp/r.sqlite",
                "--tag=source=ui",
                "--",
                "127.0.0.1"
            ]
        );
        assert_eq!(
            w(r#"{"kind":"tcp_rr","host":"","tags":["source=script","x=1"],"allow":["a","b"]}"#)
                .unwrap(),
            [
                "rr",
                "--allow=a",
                "--allow=b",
                "--tag=source=script",
                "--tag=x=1",
                "--db=/tmp/r.sqlite"
            ]
        );
    }

    #[test]
    fn a_value_is_never_read_as_another_option() {
        let words = w(r#"{"kind":"tcp","time":"--db=/etc/x","host":"-R"}"#).unwrap();
        assert!(words.contains(&"--time=--db=/etc/x".to_string()));
        assert_eq!(words[words.len() - 2..], ["--", "-R"]);
    }

    #[test]
    fn what_is_not_a_test_is_named() {
        let err = |json: &str| w(json).unwrap_err().to_string();
        assert!(err("{\"kind\":").starts_with("the request is not JSON: "));
        assert!(err("[1]").starts_with("a test is a JSON object"));
        assert!(err("{}").starts_with("kind missing: the UI runs tcp, udp"));
        assert!(err(r#"{"kind":"sweep"}"#).starts_with("kind sweep: "));
        assert!(err(r#"{"kind":"tcp","db":"x"}"#).starts_with("db: the UI stores"));
        assert!(err(r#"{"kind":"tcp","until-ci":"95:2"}"#).starts_with("until-ci: not for"));
        assert_eq!(
            err(r#"{"kind":"tcp","--time":1}"#),
            "--time: not an option name (letters, digits, _ and -)"
        );
        assert_eq!(
            err(r#"{"kind":"tcp","time":{"a":1}}"#),
            "time: give a string, a number or true"
        );
    }
}
