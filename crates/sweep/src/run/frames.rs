//! The rfc2544 executor: per frame size, the [`Search`] over trials through a
//! [`PointRunner`], then the latency run at its answer. Frames finished before a stop are
//! kept; every run is tagged `rfc2544=<start ms>`, `frame_bytes` and `trial` (a number, or
//! `latency`).

use std::time::Instant;

use events::Observer;
use wire::spec::UdpRate;
use wire::TestSpec;

use super::{now_unix_ms, one_line, Measured, Point, PointRunner};
use crate::interrupt::Interrupt;
use crate::plan::{FramePlan, Rfc2544Plan};
use crate::progress::PointData;
use crate::result::Stopped;
use crate::rfc2544::{
    FrameResult, LatencyAtRate, Offer, Rfc2544Result, Search, SearchConfig, TrialCounts,
};

/// The trial spec for `offer`: the total rate spread over the streams.
fn trial_spec(base: &TestSpec, offer: Offer) -> TestSpec {
    let mut spec = base.clone();
    let streams = f64::from(spec.streams.max(1));
    if let Some(udp) = spec.udp_mut() {
        udp.rate = offer.pps().map_or(UdpRate::Max, |p| {
            UdpRate::PacketsPerSec((p / streams).round().max(1.0) as u64)
        });
    }
    spec
}

/// Runs an rfc2544 search per frame size, then the latency run at each answer.
pub fn run_rfc2544(
    plan: &Rfc2544Plan,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> Rfc2544Result {
    let id = now_unix_ms().to_string();
    let trial_ms = plan.frames.first().map_or(0, |f| f.spec.duration_ms);
    let mut result = Rfc2544Result {
        kind: crate::rfc2544::Rfc2544Document::Rfc2544,
        target: runner.target(),
        link_speed_bps: plan.link_speed_bps,
        trial_s: trial_ms as f64 / 1000.0,
        loss_pct: plan.loss_ratio * 100.0,
        resolution_pct: plan.resolution * 100.0,
        frames: Vec::new(),
        stopped: None,
    };
    progress.begin("linerate rfc2544", &plan.planned_seconds(), &[]);
    for (i, frame) in plan.frames.iter().enumerate() {
        if interrupt.is_raised() {
            result.stopped = Some(Stopped::Interrupted);
            break;
        }
        let label = format!("{}-byte frames", frame.frame_bytes);
        progress.point_started(i, &label);
        let t0 = Instant::now();
        let trial = FrameRuns {
            id: &id,
            frame,
            label: &label,
        };
        let (row, stop) = search_frame(plan, &trial, runner, interrupt);
        progress.point_done(i, &label, t0.elapsed().as_secs_f64());
        PointData::Frame(&row).report(progress, i, &label);
        result.frames.push(row);
        if let Some(s) = stop {
            // A failure is said once, by the command's error after the points are printed.
            result.stopped = Some(s);
            break;
        }
    }
    progress.finish();
    result
}

/// The runs of one frame size: the search's `id`, the frame, and its label for messages.
struct FrameRuns<'a> {
    id: &'a str,
    frame: &'a FramePlan,
    label: &'a str,
}

impl FrameRuns<'_> {
    /// The tags of the run `trial` (a number, or `latency`).
    fn tags(&self, trial: String) -> Vec<(String, String)> {
        vec![
            ("rfc2544".to_string(), self.id.to_string()),
            (
                "frame_bytes".to_string(),
                self.frame.frame_bytes.to_string(),
            ),
            ("trial".to_string(), trial),
        ]
    }

    /// Runs `point`: its record, or why the search must stop.
    fn run(
        &self,
        point: &Point,
        runner: &mut dyn PointRunner,
        interrupt: &dyn Interrupt,
    ) -> Result<Measured, Stopped> {
        match runner.run(point) {
            Err(_) if interrupt.is_raised() => Err(Stopped::Interrupted),
            Err(e) => Err(Stopped::Failed {
                message: format!("{}: {}", self.label, one_line(&e)),
            }),
            Ok(m) if m.record.summary.interrupted => Err(Stopped::Interrupted),
            Ok(m) => Ok(m),
        }
    }
}

/// The search at one frame size, then the latency run at its answer: the frame's row and why
/// the run must stop, if it must.
fn search_frame(
    plan: &Rfc2544Plan,
    trial: &FrameRuns,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
) -> (FrameResult, Option<Stopped>) {
    let frame = trial.frame;
    let mut search = Search::new(SearchConfig {
        line_rate_pps: frame.line_rate_pps,
        loss_ratio: plan.loss_ratio,
        resolution: plan.resolution,
        max_trials: plan.max_trials,
        min_pps: 1.0,
    });
    let mut run_ids = Vec::new();
    let mut stop = None;
    while let Some(offer) = search.next_offer() {
        if interrupt.is_raised() {
            stop = Some(Stopped::Interrupted);
            break;
        }
        let point = Point {
            spec: trial_spec(&frame.spec, offer),
            tags: trial.tags((search.trials().len() + 1).to_string()),
            probe: None,
        };
        let m = match trial.run(&point, runner, interrupt) {
            Ok(m) => m,
            Err(s) => {
                stop = Some(s);
                break;
            }
        };
        run_ids.push(m.run_id);
        search.record(trial_counts(&m.record.summary));
    }
    let mut row = FrameResult::from_search(frame.frame_bytes, frame.payload_bytes, &search);
    row.run_ids = run_ids;
    if let (None, Some(fps), Some((probe, ms))) = (&stop, row.throughput_fps, plan.latency) {
        let mut spec = trial_spec(&frame.spec, Offer::Pps(fps));
        spec.duration_ms = ms;
        let point = Point {
            spec,
            tags: trial.tags("latency".into()),
            probe: Some(probe),
        };
        match trial.run(&point, runner, interrupt) {
            Ok(m) => row.latency = Some(latency_at_rate(&m)),
            Err(s) => stop = Some(s),
        }
    }
    (row, stop)
}

/// A trial's counts: its run's one received count and loss (docs/RESULTS.md, "Datagram
/// accounting"), as every view of the run gives them. A frame engine's trial loses what never
/// reached its receiving sockets: frames lost in the receiving host fail the trial too, and
/// its run's loss stages say where they went (a tester that cannot take the rate is named,
/// not hidden).
fn trial_counts(s: &record::Summary) -> TrialCounts {
    let u = s.udp().copied().unwrap_or_default();
    TrialCounts {
        sent: u.packets_sent,
        lost: u.packets_lost,
        sent_pps: u.pps_sent,
        received_pps: u.pps_received,
    }
}

/// The figures of a latency run at the answer.
fn latency_at_rate(m: &Measured) -> LatencyAtRate {
    let s = &m.record.summary;
    let lat = s.latency_under_load().and_then(|l| l.loaded.latency_us);
    LatencyAtRate {
        rtt_p50_us: lat.map(|l| l.p50),
        rtt_p99_us: lat.map(|l| l.p99),
        samples: lat.map_or(0, |l| l.samples),
        loss_pct: s.udp().map_or(0.0, |u| u.loss_pct),
        run_id: m.run_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::FrameSummary;
    use wire::spec::UdpEngine;

    #[test]
    fn issue47_a_frame_trials_loss_is_its_runs_one_loss() {
        let mut r = analysis::testing::udp_trial(1000.0, 900.0, 1.0, 18);
        let socket = trial_counts(&r.summary);
        let u = r.summary.udp().copied().unwrap();
        assert_eq!((socket.sent, socket.lost), (u.packets_sent, u.packets_lost));
        let record::Family::Datagram(d) = &mut r.summary.family else {
            panic!("a udp trial is of the datagram family");
        };
        d.frames = Some(FrameSummary {
            engine: UdpEngine::Packet,
            tx_path: None,
            tx_fallback: None,
            rx_path: None,
            rx_queues: None,
            rx_fallback: None,
            rx_socket_dropped: None,
            interface: "vb".into(),
            frames_sent: 1000,
            frames_refused: 3,
            frames_at_driver: 990,
            bytes_at_driver: 990 * 60,
            frames_per_queue: None,
            flows_at_driver: None,
            pps_at_driver: 990.0,
        });
        let f = trial_counts(&r.summary);
        assert_eq!((f.sent, f.lost), (u.packets_sent, u.packets_lost));
    }
}
