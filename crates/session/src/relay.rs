//! Third-party tests (`--from`): a controller asks a linerate server (the relay, `serve
//! --relay`) to run a test as a client towards another linerate server, and receives what a
//! local client would have: the far server's facts, each interval, the finished record.
//!
//! The exchange on the controller's connection to the relay: `relay` (wire's
//! `ClientMsg::Relay`) / [`RelayMsg::Relaying`], then [`RelayMsg::Started`],
//! [`RelayMsg::Interval`] each interval, [`RelayMsg::Record`] (the record without its
//! intervals), [`RelayMsg::Intervals`] in slices and [`RelayMsg::Done`]; the controller may send
//! `stop` at any time (Ctrl-C), and the relay then stops its test early and reports what it
//! measured. Either side's `error` ends it. All times are the relay's: it is the test's client.
//!
//! The controller side is `client::run` with [`ClientConfig::relay`](crate::client::ClientConfig)
//! set; the relay's side is `server/relay.rs`. A mesh runs its pairs as such tests through
//! the `sweep` crate's `mesh::RelayPairs`.

use record::{IntervalSample, RunRecord};
use serde::{Deserialize, Serialize};
use wire::auth::Mac;
use wire::msg::{Family, ServerInfo};

/// Most interval samples in one [`RelayMsg::Intervals`] frame: each is well under 16 KiB even
/// with many streams, so a frame stays far below the frame cap however long the test ran.
pub const INTERVALS_PER_FRAME: usize = 32;

/// The server a relayed test goes to, as the relay names and resolves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayTo {
    /// A name or an address, resolved on the relay.
    pub host: String,
    /// Its linerate port.
    pub port: u16,
    /// The family it resolves in (`-4`, `-6`).
    pub family: Family,
}

impl RelayTo {
    /// `from` and `to` of a relayed run (`relay`, none for a run from this host), from the
    /// relay's label and the far server as the command line named them.
    pub fn tags(relay: Option<&RelayTo>, relay_label: &str) -> Vec<(String, String)> {
        relay.map_or_else(Vec::new, |to| {
            vec![
                ("from".to_string(), relay_label.to_string()),
                ("to".to_string(), to.host.clone()),
            ]
        })
    }
}

impl RelayTo {
    /// `HOST:PORT` as records and errors show it.
    pub fn describe(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Messages from the relay to the controller.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RelayMsg {
    /// The relay took the test on and is connecting to the far server.
    Relaying {
        /// Facts about the relay (the test's client).
        relay: ServerInfo,
        /// The relay's proof of the controller's key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<Mac>,
    },
    /// The far server accepted the test.
    Started {
        /// Its facts, as it sent them to the relay.
        server: ServerInfo,
    },
    /// One interval of the running test.
    Interval {
        /// As the relay's client measured it.
        sample: Box<IntervalSample>,
    },
    /// The finished test, its intervals left out (they follow in [`RelayMsg::Intervals`]).
    Record {
        /// The record as the relay's client made it.
        record: Box<RunRecord>,
    },
    /// The record's intervals, in order, at most [`INTERVALS_PER_FRAME`] at a time.
    Intervals {
        /// The next slice.
        samples: Vec<IntervalSample>,
    },
    /// All of the record has been sent.
    Done,
    /// The relay refuses, or its test failed; the message names why.
    Error {
        /// What went wrong.
        message: String,
    },
}
