//! A mesh's pairs as third-party tests (`linerate mesh`): each pair's `from` host is a relay
//! (`serve --relay`) that runs the test as a client towards its `to` host, through
//! `session::client::run` with `ClientConfig::relay` set; the exchange itself is
//! `session::relay`'s. The [`PairRunner`] the binary hands to [`run_mesh`](super::run_mesh).
//!
//! Invariant: a pair whose far end went away mid-test is a failed cell
//! ([`PairError::Incomplete`], with what was measured), never a figure.

use events::{Signal, Silent};
use record::RunRecord;
use session::auth::ClientKey;
use session::client::{self, ClientConfig};
use session::relay::RelayTo;
use session::target::{resolve, ResolveError, Target};
use wire::msg::Family;
use wire::TestSpec;

use super::PairRunner;

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
