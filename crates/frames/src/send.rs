//! One send loop for both engines ([`crate::packet_tx::PacketTx`], [`crate::af_xdp::XskTx`]):
//! the engine puts frames in slots it owns and hands them to the kernel ([`FrameTx`]); the loop
//! decides how many, when to stop, and counts.
//!
//! What "sent" means is the engines' (see `packet_tx`): a frame the driver accepted. A frame the
//! driver drops still completes, but its kick fails (ENOBUFS, EBUSY): counted in
//! [`TxCounts::refused`], and another frame is sent in its place, so a run limited to N frames
//! ends with exactly N accepted.
//!
//! A run stops at the first of: its frame count, its time, or [`Control::stop`] saying so (the
//! test's end, an interrupt, raised by another thread). [`Control::sent`] is told the frames
//! accepted so far, for a live interval, and [`Control::frames_per_s`] paces the frames put on
//! the ring: frame `n` is due `n / rate` after the start. A paced run that was held up (the
//! host gave its core to another task) sends the frames it owes at once when it runs again, but
//! never more than [`CATCH_UP`] of them: past that the schedule moves on, so a stall never
//! becomes a burst longer than that at the line rate, and what the stall cost shows as a send
//! rate short of the offer instead.
//! Every wait is bounded: a run lasts at most its time plus [`DRAIN`] after it stops.

use std::time::{Duration, Instant};

use crate::error::SysError;
use crate::frame::Frames;

/// How long the sender waits at the end for frames still in the kernel's hands.
pub const DRAIN: Duration = Duration::from_secs(2);

/// The most of its schedule a paced run makes up after a stall: the frames due in up to 10 ms
/// leave back to back, later ones keep their spacing. At 16,667 frames/s that is 167 frames,
/// well within what a shaper's queue of tens of milliseconds absorbs; an offer of a steady rate
/// must not arrive as a burst the path was never offered.
pub const CATCH_UP: Duration = Duration::from_millis(10);

/// When a run stops: after `frames` frames accepted or after `time`, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendLimit {
    /// Frames to send (u64::MAX: no count limit).
    pub frames: u64,
    /// The longest the run lasts.
    pub time: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxCounts {
    /// Frames the driver accepted.
    pub sent: u64,
    /// Bytes of those frames as built (without the FCS).
    pub bytes: u64,
    /// Frames the driver dropped (each ended a kick with an error); resent as new frames.
    pub refused: u64,
    /// Frames the kernel refused as malformed (TP_STATUS_WRONG_FORMAT): a bug if ever non-zero.
    pub wrong_format: u64,
    /// From the first frame to the last one's completion.
    pub elapsed: Duration,
}

/// A run's limits and the handles other threads see it by.
#[derive(Clone, Copy)]
pub struct Control<'a> {
    /// Frame count and time.
    pub limit: SendLimit,
    /// Frames put on the ring per second at most; `None`: as fast as the ring takes them.
    pub frames_per_s: Option<f64>,
    /// Whether to end the run now (asked once per pass of the loop).
    pub stop: Option<&'a dyn Fn() -> bool>,
    /// Told the frames accepted and refused so far, as they complete.
    pub sent: Option<&'a dyn Fn(Progress)>,
}

/// How far a run is: what a live interval shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Frames the driver accepted.
    pub accepted: u64,
    /// Frames it dropped (each replaced by a new one).
    pub refused: u64,
    /// CPU time threads other than the caller's used sending so far (live frames' runner).
    pub helper_cpu: std::time::Duration,
}

impl Control<'_> {
    /// Only a count and a time: unpaced, not stopped from outside.
    pub fn limit(limit: SendLimit) -> Self {
        Control {
            limit,
            frames_per_s: None,
            stop: None,
            sent: None,
        }
    }
}

/// An engine's side of the loop: slots it owns, and the kernel's.
pub trait FrameTx {
    /// Largest frame one slot holds, bytes.
    fn slot_room(&self) -> usize;
    /// Takes back the slots the kernel finished: (completed, refused as malformed).
    fn reap(&mut self) -> (u64, u64);
    /// Free slots now.
    fn room(&self) -> u64;
    /// Writes up to `n` frames from sequence number `seq` into free slots and hands them to the
    /// kernel; returns how many.
    fn queue(&mut self, frames: &Frames, n: u64, seq: u64, clock: &dyn Fn() -> u64) -> u64;
    /// Tells the kernel to send what it holds; whether the driver dropped a frame.
    fn kick(&mut self) -> Result<bool, SysError>;
    /// Waits a little (at most a millisecond) for the kernel to free slots.
    fn wait(&self);
}

/// A paced run's schedule: frame `n` is due at `origin + n / rate`.
struct Schedule {
    origin: Instant,
    rate: f64,
}

impl Schedule {
    /// Frame 0 at `origin`, `rate` frames/s.
    fn new(origin: Instant, rate: f64) -> Self {
        Schedule { origin, rate }
    }

    /// When frame `n` is due.
    fn at(&self, n: u64) -> Instant {
        self.origin + Duration::from_secs_f64(n as f64 / self.rate)
    }

    /// How many frames are due by `now`, one ahead; `submitted` were sent. A schedule more
    /// than [`CATCH_UP`] behind moves on first, so the owed frames are at most that many.
    fn due(&mut self, now: Instant, submitted: u64) -> u64 {
        let late = now.saturating_duration_since(self.at(submitted));
        self.origin += late.saturating_sub(CATCH_UP);
        (self.rate * now.duration_since(self.origin).as_secs_f64()) as u64 + 1
    }
}

/// Sends `frames`' frames, flow after flow, on `tx` as `ctl` says; `clock` gives each frame's
/// send time in ns (the data header's `sent_ns`).
pub fn send(
    tx: &mut dyn FrameTx,
    frames: &Frames,
    ctl: Control,
    clock: &dyn Fn() -> u64,
) -> Result<TxCounts, SysError> {
    let len = frames.built_len();
    if len > tx.slot_room() {
        return Err(SysError::Slot {
            len,
            slot: tx.slot_room(),
        });
    }
    let start = Instant::now();
    let mut schedule = ctl.frames_per_s.map(|rate| Schedule::new(start, rate));
    let mut end = start + ctl.limit.time;
    let mut c = TxCounts::default();
    let (mut submitted, mut completed) = (0u64, 0u64);
    loop {
        let (done, wrong) = tx.reap();
        completed += done;
        c.wrong_format += wrong;
        let in_flight = submitted - completed - c.wrong_format;
        let accepted = completed.saturating_sub(c.refused);
        if let Some(tell) = ctl.sent {
            tell(Progress {
                accepted,
                refused: c.refused,
                ..Progress::default()
            });
        }
        let now = Instant::now();
        if ctl.stop.is_some_and(|stop| stop()) && now < end {
            end = now;
        }
        let mut want = ctl
            .limit
            .frames
            .saturating_sub(accepted + in_flight)
            .min(tx.room());
        if let Some(s) = &mut schedule {
            want = want.min(s.due(now, submitted).saturating_sub(submitted));
        }
        let n = if now < end {
            tx.queue(frames, want, submitted, clock)
        } else {
            0
        };
        submitted += n;
        if in_flight + n > 0 && tx.kick()? {
            c.refused += 1;
        }
        let ended = accepted >= ctl.limit.frames || now >= end;
        if (ended && in_flight + n == 0) || now >= end + DRAIN {
            break;
        }
        if n == 0 {
            match &schedule {
                // Paced and ahead: sleep toward the next frame's time (at most 1 ms).
                Some(s) if want == 0 && in_flight == 0 => {
                    let ahead = s.at(submitted).saturating_duration_since(Instant::now());
                    std::thread::sleep(ahead.min(Duration::from_millis(1)));
                }
                _ => tx.wait(),
            }
        }
    }
    c.sent = completed.saturating_sub(c.refused);
    c.bytes = c.sent * len as u64;
    c.elapsed = start.elapsed();
    if let Some(tell) = ctl.sent {
        tell(Progress {
            accepted: c.sent,
            refused: c.refused,
            ..Progress::default()
        });
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Endpoints, FlowPattern, FrameSpec};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A kernel that completes every frame at once and drops one frame in `drop_every` kicks.
    struct Fake {
        slots: u64,
        held: u64,
        kicks: u64,
        drop_every: u64,
        written: u64,
        /// The most frames one `queue` call took.
        most_at_once: u64,
    }

    impl FrameTx for Fake {
        fn slot_room(&self) -> usize {
            2048
        }
        fn reap(&mut self) -> (u64, u64) {
            (std::mem::take(&mut self.held), 0)
        }
        fn room(&self) -> u64 {
            self.slots - self.held
        }
        fn queue(&mut self, _: &Frames, n: u64, _: u64, _: &dyn Fn() -> u64) -> u64 {
            let n = n.min(self.room());
            self.held += n;
            self.written += n;
            self.most_at_once = self.most_at_once.max(n);
            n
        }
        fn kick(&mut self) -> Result<bool, SysError> {
            self.kicks += 1;
            Ok(self.drop_every > 0 && self.kicks % self.drop_every == 0)
        }
        fn wait(&self) {}
    }

    fn frames() -> Frames {
        Frames::new(&FrameSpec {
            endpoints: Endpoints {
                src_mac: [2, 0, 0, 0, 0, 1],
                dst_mac: [2, 0, 0, 0, 0, 2],
                src: [198, 18, 0, 1].into(),
                dst: [198, 18, 0, 2].into(),
                src_port: 40000,
                dst_port: 9000,
            },
            frame_size: 64,
            mtu: 1500,
            flows: FlowPattern::One,
        })
        .unwrap()
    }

    fn fake(drop_every: u64) -> Fake {
        Fake {
            slots: 64,
            held: 0,
            kicks: 0,
            drop_every,
            written: 0,
            most_at_once: 0,
        }
    }

    #[test]
    fn a_counted_run_ends_with_exactly_its_frames_accepted_and_each_drop_resent() {
        let mut tx = fake(7);
        let limit = SendLimit {
            frames: 10_000,
            time: Duration::from_secs(10),
        };
        let c = send(&mut tx, &frames(), Control::limit(limit), &|| 0).unwrap();
        assert_eq!(c.sent, 10_000);
        assert!(c.refused > 0);
        assert_eq!(tx.written, c.sent + c.refused);
        assert_eq!(c.bytes, 10_000 * frames().built_len() as u64);
    }

    #[test]
    fn a_raised_stop_ends_an_endless_run_and_its_live_count_is_the_total() {
        let (stop, sent) = (AtomicBool::new(false), AtomicU64::new(0));
        let run = || {
            let is_stopped = || stop.load(Ordering::Relaxed);
            let tell = |p: Progress| sent.store(p.accepted, Ordering::Relaxed);
            let ctl = Control {
                limit: SendLimit {
                    frames: u64::MAX,
                    time: Duration::from_secs(30),
                },
                frames_per_s: None,
                stop: Some(&is_stopped),
                sent: Some(&tell),
            };
            send(&mut fake(0), &frames(), ctl, &|| 0)
        };
        let t0 = Instant::now();
        let c = std::thread::scope(|s| {
            let running = s.spawn(run);
            std::thread::sleep(Duration::from_millis(50));
            stop.store(true, Ordering::Relaxed);
            running.join().unwrap().unwrap()
        });
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert!(c.sent > 0);
        assert_eq!(sent.load(Ordering::Relaxed), c.sent);
    }

    /// 0.3 s at 10,000 frames/s, each pass of the loop told to `sent`.
    fn paced(sent: Option<&dyn Fn(Progress)>) -> Control<'_> {
        Control {
            limit: SendLimit {
                frames: u64::MAX,
                time: Duration::from_millis(300),
            },
            frames_per_s: Some(10_000.0),
            stop: None,
            sent,
        }
    }

    #[test]
    fn a_paced_run_puts_its_rate_on_the_ring_not_more() {
        let c = send(&mut fake(0), &frames(), paced(None), &|| 0).unwrap();
        // 3,000 due in 0.3 s (one ahead); a late start can only make it fewer.
        assert!((2_000..=3_001).contains(&c.sent), "{}", c.sent);
    }

    /// A sender held up for 60 ms (its progress callback sleeps once, as a descheduled thread
    /// would) sends at most `CATCH_UP` of the frames it owes at once, then keeps the rate: the
    /// 50 ms beyond `CATCH_UP` are not made up, however long the stall really took.
    #[test]
    fn a_stalled_paced_run_makes_up_at_most_catch_up_of_its_schedule() {
        let stalled = AtomicBool::new(false);
        let stall = |p: Progress| {
            if p.accepted >= 500 && !stalled.swap(true, Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(60));
            }
        };
        let ctl = paced(Some(&stall));
        let mut tx = Fake {
            slots: 4096,
            ..fake(0)
        };
        let c = send(&mut tx, &frames(), ctl, &|| 0).unwrap();
        // 10 ms at 10,000 frames/s, and the one frame a schedule lets go ahead.
        assert!(tx.most_at_once <= 101, "{}", tx.most_at_once);
        assert!(stalled.load(Ordering::Relaxed));
        // 3,001 due in 0.3 s without the stall; it cost at least 50 ms of them.
        assert!(c.sent <= 2_501, "{}", c.sent);
    }
}
