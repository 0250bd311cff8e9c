//! The live-frames program, written with [`crate::bpf::asm`]: per run of the kernel's loop, it
//! takes the next sequence number from the state map (nothing when the stop word is up, the
//! frame limit is reached or, paced, the frame is not yet due), stamps it, the send time and
//! the flow into the frame, writes an IPv6 frame's UDP checksum, and redirects the frame to the
//! sending interface. The state map's layout is [`super`]'s.

use super::{STATE, STOP};
use crate::bpf::asm::{Asm, Cond, Label, Size, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};
use crate::frame::Frames;

const HELPER_KTIME_GET_NS: i32 = 5;
const HELPER_REDIRECT: i32 = 23;
/// `XDP_DROP`: what a run of the program that sends nothing returns.
pub(super) const XDP_DROP: i32 = 1;

/// The program: nothing when the stop word is set or the limit reached; else `seq =
/// state.seq++`, the data header's sequence number and send time, for several flows flow
/// `seq % flows`'s ports (and stream field), with `sum` (IPv6) the UDP checksum from that
/// constant sum and the words that vary, and a redirect to `ifindex`.
pub(super) fn program(
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
/// unmoved, the run goes on to its next frame). The start is the first frame's time, written
/// here when the state's is 0: the kernel's set-up of the first run is not the schedule's.
fn paced(a: &mut Asm, drop: Label) {
    let (go, started) = (a.new_label(), a.new_label());
    a.load(Size::DW, R1, R7, 16).jump_imm(Cond::Eq, R1, 0, go);
    a.load(Size::DW, R3, R7, 32)
        .jump_imm(Cond::Ne, R3, 0, started);
    a.store(Size::DW, R7, 32, R9).mov(R3, R9);
    a.label(started);
    a.mul(R1, R8);
    a.mov(R2, R9)
        .sub(R2, R3)
        .mul_imm(R2, 1000)
        .jump_reg(Cond::Gt, R1, R2, drop);
    a.label(go);
}

/// The frame's UDP checksum sum without the words a live frame changes (its ports and stream
/// field where they vary, its sequence number and send time): the template's (flow 0,
/// sequence 0, time 0; its checksum `!sum`) less flow 0's varying words, one's complement.
pub(super) fn constant_sum(frames: &Frames, template: &[u8]) -> u32 {
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
