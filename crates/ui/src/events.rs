//! A test's events as Server-Sent Events (`GET /api/tests/ID/events`): `event: started` (the
//! server and the spec), one unnamed event per interval whose `data:` is the
//! [`results::IntervalSample`], then `event: summary` (the stored run's id and the summary) or
//! `event: error`, and the stream ends. A reader that connects late is sent what the test's
//! log still holds first (its start, its last intervals), then follows it live.
//!
//! The samples are turned into JSON here, per reader, not in the measuring thread.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde_json::json;

use crate::registry::{End, TestEntry};

/// Where a reader is in a test's log.
#[derive(Debug, Default)]
struct Cursor {
    started: bool,
    /// The next interval to send, counted from the test's first.
    next: u64,
    ended: bool,
}

/// The test's events from the start, as an SSE response that ends with the test.
pub fn sse(entry: Arc<TestEntry>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = entry.subscribe();
    let state = (entry, rx, Cursor::default());
    let batches = stream::unfold(state, |(entry, mut rx, mut cursor)| async move {
        loop {
            if cursor.ended {
                return None;
            }
            rx.borrow_and_update();
            let batch = read(&entry, &mut cursor);
            if !batch.is_empty() {
                return Some((batch, (entry, rx, cursor)));
            }
            // The sender lives as long as the entry we hold; an error cannot come, but would
            // end the stream rather than spin.
            if rx.changed().await.is_err() {
                return None;
            }
        }
    });
    let events = futures_util::StreamExt::flat_map(batches, |batch| {
        stream::iter(batch.into_iter().map(Ok::<_, Infallible>))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// The events after `cursor`, moving it on. The log is locked only to take references; the
/// JSON is made after, so the test's own thread never waits on a reader's serializing.
fn read(entry: &TestEntry, cursor: &mut Cursor) -> Vec<Event> {
    let (started, samples, end) = {
        let log = entry.log();
        let started = (!cursor.started).then(|| log.started.clone()).flatten();
        // Intervals dropped before this reader came are skipped: the log keeps the last ones.
        cursor.next = cursor.next.max(log.dropped);
        let skip = (cursor.next - log.dropped) as usize;
        let samples: Vec<_> = log.intervals.iter().skip(skip).cloned().collect();
        (started, samples, log.end.clone())
    };
    let mut out = Vec::new();
    if let Some((server, spec)) = started {
        let data =
            json!({"id": entry.id, "command": entry.command, "server": server, "spec": spec});
        out.push(Event::default().event("started").data(data.to_string()));
        cursor.started = true;
    }
    for sample in samples {
        let data = serde_json::to_string(&*sample)
            .unwrap_or_else(|e| json!({"error": e.to_string()}).to_string());
        out.push(Event::default().data(data));
        cursor.next += 1;
    }
    if let Some(end) = &end {
        out.push(end_event(entry.id, end));
        cursor.ended = true;
    }
    out
}

/// `summary` or `error`.
fn end_event(id: u64, end: &End) -> Event {
    match end {
        End::Finished(f) => {
            let data = json!({
                "id": id,
                "run_id": f.run_id,
                "kind": f.record.kind,
                "target": f.record.target,
                "interrupted": f.record.summary.interrupted,
                "summary": f.record.summary,
            });
            Event::default().event("summary").data(data.to_string())
        }
        End::Failed(message) => Event::default()
            .event("error")
            .data(json!({"id": id, "error": message}).to_string()),
    }
}
