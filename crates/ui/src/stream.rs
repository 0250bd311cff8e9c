//! One line of a measuring command's `--json-stream` output into what a test's log keeps:
//! the `data:` of the Server-Sent Event it becomes (docs/API.md), made here, on the reader's
//! thread, once. The line is parsed as an [`events::Event`] (docs/RESULTS.md, "The event
//! stream"), the type the command wrote it with, and the SSE event is named by its
//! [`Kind`] (an interval's is unnamed, i.e. `message`).
//!
//! Invariants: an interval's data is the sample as the record's `intervals` hold it; every
//! other event's is the event's object without `event`, with the test's `id` (and a `started`
//! with its `command`); a line that is not an event (or not a well-formed one) becomes a note
//! saying so, and an event of a name this version does not know is left out. The end
//! document is never parsed whole: one run's keeps only what the `summary` event shows (the
//! stored run has the rest); any other is kept as written.

use events::Event;
pub use events::Kind;
use serde::Deserialize;
use serde_json::{json, Value};

/// The SSE name of an event's kind.
pub trait SseName {
    /// The SSE event name; `None` for an interval (unnamed, i.e. `message`).
    fn sse_name(self) -> Option<&'static str>;
}

impl SseName for Kind {
    fn sse_name(self) -> Option<&'static str> {
        (self != Kind::Interval).then(|| self.name())
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
    match Event::kind_of(line) {
        Ok(Some(_)) => {}
        Ok(None) => return Parsed::Ignored,
        Err(_) => return invalid(),
    }
    let Ok(event) = Event::parse(line) else {
        return invalid();
    };
    let kind = event.kind();
    let data = match event {
        Event::Interval { data } => serde_json::to_string(&data),
        Event::End { data } => return Parsed::End(end_doc(data.get(), single)),
        Event::Stored { run_id } => {
            return Parsed::Stored(run_id, json!({"id": id, "run_id": run_id}).to_string())
        }
        other => with_id(&other, id, command),
    };
    data.map_or_else(|_| invalid(), |data| Parsed::Event(kind, data))
}

/// The event's object without `event`, with the test's `id` (a `started`: and `command`).
fn with_id(event: &Event<'_>, id: u64, command: &[String]) -> serde_json::Result<String> {
    let Value::Object(mut map) = serde_json::to_value(event)? else {
        return Err(serde::ser::Error::custom("an event is an object"));
    };
    map.remove("event");
    map.insert("id".into(), id.into());
    if event.kind() == Kind::Started {
        map.insert("command".into(), json!(command));
    }
    Ok(Value::Object(map).to_string())
}

fn end_doc(data: &str, single: bool) -> EndDoc {
    if single {
        if let Ok(run) = serde_json::from_str::<RunHead>(data) {
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
        raw: data.to_string(),
        interrupted: serde_json::from_str::<Top>(data)
            .ok()
            .and_then(|t| t.interrupted),
    }
}

/// The `summary` event's data: test `id` ended with `end` after storing `run_ids`; `stopped`:
/// the UI interrupted it; `exit_code`: the command's, if it exited; `error`: what it said on
/// stderr when it failed after writing its result (a sweep whose point failed), as the command
/// line shows it.
pub fn summary(
    id: u64,
    end: &EndDoc,
    run_ids: &[i64],
    stopped: bool,
    (exit_code, error): (Option<i32>, Option<&str>),
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
                "error": error,
            })
            .to_string()
        }
        // Written around the document, which may be large, rather than parsed again.
        EndDoc::Document { raw, interrupted } => format!(
            r#"{{"id":{id},"run_ids":{},"interrupted":{},"exit_code":{},"error":{},"document":{raw}}}"#,
            json!(run_ids),
            interrupted.unwrap_or(stopped),
            json!(exit_code),
            json!(error),
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

    /// A spec as the command writes it.
    fn spec() -> Value {
        let spec = wire::TestSpec::new(wire::Params::defaults(wire::TestKind::TcpStream), 1, 1000);
        serde_json::to_value(spec).unwrap()
    }

    #[test]
    fn events_keep_their_data_with_the_test_id() {
        let server = json!({"version":"1","hostname":"h","cores":2});
        let started = json!({"event":"started","server":server,"spec":spec()}).to_string();
        let Parsed::Event(Kind::Started, data) = p(&started) else {
            panic!()
        };
        assert_eq!(
            value(&data),
            json!({"id":3,"command":["tcp"],"server":server,"spec":spec()})
        );
        assert_eq!(
            p(r#"{"event":"interval","data":{"start_s":0.0,"end_s":1.0,"flows":[]}}"#),
            Parsed::Event(
                Kind::Interval,
                r#"{"start_s":0.0,"end_s":1.0,"flows":[]}"#.into()
            )
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
        let Parsed::Event(Kind::Tick, data) = p(
            r#"{"event":"tick","direction":"up","data":{"t_s":1.0,"connections":1,
                "goodput_bps":1e9,"moving_average_bps":1e9,"self_p50_ms":null,
                "foreign_p50_ms":null,"kernel_rtt_ms":null,"rpm":null}}"#,
        ) else {
            panic!()
        };
        let data = value(&data);
        assert_eq!((&data["id"], &data["direction"]), (&json!(3), &json!("up")));
        assert_eq!(data["data"]["connections"], 1);
        assert_eq!(data["data"]["goodput_bps"], 1e9);
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
        let data = value(&summary(3, &end, &[7], true, (Some(130), None)));
        assert_eq!(
            data,
            json!({"id":3,"run_id":7,"run_ids":[7],"kind":"tcp_stream","target":"t",
                   "interrupted":true,"summary":{"interrupted":true,"duration_s":1.5},
                   "exit_code":130,"error":null})
        );
        let sweep = r#"{"event":"end","data":{"title":"s","points":[{"a":1},{"a":2}]}}"#;
        let Parsed::End(end) = parse(sweep, 4, &[], false) else {
            panic!()
        };
        let data = value(&summary(4, &end, &[8, 9], false, (Some(0), None)));
        assert_eq!(
            data,
            json!({"id":4,"run_ids":[8,9],"interrupted":false,"exit_code":0,"error":null,
                   "document":{"title":"s","points":[{"a":1},{"a":2}]}})
        );
        // A command that failed after its result (a sweep's point) says why beside it.
        let failed = value(&summary(
            4,
            &end,
            &[8],
            false,
            (Some(2), Some("point 2 failed")),
        ));
        assert_eq!(
            (failed["exit_code"].clone(), failed["error"].clone()),
            (json!(2), json!("point 2 failed"))
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
            value(&summary(3, &end, &[], true, (None, None)))["interrupted"],
            true
        );
    }
}
