//! One line of a measuring command's `--json-stream` output into what a test's log keeps:
//! the `data:` of the Server-Sent Event it becomes (docs/API.md), made here, on the reader's
//! thread, once. The lines are objects with an `event` field (docs/RESULTS.md, "The event
//! stream"): `started`, `interval`, `begin`, `point`, `tick`, `note`, `stored` and, last,
//! `end`.
//!
//! Invariants: an interval's data is the sample as the command wrote it; every other event's
//! is the command's object without `event`, with the test's `id` (and a `started` with its
//! `command`); a line that is not an event becomes a note saying so, and an event of a name
//! not listed here is left out. The end document of one run keeps only what the `summary`
//! event shows (the stored run has the rest); any other is kept as written.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// The events a test's log holds, by their place in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A single test's server accepted it (once per run).
    Started,
    /// One interval's sample.
    Interval,
    /// A sweep, repetition, matrix or mesh begins.
    Begin,
    /// One of its points, runs or cells finished.
    Point,
    /// One interval of a `linerate rpm` direction.
    Tick,
    /// A line for the user.
    Note,
    /// A run was stored.
    Stored,
}

impl Kind {
    /// The SSE event name; `None` for an interval (unnamed, i.e. `message`).
    pub fn sse_name(self) -> Option<&'static str> {
        match self {
            Kind::Started => Some("started"),
            Kind::Interval => None,
            Kind::Begin => Some("begin"),
            Kind::Point => Some("point"),
            Kind::Tick => Some("tick"),
            Kind::Note => Some("note"),
            Kind::Stored => Some("stored"),
        }
    }
}

/// The command's last document.
#[derive(Debug, Clone, PartialEq)]
pub enum EndDoc {
    /// One run's record: what the `summary` event shows of it.
    Run {
        /// The record's `kind`.
        kind: Value,
        /// Its `target`.
        target: Value,
        /// Its `summary`.
        summary: Value,
    },
    /// Any other document (a sweep, repetitions, RFC 2544, a pps matrix, a mesh), as written.
    Document {
        /// The JSON text.
        raw: String,
        /// Its top-level `interrupted`, when it has one.
        interrupted: Option<bool>,
    },
}

/// What one line is.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// An event for readers, with its data.
    Event(Kind, String),
    /// A run was stored: its id, and the `stored` event's data.
    Stored(i64, String),
    /// The end.
    End(EndDoc),
    /// Not an event: a note that says so.
    Invalid(String),
    /// An event this UI does not pass on.
    Ignored,
}

#[derive(Deserialize)]
struct Head {
    event: String,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow)]
    data: &'a RawValue,
}

#[derive(Deserialize)]
struct StoredLine {
    run_id: i64,
}

#[derive(Deserialize)]
struct RunHead {
    kind: Value,
    target: Value,
    summary: Value,
}

#[derive(Deserialize)]
struct Top {
    interrupted: Option<bool>,
}

/// A note's data.
pub fn note(id: u64, text: &str) -> String {
    json!({"id": id, "text": text}).to_string()
}

/// Parses one line of test `id` (run as `command`); `single`: no `begin` came before, so an
/// end that is a run record is one test's.
pub fn parse(line: &str, id: u64, command: &[String], single: bool) -> Parsed {
    let invalid = || {
        let shown: String = line.chars().take(200).collect();
        Parsed::Invalid(note(id, &format!("not an event: {shown}")))
    };
    let Ok(head) = serde_json::from_str::<Head>(line) else {
        return invalid();
    };
    let kind = match head.event.as_str() {
        "interval" => {
            return serde_json::from_str::<Data>(line).map_or_else(
                |_| invalid(),
                |d| Parsed::Event(Kind::Interval, d.data.get().into()),
            )
        }
        "end" => {
            return serde_json::from_str::<Data>(line)
                .map_or_else(|_| invalid(), |d| Parsed::End(end_doc(d.data, single)))
        }
        "stored" => {
            return serde_json::from_str::<StoredLine>(line).map_or_else(
                |_| invalid(),
                |s| Parsed::Stored(s.run_id, json!({"id": id, "run_id": s.run_id}).to_string()),
            )
        }
        "started" => Kind::Started,
        "begin" => Kind::Begin,
        "point" => Kind::Point,
        "tick" => Kind::Tick,
        "note" => Kind::Note,
        _ => return Parsed::Ignored,
    };
    let Ok(mut map) = serde_json::from_str::<Map<String, Value>>(line) else {
        return invalid();
    };
    map.remove("event");
    map.insert("id".into(), id.into());
    if kind == Kind::Started {
        map.insert("command".into(), json!(command));
    }
    Parsed::Event(kind, Value::Object(map).to_string())
}

fn end_doc(data: &RawValue, single: bool) -> EndDoc {
    if single {
        if let Ok(run) = serde_json::from_str::<RunHead>(data.get()) {
            if run.summary.is_object() {
                return EndDoc::Run {
                    kind: run.kind,
                    target: run.target,
                    summary: run.summary,
                };
            }
        }
    }
    EndDoc::Document {
        raw: data.get().to_string(),
        interrupted: serde_json::from_str::<Top>(data.get())
            .ok()
            .and_then(|t| t.interrupted),
    }
}

/// The `summary` event's data: test `id` ended with `end` after storing `run_ids`; `stopped`:
/// the UI interrupted it; `exit_code`: the command's, if it exited.
pub fn summary(
    id: u64,
    end: &EndDoc,
    run_ids: &[i64],
    stopped: bool,
    exit_code: Option<i32>,
) -> String {
    match end {
        EndDoc::Run {
            kind,
            target,
            summary,
        } => {
            let interrupted = summary["interrupted"].as_bool().unwrap_or(stopped);
            json!({
                "id": id,
                "run_id": run_ids.last(),
                "run_ids": run_ids,
                "kind": kind,
                "target": target,
                "interrupted": interrupted,
                "summary": summary,
                "exit_code": exit_code,
            })
            .to_string()
        }
        // Written around the document, which may be large, rather than parsed again.
        EndDoc::Document { raw, interrupted } => format!(
            r#"{{"id":{id},"run_ids":{},"interrupted":{},"exit_code":{},"document":{raw}}}"#,
            json!(run_ids),
            interrupted.unwrap_or(stopped),
            json!(exit_code),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Parsed {
        parse(line, 3, &["tcp".to_string()], true)
    }

    fn value(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn events_keep_their_data_with_the_test_id() {
        let Parsed::Event(Kind::Started, data) =
            p(r#"{"event":"started","server":{"version":"1"},"spec":{"kind":"tcp_stream"}}"#)
        else {
            panic!()
        };
        assert_eq!(
            value(&data),
            json!({"id":3,"command":["tcp"],"server":{"version":"1"},"spec":{"kind":"tcp_stream"}})
        );
        assert_eq!(
            p(r#"{"event":"interval","data":{"start_s":0.0,"end_s":1.0}}"#),
            Parsed::Event(Kind::Interval, r#"{"start_s":0.0,"end_s":1.0}"#.into())
        );
        let Parsed::Event(Kind::Point, data) =
            p(r#"{"event":"point","index":1,"label":"streams=2","data":{"x":1}}"#)
        else {
            panic!()
        };
        assert_eq!(
            value(&data),
            json!({"id":3,"index":1,"label":"streams=2","data":{"x":1}})
        );
        let Parsed::Event(Kind::Tick, data) =
            p(r#"{"event":"tick","direction":"up","data":{"t_s":1.0,"connections":1}}"#)
        else {
            panic!()
        };
        assert_eq!(
            value(&data),
            json!({"id":3,"direction":"up","data":{"t_s":1.0,"connections":1}})
        );
        let Parsed::Event(Kind::Begin, data) =
            p(r#"{"event":"begin","title":"linerate sweep streams","points":2,"planned_s":[1,1]}"#)
        else {
            panic!()
        };
        assert_eq!(value(&data)["points"], 2);
        assert_eq!(
            p(r#"{"event":"stored","run_id":12}"#),
            Parsed::Stored(12, r#"{"id":3,"run_id":12}"#.into())
        );
        assert_eq!(p(r#"{"event":"someday","x":1}"#), Parsed::Ignored);
    }

    #[test]
    fn what_is_not_an_event_becomes_a_note() {
        for line in ["hello", "[1]", r#"{"no":"event"}"#, r#"{"event":"stored"}"#] {
            let Parsed::Invalid(data) = p(line) else {
                panic!("{line}")
            };
            assert!(value(&data)["text"]
                .as_str()
                .unwrap()
                .starts_with("not an event: "));
        }
    }

    #[test]
    fn one_runs_end_keeps_its_summary_and_any_other_end_its_document() {
        let run = r#"{"event":"end","data":{"kind":"tcp_stream","target":"t","spec":{},
            "intervals":[{"start_s":0}],"summary":{"interrupted":true,"duration_s":1.5}}}"#
            .replace('\n', "");
        let Parsed::End(end) = p(&run) else { panic!() };
        let data = value(&summary(3, &end, &[7], true, Some(130)));
        assert_eq!(
            data,
            json!({"id":3,"run_id":7,"run_ids":[7],"kind":"tcp_stream","target":"t",
                   "interrupted":true,"summary":{"interrupted":true,"duration_s":1.5},
                   "exit_code":130})
        );
        let sweep = r#"{"event":"end","data":{"title":"s","points":[{"a":1},{"a":2}]}}"#;
        let Parsed::End(end) = parse(sweep, 4, &[], false) else {
            panic!()
        };
        let data = value(&summary(4, &end, &[8, 9], false, Some(0)));
        assert_eq!(
            data,
            json!({"id":4,"run_ids":[8,9],"interrupted":false,"exit_code":0,
                   "document":{"title":"s","points":[{"a":1},{"a":2}]}})
        );
        // A record after a `begin` (one run of repetitions) is still the document.
        let Parsed::End(EndDoc::Document { interrupted, .. }) = parse(&run, 4, &[], false) else {
            panic!()
        };
        assert_eq!(interrupted, None);
        let stopped = r#"{"event":"end","data":{"interrupted":true}}"#;
        let Parsed::End(end) = p(stopped) else {
            panic!()
        };
        assert_eq!(
            value(&summary(3, &end, &[], true, None))["interrupted"],
            true
        );
    }
}
