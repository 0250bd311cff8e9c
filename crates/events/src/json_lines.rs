//! `--json-stream`'s writer: each [`Event`] as one line of JSON, written and flushed as it
//! happens (docs/RESULTS.md, "The event stream"). A test gives `started`, then one `interval`
//! per interval; a sweep, rfc2544 search, repetition, pps matrix or mesh gives `begin`, then a
//! `point` per finished point, run or cell (a point's own test streams its `started` and
//! intervals first); `linerate rpm` gives a `tick` per interval of each direction; any run
//! stored gives `stored`; the last line is `end` with the document `--json` would print.
//!
//! Invariants: a write that fails is kept and the later events are skipped: the run goes on
//! (the measurement is good whatever happened to its printout) and [`JsonLines::finish`] says
//! what failed. Events borrow the runner's values; only a point's and the end's documents are
//! serialized apart first (into their JSON text, then copied into the line).

use std::borrow::Cow;
use std::io::Write;

use record::rpm::{RpmTick, RpmWay};
use record::IntervalSample;
use serde::Serialize;
use wire::msg::ServerInfo;
use wire::TestSpec;

use crate::event::{Event, Payload};
use crate::observer::{Observer, ToJson};

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
    pub fn emit(&mut self, event: &Event<'_>) {
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

    /// Writes an event whose document could not be serialized: the failure is kept.
    fn emit_with(&mut self, event: serde_json::Result<Event<'_>>) {
        match event {
            Ok(event) => self.emit(&event),
            Err(e) if self.failed.is_none() => self.failed = Some(e.into()),
            Err(_) => {}
        }
    }

    /// `end` with the document, then the first failed write, if any.
    pub fn finish<T: Serialize + ?Sized>(mut self, document: &T) -> std::io::Result<()> {
        let end = Payload::of(document).map(|data| Event::End { data });
        self.emit_with(end);
        self.failed.map_or(Ok(()), Err)
    }
}

/// Every report is an event, except a point's start and end (the `point` event says both).
impl<W: Write> Observer for JsonLines<W> {
    fn started(&mut self, server: &ServerInfo, spec: &TestSpec) {
        self.emit(&Event::Started {
            server: Cow::Borrowed(server),
            spec: Cow::Borrowed(spec),
        });
    }

    fn interval(&mut self, sample: &IntervalSample) {
        self.emit(&Event::Interval {
            data: Cow::Borrowed(sample),
        });
    }

    fn begin(&mut self, title: &str, planned_s: &[f64], hosts: &[String]) {
        let points = if hosts.is_empty() {
            planned_s.len()
        } else {
            hosts.len() * hosts.len().saturating_sub(1)
        };
        self.emit(&Event::Begin {
            title: title.into(),
            points,
            planned_s: planned_s.into(),
            hosts: hosts.into(),
        });
    }

    fn point(&mut self, index: usize, label: &str, data: &dyn ToJson) {
        let point = data.to_json().map(|raw| Event::Point {
            index,
            label: label.into(),
            data: raw.into(),
        });
        self.emit_with(point);
    }

    fn tick(&mut self, way: RpmWay, tick: &RpmTick) {
        self.emit(&Event::Tick {
            direction: way,
            data: Cow::Borrowed(tick),
        });
    }

    /// `note`, without a leading `linerate: note: `.
    fn note(&mut self, line: &str) {
        let text = line.strip_prefix("linerate: note: ").unwrap_or(line);
        self.emit(&Event::Note { text: text.into() });
    }

    fn stored(&mut self, run_id: i64) {
        self.emit(&Event::Stored { run_id });
    }
}
