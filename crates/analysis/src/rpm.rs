//! Responsiveness under working conditions (RPM), as IETF IPPM's
//! draft-ietf-ippm-responsiveness-09 defines it for the TCP-only case (its section "Measuring
//! Responsiveness", "Final Algorithm" and "Confidence of Test-Results"), over plain sockets:
//!
//! - the working conditions: load-generating connections are added one per interval until the
//!   moving average of the aggregate goodput is stable ([`Stability`]);
//! - the probes: *foreign* ones (a new connection: its connect time `tcp_f`, then a 1-byte
//!   request and response on it, `http_f` in the draft) and *self* ones (a 1-byte request
//!   answered in band on a loaded connection, queued behind its data: `http_l`), at most
//!   [`Params::max_probes_per_s`] and [`Params::probe_share`] of the capacity ([`probe_rate`]);
//! - the figure: `Foreign = 60000 / ((TM(tcp_f) + TM(http_f)) / 2)`, `Loaded = 60000 /
//!   TM(http_l)`, `RPM = (Foreign + Loaded) / 2`, TM the single-sided trimmed mean keeping the
//!   best [`Params::trimmed_keep`] ([`trimmed_mean`], [`responsiveness`]);
//! - the confidence: low when fewer than MAD intervals ran, medium when they ran but the
//!   figure never became stable, high when it did ([`Confidence`]);
//! - the run's one figure over its directions ([`overall`]): each of the draft's trimmed means
//!   averaged over the directions (each direction weighs the same), then the same formula; its
//!   confidence the lowest of the directions'.
//!
//! Everything is milliseconds and bits per second in, plain numbers out; no clocks are read.

use record::rpm::{RpmDirection, RpmOverall, Spread};
use serde::{Deserialize, Serialize};

pub use record::rpm::{Confidence, Responsiveness};

/// The draft revision these formulas follow.
pub const DRAFT: &str = "draft-ietf-ippm-responsiveness-09";

/// The draft's parameters (its "Test Parameters" table), with linerate's interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// MAD: intervals in the moving average (4).
    pub moving_average_intervals: usize,
    /// ID: seconds per interval. The draft's default is 5 s; linerate adds a connection every
    /// 1 s by default (a LAN saturates in well under a second), the value used is recorded.
    pub interval_s: f64,
    /// TMP: the share of samples the trimmed mean keeps, the lowest (0.95).
    pub trimmed_keep: f64,
    /// SDT: stable when the standard deviation of the last MAD moving averages is within this
    /// share of the latest one (0.05).
    pub stability_tolerance: f64,
    /// MNP: load-generating connections at most (16).
    pub max_connections: u16,
    /// MPS: probes per second at most, both kinds together (100).
    pub max_probes_per_s: f64,
    /// PTC: the share of the capacity the probes may use (0.05).
    pub probe_share: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            moving_average_intervals: 4,
            interval_s: 1.0,
            trimmed_keep: 0.95,
            stability_tolerance: 0.05,
            max_connections: 16,
            max_probes_per_s: 100.0,
            probe_share: 0.05,
        }
    }
}

/// Tracks one figure interval by interval (aggregate goodput, or the responsiveness) and says
/// when its moving average became stable.
#[derive(Debug, Clone, PartialEq)]
pub struct Stability {
    mad: usize,
    /// Values averaged into each moving average: MAD, or 1 for values that are averages
    /// already (the responsiveness over the last MAD intervals).
    window: usize,
    tolerance: f64,
    values: Vec<f64>,
    averages: Vec<f64>,
    stable_at: Option<usize>,
}

impl Stability {
    /// A tracker with the draft's MAD and SDT from `params`.
    pub fn new(params: &Params) -> Self {
        Stability {
            mad: params.moving_average_intervals.max(1),
            window: params.moving_average_intervals.max(1),
            tolerance: params.stability_tolerance,
            values: Vec::new(),
            averages: Vec::new(),
            stable_at: None,
        }
    }

    /// A tracker of values that are moving averages already (each the responsiveness over
    /// the last MAD intervals): they are not averaged again, so the draft's rule compares the
    /// standard deviation of the last MAD of them with the latest.
    pub fn of_averages(params: &Params) -> Self {
        Stability {
            window: 1,
            ..Self::new(params)
        }
    }

    /// Adds interval `i`'s figure; true once the figure is stable (and from then on).
    pub fn push(&mut self, value: f64) -> bool {
        self.values.push(value);
        let window = &self.values[self.values.len().saturating_sub(self.window)..];
        let average = window.iter().sum::<f64>() / window.len() as f64;
        self.averages.push(average);
        if self.stable_at.is_none() && self.averages.len() >= self.mad {
            let last = &self.averages[self.averages.len() - self.mad..];
            if std_dev(last) <= self.tolerance * average.abs() && average > 0.0 {
                self.stable_at = Some(self.values.len() - 1);
            }
        }
        self.stable_at.is_some()
    }

    /// The latest moving average.
    pub fn average(&self) -> Option<f64> {
        self.averages.last().copied()
    }

    /// The moving averages so far, one per interval.
    pub fn averages(&self) -> &[f64] {
        &self.averages
    }

    /// The interval (0-based) at which it became stable.
    pub fn stable_at(&self) -> Option<usize> {
        self.stable_at
    }

    /// The draft's confidence in this figure so far.
    pub fn confidence(&self) -> Confidence {
        match (self.stable_at, self.values.len() >= self.mad) {
            (Some(_), _) => Confidence::High,
            (None, true) => Confidence::Medium,
            (None, false) => Confidence::Low,
        }
    }
}

/// The population standard deviation.
fn std_dev(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt()
}

/// The single-sided trimmed mean: the mean of the lowest `keep` share of the samples (at least
/// one), the slowest trimmed; `None` without samples.
pub fn trimmed_mean(samples: &[f64], keep: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let kept = ((sorted.len() as f64 * keep.clamp(0.0, 1.0)).ceil() as usize).max(1);
    let kept = &sorted[..kept.min(sorted.len())];
    Some(kept.iter().sum::<f64>() / kept.len() as f64)
}

/// Round trips per minute from a round trip in milliseconds.
pub fn per_minute(rtt_ms: f64) -> Option<f64> {
    (rtt_ms > 0.0 && rtt_ms.is_finite()).then(|| 60_000.0 / rtt_ms)
}

/// The probe samples of a measurement window, milliseconds each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeSamples {
    /// Foreign probes' connect times (`tcp_f`).
    pub connect_ms: Vec<f64>,
    /// Foreign probes' 1-byte request/response times on the new connection (`http_f`).
    pub foreign_rr_ms: Vec<f64>,
    /// Self probes' in-band request/response times on loaded connections (`http_l`).
    pub self_ms: Vec<f64>,
}

/// The draft's figures from one window of probes, or `None` when a kind of probe has no
/// sample (or a zero time).
pub fn responsiveness(samples: &ProbeSamples, keep: f64) -> Option<Responsiveness> {
    from_means(
        trimmed_mean(&samples.connect_ms, keep)?,
        trimmed_mean(&samples.foreign_rr_ms, keep)?,
        trimmed_mean(&samples.self_ms, keep)?,
    )
}

/// The draft's formula over the three trimmed means, ms: the foreign RPM from the connect and
/// foreign request times, the loaded RPM from the self probes, the RPM their mean.
fn from_means(connect_ms: f64, foreign_rr_ms: f64, self_ms: f64) -> Option<Responsiveness> {
    let foreign_rpm = per_minute((connect_ms + foreign_rr_ms) / 2.0)?;
    let loaded_rpm = per_minute(self_ms)?;
    Some(Responsiveness {
        connect_ms,
        foreign_rr_ms,
        self_ms,
        foreign_rpm,
        loaded_rpm,
        rpm: (foreign_rpm + loaded_rpm) / 2.0,
    })
}

/// The run's one figure over `directions` (those with a responsiveness): each trimmed mean the
/// mean of theirs, then the draft's formula; the confidence the lowest of every direction's
/// (one without probes of every kind is low). `None` when no direction has a responsiveness.
pub fn overall(directions: &[RpmDirection]) -> Option<RpmOverall> {
    let measured: Vec<(&RpmDirection, &Responsiveness)> = directions
        .iter()
        .filter_map(|d| Some((d, d.responsiveness.as_ref()?)))
        .collect();
    let n = measured.len() as f64;
    let mean = |f: fn(&Responsiveness) -> f64| measured.iter().map(|(_, r)| f(r)).sum::<f64>() / n;
    let responsiveness = from_means(
        mean(|r| r.connect_ms),
        mean(|r| r.foreign_rr_ms),
        mean(|r| r.self_ms),
    )?;
    let confidence = directions.iter().map(|d| d.rpm_confidence).min()?;
    Some(RpmOverall {
        directions: measured.iter().map(|(d, _)| d.direction).collect(),
        responsiveness,
        confidence,
    })
}

/// The sample count and nearest-rank percentiles of `values` (ms in, ms out).
pub fn spread(values: &[f64]) -> Spread {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Spread::default();
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| crate::stats::nearest_rank(&v, q);
    Spread {
        samples: v.len() as u64,
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
    }
}

/// Bytes on the wire of one probe of each kind, headers included, for the capacity share:
/// a foreign probe is a handshake, a request, a response and a close (about ten segments);
/// a self probe a request and its response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCost {
    /// A foreign probe's bytes.
    pub foreign_bytes: f64,
    /// A self probe's bytes.
    pub self_bytes: f64,
}

impl Default for ProbeCost {
    fn default() -> Self {
        // 10 segments of 66 bytes (Ethernet + IPv4 + TCP with timestamps) plus payload; a self
        // probe's request and response records with their acknowledgements.
        ProbeCost {
            foreign_bytes: 700.0,
            self_bytes: 300.0,
        }
    }
}

/// Probe pairs (one foreign, one self) per second for a path of `capacity_bps`: at most MPS,
/// and at most PTC of the capacity; 0 without a capacity.
pub fn probe_rate(params: &Params, cost: &ProbeCost, capacity_bps: f64) -> f64 {
    if capacity_bps <= 0.0 || !capacity_bps.is_finite() {
        return 0.0;
    }
    let pair_bits = (cost.foreign_bytes + cost.self_bytes) * 8.0;
    (params.probe_share * capacity_bps / pair_bits).min(params.max_probes_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_mean_drops_the_slowest_five_percent() {
        // 19 samples of 10 ms and one of 1000 ms: the outlier is the 5 % trimmed.
        let mut s = vec![10.0; 19];
        s.push(1000.0);
        assert_eq!(trimmed_mean(&s, 0.95), Some(10.0));
        // Fewer than 20 samples: ceil keeps them all.
        assert_eq!(trimmed_mean(&[1.0, 3.0], 0.95), Some(2.0));
        assert_eq!(trimmed_mean(&[], 0.95), None);
        assert_eq!(trimmed_mean(&[5.0], 0.0), Some(5.0), "at least one kept");
    }

    #[test]
    fn rpm_follows_the_drafts_tcp_only_formula() {
        let samples = ProbeSamples {
            connect_ms: vec![10.0; 20],
            foreign_rr_ms: vec![30.0; 20],
            self_ms: vec![60.0; 20],
        };
        let r = responsiveness(&samples, 0.95).unwrap();
        // Foreign: 60000 / 20 = 3000; loaded: 60000 / 60 = 1000; RPM their mean.
        assert_eq!(r.foreign_rpm, 3000.0);
        assert_eq!(r.loaded_rpm, 1000.0);
        assert_eq!(r.rpm, 2000.0);
        let none = ProbeSamples {
            self_ms: Vec::new(),
            ..samples
        };
        assert_eq!(responsiveness(&none, 0.95), None);
    }

    #[test]
    fn the_overall_figure_weighs_each_direction_the_same_and_takes_the_lower_confidence() {
        let with = |way, connect_ms, self_ms, confidence| {
            let probes = ProbeSamples {
                connect_ms: vec![connect_ms; 20],
                foreign_rr_ms: vec![connect_ms; 20],
                self_ms: vec![self_ms; 20],
            };
            let mut d = crate::rpm_window::DirectionTracker::new(Params::default()).finish(
                way,
                &record::rpm::IdleBaseline::default(),
                record::rpm::RpmEnd::TimeLimit,
                Vec::new(),
            );
            d.responsiveness = responsiveness(&probes, 0.95);
            d.rpm_confidence = confidence;
            d
        };
        use record::rpm::RpmWay::{Down, Up};
        // Up: foreign 10 ms, self 60 ms; down: foreign 30 ms, self 20 ms. The means: 20 ms and
        // 40 ms, so foreign 3000, loaded 1500, RPM 2250 (not the mean of 3500 and 2500).
        let (up, down) = (
            with(Up, 10.0, 60.0, Confidence::High),
            with(Down, 30.0, 20.0, Confidence::Medium),
        );
        assert_eq!(up.responsiveness.unwrap().rpm, 3500.0);
        assert_eq!(down.responsiveness.unwrap().rpm, 2500.0);
        let o = overall(&[up.clone(), down.clone()]).unwrap();
        assert_eq!(o.directions, [Up, Down]);
        let r = o.responsiveness;
        assert_eq!(
            (r.foreign_rpm, r.loaded_rpm, r.rpm),
            (3000.0, 1500.0, 2250.0)
        );
        assert_eq!(o.confidence, Confidence::Medium, "the lower of the two");
        // One direction: its own figure. A direction without probes is left out of the
        // figure but lowers the confidence; none measured: no figure.
        let alone = overall(std::slice::from_ref(&up)).unwrap();
        assert_eq!(alone.responsiveness, up.responsiveness.unwrap());
        let bare = RpmDirection {
            responsiveness: None,
            rpm_confidence: Confidence::Low,
            ..down
        };
        let part = overall(&[up, bare.clone()]).unwrap();
        assert_eq!(
            (part.directions.len(), part.confidence),
            (1, Confidence::Low)
        );
        assert_eq!(overall(&[bare]), None);
        assert_eq!(overall(&[]), None);
    }

    #[test]
    fn goodput_is_stable_once_the_last_mad_averages_agree_within_sdt() {
        let p = Params::default();
        let mut s = Stability::new(&p);
        // A ramp: 1, 2, 3 connections' worth, then flat at 100.
        for v in [25.0, 50.0, 75.0, 100.0, 100.0, 100.0] {
            assert!(!s.push(v), "{:?}", s.averages());
        }
        assert_eq!(s.confidence(), Confidence::Medium);
        // Averages: 25, 37.5, 50, 62.5, 81.25, 93.75, then 100, 100, 100.
        assert!(!s.push(100.0));
        assert!(!s.push(100.0));
        assert!(s.push(100.0), "{:?}", s.averages());
        assert_eq!(s.stable_at(), Some(8));
        assert_eq!(s.confidence(), Confidence::High);
        assert!(s.push(10.0), "stays stable once declared");
    }

    #[test]
    fn averages_already_are_not_smoothed_again() {
        // The reviewer's example: 1000, 1100, 900, 1050 vary by 7.3 % of the last: not stable.
        let mut s = Stability::of_averages(&Params::default());
        for v in [1000.0, 1100.0, 900.0] {
            assert!(!s.push(v));
        }
        assert!(!s.push(1050.0), "{:?}", s.averages());
        for _ in 0..3 {
            s.push(1000.0);
        }
        assert!(s.push(1000.0), "four equal values are stable");
    }

    #[test]
    fn confidence_is_low_before_mad_intervals() {
        let mut s = Stability::new(&Params::default());
        s.push(1.0);
        s.push(1.0);
        assert_eq!(s.confidence(), Confidence::Low);
        let zero = &mut Stability::new(&Params::default());
        for _ in 0..6 {
            assert!(!zero.push(0.0), "no goodput is never stable");
        }
    }

    #[test]
    fn spreads_take_nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = spread(&v);
        assert_eq!((s.samples, s.p50, s.p90, s.p99), (100, 50.0, 90.0, 99.0));
        assert_eq!(spread(&[]).samples, 0);
        assert_eq!(spread(&[7.0]).p99, 7.0);
    }

    #[test]
    fn probes_stay_within_mps_and_the_capacity_share() {
        let p = Params::default();
        let c = ProbeCost::default();
        // 10 Gbit/s: the 100 per second cap.
        assert_eq!(probe_rate(&p, &c, 10e9), 100.0);
        // 1 Mbit/s: 5 % is 50 kbit/s, 8000 bits a pair: 6.25 pairs per second.
        assert!((probe_rate(&p, &c, 1e6) - 6.25).abs() < 1e-9);
        assert_eq!(probe_rate(&p, &c, 0.0), 0.0);
    }
}
