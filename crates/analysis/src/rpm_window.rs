//! One direction of `linerate rpm`, interval by interval: what the load-generating connections'
//! interval samples and the foreign probes brought in each interval of the orchestrator's clock,
//! the goodput's and the responsiveness' stability ([`rpm::Stability`]), and the direction's
//! figures over the last MAD intervals ([`DirectionTracker::finish`]). Pure arithmetic: the
//! session crate feeds it and reads the clock.

use std::collections::BTreeMap;

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
    /// Each connection's latest goodput, bits/s, and the interval it came in.
    rates: BTreeMap<u16, (f64, usize)>,
    /// The lowest minimum RTT the kernel reported on any load connection, ms: the path's
    /// round trip without queues (the first connection's is taken on the idle path).
    path_min_rtt_ms: Option<f64>,
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
            rates: BTreeMap::new(),
            path_min_rtt_ms: None,
            ticks: Vec::new(),
            timeline: Vec::new(),
            rpm_at: Vec::new(),
            current: Tick::default(),
        }
    }

    /// Load-generating connection `conn`'s interval arrived.
    pub fn interval(&mut self, conn: u16, sample: &IntervalSample) {
        let secs = sample.end_s - sample.start_s;
        let bytes: u64 = sample.flows.iter().map(|f| f.receiver_bytes).sum();
        if secs > 0.0 {
            let rate = bytes as f64 * 8.0 / secs;
            self.rates.insert(conn, (rate, self.ticks.len()));
        }
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

    /// Closes the interval that ended at `t_s` (seconds since the direction began), with
    /// `connections` running. Its goodput is the sum of each connection's latest rate (each
    /// over its own interval, whenever its sample arrived), leaving out a connection silent
    /// for two intervals.
    pub fn tick(&mut self, t_s: f64, connections: u16) -> TickOutcome {
        let tick = std::mem::take(&mut self.current);
        let now = self.ticks.len();
        self.rates.retain(|_, (_, at)| now.saturating_sub(*at) < 2);
        // `+ 0.0`: the sum of no rates is -0.0.
        let goodput_bps: f64 = self.rates.values().map(|(r, _)| r).sum::<f64>() + 0.0;
        let was_stable = self.goodput.stable_at().is_some();
        let goodput_stable = self.goodput.push(goodput_bps);
        let median = |v: &[f64]| (!v.is_empty()).then(|| rpm::spread(v).p50);
        let mut entry = RpmTick {
            t_s,
            connections,
            goodput_bps,
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
        RpmDirection {
            direction: way,
            goodput_bps: self.goodput.average().unwrap_or(0.0),
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
            timeline: self.timeline,
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
            d.interval(0, &sample(1_250_000, &[50_000.0; 10], 20_000));
            for _ in 0..10 {
                d.foreign(10.0, 10.0);
            }
            let o = d.tick(f64::from(i + 1), 1);
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
                d.interval(i as u16, &s);
                d.tick(i as f64 + 1.0, i as u16 + 1);
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
            d.interval(0, &sample(u64::from(i + 1) * 1_000_000, &[], 1000));
            assert!(!d.tick(f64::from(i + 1), (i + 1) as u16).goodput_stable);
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
}
