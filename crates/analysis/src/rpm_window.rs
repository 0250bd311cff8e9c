//! One direction of `linerate rpm`, interval by interval: the bytes the load-generating
//! connections' receivers read in each interval of the direction's grid, what their samples and
//! the foreign probes brought in, the goodput's and the responsiveness' stability
//! ([`rpm::Stability`]), and the direction's figures over the last MAD intervals
//! ([`DirectionTracker::finish`]). Pure arithmetic: the sweep crate feeds it and reads the clock.
//!
//! Invariant: every goodput is bytes over time on one grid. Each connection's intervals end on
//! the direction's ticks (`ClientConfig::interval_grid`), so interval `i`'s goodput is the bytes
//! every connection read in it × 8 / ID, and the direction's goodput the bytes read in its last
//! MAD intervals × 8 / their length: the mean of their goodputs, the draft's moving average.
//! Bytes that arrive after their interval closed (a late report) still count in it: the
//! timeline and the direction's figures are made from the final counts at [`DirectionTracker::finish`].

use std::collections::BTreeSet;

use record::rpm::{IdleBaseline, RpmDirection, RpmEnd, RpmTick, RpmWay};
use record::IntervalSample;

use crate::rpm::{self, Confidence, Params, ProbeSamples, Stability};

/// What one interval brought in.
#[derive(Debug, Clone, Default, PartialEq)]
struct Tick {
    probes: ProbeSamples,
    kernel_rtt_ms: Vec<f64>,
    local_cpu_pct: f64,
    remote_cpu_pct: Option<f64>,
    cpu_readings: u32,
}

/// Where one direction's measurement stands.
#[derive(Debug, Clone)]
pub struct DirectionTracker {
    params: Params,
    goodput: Stability,
    rpm: Stability,
    ticks: Vec<Tick>,
    timeline: Vec<RpmTick>,
    /// The timeline's index of each responsiveness pushed to `rpm`.
    rpm_at: Vec<usize>,
    current: Tick,
    /// Bytes read and written in each interval of the grid, with who reported them.
    bytes: Vec<IntervalBytes>,
    /// The lowest minimum RTT the kernel reported on any load connection, ms: the path's
    /// round trip without queues (the first connection's is taken on the idle path).
    path_min_rtt_ms: Option<f64>,
}

/// The bytes of one interval of the grid, over every connection.
#[derive(Debug, Clone, Default, PartialEq)]
struct IntervalBytes {
    received: u64,
    sent: u64,
    /// The connections whose sample for this interval came in.
    reported: BTreeSet<u16>,
}

/// What the latest interval decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickOutcome {
    /// The goodput is stable: add no more connections.
    pub goodput_stable: bool,
    /// The responsiveness is stable too: the direction is done.
    pub done: bool,
}

impl DirectionTracker {
    /// A direction measured with `params`.
    pub fn new(params: Params) -> Self {
        Self {
            params,
            goodput: Stability::new(&params),
            rpm: Stability::of_averages(&params),
            bytes: Vec::new(),
            path_min_rtt_ms: None,
            ticks: Vec::new(),
            timeline: Vec::new(),
            rpm_at: Vec::new(),
            current: Tick::default(),
        }
    }

    /// Load-generating connection `conn`'s sample for interval `index` of the grid (0: the
    /// first, ending ID after the direction began) arrived: its bytes count in that interval,
    /// its probes, RTTs and CPU in the one open now.
    pub fn interval(&mut self, conn: u16, index: usize, sample: &IntervalSample) {
        if self.bytes.len() <= index {
            self.bytes.resize_with(index + 1, IntervalBytes::default);
        }
        let b = &mut self.bytes[index];
        b.received += sample.flows.iter().map(|f| f.receiver_bytes).sum::<u64>();
        b.sent += sample.flows.iter().map(|f| f.sender_bytes).sum::<u64>();
        b.reported.insert(conn);
        let t = &mut self.current;
        for f in &sample.flows {
            let ms = f.self_probe_round_trips_us.iter().map(|us| us / 1000.0);
            t.probes.self_ms.extend(ms);
            if let Some(tcp) = &f.tcp_info {
                t.kernel_rtt_ms.push(f64::from(tcp.rtt_us) / 1000.0);
                if let Some(us) = tcp.min_rtt_us {
                    let ms = f64::from(us) / 1000.0;
                    self.path_min_rtt_ms = Some(self.path_min_rtt_ms.map_or(ms, |m| m.min(ms)));
                }
            }
        }
        if let Some(cpu) = &sample.cpu {
            t.local_cpu_pct += cpu.local_pct;
            if let Some(r) = cpu.remote_pct {
                *t.remote_cpu_pct.get_or_insert(0.0) += r;
            }
            t.cpu_readings += 1;
        }
    }

    /// A foreign probe finished: its connect and its request, ms.
    pub fn foreign(&mut self, connect_ms: f64, rr_ms: f64) {
        self.current.probes.connect_ms.push(connect_ms);
        self.current.probes.foreign_rr_ms.push(rr_ms);
    }

    /// How many connections' samples for interval `index` came in.
    pub fn reported(&self, index: usize) -> usize {
        self.bytes.get(index).map_or(0, |b| b.reported.len())
    }

    /// The interval open now (0-based): the next [`DirectionTracker::tick`] closes it.
    pub fn open_interval(&self) -> usize {
        self.ticks.len()
    }

    /// Interval `index`'s bytes read × 8 / ID.
    fn goodput_of(&self, index: usize) -> (u64, f64) {
        let bytes = self.bytes.get(index).map_or(0, |b| b.received);
        (bytes, bytes as f64 * 8.0 / self.params.interval_s)
    }

    /// Closes the open interval, with `connections` running: its goodput is the bytes every
    /// connection read in it over ID; it ends at (index + 1) × ID on the grid.
    pub fn tick(&mut self, connections: u16) -> TickOutcome {
        let tick = std::mem::take(&mut self.current);
        let index = self.ticks.len();
        let t_s = (index + 1) as f64 * self.params.interval_s;
        let (received_bytes, goodput_bps) = self.goodput_of(index);
        let was_stable = self.goodput.stable_at().is_some();
        let goodput_stable = self.goodput.push(goodput_bps);
        let median = |v: &[f64]| (!v.is_empty()).then(|| rpm::spread(v).p50);
        let mut entry = RpmTick {
            t_s,
            connections,
            goodput_bps,
            received_bytes,
            moving_average_bps: self.goodput.average().unwrap_or(0.0),
            self_p50_ms: median(&tick.probes.self_ms),
            foreign_p50_ms: median(&tick.probes.foreign_rr_ms),
            kernel_rtt_ms: (!tick.kernel_rtt_ms.is_empty())
                .then(|| tick.kernel_rtt_ms.iter().sum::<f64>() / tick.kernel_rtt_ms.len() as f64),
            rpm: None,
        };
        self.ticks.push(tick);
        let mut done = false;
        // Responsiveness is tracked from the interval after goodput became stable.
        if was_stable {
            if let Some(r) = self.window_responsiveness() {
                entry.rpm = Some(r.rpm);
                self.rpm_at.push(self.timeline.len());
                done = self.rpm.push(r.rpm);
            }
        }
        self.timeline.push(entry);
        TickOutcome {
            goodput_stable,
            done,
        }
    }

    /// The latest interval's entry in the time series.
    pub fn last_tick(&self) -> Option<&RpmTick> {
        self.timeline.last()
    }

    /// The probes of the last MAD intervals, together.
    fn window(&self) -> ProbeSamples {
        let from = self
            .ticks
            .len()
            .saturating_sub(self.params.moving_average_intervals);
        let mut all = ProbeSamples::default();
        for t in &self.ticks[from..] {
            all.connect_ms.extend(&t.probes.connect_ms);
            all.foreign_rr_ms.extend(&t.probes.foreign_rr_ms);
            all.self_ms.extend(&t.probes.self_ms);
        }
        all
    }

    fn window_responsiveness(&self) -> Option<record::rpm::Responsiveness> {
        rpm::responsiveness(&self.window(), self.params.trimmed_keep)
    }

    /// The goodput's window, the last MAD intervals closed: its length, s, and the bytes read
    /// and written in it.
    fn goodput_window(&self) -> (f64, u64, u64) {
        let n = self.ticks.len();
        let from = n.saturating_sub(self.params.moving_average_intervals);
        let in_window = self.bytes.iter().take(n).skip(from);
        let (received, sent) = in_window.fold((0, 0), |(r, s), b| (r + b.received, s + b.sent));
        ((n - from) as f64 * self.params.interval_s, received, sent)
    }

    /// The timeline with each interval's goodput and moving average from the final byte
    /// counts (a report that came after its interval closed counts in it here).
    fn final_timeline(&self) -> Vec<RpmTick> {
        let mad = self.params.moving_average_intervals.max(1);
        let goodputs: Vec<f64> = (0..self.timeline.len())
            .map(|i| self.goodput_of(i).1)
            .collect();
        let mut timeline = self.timeline.clone();
        for (i, t) in timeline.iter_mut().enumerate() {
            (t.received_bytes, t.goodput_bps) = self.goodput_of(i);
            let last = &goodputs[(i + 1).saturating_sub(mad)..=i];
            t.moving_average_bps = last.iter().sum::<f64>() / last.len() as f64;
        }
        timeline
    }

    /// The direction's figures over the last MAD intervals, `ended` as the caller stopped it
    /// (stable whenever the responsiveness was); `notes` say what to know.
    pub fn finish(
        self,
        way: RpmWay,
        idle: &IdleBaseline,
        ended: RpmEnd,
        notes: Vec<String>,
    ) -> RpmDirection {
        let mad = self.params.moving_average_intervals;
        let from = self.ticks.len().saturating_sub(mad);
        let last = &self.ticks[from..];
        let window = self.window();
        let kernel: Vec<f64> = last.iter().flat_map(|t| t.kernel_rtt_ms.clone()).collect();
        let (self_ms, kernel_ms) = (rpm::spread(&window.self_ms), rpm::spread(&kernel));
        let idle_ms = (idle.rr_ms.samples > 0).then_some(idle.rr_ms.p50);
        let p50 = |s: &record::rpm::Spread| (s.samples > 0).then_some(s.p50);
        let cpu = |f: &dyn Fn(&Tick) -> Option<f64>| {
            let v: Vec<f64> = last.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let rpm_stable_s = self
            .rpm
            .stable_at()
            .and_then(|i| self.rpm_at.get(i))
            .map(|&i| self.timeline[i].t_s);
        let (window_s, received_bytes, sent_bytes) = self.goodput_window();
        RpmDirection {
            direction: way,
            goodput_bps: match window_s > 0.0 {
                true => received_bytes as f64 * 8.0 / window_s,
                false => 0.0,
            },
            window_s,
            received_bytes,
            sent_bytes,
            connections: self.timeline.last().map_or(0, |t| t.connections),
            goodput_stable_s: self.goodput.stable_at().map(|i| self.timeline[i].t_s),
            goodput_confidence: self.goodput.confidence(),
            rpm_confidence: match self.goodput.stable_at() {
                Some(_) => self.rpm.confidence(),
                None => Confidence::Low,
            },
            rpm_stable_s,
            rpm_intervals: self.rpm_at.len(),
            ended: if rpm_stable_s.is_some() {
                RpmEnd::Stable
            } else {
                ended
            },
            responsiveness: self.window_responsiveness(),
            foreign_connect_ms: rpm::spread(&window.connect_ms),
            foreign_rr_ms: rpm::spread(&window.foreign_rr_ms),
            in_socket_buffers_ms: p50(&self_ms).zip(p50(&kernel_ms)).map(|(s, k)| s - k),
            in_network_queues_ms: p50(&kernel_ms)
                .zip(self.path_min_rtt_ms.or(idle_ms))
                .map(|(k, base)| (k - base).max(0.0)),
            loaded_minus_idle_ms: p50(&self_ms).zip(idle_ms).map(|(s, i)| s - i),
            self_ms,
            kernel_rtt_ms: kernel_ms,
            // Each interval's readings summed: every connection's (one each, about).
            local_cpu_pct: cpu(&|t| (t.cpu_readings > 0).then_some(t.local_cpu_pct)),
            remote_cpu_pct: cpu(&|t| t.remote_cpu_pct),
            timeline: self.final_timeline(),
            notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{FlowInterval, IntervalTcp};
    use wire::spec::Flow;

    fn sample(bytes: u64, probes_us: &[f64], rtt_us: u32) -> IntervalSample {
        IntervalSample {
            start_s: 0.0,
            end_s: 1.0,
            flows: vec![FlowInterval {
                flow: Flow::ClientToServer,
                sender_bytes: bytes,
                receiver_bytes: bytes,
                throughput_bps: bytes as f64 * 8.0,
                stream_receiver_bytes: vec![bytes],
                udp: None,
                rr: None,
                tcp_info: Some(IntervalTcp {
                    rtt_us,
                    ..IntervalTcp::default()
                }),
                self_probes: None,
                self_probe_round_trips_us: probes_us.to_vec(),
            }],
            probe: None,
            cpu: None,
            omitted: false,
        }
    }

    #[test]
    fn a_steady_load_becomes_stable_then_responsive_and_splits_the_delay() {
        let mut d = DirectionTracker::new(Params::default());
        let mut outcome = None;
        for i in 0..20u32 {
            // 1.25 MB a second (10 Mbit/s); self probes 50 ms, kernel 20 ms, foreign 10 + 10 ms.
            d.interval(0, i as usize, &sample(1_250_000, &[50_000.0; 10], 20_000));
            for _ in 0..10 {
                d.foreign(10.0, 10.0);
            }
            let o = d.tick(1);
            if o.done {
                outcome = Some(i);
                break;
            }
        }
        // Goodput stable at the 4th interval, the RPM four intervals after.
        assert_eq!(outcome, Some(7));
        let idle = IdleBaseline {
            rr_ms: rpm::spread(&[5.0; 10]),
            ..IdleBaseline::default()
        };
        let r = d.finish(RpmWay::Up, &idle, RpmEnd::TimeLimit, Vec::new());
        assert_eq!(r.goodput_bps, 10e6);
        assert_eq!(r.goodput_stable_s, Some(4.0));
        assert_eq!(
            (r.goodput_confidence, r.rpm_confidence),
            (Confidence::High, Confidence::High)
        );
        let resp = r.responsiveness.unwrap();
        // Foreign 60000 / 10 = 6000, loaded 60000 / 50 = 1200: RPM 3600.
        assert_eq!(
            (resp.foreign_rpm, resp.loaded_rpm, resp.rpm),
            (6000.0, 1200.0, 3600.0)
        );
        assert_eq!(r.in_socket_buffers_ms, Some(30.0));
        assert_eq!(r.in_network_queues_ms, Some(15.0));
        assert_eq!(r.loaded_minus_idle_ms, Some(45.0));
        assert_eq!(r.timeline.len(), 8);
        // Responsiveness pushed from the 5th interval; stable at the 8th, after 4 of them.
        assert_eq!((r.rpm_stable_s, r.rpm_intervals), (Some(8.0), 4));
        assert_eq!(r.ended, RpmEnd::Stable, "stable whatever the caller said");
        assert!(r.notes.is_empty());
    }

    #[test]
    fn the_network_share_is_over_the_paths_lowest_kernel_rtt_and_never_negative() {
        let run = |min_rtt_us: &[Option<u32>], idle_ms: f64| {
            let mut d = DirectionTracker::new(Params::default());
            for (i, min) in min_rtt_us.iter().enumerate() {
                let mut s = sample(1_250_000, &[], 20_000);
                s.flows[0].tcp_info.as_mut().unwrap().min_rtt_us = *min;
                d.interval(i as u16, i, &s);
                d.tick(i as u16 + 1);
            }
            let idle = IdleBaseline {
                rr_ms: rpm::spread(&[idle_ms; 10]),
                ..IdleBaseline::default()
            };
            d.finish(RpmWay::Up, &idle, RpmEnd::TimeLimit, Vec::new())
                .in_network_queues_ms
        };
        // The first connection saw the idle path (2 ms); later ones started behind the queue.
        // The idle round trip (25 ms here, the applications' own) does not enter.
        let mins = [Some(2000), Some(12_000), Some(15_000)];
        assert_eq!(run(&mins, 25.0), Some(18.0));
        // Without the kernel's minimum: against the idle round trip, and 0 rather than below.
        assert_eq!(run(&[None, None], 5.0), Some(15.0));
        assert_eq!(run(&[None, None], 25.0), Some(0.0));
    }

    #[test]
    fn a_load_that_never_settles_has_low_confidence_and_no_rpm_stage() {
        let mut d = DirectionTracker::new(Params::default());
        for i in 0..6u32 {
            d.interval(
                0,
                i as usize,
                &sample(u64::from(i + 1) * 1_000_000, &[], 1000),
            );
            assert!(!d.tick((i + 1) as u16).goodput_stable);
        }
        let r = d.finish(
            RpmWay::Down,
            &IdleBaseline::default(),
            RpmEnd::Interrupted,
            Vec::new(),
        );
        assert_eq!(r.goodput_confidence, Confidence::Medium);
        assert_eq!(r.rpm_confidence, Confidence::Low);
        assert_eq!(r.responsiveness, None, "no probes");
        assert_eq!(r.connections, 6);
        assert_eq!((r.rpm_stable_s, r.rpm_intervals), (None, 0));
        assert_eq!(r.ended, RpmEnd::Interrupted);
        assert!(r.notes.is_empty(), "the confidence says it: {:?}", r.notes);
    }

    /// The issue 47 case: each connection's intervals on the direction's grid, the second
    /// connection added in the second interval, a report that came after its interval closed.
    #[test]
    fn each_interval_is_its_bytes_over_id_and_the_goodput_the_windows_bytes() {
        let mut d = DirectionTracker::new(Params::default());
        let mb = |n: u64| sample(n * 125_000, &[], 1000);
        // Interval 0: connection 1 started 20 ms in, so 0.98 of a second's bytes (98 Mbit/s).
        d.interval(1, 0, &mb(98));
        assert_eq!((d.open_interval(), d.reported(0), d.reported(1)), (0, 1, 0));
        assert!(!d.tick(1).goodput_stable);
        assert_eq!(d.last_tick().unwrap().goodput_bps, 98e6, "no false 0");
        // Interval 1: connection 1 whole, connection 2 from 30 ms in; they share the path.
        d.interval(1, 1, &mb(50));
        d.interval(2, 1, &mb(48));
        d.tick(2);
        // Interval 2: connection 2's report comes late, after the tick.
        d.interval(1, 2, &mb(50));
        d.tick(2);
        assert_eq!(d.last_tick().unwrap().goodput_bps, 50e6, "as it stood live");
        d.interval(2, 2, &mb(50));
        d.interval(1, 3, &mb(50));
        d.interval(2, 3, &mb(50));
        assert_eq!(d.reported(3), 2);
        d.tick(2);
        // Past the end: not in any closed interval.
        d.interval(1, 4, &mb(50));
        let r = d.finish(
            RpmWay::Up,
            &IdleBaseline::default(),
            RpmEnd::TimeLimit,
            Vec::new(),
        );
        let per_s: Vec<f64> = r.timeline.iter().map(|t| t.goodput_bps).collect();
        assert_eq!(
            per_s,
            [98e6, 98e6, 100e6, 100e6],
            "the late bytes in their interval"
        );
        let ends: Vec<f64> = r.timeline.iter().map(|t| t.t_s).collect();
        assert_eq!(ends, [1.0, 2.0, 3.0, 4.0], "on the grid");
        assert_eq!(r.timeline[3].moving_average_bps, 99e6);
        // The window: the last MAD (4) intervals, 396 Mbit read in 4 s.
        assert_eq!((r.window_s, r.received_bytes), (4.0, 396 * 125_000));
        assert_eq!(r.sent_bytes, r.received_bytes, "the sample's sender bytes");
        assert_eq!(r.goodput_bps, 99e6);
    }
}
