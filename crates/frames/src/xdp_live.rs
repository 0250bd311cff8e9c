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
//! such a loss shows at the receiver's counter as `lost_on_path`, never as a frame missing from
//! the count: a veth counts them on its peer, the frames the peer's receive ring had no room
//! for, as the peer's `rx_dropped`, exactly that figure (`tests/frames_live.rs`). The engine uses this sender only where the interface says it transmits redirected
//! frames (`crate::xdp_features`), and frames up to [`MAX_FRAME`] bytes. An IPv4 frame carries
//! no UDP checksum (0, which IPv4 allows); an IPv6 frame's, which IPv6 requires, the program
//! computes per frame from the sum of what never changes and the words it writes.
//!
//! Invariants: the program reads and writes only inside the bounds the verifier checked; it
//! redirects nothing once the stop word is set or the frame limit reached, and the watching
//! thread sets the stop word within 2 ms of the run's time or its stop, so the last frame
//! leaves within a few ms of the test's end; a kernel run is at most [`RUN_FRAMES`] frames and
//! the runner thread is joined before `send` returns.
//!
//! Paced ([`Control::frames_per_s`]): the program keeps the schedule itself. Frame `seq` leaves
//! once `seq × pace <= now − start` (the pace in picoseconds, so 1,488,095 frames/s is
//! 672,000 ps and not a rounded 672 ns); a frame not yet due is dropped unsent and its
//! sequence number kept for the next, so the frames sent are the schedule's to within the
//! kernel's batch (64 frames of the run, a few microseconds), and a stall is caught up as the
//! socket engines' loop catches it up. The runner spins its core whatever the rate.

use crate::bpf::asm::{Asm, Cond, Size, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};
use crate::bpf::sys;
use crate::error::SysError;
use crate::frame::Frames;
use crate::send::{Control, Progress, TxCounts};
use measure::cpu::{CpuTime, ThreadClock};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Frames per kernel run at most (paced: frames sent and early ones dropped unsent; a third
/// of a second at a veth's live-frames rate): each run
/// costs the kernel a page pool set up and torn down (tens of ms), so runs are long, and a
/// stop ends one from the program's side (the stop word), not by waiting it out.
pub const RUN_FRAMES: u64 = 1 << 21;
/// The largest frame a live run carries (a page less the kernel's head and tail room).
pub const MAX_FRAME: usize = 3000;
/// How often the watching thread reads the count and asks whether to stop.
const WATCH: Duration = Duration::from_millis(2);
/// BPF_MAP_TYPE_ARRAY.
const MAP_ARRAY: u32 = 2;
const HELPER_KTIME_GET_NS: i32 = 5;
const HELPER_REDIRECT: i32 = 23;
const XDP_DROP: i32 = 1;
/// The state map's values: at key [`STATE`], seq (the next sequence number), the clock offset,
/// the pace (ps between frames; 0: unpaced), the frame limit, the pace's start
/// (CLOCK_MONOTONIC ns); at key [`STOP`], the stop word (its own element, so that raising it
/// never writes over the count the program is moving).
const STATE_LEN: usize = 40;
/// Words of a state value.
const WORDS: usize = STATE_LEN / 8;
const STATE: u32 = 0;
const STOP: u32 = 1;

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
    /// A sender of `frames` out of interface `ifindex`.
    pub fn open(ifindex: u32, frames: &Frames) -> Result<Self, SysError> {
        crate::caps::require_xdp()?;
        if !fits(frames) {
            return Err(SysError::Slot {
                len: frames.built_len(),
                slot: MAX_FRAME,
            });
        }
        let state = sys::map_create(MAP_ARRAY, 4, STATE_LEN as u32, 2, "lr_live")?;
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
        self.write(
            STATE,
            [0, offset, pace_ps(ctl.frames_per_s), ctl.limit.frames, now],
        )?;
        let start = Instant::now();
        let done = AtomicBool::new(false);
        // The runner's CPU clock while it runs (taken away, under the lock, before it ends, so
        // a reading never names a thread that is gone).
        let clock = Mutex::new(None::<ThreadClock>);
        let (ran, cpu) = std::thread::scope(|s| {
            let runner = s.spawn(|| {
                *lock(&clock) = ThreadClock::current().ok();
                let cpu0 = CpuTime::thread_now();
                let ran = self.run_until_done(ctl.limit.frames, &done);
                let used = CpuTime::thread_now().since(cpu0);
                *lock(&clock) = None;
                (ran, used)
            });
            let watched = self.watch(&ctl, start, &runner, &clock);
            done.store(true, Ordering::Relaxed);
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
    /// program's stop word at the run's time, at `ctl.stop`, or when the runner has ended.
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
            let stop = ctl.stop.is_some_and(|stop| stop()) || Instant::now() >= end;
            if stop || runner.is_finished() {
                // The stop word: the program redirects nothing more and the run ends fast.
                return self.write(STOP, [1, 0, 0, 0, 0]);
            }
        }
    }

    /// Runs the program until the frame limit, the stop word, or `done`.
    fn run_until_done(&self, limit: u64, done: &AtomicBool) -> Result<(), SysError> {
        while !done.load(Ordering::Relaxed) {
            let (seq, stop) = (self.read(STATE)?[0], self.read(STOP)?[0]);
            let left = limit.saturating_sub(seq);
            if stop != 0 || left == 0 {
                return Ok(());
            }
            let n = u32::try_from(left.min(RUN_FRAMES)).unwrap_or(u32::MAX);
            match sys::prog_test_run_live(&self.prog, &self.frame, n) {
                // A signal cut the run short: the program's count holds what it sent.
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(source) => {
                    return Err(SysError::Call {
                        call: "bpf(BPF_PROG_RUN, live frames)".into(),
                        source,
                    })
                }
                Ok(()) => {}
            }
        }
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The program: nothing when the stop word is set or the limit reached; else `seq =
/// state.seq++`, the data header's sequence number and send time, for several flows flow
/// `seq % flows`'s ports (and stream field), with `sum` (IPv6) the UDP checksum from that
/// constant sum and the words that vary, and a redirect to `ifindex`.
fn program(
    frames: &Frames,
    ifindex: u32,
    state: i32,
    sum: Option<u32>,
) -> Option<Vec<crate::bpf::asm::Insn>> {
    let mut a = Asm::new();
    let drop = a.new_label();
    let head = frames.udp_at() + crate::frame::UDP_LEN;
    let end = i32::try_from(head + wire::datagram::HEADER_LEN).ok()?;
    // The stop word, then the frame limit: past either, redirect nothing.
    a.mov(R6, R1).lookup(state, STOP, drop);
    a.load(Size::DW, R1, R0, 0).jump_imm(Cond::Ne, R1, 0, drop);
    a.lookup(state, STATE, drop).mov(R7, R0);
    a.load(Size::DW, R8, R7, 0)
        .load(Size::DW, R1, R7, 24)
        .jump_reg(Cond::Ge, R8, R1, drop);
    a.call(HELPER_KTIME_GET_NS).mov(R9, R0);
    paced(&mut a, drop);
    a.mov(R1, R8).add_imm(R1, 1).store(Size::DW, R7, 0, R1);
    a.load(Size::DW, R1, R7, 8).sub(R9, R1);
    // Bounds: the data header must lie inside the frame.
    a.load(Size::W, R2, R6, 0).load(Size::W, R3, R6, 4);
    a.mov(R4, R2)
        .add_imm(R4, end)
        .jump_reg(Cond::Gt, R4, R3, drop);
    let head = i16::try_from(head).ok()?;
    // The 40-bit sequence number, big-endian, at bytes 3..8 of the data header.
    for k in 0..5i16 {
        a.mov(R1, R8).rsh_imm(R1, i32::from(8 * (4 - k)));
        a.store(Size::B, R2, head + 3 + k, R1);
    }
    if let Some(sum) = sum {
        sum_of_stamps(&mut a, i32::try_from(sum).ok()?);
    }
    a.be64(R9).store(Size::DW, R2, head + 8, R9);
    flows(&mut a, frames, head, sum.is_some());
    if sum.is_some() {
        store_checksum(&mut a, i16::try_from(frames.udp_at() + 6).ok()?);
    }
    a.mov_imm(R1, ifindex as i32)
        .mov_imm(R2, 0)
        .call(HELPER_REDIRECT)
        .exit();
    a.label(drop);
    a.mov_imm(R0, XDP_DROP).exit();
    a.finish()
}

/// Paced (the state's pace, r7 the state, non-zero): frame `seq` (r8) leaves once
/// `seq × pace_ps <= (now − start) × 1000` (r9 now), the schedule from the pace's start, as
/// the socket engines' send loop keeps it; before that, `goto drop` (nothing sent, the count
/// unmoved, the run goes on to its next frame).
fn paced(a: &mut Asm, drop: crate::bpf::asm::Label) {
    let go = a.new_label();
    a.load(Size::DW, R1, R7, 16).jump_imm(Cond::Eq, R1, 0, go);
    a.mul(R1, R8);
    a.mov(R2, R9)
        .load(Size::DW, R3, R7, 32)
        .sub(R2, R3)
        .mul_imm(R2, 1000)
        .jump_reg(Cond::Gt, R1, R2, drop);
    a.label(go);
}

/// Picoseconds between frames at `frames_per_s` (0: unpaced, or a rate that is not one).
fn pace_ps(frames_per_s: Option<f64>) -> u64 {
    match frames_per_s {
        Some(r) if r.is_finite() && r > 0.0 => (1e12 / r).round().max(1.0) as u64,
        _ => 0,
    }
}

/// The frame's UDP checksum sum without the words a live frame changes (its ports and stream
/// field where they vary, its sequence number and send time): the template's (flow 0,
/// sequence 0, time 0; its checksum `!sum`) less flow 0's varying words, one's complement.
fn constant_sum(frames: &Frames, template: &[u8]) -> u32 {
    let at = frames.udp_at() + 6;
    let csum = u16::from_be_bytes([template[at], template[at + 1]]);
    let (pattern, (src, dst)) = frames.pattern();
    let (s, d) = pattern.sides();
    let varying = [(s > 1, src), (d > 1, dst)];
    let mut sum = u32::from(!csum);
    for (_, w) in varying.iter().filter(|(v, _)| *v) {
        sum += u32::from(!*w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// r5 = `sum` plus the 16-bit words of the sequence number (r8: its top byte of the 40 the
/// header carries, beside the zero flags byte, then two words) and the send time (r9, four
/// words).
fn sum_of_stamps(a: &mut Asm, sum: i32) {
    a.mov_imm(R5, sum);
    let words = [(R8, 32, 0xff), (R8, 16, 0xffff), (R8, 0, 0xffff)];
    let time = [
        (R9, 48, 0xffff),
        (R9, 32, 0xffff),
        (R9, 16, 0xffff),
        (R9, 0, 0xffff),
    ];
    for (reg, shift, mask) in words.into_iter().chain(time) {
        a.mov(R1, reg)
            .rsh_imm(R1, shift)
            .and_imm(R1, mask)
            .add(R5, R1);
    }
}

/// Folds r5 (under 2^24) to 16 bits, complements it (0 sent as 0xffff) and stores it
/// big-endian at `at` of the frame (r2).
fn store_checksum(a: &mut Asm, at: i16) {
    for _ in 0..3 {
        a.mov(R1, R5)
            .rsh_imm(R1, 16)
            .and_imm(R5, 0xffff)
            .add(R5, R1);
    }
    let nonzero = a.new_label();
    a.mov_imm(R1, 0xffff).sub(R1, R5);
    a.jump_imm(Cond::Ne, R1, 0, nonzero).mov_imm(R1, 0xffff);
    a.label(nonzero);
    a.be16(R1).store(Size::H, R2, at, R1);
}

/// For several flows: flow = seq % count into r1; the ports that vary and (when the frames
/// carry no test stream) the stream field, as `Frames::write` writes flow `flow`, each added
/// to the checksum's sum in r5 when `sum`. R2 = data.
fn flows(a: &mut Asm, frames: &Frames, head: i16, sum: bool) {
    let (pattern, (src, dst)) = frames.pattern();
    let count = pattern.count() as i32;
    if count <= 1 {
        return;
    }
    let (s, d) = pattern.sides();
    let udp = frames.udp_at() as i16;
    a.mov(R1, R8).mod_imm(R1, count);
    let add = |a: &mut Asm| {
        if sum {
            a.add(R5, R4);
        }
    };
    if frames.stream().is_none() {
        a.mov(R4, R1);
        add(a);
        a.be16(R4).store(Size::H, R2, head, R4);
    }
    if d > 1 {
        a.mov(R4, R1)
            .mod_imm(R4, i32::from(d))
            .add_imm(R4, i32::from(dst));
        add(a);
        a.be16(R4).store(Size::H, R2, udp + 2, R4);
    }
    if s > 1 {
        a.mov(R4, R1)
            .div_imm(R4, i32::from(d))
            .add_imm(R4, i32::from(src));
        add(a);
        a.be16(R4).store(Size::H, R2, udp, R4);
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
    use crate::{Endpoints, FlowPattern, FrameSpec};
    use std::net::{IpAddr, Ipv4Addr};

    fn frames(flows: FlowPattern, v6: bool) -> Frames {
        let (src, dst): (IpAddr, IpAddr) = match v6 {
            false => (Ipv4Addr::new(198, 18, 0, 1).into(), [198, 18, 0, 2].into()),
            true => (
                [0x2001, 2, 0, 0, 0, 0, 0, 1].into(),
                [0x2001, 2, 0, 0, 0, 0, 0, 2].into(),
            ),
        };
        let spec = FrameSpec {
            endpoints: Endpoints {
                src_mac: [2, 0, 0, 0, 0, 1],
                dst_mac: [2, 0, 0, 0, 0, 2],
                src,
                dst,
                src_port: 40000,
                dst_port: 9000,
            },
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
            eprintln!("skipped: no CAP_BPF/CAP_NET_ADMIN to load the live-frames program");
            return;
        }
        for (pattern, v6) in FlowPattern::ALL
            .into_iter()
            .flat_map(|p| [(p, false), (p, true)])
        {
            let f = frames(pattern, v6);
            let tx = LiveTx::open(1, &f).unwrap();
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

    /// Paced: a frame not yet due by the schedule is dropped unsent with the count unmoved;
    /// once due, it is sent and counted.
    #[test]
    fn a_paced_frame_leaves_only_once_the_schedule_has_reached_it() {
        if crate::caps::require_xdp().is_err() {
            eprintln!("skipped: no CAP_BPF/CAP_NET_ADMIN to load the live-frames program");
            return;
        }
        let tx = LiveTx::open(1, &frames(FlowPattern::One, false)).unwrap();
        let second = 1_000_000_000_000u64;
        let now = measure::clock::now_ns();
        let mut out = vec![0u8; 128];
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
