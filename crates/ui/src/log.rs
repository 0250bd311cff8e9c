//! A test's log: the events its readers are shown, in order, bounded (the last
//! [`Limits::max_intervals`] intervals and [`Limits::max_events`] other events, and no more
//! than [`Limits::max_kept_bytes`] of them), and what its status counts (intervals, points,
//! stored runs). Each event's JSON is made once, when its line is read; readers share it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::registry::Limits;
use crate::stream::{EndDoc, Kind, Parsed, SseName};

/// How a test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The command wrote its result (to its end, or stopped early).
    Finished,
    /// It failed before writing its result: the command's message.
    Failed(String),
}

/// One event as readers get it.
#[derive(Debug, Clone)]
pub struct Event {
    /// Its place in the test's stream, from 0.
    pub seq: u64,
    /// The SSE event name; `None` for an interval.
    pub name: Option<&'static str>,
    /// The `data:` JSON.
    pub data: Arc<str>,
}

/// What a test's readers are shown, in order, and what its status counts.
#[derive(Debug, Default)]
pub struct Log {
    events: VecDeque<Event>,
    next_seq: u64,
    kept_intervals: usize,
    kept_other: usize,
    bytes: usize,
    /// Intervals so far.
    pub intervals: u64,
    /// Points (sweep points, runs of repetitions, cells) so far.
    pub points: u64,
    /// The runs stored so far, in order.
    pub run_ids: Vec<i64>,
    /// A `begin` came: not a single test.
    pub begun: bool,
    /// The command wrote an event (it got past its checks).
    pub evented: bool,
    end_doc: Option<EndDoc>,
    /// The end, once there is one (its event is the last in the log).
    pub end: Option<End>,
    ended_at: Option<Instant>,
}

impl Log {
    /// The events from `seq` on (those still kept).
    pub fn since(&self, seq: u64) -> Vec<Event> {
        let from = self.events.partition_point(|e| e.seq < seq);
        self.events.range(from..).cloned().collect()
    }

    /// Bytes of event data kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// When it ended.
    pub fn ended_at(&self) -> Option<Instant> {
        self.ended_at
    }

    /// The command's end document, once (the end event is made of it).
    pub fn take_end_doc(&mut self) -> Option<EndDoc> {
        self.end_doc.take()
    }

    /// The end: its event, last.
    pub fn finish(&mut self, name: &'static str, data: String, end: End, limits: &Limits) {
        self.push(Some(name), data, limits);
        self.end = Some(end);
        self.ended_at = Some(Instant::now());
    }

    fn push(&mut self, name: Option<&'static str>, data: String, limits: &Limits) {
        let interval = name.is_none();
        self.bytes += data.len();
        self.events.push_back(Event {
            seq: self.next_seq,
            name,
            data: data.into(),
        });
        self.next_seq += 1;
        let (kept, max) = match interval {
            true => (&mut self.kept_intervals, limits.max_intervals),
            false => (&mut self.kept_other, limits.max_events),
        };
        *kept += 1;
        if *kept > max {
            let oldest = self
                .events
                .iter()
                .position(|e| e.name.is_none() == interval);
            if let Some(i) = oldest {
                self.remove(i);
            }
        }
        // Never more bytes than all finished tests may keep: the oldest events go first.
        while self.bytes > limits.max_kept_bytes && self.events.len() > 1 {
            self.remove(0);
        }
    }

    fn remove(&mut self, i: usize) {
        if let Some(old) = self.events.remove(i) {
            self.bytes -= old.data.len();
            match old.name {
                None => self.kept_intervals -= 1,
                Some(_) => self.kept_other -= 1,
            }
        }
    }

    /// One parsed line into the log.
    pub fn take(&mut self, parsed: Parsed, limits: &Limits) {
        match parsed {
            Parsed::Event(kind, data) => {
                self.evented = true;
                match kind {
                    Kind::Interval => self.intervals += 1,
                    Kind::Point => self.points += 1,
                    Kind::Begin => self.begun = true,
                    _ => {}
                }
                self.push(kind.sse_name(), data, limits);
            }
            Parsed::Stored(run_id, data) => {
                self.evented = true;
                self.run_ids.push(run_id);
                self.push(Kind::Stored.sse_name(), data, limits);
            }
            Parsed::End(doc) => {
                self.evented = true;
                self.end_doc = Some(doc);
            }
            Parsed::Invalid(data) => self.push(Kind::Note.sse_name(), data, limits),
            Parsed::Ignored => self.evented = true,
        }
    }
}

/// `64 MiB`, or `100 bytes` below a MiB.
pub fn size(bytes: usize) -> String {
    match bytes >> 20 {
        0 => format!("{bytes} bytes"),
        mib => format!("{mib} MiB"),
    }
}
