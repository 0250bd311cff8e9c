//! What a run produces, as stored and exported: [`schema::RunRecord`] with its intervals and
//! summary, and [`store`], the embedded database every run is written to. Every field's unit is
//! in its name; docs/RESULTS.md says what each one means and which end measured it.
//!
//! Depends on `wire` for the spec (the same `TestSpec` the server received, so every stored run
//! can be re-run) and on `measure` for value types. Records of an older layout read as the
//! current one ([`layout_v1`]).

pub mod efficiency;
pub mod layout_v1;
pub mod limits;
pub mod link_speed;
pub mod rpm;
pub mod schema;
pub mod status;
pub mod store;

pub use efficiency::Efficiency;
pub use limits::{LimitedBy, LossBounds, LossCauses, LossRange, Shaper, Verdict};
pub use link_speed::LinkSpeedSource;
pub use schema::{
    CpuSummary, End, FlowInterval, FlowSummary, Hosts, IntervalCpu, IntervalSample, IntervalTcp,
    PpsCell, RrInterval, RrSummary, RunRecord, StreamSpread, StreamSummary, Summary, TcpTime,
    UdpInterval, UdpSummary, SCHEMA_VERSION,
};
pub use status::{RunShape, RunStatus};
