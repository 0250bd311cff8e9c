//! The `xdp` engine's sender where the driver offers no AF_XDP zero-copy: XDP live frames.
//! An XDP program, run by the kernel over a frame in `BPF_PROG_RUN`'s live-frames mode
//! (`BPF_F_TEST_XDP_LIVE_FRAMES`, Linux 5.18+), stamps each frame's sequence number, send time
//! and flow, and redirects it to the sending interface, whose driver transmits it through
//! `ndo_xdp_xmit`: no skb and no socket per frame, the path xdp-trafficgen takes. On a veth
//! pair this is about twice the frame rate of an AF_XDP socket in copy mode (which builds an
//! skb per frame), and the frames are the same bytes on the wire.
//!
//! What "sent" means: the frames the program redirected, each one sequence number, counted by
//! the program itself in its state map (so a run cut short by a signal or a stop still has an
//! exact count). A driver that cannot take a redirected frame drops it after the program, so
//! such a loss shows at the receiver's counter as the `network` stage of the loss, never as a frame missing from
//! the count: a veth counts them on its peer, the frames the peer's receive ring had no room
//! for, as the peer's `rx_dropped`, exactly that figure (`tests/frames_live.rs`). The engine uses this sender only where the interface says it transmits redirected
//! frames (`crate::xdp_features`), and frames up to [`MAX_FRAME`] bytes. An IPv4 frame carries
//! no UDP checksum (0, which IPv4 allows); an IPv6 frame's, which IPv6 requires, the program
//! computes per frame from the sum of what never changes and the words it writes.
//!
//! A kernel run costs a set-up in which nothing is sent (16 to 24 ms here), so runs are long
//! ([`RUN_FRAMES`]) and the test's end cuts the last one short: the watcher raises the stop
//! word, then signals the runner thread (SIGURG, a no-op handler) until its run returns
//! EINTR, within a batch.
//!
//! Invariants: the program reads and writes only inside the bounds the verifier checked; it
//! redirects nothing once the stop word is set or the frame limit reached, and the watching
//! thread sets the stop word within 2 ms of the run's time, its frame count or its stop, so
//! the last frame leaves within a few ms of the test's end; the runner is cut within
//! 2 s and joined before `send` returns.
//!
//! Paced ([`Control::frames_per_s`]): the program keeps the schedule itself. Frame `seq` leaves
//! once `seq × pace_ps <= (now − start) × 1000` (the pace in picoseconds, so 1,488,095
//! frames/s is 672,000 ps and not a rounded 672 ns; the clock in ns), the start the first
//! frame's time (after the first run's set-up); a frame not yet due is dropped unsent and its
//! sequence number kept for the next, so the frames sent are the schedule's to within the
//! kernel's batch (64 runs of the program, a few microseconds) while a run lasts. A stall is
//! made up in full: the frames whose time passed while the runner was held up (a later run's
//! set-up, every [`RUN_FRAMES`] runs, 4.6 s of them when most are early, or the host taking
//! its core) leave back to back when it runs again. The ring engines' loop makes up at most
//! [`crate::send::CATCH_UP`] of its schedule; this program does not yet. The runner spins its core whatever the rate.

use crate::bpf::sys;
mod program;
use crate::error::SysError;
use crate::frame::Frames;
use crate::send::{Control, Progress, TxCounts};
use measure::cpu::{CpuTime, ThreadClock};
#[cfg(test)]
use program::XDP_DROP;
use program::{constant_sum, program};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Runs of the program per kernel run at most (frames sent, and paced, early ones dropped
/// unsent): about 20 s at a veth's live-frames rate, 4.6 s of dropped runs. A kernel run costs
/// a set-up of 16 to 24 ms here (measured with a run of 2: a run of 1 takes 5 µs, any longer
/// one that much more), in which nothing is sent, so runs are long and the test's end cuts
/// the last one short (SIGURG to the runner thread).
pub const RUN_FRAMES: u64 = 1 << 27;
/// The signal that cuts a kernel run short: sent to the runner thread alone
/// (`pthread_kill`), its handler does nothing, and the kernel ends the run at its next batch
/// with EINTR. SIGURG: nothing else in linerate uses it, and its default disposition ignores
/// it, so one that strays anywhere else does nothing.
const CUT: libc::c_int = libc::SIGURG;
/// The longest the watcher cuts at a runner that does not end (a kernel that ignored the
/// signal would finish the run's [`RUN_FRAMES`] on its own).
const CUT_WAIT: Duration = Duration::from_secs(2);
/// The largest frame a live run carries (a page less the kernel's head and tail room).
pub const MAX_FRAME: usize = 3000;
/// How often the watching thread reads the count and asks whether to stop.
const WATCH: Duration = Duration::from_millis(2);
/// The state map's values: at key [`STATE`], seq (the next sequence number), the clock offset,
/// the pace (ps between frames; 0: unpaced), the frame limit, the pace's start
/// (CLOCK_MONOTONIC ns); at key [`STOP`], the stop word (its own element, so that raising it
/// never writes over the count the program is moving).
const STATE_LEN: usize = 40;
/// Words of a state value.
const WORDS: usize = STATE_LEN / 8;
const STATE: u32 = 0;
const STOP: u32 = 1;
/// The call a kernel run is, in errors.
const LIVE_RUN: &str = "bpf(BPF_PROG_RUN, live frames)";

/// A live-frames sender on one interface.
pub struct LiveTx {
    prog: OwnedFd,
    state: OwnedFd,
    frame: Vec<u8>,
}

/// Whether live frames can carry `frames`: small enough.
pub fn fits(frames: &Frames) -> bool {
    frames.built_len() <= MAX_FRAME
}

impl LiveTx {
    /// A sender of `frames` out of interface `ifindex`, the kernel's live runs tried first.
    pub fn open(ifindex: u32, frames: &Frames) -> Result<Self, SysError> {
        let tx = Self::load(ifindex, frames)?;
        tx.probe()?;
        Ok(tx)
    }

    /// The program and its state loaded for `frames` out of `ifindex`, not yet run.
    fn load(ifindex: u32, frames: &Frames) -> Result<Self, SysError> {
        crate::caps::require_xdp()?;
        install_cut()?;
        if !fits(frames) {
            return Err(SysError::Slot {
                len: frames.built_len(),
                slot: MAX_FRAME,
            });
        }
        let state = sys::map_create(sys::MAP_ARRAY, 4, STATE_LEN as u32, 2, "lr_live")?;
        let mut frame = vec![0u8; frames.built_len()];
        frames.write(&mut frame, 0, 0, 0);
        let csum = frames.udp_at() + 6;
        let sum = (frames.ipv6()).then(|| constant_sum(frames, &frame));
        let insns =
            program(frames, ifindex, state.as_raw_fd(), sum).ok_or_else(|| SysError::Verifier {
                source: std::io::Error::other("unresolved label"),
                log: "the program's source has a jump to a label never placed".into(),
            })?;
        let prog = sys::prog_load_xdp(&insns, "lr_live")?;
        // IPv4: no UDP checksum (0), which it allows; IPv6's the program writes per frame.
        frame[csum..csum + 2].fill(0);
        Ok(Self { prog, state, frame })
    }

    /// One kernel run of one frame with the stop word up, so nothing leaves: a kernel that
    /// loads the program but refuses to run it on live frames (EPERM where the host withholds
    /// that from root: a sandbox here did) says so before the test, as [`LiveTx::refused`].
    fn probe(&self) -> Result<(), SysError> {
        self.write(STOP, [1, 0, 0, 0, 0])?;
        let run = sys::prog_test_run_live(&self.prog, &self.frame, 1);
        self.write(STOP, [0; WORDS])?;
        run.map_err(|source| SysError::Call {
            call: LIVE_RUN.into(),
            source,
        })
    }

    /// Whether `e`, from [`LiveTx::open`], is the kernel refusing live frames (another sender
    /// can go instead), rather than a missing capability or a frame too large.
    pub fn refused(e: &SysError) -> bool {
        matches!(e, SysError::Call { call, .. } if call == LIVE_RUN)
    }

    fn read(&self, key: u32) -> Result<[u64; WORDS], SysError> {
        let mut v = [0u8; STATE_LEN];
        sys::map_lookup(&self.state, &key.to_ne_bytes(), &mut v)?;
        let word =
            |i: usize| u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        Ok(std::array::from_fn(word))
    }

    fn write(&self, key: u32, words: [u64; WORDS]) -> Result<(), SysError> {
        let mut v = [0u8; STATE_LEN];
        for (i, w) in words.iter().enumerate() {
            v[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        sys::map_update(&self.state, &key.to_ne_bytes(), &v)
    }

    /// Sends as [`crate::send::send`] does (`ctl`'s frame count, time, pace, stop and
    /// progress): the kernel runs the program in long runs on a second thread while this one
    /// watches the count and the stop. `clock` gives the data header's
    /// send times (the program reads CLOCK_MONOTONIC less its offset to `clock`). Returns
    /// the counts and the runner thread's CPU time (the caller's own thread only watches).
    pub fn send(
        &self,
        ctl: Control,
        clock: &dyn Fn() -> u64,
    ) -> Result<(TxCounts, CpuTime), SysError> {
        let now = measure::clock::now_ns();
        let offset = now.wrapping_sub(clock());
        self.write(STOP, [0; WORDS])?;
        // The pace's start: 0, for the program to take its first frame's time.
        self.write(
            STATE,
            [0, offset, pace_ps(ctl.frames_per_s), ctl.limit.frames, 0],
        )?;
        let start = Instant::now();
        let done = AtomicBool::new(false);
        // The runner's pthread id, for [`CUT`] (0 until it has started).
        let tid = AtomicU64::new(0);
        // The runner's CPU clock while it runs (taken away, under the lock, before it ends, so
        // a reading never names a thread that is gone).
        let clock = Mutex::new(None::<ThreadClock>);
        let (ran, cpu) = std::thread::scope(|s| {
            let runner = s.spawn(|| {
                unblock_cut();
                // SAFETY: pthread_self has no preconditions.
                tid.store(unsafe { libc::pthread_self() } as u64, Ordering::Release);
                *lock(&clock) = ThreadClock::current().ok();
                let cpu0 = CpuTime::thread_now();
                let ran = self.run_until_done(&done);
                let used = CpuTime::thread_now().since(cpu0);
                *lock(&clock) = None;
                (ran, used)
            });
            let watched = self.watch(&ctl, start, &runner, &clock);
            // Done before the cut: a watcher that failed before raising the stop word still
            // ends the runner at its cut run, not after another whole one.
            done.store(true, Ordering::Relaxed);
            cut_until_done(&runner, &tid);
            let (ran, cpu) = runner.join().unwrap_or_else(|_| {
                let panicked = SysError::Call {
                    call: "live frames runner".into(),
                    source: std::io::Error::other("panicked"),
                };
                (Err(panicked), CpuTime::default())
            });
            (watched.and(ran), cpu)
        });
        let sent = self.read(STATE)?[0];
        let c = TxCounts {
            sent,
            bytes: sent * self.frame.len() as u64,
            elapsed: start.elapsed(),
            ..TxCounts::default()
        };
        if let Some(tell) = ctl.sent {
            tell(Progress {
                accepted: sent,
                refused: 0,
                helper_cpu: Duration::from_micros(cpu.total_us()),
            });
        }
        ran.map(|()| (c, cpu))
    }

    /// Every [`WATCH`]: tells the count and the runner's CPU (its `clock`), and raises the
    /// program's stop word at the run's time, at its frame count, at `ctl.stop`, or when the
    /// runner has ended.
    fn watch(
        &self,
        ctl: &Control,
        start: Instant,
        runner: &std::thread::ScopedJoinHandle<'_, (Result<(), SysError>, CpuTime)>,
        clock: &Mutex<Option<ThreadClock>>,
    ) -> Result<(), SysError> {
        let end = start + ctl.limit.time;
        let mut helper_cpu = Duration::ZERO;
        loop {
            std::thread::sleep(WATCH);
            let seq = self.read(STATE)?[0];
            if let Some(c) = *lock(clock) {
                helper_cpu = c.read().unwrap_or(helper_cpu);
            }
            if let Some(tell) = ctl.sent {
                tell(Progress {
                    accepted: seq,
                    refused: 0,
                    helper_cpu,
                });
            }
            let stop = ctl.stop.is_some_and(|stop| stop())
                || Instant::now() >= end
                || seq >= ctl.limit.frames;
            if stop || runner.is_finished() {
                // The stop word: the program redirects nothing more (the run is cut next).
                return self.write(STOP, [1, 0, 0, 0, 0]);
            }
        }
    }

    /// Runs the program until the stop word or `done` (the frame limit is the program's, and
    /// the watcher's, which then raises the stop word and cuts the run).
    fn run_until_done(&self, done: &AtomicBool) -> Result<(), SysError> {
        while !done.load(Ordering::Relaxed) {
            if self.read(STOP)?[0] != 0 {
                return Ok(());
            }
            let n = u32::try_from(RUN_FRAMES).unwrap_or(u32::MAX);
            match sys::prog_test_run_live(&self.prog, &self.frame, n) {
                // A signal cut the run short: the program's count holds what it sent.
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(source) => {
                    return Err(SysError::Call {
                        call: LIVE_RUN.into(),
                        source,
                    })
                }
                Ok(()) => {}
            }
        }
        Ok(())
    }
}

/// Sends [`CUT`] to the runner (`tid`) every millisecond until it has ended, at most
/// [`CUT_WAIT`]: one that lands between two kernel runs cuts nothing, one inside a run ends it
/// within a batch. The runner is joined after this, so its pthread id stays valid meanwhile.
fn cut_until_done<T>(runner: &std::thread::ScopedJoinHandle<'_, T>, tid: &AtomicU64) {
    let give_up = Instant::now() + CUT_WAIT;
    while !runner.is_finished() && Instant::now() < give_up {
        let t = tid.load(Ordering::Acquire);
        if t != 0 {
            // SAFETY: `t` is the pthread id of a thread not yet joined (see above).
            unsafe { libc::pthread_kill(t as libc::pthread_t, CUT) };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Does nothing: [`CUT`]'s delivery alone ends the kernel run (EINTR).
extern "C" fn on_cut(_: libc::c_int) {}

/// Installs [`on_cut`] for [`CUT`], without SA_RESTART so the run's syscall returns EINTR.
/// The same disposition each time: installing it again changes nothing.
fn install_cut() -> Result<(), SysError> {
    // SAFETY: a zeroed sigaction is a valid value; the handler is async-signal-safe (it does
    // nothing); sa_mask is initialised before the call.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_cut as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(CUT, &sa, std::ptr::null_mut()) != 0 {
            return Err(SysError::last("sigaction(SIGURG) for cutting live runs"));
        }
    }
    Ok(())
}

/// Unblocks [`CUT`] on this thread (a thread inherits its creator's mask).
fn unblock_cut() {
    // SAFETY: the set is initialised before use; pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, CUT);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Picoseconds between frames at `frames_per_s` (0: unpaced, or a rate that is not one).
fn pace_ps(frames_per_s: Option<f64>) -> u64 {
    match frames_per_s {
        Some(r) if r.is_finite() && r > 0.0 => (1e12 / r).round().max(1.0) as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pace_is_kept_in_picoseconds_so_line_rates_are_not_rounded_to_a_nanosecond() {
        assert_eq!(pace_ps(Some(1e12 / 672_000.0)), 672_000);
        // 64-byte frames on 10 GbE: 67.2 ns, which whole nanoseconds would make 67 (0.3 % fast).
        assert_eq!(pace_ps(Some(14_880_952.38)), 67_200);
        assert_eq!(pace_ps(Some(100_000.0)), 10_000_000);
        for unpaced in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            assert_eq!(pace_ps(unpaced), 0, "{unpaced:?}");
        }
    }
    use crate::{FlowPattern, FrameSpec};

    fn frames(flows: FlowPattern, v6: bool) -> Frames {
        let (src, dst) = crate::frame::testing::pair(v6);
        let spec = FrameSpec {
            endpoints: crate::frame::testing::endpoints(src, dst, 40000, 9000),
            frame_size: if v6 { 90 } else { 64 },
            mtu: 1500,
            flows,
        };
        Frames::new(&spec).unwrap()
    }

    /// The program, run once per sequence number over the template (no live frames, so
    /// nothing is sent), writes each frame as `Frames::write` does, for every flow pattern and
    /// both families: byte for byte with the send time set to the program's own, so an IPv6
    /// frame's UDP checksum is `Frames::write`'s (IPv4's is 0: none); and redirects nothing
    /// past the frame limit or once the stop word is up. Needs CAP_BPF and CAP_NET_ADMIN
    /// (skipped, said so, without).
    #[test]
    fn each_frame_the_program_stamps_is_the_one_frames_write_builds() {
        if crate::caps::require_xdp().is_err() {
            crate::skip::skip("no CAP_BPF/CAP_NET_ADMIN to load the live-frames program");
            return;
        }
        for (pattern, v6) in FlowPattern::ALL
            .into_iter()
            .flat_map(|p| [(p, false), (p, true)])
        {
            let f = frames(pattern, v6);
            let tx = LiveTx::load(1, &f).unwrap();
            tx.write(STATE, [0, 0, 0, 250, 0]).unwrap();
            let head = f.udp_at() + 8;
            for seq in [0u64, 1, 99, 101, 249, 250] {
                tx.write(STATE, [seq, 0, 0, 250, 0]).unwrap();
                let mut out = vec![0u8; 128];
                let (ret, len) = sys::prog_test_run(&tx.prog, &tx.frame, &mut out).unwrap();
                let got = &mut out[..len];
                if seq >= 250 {
                    assert_eq!(ret, XDP_DROP as u32, "{pattern:?} past its limit");
                    continue;
                }
                assert_eq!(ret, 4, "{pattern:?} seq {seq}: XDP_REDIRECT");
                let sent = u64::from_be_bytes(got[head + 8..head + 16].try_into().unwrap());
                let mut want = vec![0u8; f.built_len()];
                f.write(&mut want, seq as usize, seq, sent);
                if !v6 {
                    want[f.udp_at() + 6..f.udp_at() + 8].fill(0);
                }
                assert_eq!(got, &want[..], "{pattern:?} v6 {v6} seq {seq}");
                assert_eq!(tx.read(STATE).unwrap()[0], seq + 1, "{pattern:?} counted");
            }
            // The stop word: nothing redirected, nothing counted.
            tx.write(STATE, [5, 0, 0, 250, 0]).unwrap();
            tx.write(STOP, [1, 0, 0, 0, 0]).unwrap();
            let mut out = vec![0u8; 128];
            let (ret, _) = sys::prog_test_run(&tx.prog, &tx.frame, &mut out).unwrap();
            assert_eq!(
                (ret, tx.read(STATE).unwrap()[0]),
                (XDP_DROP as u32, 5),
                "{pattern:?}"
            );
        }
    }

    /// Opening runs the program once on live frames with the stop word up: nothing leaves and
    /// nothing is counted, and a kernel that refuses live runs is told apart from any other
    /// failure (the engine sends through a socket then, and says why).
    #[test]
    fn opening_tries_a_live_run_that_sends_nothing() {
        if crate::caps::require_xdp().is_err() {
            crate::skip::skip("no CAP_BPF/CAP_NET_ADMIN to load the live-frames program");
            return;
        }
        match LiveTx::open(1, &frames(FlowPattern::One, false)) {
            Ok(tx) => {
                assert_eq!(tx.read(STATE).unwrap()[0], 0, "counted");
                assert_eq!(tx.read(STOP).unwrap()[0], 0, "the stop word left up");
            }
            Err(e) => assert!(LiveTx::refused(&e), "{e}"),
        }
    }

    /// Paced: a frame not yet due by the schedule is dropped unsent with the count unmoved;
    /// once due, it is sent and counted.
    #[test]
    fn a_paced_frame_leaves_only_once_the_schedule_has_reached_it() {
        if crate::caps::require_xdp().is_err() {
            crate::skip::skip("no CAP_BPF/CAP_NET_ADMIN to load the live-frames program");
            return;
        }
        let tx = LiveTx::load(1, &frames(FlowPattern::One, false)).unwrap();
        let second = 1_000_000_000_000u64;
        let now = measure::clock::now_ns();
        let mut out = vec![0u8; 128];
        // Paced with no start yet: the first frame's time becomes the start, and it leaves.
        tx.write(STATE, [0, 0, second, 250, 0]).unwrap();
        let (got, _) = sys::prog_test_run(&tx.prog, &tx.frame, &mut out).unwrap();
        let state = tx.read(STATE).unwrap();
        assert_eq!((got, state[0]), (4, 1), "the first frame");
        assert!(
            state[4] >= now,
            "the start is the first frame's time: {state:?}"
        );
        // Frame 10 at one a second is due 10 s after the start.
        for (started_ago_s, ret, counted) in [
            (0, XDP_DROP as u32, 10),
            (9, XDP_DROP as u32, 10),
            (11, 4, 11),
        ] {
            let start = now - started_ago_s * 1_000_000_000;
            tx.write(STATE, [10, 0, second, 250, start]).unwrap();
            let (got, _) = sys::prog_test_run(&tx.prog, &tx.frame, &mut out).unwrap();
            assert_eq!(
                (got, tx.read(STATE).unwrap()[0]),
                (ret, counted),
                "started {started_ago_s} s ago"
            );
        }
    }
}
