//! How a [`RunRecord`] is made and what it says of itself: [`RunRecord::new`], the one
//! constructor every producer (the linerate client, the iperf3 client and server, rpm's
//! per-direction runs) calls, so a field added to the record is set in one place; and the
//! questions every reader asks of a record ([`RunRecord::is_rpm`]), answered in one place.
//!
//! Invariants of a new record: its `kind` is its spec's, its summary's family the one of that
//! kind ([`crate::Family::fits`]; checked in debug builds), its layout the current
//! [`SCHEMA_VERSION`], and the server's host facts are kept once, in `hosts` (the
//! `server.host` the server sent is cleared). The JSON a record writes does not depend on
//! how it was made.

use wire::{msg::ServerInfo, TestSpec};

use crate::rpm::StoredRpm;
use crate::schema::{Hosts, RunRecord, Summary, SCHEMA_VERSION};

impl RunRecord {
    /// The record of a run of `spec` against `target` (`HOST:PORT`, `unix:PATH`, `iperf3
    /// client at …`), started at `started_at_unix_ms` (Unix epoch ms), with the server's
    /// `server` facts, both hosts' facts and the run's summary. Its intervals start empty and
    /// its `user` unset: a producer that has them sets them after.
    pub fn new(
        spec: TestSpec,
        target: String,
        started_at_unix_ms: u64,
        server: ServerInfo,
        hosts: Option<Hosts>,
        summary: Summary,
    ) -> RunRecord {
        debug_assert!(
            summary.family.fits(spec.kind()),
            "a {} summary for a {} run",
            summary.family.name(),
            spec.kind().as_str()
        );
        RunRecord {
            kind: spec.kind(),
            schema_version: SCHEMA_VERSION,
            spec,
            target,
            started_at_unix_ms,
            // Stored once, in `hosts.server`.
            server: ServerInfo {
                host: None,
                ..server
            },
            hosts,
            user: None,
            intervals: Vec::new(),
            summary,
        }
    }

    /// The `linerate rpm` direction this run is, if it is one: its figures (its summary's
    /// [`crate::Family::Rpm`]). Every reader asks here.
    pub fn as_rpm(&self) -> Option<&StoredRpm> {
        self.summary.rpm()
    }

    /// Whether this run is a `linerate rpm` direction ([`RunRecord::as_rpm`]).
    pub fn is_rpm(&self) -> bool {
        self.as_rpm().is_some()
    }
}
