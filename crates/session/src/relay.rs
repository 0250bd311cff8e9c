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
//! set; the relay's side is `server/relay.rs`.

use engine::Signal;
use record::{IntervalSample, RunRecord};
use serde::{Deserialize, Serialize};
use sweep::mesh::PairRunner;
use wire::auth::Mac;
use wire::msg::{Family, ServerInfo};
use wire::TestSpec;

use crate::auth::ClientKey;
use crate::client::{self, ClientConfig, Silent};
use crate::target::{resolve, ResolveError, Target};

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

/// A mesh's pairs as third-party tests: each `from` host is the relay, on `port` like every
/// host, and tests towards `to`.
pub struct RelayPairs {
    /// The test every pair runs.
    pub spec: TestSpec,
    /// Every host's linerate port.
    pub port: u16,
    /// The family names resolve in.
    pub family: Family,
    /// The key to prove to the relays (`--auth-key`).
    pub key: Option<ClientKey>,
    /// Ctrl-C: each running pair stops early.
    pub interrupt: Signal,
}

/// Why a mesh's pair made no figure: its cell shows these words.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    /// The `from` host (the relay) has no address.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The test did not run: no connection, a refusal, a protocol failure.
    #[error(transparent)]
    Client(#[from] client::ClientError),
    /// The test ran but a far end went away mid-test (the record's `incomplete` note).
    #[error("{why}")]
    Incomplete {
        /// What went away, and when.
        why: String,
        /// What was measured before it did.
        record: Box<RunRecord>,
    },
}

impl PairRunner for RelayPairs {
    type Output = RunRecord;
    type Error = PairError;

    fn run_pair(&self, from: &str, to: &str) -> Result<RunRecord, PairError> {
        let addr = resolve(from, self.port, self.family)?;
        let config = ClientConfig {
            key: self.key.clone(),
            relay: Some(RelayTo {
                host: to.to_string(),
                port: self.port,
                family: self.family,
            }),
            ..ClientConfig::new(
                Target::Tcp { addr, bind: None },
                from.to_string(),
                self.spec.clone(),
                self.interrupt.clone(),
            )
        };
        let record = client::run(&config, &mut Silent)?;
        // A pair whose far end went away is a failed cell, not a figure.
        match record.summary.incomplete.clone() {
            Some(why) if !record.summary.interrupted => Err(PairError::Incomplete {
                why,
                record: Box::new(record),
            }),
            _ => Ok(record),
        }
    }
}
