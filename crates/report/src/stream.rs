//! `--json-stream`: line-delimited JSON, one event object per line, written and flushed as
//! things happen (docs/RESULTS.md, "The event stream"). A test gives `started`, then one
//! `interval` per interval; a sweep, rfc2544 search, repetition, pps matrix or mesh gives
//! `begin`, then a `point` per finished point, run or cell (a sweep's, search's or
//! repetition's point first streams its own test's `started` and intervals, written by the
//! point runner); `linerate rpm` gives a `tick` per interval of each direction; any run
//! stored gives `stored`; the last line is `end` with the document `--json` would print.
//!
//! The events borrow what they carry, so writing one copies nothing. A write that fails is
//! kept and the later events are skipped: the run goes on (the measurement is good whatever
//! happened to its printout) and [`JsonLines::finish`] says what failed.

use std::io::Write;

use results::IntervalSample;
use serde::Serialize;
use wire::msg::ServerInfo;
use wire::TestSpec;

/// One line of the stream (`{"event": "<name>", …}`).
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a, T: Serialize> {
    /// The server accepted a test.
    Started {
        /// The server's facts.
        server: &'a ServerInfo,
        /// The test as accepted.
        spec: &'a TestSpec,
    },
    /// One interval of the test.
    Interval {
        /// The sample, as the record's `intervals` hold it.
        data: &'a IntervalSample,
    },
    /// A sweep, search, repetition, matrix or mesh starts.
    Begin {
        /// What runs (`linerate sweep size`).
        title: &'a str,
        /// Points (runs, cells, pairs) planned.
        points: usize,
        /// Each point's planned seconds, where known.
        #[serde(skip_serializing_if = "<[f64]>::is_empty")]
        planned_s: &'a [f64],
        /// A mesh's hosts, in matrix order.
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        hosts: &'a [String],
    },
    /// A point (run, cell, pair) finished: `data` is what the end document keeps for it.
    Point {
        /// Its place in the plan (0-based).
        index: usize,
        /// `size=1024`, `64-byte frames`, `a -> b`.
        label: &'a str,
        /// The point.
        data: &'a T,
    },
    /// One interval of a `linerate rpm` direction, as its `timeline` keeps it.
    Tick {
        /// `up` or `down`.
        direction: &'a str,
        /// The interval.
        data: &'a T,
    },
    /// A line for the user.
    Note {
        /// The line, without `linerate: note: `.
        text: &'a str,
    },
    /// A run was stored.
    Stored {
        /// Its id in the results database.
        run_id: i64,
    },
    /// The last line: the document `--json` prints.
    End {
        /// The document.
        data: &'a T,
    },
}

/// An event that carries no point or document.
pub type Plain<'a> = Event<'a, ()>;

/// Writes events, one line each, to `W`.
pub struct JsonLines<W: Write> {
    out: W,
    failed: Option<std::io::Error>,
}

impl<W: Write> JsonLines<W> {
    /// Events to `out`.
    pub fn new(out: W) -> Self {
        Self { out, failed: None }
    }

    /// Writes `event` as one line and flushes it (nothing after a failed write).
    pub fn emit<T: Serialize>(&mut self, event: &Event<'_, T>) {
        if self.failed.is_some() {
            return;
        }
        let mut line = match serde_json::to_vec(event) {
            Ok(line) => line,
            Err(e) => {
                self.failed = Some(e.into());
                return;
            }
        };
        line.push(b'\n');
        if let Err(e) = self.out.write_all(&line).and_then(|()| self.out.flush()) {
            self.failed = Some(e);
        }
    }

    /// `begin` of `points` points, planned `planned_s` seconds each.
    pub fn begin(&mut self, title: &str, planned_s: &[f64], hosts: &[String]) {
        let points = if hosts.is_empty() {
            planned_s.len()
        } else {
            hosts.len() * hosts.len().saturating_sub(1)
        };
        self.emit(&Plain::Begin {
            title,
            points,
            planned_s,
            hosts,
        });
    }

    /// `point` `index`, labelled, with its data.
    pub fn point<T: Serialize>(&mut self, index: usize, label: &str, data: &T) {
        self.emit(&Event::Point { index, label, data });
    }

    /// `tick`: an rpm direction's interval.
    pub fn tick<T: Serialize>(&mut self, direction: &str, data: &T) {
        self.emit(&Event::Tick { direction, data });
    }

    /// `note`, without a leading `linerate: note: `.
    pub fn note(&mut self, line: &str) {
        let text = line.strip_prefix("linerate: note: ").unwrap_or(line);
        self.emit(&Plain::Note { text });
    }

    /// `stored`.
    pub fn stored(&mut self, run_id: i64) {
        self.emit(&Plain::Stored { run_id });
    }

    /// `end` with the document, then the first failed write, if any.
    pub fn finish<T: Serialize>(mut self, document: &T) -> std::io::Result<()> {
        self.emit(&Event::End { data: document });
        self.failed.map_or(Ok(()), Err)
    }

    /// `started`.
    pub fn started(&mut self, server: &ServerInfo, spec: &TestSpec) {
        self.emit(&Plain::Started { server, spec });
    }

    /// `interval`.
    pub fn interval(&mut self, data: &IntervalSample) {
        self.emit(&Plain::Interval { data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(f: impl FnOnce(&mut JsonLines<&mut Vec<u8>>)) -> Vec<serde_json::Value> {
        let mut buf = Vec::new();
        f(&mut JsonLines::new(&mut buf));
        String::from_utf8(buf)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn every_event_is_one_line_named_by_its_event_field() {
        let got = lines(|s| {
            s.begin("linerate sweep size", &[1.0, 2.0], &[]);
            s.point(0, "size=64", &serde_json::json!({"x": 1}));
            s.note("linerate: note: left out");
            s.stored(12);
            s.emit(&Event::End {
                data: &serde_json::json!({"kind": "sweep_size"}),
            });
        });
        let names: Vec<&str> = got.iter().map(|v| v["event"].as_str().unwrap()).collect();
        assert_eq!(names, ["begin", "point", "note", "stored", "end"]);
        assert_eq!(got[0]["points"], 2);
        assert!(got[0].get("hosts").is_none());
        assert_eq!(got[1]["data"]["x"], 1);
        assert_eq!(got[2]["text"], "left out");
        assert_eq!(got[3]["run_id"], 12);
        assert_eq!(got[4]["data"]["kind"], "sweep_size");
    }

    #[test]
    fn a_mesh_begins_with_its_hosts_and_ordered_pairs() {
        let hosts = vec!["a".to_string(), "b".into(), "c".into()];
        let got = lines(|s| s.begin("linerate mesh", &[], &hosts));
        assert_eq!(got[0]["points"], 6);
        assert_eq!(got[0]["hosts"][2], "c");
    }

    #[test]
    fn a_failed_write_is_kept_and_said_at_the_end() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut s = JsonLines::new(Broken);
        s.note("x");
        let err = s.finish(&()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
