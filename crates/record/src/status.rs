//! How a stored run ended ([`RunStatus`]) and the shape that tells runs apart in a listing
//! ([`RunShape`]: direction, streams, status), derived from what every record already holds —
//! `summary.interrupted` (Ctrl-C), `summary.until_stopped` (`-t 0`: a Ctrl-C is the planned
//! end), `summary.incomplete` (the server went away) and the streams' `error`s — so runs stored
//! before this existed get their status too, with nothing migrated.
//!
//! Invariant: the status is a function of the record alone; a listing and a comparison of the
//! same run always agree on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wire::spec::{Direction, FamilyId, TestSpec};

use crate::schema::RunRecord;

/// How a run ended, as `linerate runs` lists it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Ran its whole time, every stream ended cleanly.
    #[default]
    Ok,
    /// Stopped early by the user (Ctrl-C): the figures cover what ran. A run asked to last
    /// until stopped (`-t 0`) and stopped so is `Ok`: nothing it was asked for was cut.
    Interrupted,
    /// The server went away mid-test (killed, or the path went black): what only the server
    /// measures is missing, so throughput may read low or zero.
    Incomplete,
    /// Ran to its end, but a stream failed (its error is in the record).
    Error,
}

impl RunStatus {
    /// The name listings print: `ok`, `interrupted`, `incomplete`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Error => "error",
        }
    }

    /// Whether the run measured its whole test: only such runs go into a group's median
    /// unless the user asks for the others too (`--include-incomplete`).
    pub fn is_ok(self) -> bool {
        self == RunStatus::Ok
    }

    /// The status from the three things a record says about its end. A lost server outranks
    /// the rest (its streams fail as a consequence, and its figures are the least whole); a
    /// failed stream outranks a Ctrl-C.
    pub fn from_parts(interrupted: bool, incomplete: bool, stream_error: bool) -> RunStatus {
        match (incomplete, stream_error, interrupted) {
            (true, _, _) => RunStatus::Incomplete,
            (false, true, _) => RunStatus::Error,
            (false, false, true) => RunStatus::Interrupted,
            (false, false, false) => RunStatus::Ok,
        }
    }

    /// The status of `record`.
    pub fn of(record: &RunRecord) -> RunStatus {
        let s = &record.summary;
        let stream_error = s
            .flows
            .iter()
            .flat_map(|f| &f.streams)
            .any(|st| st.error.is_some());
        RunStatus::from_parts(
            cut_short(s.interrupted, s.until_stopped),
            s.incomplete.is_some(),
            stream_error,
        )
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a Ctrl-C cut the run short: it was interrupted and was not asked to run until then
/// (`-t 0`).
fn cut_short(interrupted: bool, until_stopped: bool) -> bool {
    interrupted && !until_stopped
}

/// What tells a run apart from others of its kind in a listing, besides its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    /// Which way the data flowed (stream kinds only).
    pub direction: Option<Direction>,
    /// Parallel streams per direction.
    pub streams: u16,
    /// How the run ended.
    pub status: RunStatus,
}

impl RunShape {
    /// The shape of `record`.
    pub fn of(record: &RunRecord) -> RunShape {
        RunShape {
            direction: direction_of(&record.spec),
            streams: record.spec.streams,
            status: RunStatus::of(record),
        }
    }

    /// The shape from the pieces a store extracts from a stored record without decoding all
    /// of it: `[schema_version, spec, interrupted, incomplete, stream_error, until_stopped]` as
    /// one JSON array
    /// (SQLite's multi-path `json_extract`, PostgreSQL's `json_build_array`). A spec of an
    /// older layout is converted first; a spec that does not read leaves direction and streams
    /// unknown rather than failing the listing.
    pub fn from_extract(json: &str) -> RunShape {
        let parts: Vec<Value> = serde_json::from_str(json).unwrap_or_default();
        let get = |i: usize| parts.get(i).cloned().unwrap_or(Value::Null);
        let truthy = |v: Value| match v {
            Value::Bool(b) => b,
            Value::Number(n) => n.as_i64().is_some_and(|n| n != 0),
            _ => false,
        };
        // SQLite hands an object back as JSON text inside the array only when asked for one
        // path; with several it nests the object itself. Accept both.
        let spec = match get(1) {
            Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::Null),
            v => v,
        };
        let mut wrapped = serde_json::json!({ "schema_version": get(0), "spec": spec });
        let spec: Option<TestSpec> = crate::layout_v1::upgrade(&mut wrapped)
            .ok()
            .and_then(|()| serde_json::from_value(wrapped["spec"].take()).ok());
        let incomplete = !matches!(get(3), Value::Null);
        RunShape {
            direction: spec.as_ref().and_then(direction_of),
            streams: spec.as_ref().map_or(0, |s| s.streams),
            status: RunStatus::from_parts(
                cut_short(truthy(get(2)), truthy(get(5))),
                incomplete,
                truthy(get(4)),
            ),
        }
    }
}

/// The direction of a stream test; `None` for request/response, which has none.
fn direction_of(spec: &TestSpec) -> Option<Direction> {
    (spec.kind().row().family != FamilyId::Transaction).then(|| spec.direction())
}

/// A direction as listings print it: `send`, `reverse`, `bidir`.
pub fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Reverse => "reverse",
        Direction::Bidir => "bidir",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_server_outranks_a_failed_stream_which_outranks_ctrl_c() {
        use RunStatus::*;
        assert_eq!(RunStatus::from_parts(true, true, true), Incomplete);
        assert_eq!(RunStatus::from_parts(true, false, true), Error);
        assert_eq!(RunStatus::from_parts(true, false, false), Interrupted);
        assert_eq!(RunStatus::from_parts(false, false, false), Ok);
    }

    #[test]
    fn a_shape_reads_from_extracted_pieces_of_either_layout() {
        let v2 = r#"[2,{"duration_ms":1000,"interval_ms":1000,"streams":2,"window_bytes":null,"link_speed_bps":null,"server_cpu":null,"client_cpu":null,"params":{"kind":"tcp_stream","stream":{"direction":"bidir","transport":"tcp","write_len_bytes":524288,"send_mode":"splice"},"tcp":{"mss_bytes":null,"no_delay":false,"congestion":null,"tos":null}}},0,"the server went away",0]"#;
        let s = RunShape::from_extract(v2);
        assert_eq!(s.direction, Some(Direction::Bidir));
        assert_eq!(s.streams, 2);
        assert_eq!(s.status, RunStatus::Incomplete);
        let v1 = r#"[1,"{\"kind\":\"tcp_stream\",\"transport\":\"tcp\",\"duration_ms\":2000,\"interval_ms\":1000,\"streams\":4,\"direction\":\"reverse\",\"write_len_bytes\":131072,\"window_bytes\":null,\"mss_bytes\":null,\"no_delay\":false,\"congestion\":null,\"tos\":null,\"link_speed_bps\":null}",true,null,false]"#;
        let s = RunShape::from_extract(v1);
        assert_eq!(s.direction, Some(Direction::Reverse));
        assert_eq!(s.streams, 4);
        assert_eq!(s.status, RunStatus::Interrupted);
        // `-t 0` stopped by Ctrl-C: the planned end, so `ok`; a failed stream still shows.
        let until = |tail: &str| RunShape::from_extract(&format!("[2,null,1,null,{tail}]")).status;
        assert_eq!(until("0,1"), RunStatus::Ok);
        assert_eq!(until("1,1"), RunStatus::Error);
        assert_eq!(until("0,null"), RunStatus::Interrupted);
        let s = RunShape::from_extract("not json");
        assert_eq!((s.direction, s.streams, s.status), (None, 0, RunStatus::Ok));
    }
}
