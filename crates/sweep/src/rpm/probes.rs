//! The foreign probes of an rpm direction: launched on a schedule beside the load, their rate
//! lowered to keep both kinds of probe within the draft's share of the capacity.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use analysis::rpm::{self, Params};
use events::Signal;
use session::client::foreign_probe;

use super::collect::Event;
use super::{ms, RpmSetup, PROBE_TIMEOUT};

/// The foreign probes' rate: the one asked for, lowered so that the probes of both kinds stay
/// within the draft's share of the capacity once the goodput is known.
pub(super) struct ProbeRate {
    asked: f64,
    millihertz: AtomicU64,
}

impl ProbeRate {
    pub(super) fn new(asked: f64) -> Self {
        Self {
            asked,
            millihertz: AtomicU64::new((asked * 1000.0) as u64),
        }
    }

    pub(super) fn per_s(&self) -> f64 {
        (self.millihertz.load(Ordering::Relaxed) as f64 / 1000.0).max(0.1)
    }

    /// Caps the rate for a path of `capacity_bps` (its moving average); the rate when it is
    /// below the one asked for.
    pub(super) fn cap(&self, params: &Params, capacity_bps: f64) -> Option<f64> {
        if capacity_bps <= 0.0 {
            return None;
        }
        let allowed = rpm::probe_rate(params, &rpm::ProbeCost::default(), capacity_bps);
        let rate = self.asked.min(allowed).max(0.1);
        self.millihertz
            .store((rate * 1000.0) as u64, Ordering::Relaxed);
        (rate < self.asked).then_some(rate)
    }
}

/// Foreign probes in flight at most: a loaded path holds each for several round trips, so
/// they are launched on the schedule, not one after another.
const MAX_FOREIGN_IN_FLIGHT: usize = 64;

/// Foreign probes launched at `rate` until `stop`, each on a thread of its own (at most
/// [`MAX_FOREIGN_IN_FLIGHT`] at once; a launch that would pass it is skipped), each waiting for
/// its answer [`PROBE_TIMEOUT`] at most and not past `end_by` (the direction's end, so that
/// its teardown does not wait on them); the first failure is said.
pub(super) fn foreign_loop(
    setup: &RpmSetup,
    rate: &ProbeRate,
    stop: &Signal,
    end_by: Instant,
    tx: Sender<Event>,
) {
    let config = setup.probe_config();
    let in_flight = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut next = Instant::now();
        while !stop.is_raised() {
            if in_flight.load(Ordering::Relaxed) < MAX_FOREIGN_IN_FLIGHT as u64 {
                in_flight.fetch_add(1, Ordering::Relaxed);
                let (config, tx, in_flight, failed) = (&config, tx.clone(), &in_flight, &failed);
                let timeout = end_by
                    .saturating_duration_since(Instant::now())
                    .clamp(Duration::from_millis(1), PROBE_TIMEOUT);
                s.spawn(move || {
                    let event = match foreign_probe(config, timeout) {
                        Ok(p) => Some(Event::Foreign {
                            connect_ms: ms(p.connect),
                            rr_ms: ms(p.request),
                        }),
                        Err(_) if stop.is_raised() => None,
                        Err(e) => (!failed.swap(true, Ordering::Relaxed)).then(|| {
                            Event::Failed(format!(
                                "a foreign probe failed (later failures not noted): {e}"
                            ))
                        }),
                    };
                    if let Some(event) = event {
                        let _ = tx.send(event);
                    }
                    in_flight.fetch_sub(1, Ordering::Relaxed);
                });
            }
            let every = Duration::from_secs_f64(1.0 / rate.per_s());
            next = (next + every).max(Instant::now());
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_probes_are_lowered_on_a_slow_path_only() {
        let params = Params::default();
        let rate = ProbeRate::new(50.0);
        assert_eq!(rate.cap(&params, 10e9), None);
        assert_eq!(rate.per_s(), 50.0);
        // 1 Mbit/s: 5 % is 50 kbit/s, 8000 bits a pair of probes.
        assert_eq!(rate.cap(&params, 1e6), Some(6.25));
        assert_eq!(rate.per_s(), 6.25);
        assert_eq!(rate.cap(&params, 0.0), None, "no capacity yet: unchanged");
        assert_eq!(rate.per_s(), 6.25);
    }
}
