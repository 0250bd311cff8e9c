//! One line of `--json-stream`: an object naming itself in `event` (docs/RESULTS.md, "The event
//! stream"). [`Event`] is both what the writer serializes and what a reader parses, so the two
//! cannot disagree on a name or a field.
//!
//! Invariants: the JSON is the stream's as documented, byte for byte (fields in their declared
//! order, `planned_s`/`hosts` left out when empty); a point's and an end's document
//! ([`Payload`]) are carried as JSON text, never parsed into a map, so their field order and
//! numbers are kept as written. An event borrows what it carries ([`Cow`]), so writing one from
//! a runner's own values copies nothing; [`Event::parse`] borrows from the line.

use std::borrow::Cow;

use record::rpm::{RpmTick, RpmWay};
use record::IntervalSample;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use wire::msg::ServerInfo;
use wire::TestSpec;

/// One line of the stream (`{"event": "<name>", …}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    /// The server accepted a test.
    Started {
        /// The server's facts.
        server: Cow<'a, ServerInfo>,
        /// The test as accepted.
        spec: Cow<'a, TestSpec>,
    },
    /// One interval of the test, as the record's `intervals` hold it.
    Interval {
        /// The sample.
        data: Cow<'a, IntervalSample>,
    },
    /// A sweep, search, repetition, matrix or mesh starts.
    Begin {
        /// What runs (`linerate sweep size`).
        title: Cow<'a, str>,
        /// Points (runs, cells, ordered pairs) planned.
        points: usize,
        /// Each point's planned seconds, where known.
        #[serde(skip_serializing_if = "is_empty")]
        planned_s: Cow<'a, [f64]>,
        /// A mesh's hosts, in matrix order.
        #[serde(skip_serializing_if = "is_empty")]
        hosts: Cow<'a, [String]>,
    },
    /// A point (run, cell, pair) finished: `data` is what the end document keeps for it.
    Point {
        /// Its place in the plan (0-based).
        index: usize,
        /// `size=1024`, `64-byte frames`, `a -> b`.
        label: Cow<'a, str>,
        /// The point.
        data: Payload<'a>,
    },
    /// One interval of a `linerate rpm` direction, as its `timeline` keeps it.
    Tick {
        /// `up` or `down`.
        direction: RpmWay,
        /// The interval.
        data: Cow<'a, RpmTick>,
    },
    /// A line for the user.
    Note {
        /// The line, without `linerate: note: `.
        text: Cow<'a, str>,
    },
    /// A run was stored.
    Stored {
        /// Its id in the results database.
        run_id: i64,
    },
    /// The last line: the document `--json` prints.
    End {
        /// The document.
        data: Payload<'a>,
    },
}

// serde's `skip_serializing_if` hands over the field itself: a `&Cow`.
#[allow(clippy::ptr_arg)]
fn is_empty<T: Clone>(v: &Cow<'_, [T]>) -> bool {
    v.is_empty()
}

/// An event's name, the value of its `event` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `started`.
    Started,
    /// `interval`.
    Interval,
    /// `begin`.
    Begin,
    /// `point`.
    Point,
    /// `tick`.
    Tick,
    /// `note`.
    Note,
    /// `stored`.
    Stored,
    /// `end`.
    End,
}

impl Kind {
    /// Every kind, in the order a stream gives them.
    pub const ALL: [Kind; 8] = [
        Kind::Started,
        Kind::Interval,
        Kind::Begin,
        Kind::Point,
        Kind::Tick,
        Kind::Note,
        Kind::Stored,
        Kind::End,
    ];

    /// The `event` field's value.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Started => "started",
            Kind::Interval => "interval",
            Kind::Begin => "begin",
            Kind::Point => "point",
            Kind::Tick => "tick",
            Kind::Note => "note",
            Kind::Stored => "stored",
            Kind::End => "end",
        }
    }

    /// The kind named `name`; `None` for a name this version does not know.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A document carried as its JSON text: a point's data, the end's document.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Payload<'a>(Cow<'a, RawValue>);

impl PartialEq for Payload<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<'a> Payload<'a> {
    /// `value`, serialized once.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Payload<'static>> {
        serde_json::value::to_raw_value(value).map(|raw| Payload(Cow::Owned(raw)))
    }

    /// JSON text already checked (a line's field).
    pub fn borrowed(raw: &'a RawValue) -> Self {
        Payload(Cow::Borrowed(raw))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The document as a `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.get())
    }

    /// A payload that owns its text.
    pub fn into_owned(self) -> Payload<'static> {
        Payload(Cow::Owned(self.0.into_owned()))
    }
}

impl From<Box<RawValue>> for Payload<'static> {
    fn from(raw: Box<RawValue>) -> Self {
        Payload(Cow::Owned(raw))
    }
}

impl<'de> Deserialize<'de> for Payload<'static> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(|raw| Payload(Cow::Owned(raw)))
    }
}

/// The fields of each event as a line holds them (the `event` field is ignored here: it has
/// been read already). Each borrows from the line where it can.
mod line {
    use super::*;

    #[derive(Deserialize)]
    pub struct Head<'a> {
        #[serde(borrow)]
        pub event: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    pub struct Started {
        pub server: ServerInfo,
        pub spec: TestSpec,
    }
    #[derive(Deserialize)]
    pub struct Interval {
        pub data: IntervalSample,
    }
    #[derive(Deserialize)]
    pub struct Begin<'a> {
        #[serde(borrow)]
        pub title: Cow<'a, str>,
        pub points: usize,
        #[serde(default)]
        pub planned_s: Vec<f64>,
        #[serde(default)]
        pub hosts: Vec<String>,
    }
    #[derive(Deserialize)]
    pub struct Point<'a> {
        pub index: usize,
        #[serde(borrow)]
        pub label: Cow<'a, str>,
        #[serde(borrow)]
        pub data: &'a RawValue,
    }
    #[derive(Deserialize)]
    pub struct Tick {
        pub direction: RpmWay,
        pub data: RpmTick,
    }
    #[derive(Deserialize)]
    pub struct Note<'a> {
        #[serde(borrow)]
        pub text: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    pub struct Stored {
        pub run_id: i64,
    }
    #[derive(Deserialize)]
    pub struct End<'a> {
        #[serde(borrow)]
        pub data: &'a RawValue,
    }
}

impl<'a> Event<'a> {
    /// Its name.
    pub fn kind(&self) -> Kind {
        match self {
            Event::Started { .. } => Kind::Started,
            Event::Interval { .. } => Kind::Interval,
            Event::Begin { .. } => Kind::Begin,
            Event::Point { .. } => Kind::Point,
            Event::Tick { .. } => Kind::Tick,
            Event::Note { .. } => Kind::Note,
            Event::Stored { .. } => Kind::Stored,
            Event::End { .. } => Kind::End,
        }
    }

    /// The name in `line`'s `event` field, if it is an object with one; `Ok(None)` for a name
    /// this version does not know (a reader may skip it).
    pub fn kind_of(line: &str) -> serde_json::Result<Option<Kind>> {
        let head: line::Head = serde_json::from_str(line)?;
        Ok(Kind::from_name(&head.event))
    }

    /// Parses one line, borrowing from it; an unknown `event` is an error (see
    /// [`Event::kind_of`] to tell it apart).
    pub fn parse(line: &'a str) -> serde_json::Result<Event<'a>> {
        let Some(kind) = Event::kind_of(line)? else {
            return Err(serde_json::Error::custom("an unknown event"));
        };
        Ok(match kind {
            Kind::Started => {
                let l: line::Started = serde_json::from_str(line)?;
                Event::Started {
                    server: Cow::Owned(l.server),
                    spec: Cow::Owned(l.spec),
                }
            }
            Kind::Interval => Event::Interval {
                data: Cow::Owned(serde_json::from_str::<line::Interval>(line)?.data),
            },
            Kind::Begin => {
                let l: line::Begin = serde_json::from_str(line)?;
                Event::Begin {
                    title: l.title,
                    points: l.points,
                    planned_s: l.planned_s.into(),
                    hosts: l.hosts.into(),
                }
            }
            Kind::Point => {
                let l: line::Point = serde_json::from_str(line)?;
                Event::Point {
                    index: l.index,
                    label: l.label,
                    data: Payload::borrowed(l.data),
                }
            }
            Kind::Tick => {
                let l: line::Tick = serde_json::from_str(line)?;
                Event::Tick {
                    direction: l.direction,
                    data: Cow::Owned(l.data),
                }
            }
            Kind::Note => Event::Note {
                text: serde_json::from_str::<line::Note>(line)?.text,
            },
            Kind::Stored => Event::Stored {
                run_id: serde_json::from_str::<line::Stored>(line)?.run_id,
            },
            Kind::End => Event::End {
                data: Payload::borrowed(serde_json::from_str::<line::End>(line)?.data),
            },
        })
    }

    /// The same event, owning what it carries.
    pub fn into_owned(self) -> Event<'static> {
        fn own<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
            Cow::Owned(c.into_owned())
        }
        match self {
            Event::Started { server, spec } => Event::Started {
                server: own(server),
                spec: own(spec),
            },
            Event::Interval { data } => Event::Interval { data: own(data) },
            Event::Begin {
                title,
                points,
                planned_s,
                hosts,
            } => Event::Begin {
                title: own(title),
                points,
                planned_s: own(planned_s),
                hosts: own(hosts),
            },
            Event::Point { index, label, data } => Event::Point {
                index,
                label: own(label),
                data: data.into_owned(),
            },
            Event::Tick { direction, data } => Event::Tick {
                direction,
                data: own(data),
            },
            Event::Note { text } => Event::Note { text: own(text) },
            Event::Stored { run_id } => Event::Stored { run_id },
            Event::End { data } => Event::End {
                data: data.into_owned(),
            },
        }
    }
}

/// Serde's side of [`Event::parse`]: the object is read whole as JSON text first (an
/// internally tagged enum cannot hold a [`RawValue`] through serde's buffering), then parsed.
impl<'de> Deserialize<'de> for Event<'static> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        Event::parse(raw.get())
            .map(Event::into_owned)
            .map_err(D::Error::custom)
    }
}
