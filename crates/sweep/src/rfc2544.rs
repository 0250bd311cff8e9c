//! `linerate rfc2544`: the RFC 2544 (section 26.1) throughput of a path per frame size — the
//! highest offered frame rate at which no more than the allowed share of frames is lost — by a
//! search over fixed-length trials, then the round-trip latency at that rate (26.2).
//!
//! [`Search`] is the search as a pure state machine: [`Search::next_offer`] says what to offer,
//! [`Search::record`] takes the trial's counts. It runs no test, so it is unit-tested against a
//! simulated link. The search:
//! 1. offers the line rate (with `--link-speed`) or as fast as the sender can; a pass ends the
//!    search there (the path carries the line rate, or the sender is the limit);
//! 2. otherwise the loss shows the bottleneck: the next offer is just below the rate that got
//!    through (`received × (1 − resolution)`), and while trials still fail, lower in growing
//!    steps (4 × resolution, doubling, at most halving);
//! 3. then it climbs from the best pass in growing steps (2 × resolution, doubling) until a
//!    trial fails, and bisects between the best pass and the lowest failure;
//! 4. it ends when `(fail − pass) / fail ≤ resolution`, after `max_trials`, or when even a
//!    rate below `min_pps` loses frames.
//!
//! Every trial's offered rate lies strictly between the best pass and the lowest failure, so
//! each one narrows the interval; the answer is always a rate that passed.

use serde::{Deserialize, Serialize};

/// What a trial offers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Offer {
    /// As fast as the sender can (the first trial without a known line rate).
    Max,
    /// This many frames per second, all streams together.
    Pps(f64),
}

impl Offer {
    /// The offered rate, `None` for [`Offer::Max`].
    pub fn pps(self) -> Option<f64> {
        match self {
            Offer::Max => None,
            Offer::Pps(p) => Some(p),
        }
    }
}

/// How the search is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchConfig {
    /// The theoretical frame rate at this frame size (`--link-speed`), if known.
    pub line_rate_pps: Option<f64>,
    /// Largest lost share of frames that still passes (0 for RFC 2544's zero loss).
    pub loss_ratio: f64,
    /// Stop when the interval between the best pass and the lowest failure is at most this
    /// share of the failure (0.005: within 0.5 %).
    pub resolution: f64,
    /// Most trials.
    pub max_trials: u32,
    /// Give up when even this rate fails.
    pub min_pps: f64,
}

/// One trial's counts, from the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrialCounts {
    /// Frames the sender sent.
    pub sent: u64,
    /// Frames that did not arrive.
    pub lost: u64,
    /// Send rate the sender achieved, frames/s.
    pub sent_pps: f64,
    /// Rate that arrived, frames/s.
    pub received_pps: f64,
}

/// One trial of the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// What was offered.
    pub offer: Offer,
    /// What happened.
    #[serde(flatten)]
    pub counts: TrialCounts,
    /// `lost / sent` within the allowed ratio.
    pub pass: bool,
}

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The line rate passed: the path carries it.
    LineRate,
    /// A trial passed below its offered rate, or the first trial at the sender's top speed
    /// passed: the sender, not the path, is the limit.
    SenderLimited,
    /// The best pass and the lowest failure are within the resolution.
    Resolution,
    /// `max_trials` ran out first.
    MaxTrials,
    /// Even the lowest rate tried lost frames.
    NothingPassed,
}

/// The search for one frame size.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    cfg: SearchConfig,
    next: Option<Offer>,
    pass: Option<f64>,
    fail: Option<f64>,
    step: f64,
    down: f64,
    answer: Option<f64>,
    trials: Vec<Trial>,
    end: Option<End>,
}

/// A passing trial whose sender fell this far short of the offer did not test the offer.
const SENDER_SHORTFALL: f64 = 0.98;

impl Search {
    /// A search starting at the line rate, or at the sender's top speed without one.
    pub fn new(cfg: SearchConfig) -> Self {
        Self {
            next: Some(cfg.line_rate_pps.map_or(Offer::Max, Offer::Pps)),
            cfg,
            pass: None,
            fail: None,
            step: 2.0 * cfg.resolution,
            down: 4.0 * cfg.resolution,
            answer: None,
            trials: Vec::new(),
            end: None,
        }
    }

    /// The next trial's offer; `None` once the search has ended.
    pub fn next_offer(&self) -> Option<Offer> {
        self.end.is_none().then_some(self.next).flatten()
    }

    /// Records the counts of the trial [`Search::next_offer`] asked for.
    pub fn record(&mut self, counts: TrialCounts) {
        let Some(offer) = self.next.take().filter(|_| self.end.is_none()) else {
            return;
        };
        let pass =
            counts.sent > 0 && counts.lost as f64 <= self.cfg.loss_ratio * counts.sent as f64;
        self.trials.push(Trial {
            offer,
            counts,
            pass,
        });
        let rate = match offer {
            Offer::Pps(r) => r,
            Offer::Max => counts.sent_pps,
        };
        if pass && (offer == Offer::Max || counts.sent_pps < SENDER_SHORTFALL * rate) {
            self.answer = Some(counts.sent_pps.min(rate));
            return self.finish(End::SenderLimited);
        }
        if pass && self.trials.len() == 1 {
            self.answer = Some(rate);
            return self.finish(End::LineRate);
        }
        if pass {
            if self.pass.is_some() {
                self.step *= 2.0;
            }
            self.pass = Some(rate);
            self.answer = Some(rate);
        } else {
            let failed_at = if counts.sent_pps > 0.0 {
                rate.min(counts.sent_pps)
            } else {
                rate
            };
            self.fail = Some(self.fail.map_or(failed_at, |f| f.min(failed_at)));
            if self.pass.is_some() {
                // After the first failure above a pass, only bisect.
                self.step = f64::INFINITY;
            }
        }
        if let (Some(p), Some(f)) = (self.pass, self.fail) {
            if (f - p) / f <= self.cfg.resolution {
                return self.finish(End::Resolution);
            }
        }
        if self.trials.len() as u32 >= self.cfg.max_trials {
            let end = if self.answer.is_some() {
                End::MaxTrials
            } else {
                End::NothingPassed
            };
            return self.finish(end);
        }
        let fail = self.fail.unwrap_or(rate);
        let next = match self.pass {
            // The first failure: just below what got through.
            None if self.trials.len() == 1 => (counts.received_pps * (1.0 - self.cfg.resolution))
                .min(fail * (1.0 - self.cfg.resolution)),
            // Below the best guess and still no pass: back off in growing steps.
            None => {
                let next = fail * (1.0 - self.down);
                self.down = (self.down * 2.0).min(0.5);
                next
            }
            Some(p) => (0.5 * (p + fail)).min(p * (1.0 + self.step)),
        };
        if next < self.cfg.min_pps || !next.is_finite() {
            let end = if self.answer.is_some() {
                End::Resolution
            } else {
                End::NothingPassed
            };
            return self.finish(end);
        }
        self.next = Some(Offer::Pps(next));
    }

    fn finish(&mut self, end: End) {
        self.end = Some(end);
        self.next = None;
    }

    /// The highest rate that passed, frames/s (so far, or final).
    pub fn answer(&self) -> Option<f64> {
        self.answer
    }

    /// Why the search ended; `None` while it goes on.
    pub fn end(&self) -> Option<End> {
        self.end
    }

    /// Every trial so far.
    pub fn trials(&self) -> &[Trial] {
        &self.trials
    }

    /// The lowest rate that failed, if any.
    pub fn lowest_failure(&self) -> Option<f64> {
        self.fail
    }
}

/// Round-trip latency measured at the answer's rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyAtRate {
    /// Median round trip of the probes under the load, µs.
    pub rtt_p50_us: Option<f64>,
    /// 99th percentile, µs.
    pub rtt_p99_us: Option<f64>,
    /// Probe round trips measured.
    pub samples: u64,
    /// Frames the load lost in this run, percent (a second look at the answer's loss).
    pub loss_pct: f64,
    /// The stored run, if stored.
    pub run_id: Option<i64>,
}

/// One frame size's result: a row of the RFC 2544 throughput table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameResult {
    /// Ethernet frame size, FCS included, bytes.
    pub frame_bytes: u32,
    /// UDP payload per frame, bytes.
    pub payload_bytes: u32,
    /// Theoretical frames/s of the link at this size (`--link-speed`).
    pub line_rate_fps: Option<f64>,
    /// The throughput: highest rate that passed, frames/s.
    pub throughput_fps: Option<f64>,
    /// The same in bits/s of frames (`fps × frame_bytes × 8`), as RFC 2544 reports it.
    pub throughput_bps: Option<f64>,
    /// `throughput_fps / line_rate_fps`, percent.
    pub line_rate_pct: Option<f64>,
    /// Lost share in the passing trial at the answer, percent.
    pub loss_pct: Option<f64>,
    /// Why the search ended.
    pub end: Option<End>,
    /// Every trial, in order.
    pub trials: Vec<Trial>,
    /// Stored run ids of the trials, in order.
    pub run_ids: Vec<Option<i64>>,
    /// Latency at the answer's rate, unless `--no-latency`.
    pub latency: Option<LatencyAtRate>,
}

impl FrameResult {
    /// The row for `search` at `frame_bytes`.
    pub fn from_search(frame_bytes: u32, payload_bytes: u32, search: &Search) -> Self {
        let fps = search.answer();
        let line = search.cfg.line_rate_pps;
        let loss_pct = fps.and_then(|a| {
            search
                .trials()
                .iter()
                .rev()
                .find(|t| t.pass && (t.offer.pps() == Some(a) || t.counts.sent_pps == a))
                .map(|t| t.counts.lost as f64 / t.counts.sent.max(1) as f64 * 100.0)
        });
        Self {
            frame_bytes,
            payload_bytes,
            line_rate_fps: line,
            throughput_fps: fps,
            throughput_bps: fps.map(|f| f * f64::from(frame_bytes) * 8.0),
            line_rate_pct: fps.zip(line).map(|(f, l)| f / l * 100.0),
            loss_pct,
            end: search.end(),
            trials: search.trials().to_vec(),
            run_ids: Vec::new(),
            latency: None,
        }
    }
}

/// The `kind` of an rfc2544 document (JSON `"rfc2544"`), so readers can tell the documents apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rfc2544Document {
    /// A throughput search per frame size.
    Rfc2544,
}

/// A whole `linerate rfc2544` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rfc2544Result {
    /// Always `rfc2544`: what the document is.
    pub kind: Rfc2544Document,
    /// Where the server was.
    pub target: String,
    /// `--link-speed`, bits/s.
    pub link_speed_bps: Option<u64>,
    /// Length of each trial, seconds.
    pub trial_s: f64,
    /// Allowed loss, percent.
    pub loss_pct: f64,
    /// Search resolution, percent.
    pub resolution_pct: f64,
    /// One row per frame size searched, in order.
    pub frames: Vec<FrameResult>,
    /// Why it stopped early, if it did.
    pub stopped: Option<crate::result::Stopped>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link that carries `capacity` frames/s and drops the excess, behind a sender whose top
    /// speed is `sender_max`.
    fn link(offer: Offer, capacity: f64, sender_max: f64, secs: f64) -> TrialCounts {
        let sent_pps = offer.pps().unwrap_or(sender_max).min(sender_max);
        let sent = (sent_pps * secs).round() as u64;
        let received = sent.min((capacity * secs).floor() as u64);
        TrialCounts {
            sent,
            lost: sent - received,
            sent_pps,
            received_pps: received as f64 / secs,
        }
    }

    fn cfg(line: Option<f64>) -> SearchConfig {
        SearchConfig {
            line_rate_pps: line,
            loss_ratio: 0.0,
            resolution: 0.005,
            max_trials: 20,
            min_pps: 1.0,
        }
    }

    fn search(cfg: SearchConfig, capacity: f64, sender_max: f64) -> Search {
        let mut s = Search::new(cfg);
        while let Some(offer) = s.next_offer() {
            let counts = link(offer, capacity, sender_max, 10.0);
            s.record(counts);
            assert!(s.trials().len() <= cfg.max_trials as usize);
        }
        s
    }

    #[test]
    fn converges_on_a_simulated_link_within_the_resolution() {
        for capacity in [1e5, 12_345.0, 812_744.0, 3.3e3] {
            let s = search(cfg(None), capacity, 1e6);
            let a = s.answer().unwrap();
            assert!(a <= capacity, "{capacity}: answered {a}, above capacity");
            assert!(a >= capacity * 0.995, "{capacity}: answered {a}");
            assert_eq!(s.end(), Some(End::Resolution));
            assert!(
                s.trials().len() <= 8,
                "{capacity}: {} trials",
                s.trials().len()
            );
            // Every passing trial is below every failing one.
            let max_pass = s
                .trials()
                .iter()
                .filter(|t| t.pass)
                .map(|t| t.counts.sent_pps)
                .fold(0.0, f64::max);
            let min_fail = s.lowest_failure().unwrap();
            assert!(max_pass < min_fail);
        }
    }

    #[test]
    fn a_burst_that_overstates_the_capacity_still_converges() {
        // A token bucket lets its burst through first, so an overloaded trial's received rate
        // is above the shaped rate (here by 2 %).
        let cap = 1e5;
        let mut s = Search::new(cfg(None));
        while let Some(o) = s.next_offer() {
            let mut c = link(o, cap, 1e6, 10.0);
            if c.lost > 0 {
                c.received_pps = cap * 1.02;
            }
            s.record(c);
        }
        let a = s.answer().unwrap();
        assert!((cap * 0.995..=cap).contains(&a), "{a}");
        assert!(s.trials().len() <= 10, "{}", s.trials().len());
    }

    #[test]
    fn with_a_line_rate_the_first_trial_is_at_it() {
        // 1 Gbit/s at 64-byte frames: 1 488 095 frames/s; the path carries it all.
        let line = measure::line_rate::pps(1e9, 64);
        let s = search(cfg(Some(line)), 2e6, 3e6);
        assert_eq!(s.trials().len(), 1);
        assert_eq!((s.answer(), s.end()), (Some(line), Some(End::LineRate)));
        // A path shaped to 600 000 frames/s.
        let s = search(cfg(Some(line)), 6e5, 3e6);
        assert_eq!(s.trials()[0].offer, Offer::Pps(line));
        let a = s.answer().unwrap();
        assert!((6e5 * 0.995..=6e5).contains(&a), "{a}");
    }

    #[test]
    fn a_sender_slower_than_the_path_is_named() {
        let s = search(cfg(None), 1e7, 2e5);
        assert_eq!((s.answer(), s.end()), (Some(2e5), Some(End::SenderLimited)));
        let line = measure::line_rate::pps(10e9, 64);
        let s = search(cfg(Some(line)), 1e8, 2e5);
        assert_eq!((s.answer(), s.end()), (Some(2e5), Some(End::SenderLimited)));
    }

    #[test]
    fn allowed_loss_and_hopeless_links() {
        // A link losing 0.1 % at any rate passes with --loss 0.5 at the first trial…
        let lossy = |offer: Offer| {
            let sent_pps = offer.pps().unwrap_or(1e5);
            let sent = (sent_pps * 10.0) as u64;
            TrialCounts {
                sent,
                lost: (sent / 1000).max(1),
                sent_pps,
                received_pps: sent_pps * 0.999,
            }
        };
        let mut s = Search::new(SearchConfig {
            loss_ratio: 0.005,
            ..cfg(Some(5e4))
        });
        s.record(lossy(s.next_offer().unwrap()));
        assert_eq!(s.end(), Some(End::LineRate));
        // …and never with zero loss.
        let mut s = Search::new(cfg(Some(5e4)));
        while let Some(o) = s.next_offer() {
            s.record(lossy(o));
        }
        assert_eq!((s.answer(), s.end()), (None, Some(End::NothingPassed)));
        assert!(s.trials().len() <= 20);
    }

    #[test]
    fn max_trials_keeps_the_best_pass() {
        let mut s = Search::new(SearchConfig {
            max_trials: 3,
            ..cfg(None)
        });
        while let Some(o) = s.next_offer() {
            s.record(link(o, 1e5, 1e6, 10.0));
        }
        assert_eq!(s.trials().len(), 3);
        assert_eq!(s.end(), Some(End::MaxTrials));
        assert!(s.answer().unwrap() >= 0.99e5);
        let row = FrameResult::from_search(64, 18, &s);
        assert_eq!(row.loss_pct, Some(0.0));
        assert_eq!(
            row.throughput_bps,
            Some(row.throughput_fps.unwrap() * 64.0 * 8.0)
        );
    }
}
