//! The live-event vocabulary: what a running test, sweep or rpm run reports as it goes ([`Observer`]), the `--json-stream` line each report becomes ([`Event`], written by [`JsonLines`], read back by the UI), and the stop flag every loop checks ([`Signal`]).
//!
//! One definition: the event names and fields exist here only (docs/RESULTS.md, "The event
//! stream"), serialized and parsed by the same type, so the writer and its readers cannot drift.
//! Nothing here measures or prints; a sink decides what to show.

pub mod event;
pub mod json_lines;
pub mod observer;

pub use event::{Event, Kind, Payload};
pub use json_lines::JsonLines;
pub use measure::signal::Signal;
pub use observer::{Observer, Silent, ToJson};

#[cfg(test)]
mod tests;
