//! A test's events as Server-Sent Events (`GET /api/tests/ID/events`, docs/API.md): each event
//! of its log in order (`started`, one unnamed event per interval, `begin`, `point`, `note`,
//! `stored`), then `summary` or `error`, and the stream ends. A reader that connects late is
//! sent what the test's log still holds first, then follows it live.
//!
//! The events' JSON was made when the command's line was read; here it is only sent.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};

use crate::registry::TestEntry;

/// Where a reader is in a test's log.
#[derive(Debug, Default)]
struct Cursor {
    /// The next event to send, counted from the test's first.
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
            if cursor.ended {
                return None;
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

/// The events after `cursor`, moving it on. The log is locked only to clone the events'
/// shared data.
fn read(entry: &TestEntry, cursor: &mut Cursor) -> Vec<Event> {
    let (events, ended) = {
        let log = entry.log();
        (log.since(cursor.next), log.end.is_some())
    };
    let mut out = Vec::with_capacity(events.len());
    for event in events {
        let sse = Event::default().data(&*event.data);
        out.push(match event.name {
            Some(name) => sse.event(name),
            None => sse,
        });
        cursor.next = event.seq + 1;
    }
    // The end's event is the log's last: once it has ended, this batch holds it.
    cursor.ended = ended;
    out
}
