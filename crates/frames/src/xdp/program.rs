//! The counter's program, written with [`crate::bpf::asm`]: which frames are the test's
//! ([`Matching`]), the counts it keeps for them, and what it does with them ([`Action`]).
//!
//! A test frame is UDP to a destination port in the test's block, over IPv4 (no options, not a
//! later fragment) or IPv6 (no extension headers), from one source address and to one
//! destination address when given, and not a probe (the data header's flag). A frame to
//! another address of the host at the same ports is not the test's: it passes untouched, to
//! whatever socket holds that address and port. The block holds the test's streams one after another,
//! [`Matching::dst_per_stream`] ports each; a stream's source ports run from its probe's
//! source port up, [`Matching::src_per_stream`] of them. So a frame's flow key is
//! `(port − first) × src_per_stream + (source port − its stream's base)`, every
//! (stream, source port, destination port) one key.
//!
//! The maps: `counters`, per receive queue (`{frames, bytes}` per CPU); `flows`, frames per
//! flow key (one u64 per CPU); `bases`, each stream's first source port, which the program
//! learns from the stream's first probe (probes come before its frames, from the stream's
//! socket) and nothing else writes. A frame whose stream has no base yet, or whose source port is
//! outside its stream's, or whose key is past the map, is counted per queue only.

use crate::bpf::asm::{Asm, Cond, Insn, Label, Size, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};
use std::net::IpAddr;

const HELPER_REDIRECT_MAP: i32 = 51;
const HELPER_XDP_GET_BUFF_LEN: i32 = 188;
/// `XDP_DROP`.
pub const XDP_DROP: i32 = 1;
/// `XDP_PASS`.
pub const XDP_PASS: i32 = 2;
/// Rx queues an XSKMAP holds, and the per-queue counters.
pub const XSK_SLOTS: u32 = 64;

/// What the program does with a test frame once counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Count and drop: the receiver's stack never sees it (a ground truth of frames that
    /// reached the driver).
    Drop,
    /// Count and pass to the stack.
    Pass,
    /// Count and redirect to the AF_XDP socket in the XSKMAP slot of the frame's rx queue
    /// (passed to the stack when that slot is empty).
    Redirect,
}

/// Which frames are the test's: UDP with a destination port in `first..first+count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    /// The first destination port.
    pub first: u16,
    /// How many ports (at least 1).
    pub count: u16,
}

/// The test's frames and how their flows are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matching {
    /// The destination ports of every stream, stream 0's first.
    pub ports: PortRange,
    /// The only source address counted (`None`: any).
    pub from: Option<IpAddr>,
    /// The only destination address counted (`None`: any); of `from`'s family when both are
    /// given ([`Matching::family`]).
    pub to: Option<IpAddr>,
    /// Destination ports per stream (1 or the flow pattern's 100); divides `ports.count`.
    pub dst_per_stream: u16,
    /// Source ports per stream, from the stream's base up (1 or the pattern's 100).
    pub src_per_stream: u16,
}

impl Matching {
    /// Frames to `ports` from anyone, a stream per port and one source port each.
    pub fn ports(ports: PortRange) -> Self {
        Self {
            ports,
            from: None,
            to: None,
            dst_per_stream: 1,
            src_per_stream: 1,
        }
    }

    /// How many streams the block holds.
    pub fn streams(&self) -> u32 {
        u32::from(self.ports.count) / u32::from(self.dst_per_stream.max(1))
    }

    /// The one family `from` and `to` are of: `Ok(None)` when neither is given (frames of both
    /// families match), `Err` when they differ (no frame could match).
    pub fn family(&self) -> Result<Option<Family>, (IpAddr, IpAddr)> {
        match (self.from, self.to) {
            (None, None) => Ok(None),
            (Some(IpAddr::V4(f)), None) => Ok(Some(Family::V4(Some(f.octets()), None))),
            (None, Some(IpAddr::V4(t))) => Ok(Some(Family::V4(None, Some(t.octets())))),
            (Some(IpAddr::V4(f)), Some(IpAddr::V4(t))) => {
                Ok(Some(Family::V4(Some(f.octets()), Some(t.octets()))))
            }
            (Some(IpAddr::V6(f)), None) => Ok(Some(Family::V6(Some(f.octets()), None))),
            (None, Some(IpAddr::V6(t))) => Ok(Some(Family::V6(None, Some(t.octets())))),
            (Some(IpAddr::V6(f)), Some(IpAddr::V6(t))) => {
                Ok(Some(Family::V6(Some(f.octets()), Some(t.octets()))))
            }
            (Some(f), Some(t)) => Err((f, t)),
        }
    }

    /// Flow keys the test's frames can have: every stream's source × destination ports.
    pub fn flow_keys(&self) -> u32 {
        u32::from(self.ports.count) * u32::from(self.src_per_stream.max(1))
    }
}

/// The family a counter's addresses are of, with them as bytes (source, destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// IPv4.
    V4(Option<[u8; 4]>, Option<[u8; 4]>),
    /// IPv6.
    V6(Option<[u8; 16]>, Option<[u8; 16]>),
}

/// The maps the program uses, by descriptor.
#[derive(Debug, Clone, Copy)]
pub struct Maps {
    /// Per receive queue: `{frames, bytes}` per CPU.
    pub counters: i32,
    /// Per flow key: frames per CPU; `flow_keys` entries.
    pub flows: i32,
    /// Per stream: its first source port (u32).
    pub bases: i32,
    /// The XSKMAP ([`Action::Redirect`]; otherwise unused).
    pub xsks: i32,
    /// Entries of `flows` (at most [`Matching::flow_keys`]).
    pub flow_keys: u32,
}

/// The program for `m` and `action` with `maps`; `None` if a jump is unresolved (a bug here,
/// caught by the tests) or `m`'s addresses are of two families ([`Matching::family`]).
pub fn program(m: &Matching, action: Action, maps: &Maps) -> Option<Vec<Insn>> {
    let mut a = Asm::new();
    let (pass, v4, port, act) = (a.new_label(), a.new_label(), a.new_label(), a.new_label());
    // r6 = ctx; r2 = data; r3 = data_end. Ethernet (14) + IPv4 (20) + UDP (8) + the data
    // header's stream and flags (3) = 45 bytes must be there before any header is read (the
    // verifier checks this bound).
    a.mov(R6, R1)
        .load(Size::W, R2, R6, 0)
        .load(Size::W, R3, R6, 4);
    a.mov(R4, R2)
        .add_imm(R4, 45)
        .jump_reg(Cond::Gt, R4, R3, pass);
    a.load(Size::H, R5, R2, 12).be16(R5);
    // Each family's block leaves the destination port in r5, the source port in r8 (both in
    // network order) and the probe flag in r9. With an address, only its family's block is
    // there (the other's would be unreachable code, which the verifier refuses).
    match m.family().ok()? {
        None => {
            a.jump_imm(Cond::Eq, R5, 0x0800, v4);
            a.jump_imm(Cond::Ne, R5, 0x86dd, pass);
            ipv6(&mut a, (None, None), pass).goto(port);
            a.label(v4);
            ipv4(&mut a, (None, None), pass);
        }
        Some(Family::V6(from, to)) => {
            a.jump_imm(Cond::Ne, R5, 0x86dd, pass);
            ipv6(&mut a, (from, to), pass);
        }
        Some(Family::V4(from, to)) => {
            a.jump_imm(Cond::Ne, R5, 0x0800, pass);
            ipv4(&mut a, (from, to), pass);
        }
    }
    // port - first, unsigned: below first wraps to a huge value, so one compare checks both ends.
    a.label(port);
    a.be16(R5).sub_imm(R5, i32::from(m.ports.first));
    a.jump_imm(Cond::Ge, R5, i32::from(m.ports.count), pass);
    learn_base(&mut a, m, maps.bases, pass);
    a.mov(R9, R5);
    count_queue(&mut a, maps.counters, act);
    count_flow(&mut a, m, maps, act);
    a.label(act);
    match action {
        Action::Drop => a.mov_imm(R0, XDP_DROP).exit(),
        Action::Pass => a.mov_imm(R0, XDP_PASS).exit(),
        // bpf_redirect_map(xsks, rx_queue_index, XDP_PASS): the flags' low bits are the action
        // when the slot is empty.
        Action::Redirect => a
            .load(Size::W, R2, R6, 16)
            .load_map_fd(R1, maps.xsks)
            .mov_imm(R3, XDP_PASS)
            .call(HELPER_REDIRECT_MAP)
            .exit(),
    };
    a.label(pass);
    a.mov_imm(R0, XDP_PASS).exit();
    a.finish()
}

/// IPv6: 14 + 40 + 8 + 3 = 65 bytes; next header UDP (no extension headers: test frames
/// have none); the source address at 22 when `from`, the destination at 38 when `to`; the
/// probe flag (at 64) into r9; the source and destination ports at 14 + 40 into r8 and r5.
fn ipv6(a: &mut Asm, (from, to): Addresses<16>, pass: Label) -> &mut Asm {
    a.mov(R4, R2)
        .add_imm(R4, 65)
        .jump_reg(Cond::Gt, R4, R3, pass);
    a.load(Size::B, R5, R2, 20).jump_imm(Cond::Ne, R5, 17, pass);
    if let Some(src) = from {
        address_is(a, 22, &src, pass);
    }
    if let Some(dst) = to {
        address_is(a, 38, &dst, pass);
    }
    probe_flag(a, 64);
    a.load(Size::H, R8, R2, 54).load(Size::H, R5, R2, 56)
}

/// r9 = the data header's probe flag (its flags at byte `at` of the frame, r2): the probe
/// handshake's datagrams to the test's ports, before its frames, are not the test's.
fn probe_flag(a: &mut Asm, at: i16) {
    a.load(Size::B, R9, R2, at)
        .and_imm(R9, i32::from(wire::datagram::FLAG_PROBE));
}

/// IPv4: header length 5 words (test frames have no options), protocol UDP, not a later
/// fragment (whose "port" bytes would be payload); the source address at 26 when `from`, the
/// destination at 30 when `to`; the probe flag (at 44) into r9; the source and destination
/// ports at 14 + 20 into r8 and r5.
fn ipv4(a: &mut Asm, (from, to): Addresses<4>, pass: Label) -> &mut Asm {
    a.load(Size::B, R5, R2, 14)
        .and_imm(R5, 0x0f)
        .jump_imm(Cond::Ne, R5, 5, pass);
    a.load(Size::B, R5, R2, 23).jump_imm(Cond::Ne, R5, 17, pass);
    a.load(Size::H, R5, R2, 20)
        .be16(R5)
        .and_imm(R5, 0x1fff)
        .jump_imm(Cond::Ne, R5, 0, pass);
    if let Some(src) = from {
        address_is(a, 26, &src, pass);
    }
    if let Some(dst) = to {
        address_is(a, 30, &dst, pass);
    }
    probe_flag(a, 44);
    a.load(Size::H, R8, R2, 34).load(Size::H, R5, R2, 36)
}

/// A frame's source and destination addresses to match, of one family (`N` bytes each).
type Addresses<const N: usize> = (Option<[u8; N]>, Option<[u8; N]>);

/// `if the address at byte `at` of the frame (r2) is not `octets` goto pass`, a 32-bit word at
/// a time (each compared as loaded: the words of `octets` in host order, zero-extended).
fn address_is<'a>(a: &'a mut Asm, at: i16, octets: &[u8], pass: Label) -> &'a mut Asm {
    for (i, word) in octets.chunks_exact(4).enumerate() {
        let w = u32::from_ne_bytes([word[0], word[1], word[2], word[3]]);
        a.load(Size::W, R5, R2, at + 4 * i as i16)
            .mov32_imm(R4, w as i32)
            .jump_reg(Cond::Ne, R5, R4, pass);
    }
    a
}

/// A probe (r9 set; r5 its port's offset in the block, r8 its source port): its stream's
/// base is its source port, the first probe's (a later one changes nothing); then `goto pass`
/// (a probe is never counted).
fn learn_base(a: &mut Asm, m: &Matching, bases: i32, pass: Label) {
    let data = a.new_label();
    a.jump_imm(Cond::Eq, R9, 0, data);
    a.mov(R1, R5);
    stream_of(a, m, R1);
    a.lookup_reg(bases, R1, pass);
    a.load(Size::W, R1, R0, 0).jump_imm(Cond::Ne, R1, 0, pass);
    a.be16(R8).store(Size::W, R0, 0, R8).goto(pass);
    a.label(data);
}

/// `reg` = the stream of the port offset in `reg`.
fn stream_of(a: &mut Asm, m: &Matching, reg: crate::bpf::asm::Reg) {
    if m.dst_per_stream > 1 {
        a.div_imm(reg, i32::from(m.dst_per_stream));
    }
}

/// counters[q].frames += 1; counters[q].bytes += the frame's length, q the frame's receive
/// queue (`ctx->rx_queue_index`; the last slot for a queue beyond it); `goto act` on a miss.
fn count_queue(a: &mut Asm, counters: i32, act: Label) {
    a.mov(R1, R6).call(HELPER_XDP_GET_BUFF_LEN).mov(R7, R0);
    let (clamp, keyed) = (a.new_label(), a.new_label());
    let last = XSK_SLOTS as i32 - 1;
    a.load(Size::W, R1, R6, 16)
        .jump_imm(Cond::Gt, R1, last, clamp)
        .goto(keyed);
    a.label(clamp);
    a.mov_imm(R1, last);
    a.label(keyed);
    a.lookup_reg(counters, R1, act);
    a.load(Size::DW, R1, R0, 0)
        .add_imm(R1, 1)
        .store(Size::DW, R0, 0, R1);
    a.load(Size::DW, R1, R0, 8)
        .add(R1, R7)
        .store(Size::DW, R0, 8, R1);
}

/// flows[key] += 1 for the frame's flow key (r9 its port's offset in the block, r8 its source
/// port), when its stream has a base and the key is in the map; `goto act` otherwise.
fn count_flow(a: &mut Asm, m: &Matching, maps: &Maps, act: Label) {
    a.mov(R1, R9);
    stream_of(a, m, R1);
    a.lookup_reg(maps.bases, R1, act);
    // The source port's offset from its stream's base, unsigned (below it wraps, past it).
    a.load(Size::W, R1, R0, 0).be16(R8).sub(R8, R1);
    a.jump_imm(Cond::Ge, R8, i32::from(m.src_per_stream.max(1)), act);
    a.mul_imm(R9, i32::from(m.src_per_stream.max(1)))
        .add(R9, R8);
    a.jump_imm(Cond::Ge, R9, maps.flow_keys as i32, act);
    a.lookup_reg(maps.flows, R9, act);
    a.load(Size::DW, R1, R0, 0)
        .add_imm(R1, 1)
        .store(Size::DW, R0, 0, R1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps(keys: u32) -> Maps {
        Maps {
            counters: 3,
            flows: 4,
            bases: 5,
            xsks: 6,
            flow_keys: keys,
        }
    }

    #[test]
    fn every_action_assembles_with_all_jumps_resolved_forward() {
        let m = Matching {
            dst_per_stream: 100,
            src_per_stream: 100,
            ..Matching::ports(PortRange {
                first: 9000,
                count: 200,
            })
        };
        for action in [Action::Drop, Action::Pass, Action::Redirect] {
            let p = program(&m, action, &maps(m.flow_keys())).expect("assembles");
            assert!(p.len() < 120, "{action:?}: {} instructions", p.len());
            for i in &p {
                if i.code & 0x07 == 0x05 && i.code & 0xf0 != 0x80 && i.code & 0xf0 != 0x90 {
                    assert!(i.off > 0, "{action:?}: backward or zero jump {i:?}");
                }
            }
        }
    }

    #[test]
    fn a_block_of_streams_has_a_key_for_every_source_and_destination_port_of_each() {
        let m = Matching {
            dst_per_stream: 100,
            src_per_stream: 100,
            ..Matching::ports(PortRange {
                first: 9000,
                count: 300,
            })
        };
        assert_eq!((m.streams(), m.flow_keys()), (3, 30_000));
        let one = Matching::ports(PortRange {
            first: 9000,
            count: 4,
        });
        assert_eq!((one.streams(), one.flow_keys()), (4, 4));
    }
}
