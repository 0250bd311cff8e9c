//! What a run produces, as stored and exported: [`schema::RunRecord`] with its intervals and
//! summary, the verdicts and figures derived from it ([`limits`], [`efficiency`], [`rpm`],
//! [`status`]), and what a results store hands out with it ([`stored`], [`tags`]). Every
//! field's unit is in its name; docs/RESULTS.md says what each one means and which end
//! measured it.
//!
//! Types and their pure logic only: no database, no I/O. The stores (`results::store` on
//! SQLite, `pgstore` on PostgreSQL) sit above this crate, so a crate that only reads or builds
//! records (analysis, events, sweeps, reports) compiles no database driver.
//!
//! Depends on `wire` for the spec (the same `TestSpec` the server received, so every stored run
//! can be re-run) and on `measure` for value types. Records of an older layout read as the
//! current one ([`layout_v1`]); the JSON layout is the stores' on-disk format, so a change
//! here is a [`SCHEMA_VERSION`] change.

pub mod bounds;
pub mod efficiency;
pub mod frames;
pub mod layout_v1;
pub mod limits;
pub mod link_speed;
pub mod rpm;
mod run_record;
pub mod schema;
pub mod status;
pub mod stored;
pub mod summary;
pub mod summary_layout;
#[cfg(test)]
mod summary_tests;
pub mod tags;

pub use efficiency::Efficiency;
pub use frames::{FrameSummary, InterfaceFrames};
pub use limits::{LimitedBy, LossBounds, LossCauses, LossRange, Shaper, Verdict};
pub use link_speed::LinkSpeedSource;
pub use measure::host::HostFacts;
pub use schema::{
    CpuSummary, End, FlowInterval, FlowSummary, Hosts, IntervalCpu, IntervalSample, IntervalTcp,
    LatencyUnderLoad, PpsCell, RrInterval, RrSummary, RunRecord, StreamSpread, StreamSummary,
    Summary, TcpTime, UdpInterval, UdpSummary, SCHEMA_VERSION,
};
pub use status::{RunShape, RunStatus};
pub use stored::{parse_kind, KindError, RunId, RunIdError, RunRow, StoredRun};
pub use summary::{
    DatagramFamily, Family, NotCarried, RpmFamily, StreamFamily, TcpFigures, TransactionFamily,
};
pub use summary_layout::MixedFamilies;
pub use tags::{Tag, TagError, Tags};
/// A record's kind (`RunRecord::kind`, `RunRow::kind`, [`parse_kind`]): part of the record's
/// vocabulary, so a store names it here.
pub use wire::TestKind;
