//! What a sweep produces: one [`SweepPoint`] per value, each holding the stored runs behind it,
//! and a [`SweepSummary`] (peak throughput and where; for message sizes also n½ and the
//! small-message round trip). Numbers only, in the units their names say; the writers in
//! `output.rs` of the binary turn them into text.
//!
//! Definitions (docs/METHODOLOGY.md should carry them):
//! - a point's figure is the median over its runs (one run without `--repeat`);
//! - peak: the highest point throughput (at the first value reaching it);
//! - n½ (Hockney's half-performance length): the smallest message size whose throughput
//!   reaches half the peak;
//! - small-message latency: the median round trip at the smallest size measured.
//!
//! Interrupted points are kept, flagged, and left out of the summary.

use record::RunRecord;
use serde::{Deserialize, Serialize};
use wire::spec::FamilyId;
use wire::TestKind;

use crate::knob::{KnobPlan, KnobRun};
use crate::param::Parameter;
use crate::values::SweepValue;
use analysis::repeat::RepeatSummary;

/// What is swept: the result's `kind` (`sweep_size`, `sweep_streams`, …, `sweep_knob`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SweepKind {
    /// Message sizes, NetPIPE-style: a stream test and a request/response test per size.
    #[serde(rename = "sweep_size")]
    Size,
    /// Parallel streams ([`Parameter::Streams`]).
    #[serde(rename = "sweep_streams")]
    Streams,
    /// Socket buffer size ([`Parameter::Window`]).
    #[serde(rename = "sweep_window")]
    Window,
    /// TCP maximum segment size ([`Parameter::Mss`]).
    #[serde(rename = "sweep_mss")]
    Mss,
    /// UDP send rate ([`Parameter::Rate`]).
    #[serde(rename = "sweep_rate")]
    Rate,
    /// Bytes per write ([`Parameter::Payload`]).
    #[serde(rename = "sweep_payload")]
    Payload,
    /// A user command's setting (`--pre … {value}`).
    #[serde(rename = "sweep_knob")]
    Knob,
    /// Offered load, a share of the measured capacity, with round trips at each point.
    #[serde(rename = "sweep_load")]
    Load,
}

impl From<Parameter> for SweepKind {
    fn from(p: Parameter) -> Self {
        match p {
            Parameter::Streams => SweepKind::Streams,
            Parameter::Window => SweepKind::Window,
            Parameter::Mss => SweepKind::Mss,
            Parameter::Rate => SweepKind::Rate,
            Parameter::Payload => SweepKind::Payload,
        }
    }
}

impl SweepKind {
    /// The result's `kind`, as serialized: `sweep_size`, `sweep_streams`, …, `sweep_knob`.
    pub fn name(self) -> &'static str {
        match self {
            SweepKind::Size => "sweep_size",
            SweepKind::Streams => "sweep_streams",
            SweepKind::Window => "sweep_window",
            SweepKind::Mss => "sweep_mss",
            SweepKind::Rate => "sweep_rate",
            SweepKind::Payload => "sweep_payload",
            SweepKind::Knob => "sweep_knob",
            SweepKind::Load => "sweep_load",
        }
    }

    /// The swept value's name with its unit.
    pub fn parameter(self) -> SweepParameter {
        match self {
            SweepKind::Size => SweepParameter::SizeBytes,
            SweepKind::Streams => SweepParameter::Streams,
            SweepKind::Window => SweepParameter::WindowBytes,
            SweepKind::Mss => SweepParameter::MssBytes,
            SweepKind::Rate => SweepParameter::RateBps,
            SweepKind::Payload => SweepParameter::PayloadBytes,
            SweepKind::Knob => SweepParameter::Knob,
            SweepKind::Load => SweepParameter::LoadPct,
        }
    }
}

/// The swept value's name with its unit: the result's `parameter`, the tag key on every stored
/// run, and the value's CSV/table column (`size_bytes`, `streams`, …, `knob`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SweepParameter {
    /// Message size, bytes.
    #[serde(rename = "size_bytes")]
    SizeBytes,
    /// Parallel streams per direction.
    #[serde(rename = "streams")]
    Streams,
    /// Socket buffer size, bytes.
    #[serde(rename = "window_bytes")]
    WindowBytes,
    /// TCP maximum segment size, bytes.
    #[serde(rename = "mss_bytes")]
    MssBytes,
    /// UDP send rate per stream, bits/s.
    #[serde(rename = "rate_bps")]
    RateBps,
    /// Bytes per write.
    #[serde(rename = "payload_bytes")]
    PayloadBytes,
    /// A knob command's value, as given.
    #[serde(rename = "knob")]
    Knob,
    /// Offered load, percent of the measured capacity.
    #[serde(rename = "load_pct")]
    LoadPct,
}

impl SweepParameter {
    /// The name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            SweepParameter::SizeBytes => "size_bytes",
            SweepParameter::Streams => "streams",
            SweepParameter::WindowBytes => "window_bytes",
            SweepParameter::MssBytes => "mss_bytes",
            SweepParameter::RateBps => "rate_bps",
            SweepParameter::PayloadBytes => "payload_bytes",
            SweepParameter::Knob => "knob",
            SweepParameter::LoadPct => "load_pct",
        }
    }
}

impl std::fmt::Display for SweepParameter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run behind a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRun {
    /// Its id in the results database, when stored.
    pub run_id: Option<i64>,
    /// The run.
    pub record: RunRecord,
}

/// Why a sweep (or a repetition, or an rfc2544 search) ended before its last point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A run or a knob command failed; the message says which and why.
    Failed {
        /// One line.
        message: String,
    },
}

/// One value of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The value.
    pub value: SweepValue,
    /// Every run, in order (a size point: its stream runs, then its request/response runs).
    pub runs: Vec<PointRun>,
    /// Median receiver throughput of the stream runs, bits/s.
    pub throughput_bps: Option<f64>,
    /// Median of the request/response runs' median round trips, µs.
    pub rtt_p50_us: Option<f64>,
    /// Median of the request/response runs' 99th-percentile round trips, µs.
    #[serde(default)]
    pub rtt_p99_us: Option<f64>,
    /// Median of the stream runs' loaded probe medians (`--latency`), µs.
    #[serde(default)]
    pub loaded_rtt_p50_us: Option<f64>,
    /// Median of the stream runs' loaded probe 99th percentiles, µs.
    #[serde(default)]
    pub loaded_rtt_p99_us: Option<f64>,
    /// Median transactions/s of the request/response runs.
    pub transactions_per_s: Option<f64>,
    /// Median loss of the UDP stream runs, percent.
    pub loss_pct: Option<f64>,
    /// Median client data-thread CPU over all runs, % of one core.
    pub local_cpu_pct: Option<f64>,
    /// Median server data-thread CPU, % of one core.
    pub remote_cpu_pct: Option<f64>,
    /// Median retransmits of the TCP stream runs.
    pub retransmits: Option<f64>,
    /// With `--repeat`: statistics per test of the point (size points: stream, then rr).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeat: Vec<RepeatSummary>,
    /// `sweep knob`: the commands run before and after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knob: Vec<KnobRun>,
    /// Whether a run of this point was interrupted (its figures cover what ran).
    pub interrupted: bool,
}

impl SweepPoint {
    /// A point for `value` with its figures computed from `runs`.
    pub fn new(value: SweepValue, runs: Vec<PointRun>) -> Self {
        let records: Vec<&RunRecord> = runs.iter().map(|r| &r.record).collect();
        let of = |keep: fn(TestKind) -> bool, f: fn(&RunRecord) -> Option<f64>| {
            let values: Vec<f64> = records
                .iter()
                .filter(|r| keep(r.kind))
                .filter_map(|r| f(r))
                .collect();
            analysis::stats::median(&values)
        };
        let stream = |k: TestKind| k.row().family != FamilyId::Transaction;
        let rr = |k: TestKind| k.row().family == FamilyId::Transaction;
        let any = |_: TestKind| true;
        Self {
            throughput_bps: of(stream, |r| Some(r.summary.throughput_bps)),
            rtt_p50_us: of(rr, |r| Some(r.summary.rr()?.latency_us?.p50)),
            rtt_p99_us: of(rr, |r| Some(r.summary.rr()?.latency_us?.p99)),
            loaded_rtt_p50_us: of(stream, |r| {
                Some(
                    r.summary
                        .latency_under_load()
                        .as_ref()?
                        .loaded
                        .latency_us?
                        .p50,
                )
            }),
            loaded_rtt_p99_us: of(stream, |r| {
                Some(
                    r.summary
                        .latency_under_load()
                        .as_ref()?
                        .loaded
                        .latency_us?
                        .p99,
                )
            }),
            transactions_per_s: of(rr, |r| Some(r.summary.rr()?.transactions_per_s)),
            loss_pct: of(stream, |r| Some(r.summary.udp()?.loss_pct)),
            local_cpu_pct: of(any, |r| Some(r.summary.local_cpu_pct)),
            remote_cpu_pct: of(any, |r| Some(r.summary.remote_cpu_pct)),
            retransmits: of(stream, |r| r.summary.retransmits().map(f64::from)),
            interrupted: records.iter().any(|r| r.summary.interrupted),
            value,
            runs,
            repeat: Vec::new(),
            knob: Vec::new(),
        }
    }

    /// The stored run ids, in order.
    pub fn run_ids(&self) -> Vec<i64> {
        self.runs.iter().filter_map(|r| r.run_id).collect()
    }
}

/// The sweep's headline figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct SweepSummary {
    /// Points measured to the end.
    pub points: usize,
    /// Highest point throughput, bits/s.
    pub peak_throughput_bps: Option<f64>,
    /// The value it was reached at (in the parameter's unit).
    pub peak_at: Option<f64>,
    /// Size sweeps: the smallest size reaching half the peak, bytes.
    pub n_half_bytes: Option<f64>,
    /// Size sweeps: the round trip at the smallest size measured, µs.
    pub small_message_rtt_us: Option<f64>,
    /// The size it was measured at, bytes.
    pub small_message_bytes: Option<f64>,
}

impl SweepSummary {
    /// The summary of `points` (sorted by value, as sweeps run them).
    pub fn of(kind: SweepKind, points: &[SweepPoint]) -> Self {
        let done: Vec<&SweepPoint> = points
            .iter()
            .filter(|p| !p.interrupted && !p.runs.is_empty())
            .collect();
        // The first point at the highest throughput: the smallest value that reaches it.
        let peak = done
            .iter()
            .filter_map(|p| Some((p.throughput_bps?, p)))
            .fold(
                None,
                |best: Option<(f64, &&SweepPoint)>, (t, p)| match best {
                    Some((b, _)) if b >= t => best,
                    _ => Some((t, p)),
                },
            );
        let mut s = SweepSummary {
            points: done.len(),
            peak_throughput_bps: peak.map(|(t, _)| t),
            peak_at: peak.and_then(|(_, p)| p.value.number),
            ..Default::default()
        };
        if kind == SweepKind::Size {
            if let Some(peak) = s.peak_throughput_bps {
                s.n_half_bytes = done
                    .iter()
                    .filter(|p| p.throughput_bps.is_some_and(|t| t >= peak / 2.0))
                    .filter_map(|p| p.value.number)
                    .min_by(f64::total_cmp);
            }
            let small = done
                .iter()
                .filter(|p| p.rtt_p50_us.is_some())
                .filter_map(|p| Some((p.value.number?, p.rtt_p50_us?)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            s.small_message_bytes = small.map(|(b, _)| b);
            s.small_message_rtt_us = small.map(|(_, r)| r);
        }
        s
    }
}

/// A whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    /// What was swept: `sweep_size`, `sweep_streams`, …, `sweep_knob`.
    pub kind: SweepKind,
    /// The swept value's name with its unit (`size_bytes`, `streams`, …, `knob`).
    pub parameter: SweepParameter,
    /// The test run at each point (size sweeps: the stream test; each point also runs the
    /// matching request/response test).
    pub test: TestKind,
    /// Where the server was.
    pub target: String,
    /// Tag `sweep_id` on every stored run of this sweep.
    pub sweep_id: String,
    /// Start, Unix epoch milliseconds.
    pub started_at_unix_ms: u64,
    /// `sweep knob`: the commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knob: Option<KnobPlan>,
    /// The points, in the order run.
    pub points: Vec<SweepPoint>,
    /// Headline figures.
    pub summary: SweepSummary,
    /// Why it ended early, if it did; the points run until then are kept.
    pub stopped: Option<Stopped>,
    /// Things the user should know (sizes dropped for the path's MTU, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `sweep load`: the capacity the loads are shares of, the offered loads and the knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::load::LoadSummary>,
}

impl SweepResult {
    /// A `kind` sweep of `test` against `target` that began at `started_at_unix_ms` (also its
    /// `sweep_id`), before any point.
    pub fn begun(kind: SweepKind, test: TestKind, target: String, started_at_unix_ms: u64) -> Self {
        Self {
            kind,
            parameter: kind.parameter(),
            test,
            target,
            sweep_id: started_at_unix_ms.to_string(),
            started_at_unix_ms,
            knob: None,
            points: Vec::new(),
            summary: SweepSummary::default(),
            stopped: None,
            notes: Vec::new(),
            load: None,
        }
    }

    /// The stream runs of every finished point, for the report crate's throughput-by-size
    /// chart (`report::chart::render(ChartKind::MessageSize, …)`).
    pub fn stream_records(&self) -> Vec<RunRecord> {
        self.points
            .iter()
            .filter(|p| !p.interrupted)
            .flat_map(|p| p.runs.iter())
            .filter(|r| r.record.kind.row().family != FamilyId::Transaction)
            .map(|r| r.record.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::testing::{record_with, rr_with_rtt};

    fn size_point(bytes: u64, bps: f64, rtt: f64) -> SweepPoint {
        SweepPoint::new(
            SweepValue::number(bytes),
            vec![
                PointRun {
                    run_id: Some(1),
                    record: record_with("tcp", bps),
                },
                PointRun {
                    run_id: Some(2),
                    record: rr_with_rtt(rtt),
                },
            ],
        )
    }

    #[test]
    fn point_figures_come_from_the_matching_runs() {
        let p = size_point(64, 1e9, 20.0);
        assert_eq!(p.throughput_bps, Some(1e9));
        assert_eq!(p.rtt_p50_us, Some(20.0));
        assert_eq!(p.transactions_per_s, Some(50_000.0));
        assert_eq!(p.retransmits, Some(8.0));
        assert_eq!(p.run_ids(), [1, 2]);
        assert!(!p.interrupted);
    }

    #[test]
    fn peak_n_half_and_small_message_latency() {
        let points = vec![
            size_point(1, 1e6, 20.0),
            size_point(64, 60e6, 21.0),
            size_point(1024, 400e6, 30.0),
            size_point(4096, 520e6, 45.0),
            size_point(65536, 940e6, 300.0),
            size_point(1 << 20, 910e6, 9000.0),
        ];
        let s = SweepSummary::of(SweepKind::Size, &points);
        assert_eq!(s.points, 6);
        assert_eq!(
            (s.peak_throughput_bps, s.peak_at),
            (Some(940e6), Some(65536.0))
        );
        // Half the peak is 470 Mbit/s: 4096 bytes is the first size at or above it.
        assert_eq!(s.n_half_bytes, Some(4096.0));
        assert_eq!(
            (s.small_message_bytes, s.small_message_rtt_us),
            (Some(1.0), Some(20.0))
        );
        // Parameter sweeps have a peak but no n½.
        let s = SweepSummary::of(SweepKind::Streams, &points);
        assert_eq!((s.peak_at, s.n_half_bytes), (Some(65536.0), None));
    }

    #[test]
    fn interrupted_points_are_kept_but_not_summarized() {
        let mut last = size_point(8192, 2e9, 50.0);
        last.interrupted = true;
        let points = vec![size_point(1, 1e6, 20.0), last];
        let s = SweepSummary::of(SweepKind::Size, &points);
        assert_eq!((s.points, s.peak_throughput_bps), (1, Some(1e6)));
    }

    #[test]
    fn kinds_and_parameters_are_named_with_units() {
        let kinds = [
            (SweepKind::Size, "sweep_size", "size_bytes"),
            (Parameter::Streams.into(), "sweep_streams", "streams"),
            (Parameter::Window.into(), "sweep_window", "window_bytes"),
            (Parameter::Mss.into(), "sweep_mss", "mss_bytes"),
            (Parameter::Rate.into(), "sweep_rate", "rate_bps"),
            (Parameter::Payload.into(), "sweep_payload", "payload_bytes"),
            (SweepKind::Knob, "sweep_knob", "knob"),
            (SweepKind::Load, "sweep_load", "load_pct"),
        ];
        for (kind, name, parameter) in kinds {
            assert_eq!(kind.name(), name);
            assert_eq!(kind.parameter().as_str(), parameter);
            // As serialized, and back.
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert_eq!(serde_json::to_value(kind.parameter()).unwrap(), parameter);
            let back: SweepKind = serde_json::from_value(name.into()).unwrap();
            assert_eq!(back, kind);
            let back: SweepParameter = serde_json::from_value(parameter.into()).unwrap();
            assert_eq!(back, kind.parameter());
        }
        let stopped = serde_json::to_value(Stopped::Failed {
            message: "x".into(),
        })
        .unwrap();
        assert_eq!(
            stopped,
            serde_json::json!({"reason": "failed", "message": "x"})
        );
    }
}
