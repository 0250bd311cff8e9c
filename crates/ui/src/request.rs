//! A test request into the words of the command that runs it, in one of two forms:
//!
//! - options: `{"kind":"udp","host":"h","rate":"10M","parallel":2,"tags":{"a":"b"}}` becomes
//!   `udp --rate=10M --parallel=2 --tag=a=b --json-stream --tag=source=ui -- h`. Every option
//!   is passed on as `--name=value` (an underscore in a name is a dash; a one-letter name is
//!   the short flag), so a value can never be read as another option; `true` is a bare flag,
//!   `false` and `null` leave it out, an array repeats it.
//! - raw words, for commands whose shape options do not fit (sweeps, meshes):
//!   `{"args":["sweep","streams","--values","1,2","--","tcp","-t","1"],"tags":{"a":"b"}}`
//!   becomes `sweep streams --values 1,2 --tag=a=b --json-stream --tag=source=ui -- tcp -t 1`
//!   (the UI's words go before the first `--`, so they are the command's, not its test's).
//!
//! Only measuring commands run, and only with the flags [`Accepts`] allows: the binary derives
//! it from its own clap definitions (a flag that names a file, a local socket or a command of
//! the UI's host is refused: `--chart`, `--unix`, `sweep knob`'s `--pre`/`--post`), and the
//! command line's own parser judges the rest (the child process does): an unknown option is its
//! error, worded as on the terminal. The UI stores every test in its own database (given to
//! the child as `$LINERATE_DB`), tagged `source=ui` unless the request says otherwise, and reads
//! its events from stdout, so what would change the database or stdout is refused too. Tests
//! against keyed servers take the key the UI was started with (`linerate ui --auth-key`, or
//! `LINERATE_AUTH_KEY`), which the UI checks at its start and hands to each test.

use serde_json::{Map, Value};

use crate::accept::{Accepts, CommandRule, FlagRule};

/// The tag every test started from the UI is stored with, unless the request sets `source`.
pub const SOURCE_TAG: (&str, &str) = ("source", "ui");

/// The flag that makes the command write its events as JSON lines; the UI adds it.
pub const JSON_STREAM: &str = "--json-stream";

/// The flags the UI sets itself, or that would write to the stdout it reads events from.
const RESERVED: [&str; 5] = ["--db", "--no-store", "--json", "--json-stream", "--csv"];

/// The flag whose file is the UI's own (`linerate ui --auth-key`).
const OWN_KEY: &str = "--auth-key";

/// Why a request is not a test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The body is not JSON.
    #[error("the request is not JSON: {0}")]
    Json(String),
    /// The body is JSON but not an object.
    #[error("a test is a JSON object of the command line's options, e.g. {{\"kind\":\"tcp\",\"time\":2}}, or of its words, e.g. {{\"args\":[\"tcp\",\"-t\",\"2\"]}}")]
    NotObject,
    /// `kind` is missing or not a command the options form runs.
    #[error("kind {given}: the UI runs {list} as options, e.g. {{\"kind\":\"tcp\"}}; give a sweep as words, e.g. {{\"args\":[\"sweep\",\"streams\",\"--values\",\"1,2\"]}}")]
    Kind {
        /// The kind as given.
        given: String,
        /// The commands the options form runs.
        list: String,
    },
    /// The first of `args` is not a measuring command.
    #[error("{given}: not a measuring command; the UI runs {list}")]
    Command {
        /// The first word.
        given: String,
        /// The commands the UI runs.
        list: String,
    },
    /// An option's name or value cannot be a command-line option.
    #[error("{key}: {why}")]
    Option {
        /// The JSON key.
        key: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An option the UI sets itself.
    #[error("{0}: the UI stores every test in its own database (linerate ui --db) and reads its events from stdout; leave it out")]
    Reserved(String),
    /// An option (or subcommand) that names a file, a local socket or a command of the UI's
    /// host: it would read or write files, reach local sockets or run commands there.
    #[error("{0}: not from the UI (it names a file, a socket or a command on the UI's host); run it with the command line")]
    NotFromUi(String),
    /// The key file, which is the UI's own.
    #[error("{0}: not from the UI (it names a file on the UI's host); a key for servers with keys is the UI's own (linerate ui --auth-key FILE, or LINERATE_AUTH_KEY)")]
    OwnKey(String),
}

fn bad(key: &str, why: &'static str) -> RequestError {
    RequestError::Option {
        key: key.to_string(),
        why,
    }
}

/// The words (after `linerate`) of the test `body` asks for, `--json-stream` and the source tag
/// included, with what `accepts` allows.
pub fn words(body: &[u8], accepts: &Accepts) -> Result<Vec<String>, RequestError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| RequestError::Json(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(RequestError::NotObject);
    };
    let (mut words, tail) = if map.contains_key("args") {
        raw(&map, accepts)?
    } else {
        options(&map, accepts)?
    };
    let source_given = words
        .iter()
        .zip(std::iter::once(&String::new()).chain(words.iter()))
        .any(|(w, before)| {
            w.starts_with("--tag=source=") || (before == "--tag" && w.starts_with("source="))
        });
    words.push(JSON_STREAM.to_string());
    if !source_given {
        words.push(format!("--tag={}={}", SOURCE_TAG.0, SOURCE_TAG.1));
    }
    words.extend(tail);
    Ok(words)
}

/// The options form: the command's words, and what goes after them (`--` and the hosts).
fn options(
    map: &Map<String, Value>,
    accepts: &Accepts,
) -> Result<(Vec<String>, Vec<String>), RequestError> {
    let rule = command(map, accepts)?;
    let mut words = vec![rule.names[0].clone()];
    let mut hosts = Vec::new();
    for (key, value) in map {
        match key.replace('-', "_").as_str() {
            "kind" => {}
            "host" | "hosts" => hosts = hosts_of(key, value)?,
            "tags" | "tag" => {
                let tags = tags_of(key, value)?;
                words.extend(tags.into_iter().map(|t| format!("--tag={t}")));
            }
            _ => option(key, value, rule, &mut words)?,
        }
    }
    // A mesh takes its test's own flags after `--`, so its hosts go before (none may then look
    // like an option); another command's host goes after `--`, where nothing is an option.
    if words[0] == "mesh" {
        if let Some(host) = hosts.iter().find(|h| h.starts_with('-')) {
            return Err(RequestError::Option {
                key: host.clone(),
                why: "not a host name or address",
            });
        }
        words.extend(hosts);
        return Ok((words, Vec::new()));
    }
    let tail = match hosts.is_empty() {
        true => Vec::new(),
        false => std::iter::once("--".to_string()).chain(hosts).collect(),
    };
    Ok((words, tail))
}

/// The raw form: `args` up to the first `--` (with the tags), and from it on.
fn raw(
    map: &Map<String, Value>,
    accepts: &Accepts,
) -> Result<(Vec<String>, Vec<String>), RequestError> {
    let why = "give the command's words as an array of strings, e.g. [\"tcp\", \"-t\", \"2\"]";
    let Some(Value::Array(items)) = map.get("args") else {
        return Err(bad("args", why));
    };
    let args: Vec<String> = items
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or(bad("args", why)))
        .collect::<Result<_, _>>()?;
    let first = args.first().ok_or(bad("args", why))?;
    let Some(rule) = accepts.command(first) else {
        return Err(RequestError::Command {
            given: first.clone(),
            list: accepts.list(false),
        });
    };
    if let Some(sub) = args.get(1).filter(|w| rule.refused_subcommands.contains(w)) {
        return Err(RequestError::NotFromUi(format!("{first} {sub}")));
    }
    for word in &args {
        refused_word(word, accepts)?;
    }
    let split = args.iter().position(|w| w == "--").unwrap_or(args.len());
    let mut words = args[..split].to_vec();
    for (key, value) in map {
        match key.as_str() {
            "args" => {}
            "tags" | "tag" => {
                let tags = tags_of(key, value)?;
                words.extend(tags.into_iter().map(|t| format!("--tag={t}")));
            }
            _ => {
                return Err(bad(
                    key,
                    "with args, give every option in args (only tags go beside it)",
                ))
            }
        }
    }
    Ok((words, args[split..].to_vec()))
}

/// Refuses a word of the raw form that is (or, as a cluster of short flags, holds) a flag the
/// UI cannot pass on in any measuring command: the words after `--` are another command's.
fn refused_word(word: &str, accepts: &Accepts) -> Result<(), RequestError> {
    if word.starts_with("--") {
        let name = word.split('=').next().unwrap_or(word);
        return refused(name, word, accepts.anywhere(name));
    }
    let Some(cluster) = word.strip_prefix('-') else {
        return Ok(());
    };
    for c in cluster.chars() {
        let flag = format!("-{c}");
        let rule = accepts.anywhere(&flag);
        refused(&flag, word, rule)?;
        if !matches!(rule, Some(FlagRule::Allowed { takes_value: false })) {
            // The rest is its value (or clap refuses the unknown flag).
            break;
        }
    }
    Ok(())
}

/// Refuses `flag` (`--db`, `-u`) when the UI sets it or cannot allow it (`rule`: what the
/// table says of it); `shown` is how the request spelled it.
fn refused(flag: &str, shown: &str, rule: Option<FlagRule>) -> Result<(), RequestError> {
    if RESERVED.contains(&flag) {
        return Err(RequestError::Reserved(shown.to_string()));
    }
    match (flag, rule) {
        (OWN_KEY, _) => Err(RequestError::OwnKey(shown.into())),
        ("--help" | "-h" | "--version" | "-V", _) => {
            Err(bad(shown, "not a test; see linerate --help"))
        }
        (_, Some(FlagRule::Local)) => Err(RequestError::NotFromUi(shown.into())),
        _ => Ok(()),
    }
}

/// The command of `kind`, in the command line's words or the record's.
fn command<'a>(
    map: &Map<String, Value>,
    accepts: &'a Accepts,
) -> Result<&'a CommandRule, RequestError> {
    let given = match map.get("kind") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "missing".into(),
    };
    accepts
        .by_kind(&given)
        .filter(|_| matches!(map.get("kind"), Some(Value::String(_))))
        .ok_or_else(|| RequestError::Kind {
            given,
            list: accepts.list(true),
        })
}

/// `host`: a string, or an array of them (a mesh's hosts); empty or `null` is none (the
/// in-process server, as on the command line).
fn hosts_of(key: &str, value: &Value) -> Result<Vec<String>, RequestError> {
    let why = "give a host name or address as a string (a mesh: an array of them)";
    let items = match value {
        Value::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    let mut hosts = Vec::new();
    for item in items {
        match item {
            Value::Null => {}
            Value::String(s) if s.trim().is_empty() => {}
            Value::String(s) => hosts.push(s.trim().to_string()),
            _ => return Err(bad(key, why)),
        }
    }
    Ok(hosts)
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
fn option(
    key: &str,
    value: &Value,
    rule: &CommandRule,
    words: &mut Vec<String>,
) -> Result<(), RequestError> {
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
    refused(&flag, key, rule.flags.get(&flag).copied())?;
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

    /// A table as the binary derives it, for the flags these tests use.
    fn table() -> Accepts {
        let allowed = FlagRule::Allowed { takes_value: true };
        let rule = |names: &[&str], options: bool, local: &[&str]| CommandRule {
            names: names.iter().map(|n| n.to_string()).collect(),
            options,
            summary: String::new(),
            refused_subcommands: if names[0] == "sweep" {
                vec!["knob".into()]
            } else {
                Vec::new()
            },
            flags: ["--time", "-t", "--tag", "--values", "--parallel", "-P"]
                .iter()
                .map(|f| (f.to_string(), allowed))
                .chain([("-R".into(), FlagRule::Allowed { takes_value: false })])
                .chain(local.iter().map(|f| (f.to_string(), FlagRule::Local)))
                .collect(),
            fields: Vec::new(),
        };
        let path = ["--unix", "--chart", "--pre", "--post", "-u"];
        Accepts {
            commands: vec![
                rule(&["tcp", "tcp_stream"], true, &path),
                rule(&["udp", "udp_stream"], true, &[]),
                rule(&["rr", "tcp_rr"], true, &[]),
                rule(&["crr", "tcp_crr"], true, &[]),
                rule(&["pps", "udp_pps"], true, &[]),
                rule(&["rfc2544"], true, &[]),
                rule(&["sweep"], false, &path),
                rule(&["mesh"], true, &path),
                rule(&["rpm"], true, &[]),
            ],
            kinds: Vec::new(),
        }
    }

    fn w(json: &str) -> Result<Vec<String>, RequestError> {
        words(json.as_bytes(), &table())
    }

    #[test]
    fn options_become_the_command_lines_words() {
        assert_eq!(
            w(r#"{"kind":"tcp","time":2}"#).unwrap(),
            ["tcp", "--time=2", "--json-stream", "--tag=source=ui"]
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
                "--json-stream",
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
                "--json-stream"
            ]
        );
        assert_eq!(
            w(r#"{"kind":"tcp","repeat":2,"latency":true}"#).unwrap(),
            [
                "tcp",
                "--latency",
                "--repeat=2",
                "--json-stream",
                "--tag=source=ui"
            ]
        );
        assert_eq!(
            w(r#"{"kind":"mesh","hosts":["a","b"],"time":1}"#).unwrap(),
            [
                "mesh",
                "--time=1",
                "a",
                "b",
                "--json-stream",
                "--tag=source=ui"
            ]
        );
        assert!(w(r#"{"kind":"mesh","hosts":["a","-R"]}"#).is_err());
        assert_eq!(
            w(r#"{"kind":"rpm","host":"h","parallel":2,"direction":"up"}"#).unwrap(),
            [
                "rpm",
                "--direction=up",
                "--parallel=2",
                "--json-stream",
                "--tag=source=ui",
                "--",
                "h"
            ]
        );
    }

    #[test]
    fn raw_words_keep_their_test_after_the_double_dash() {
        assert_eq!(
            w(
                r#"{"args":["sweep","streams","--values","1,2","--","tcp","-t","1"],
                  "tags":{"a":"b"}}"#
            )
            .unwrap(),
            [
                "sweep",
                "streams",
                "--values",
                "1,2",
                "--tag=a=b",
                "--json-stream",
                "--tag=source=ui",
                "--",
                "tcp",
                "-t",
                "1"
            ]
        );
        assert_eq!(
            w(r#"{"args":["tcp","--tag","source=cron","-t","1"]}"#).unwrap(),
            ["tcp", "--tag", "source=cron", "-t", "1", "--json-stream"]
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
        assert!(err(r#"{"kind":"tcp","json_stream":true}"#).starts_with("json_stream: "));
        assert!(err(r#"{"kind":"mesh","chart":"/x.svg"}"#).starts_with("chart: not from"));
        assert_eq!(
            err(r#"{"kind":"tcp","--time":1}"#),
            "--time: not an option name (letters, digits, _ and -)"
        );
        assert_eq!(
            err(r#"{"kind":"tcp","time":{"a":1}}"#),
            "time: give a string, a number or true"
        );
        assert!(err(r#"{"args":["runs"]}"#).starts_with("runs: not a measuring command"));
        assert!(err(r#"{"args":[]}"#).starts_with("args: give"));
        assert!(err(r#"{"args":["tcp",1]}"#).starts_with("args: give"));
        assert!(err(r#"{"args":["tcp","--","x","--db=/y"]}"#).starts_with("--db=/y: the UI"));
        assert!(err(r#"{"args":["tcp","--no-store"]}"#).starts_with("--no-store: "));
        assert!(err(r#"{"args":["sweep","knob","--pre","rm"]}"#).starts_with("sweep knob: "));
        assert!(err(r#"{"args":["tcp"],"time":1}"#).starts_with("time: with args"));
        // Files and sockets of the UI's host, in either form and either spelling.
        assert!(err(r#"{"kind":"tcp","unix":"/run/x.sock"}"#).starts_with("unix: not from"));
        assert!(err(r#"{"kind":"tcp","auth_key":"/etc/x"}"#).contains("LINERATE_AUTH_KEY"));
        assert!(err(r#"{"args":["tcp","--unix","/s"]}"#).starts_with("--unix: not from"));
        assert!(err(r#"{"args":["rr","--auth-key=/k"]}"#).starts_with("--auth-key=/k: "));
        // A cluster of short flags is read as the command line reads it.
        assert!(err(r#"{"args":["tcp","-Ru","/s"]}"#).starts_with("-Ru: not from"));
        assert!(w(r#"{"args":["tcp","-Rt1"]}"#).is_ok());
        assert!(w(r#"{"args":["tcp","-t-u"]}"#).is_ok(), "-u is -t's value");
        // No table, no test.
        assert!(words(br#"{"kind":"tcp"}"#, &Accepts::default()).is_err());
    }
}
