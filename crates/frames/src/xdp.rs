//! The receiver's counter: an XDP program, written here with [`crate::bpf::asm`], that counts
//! the test's frames (UDP to a destination-port range, over IPv4 or IPv6, from one source address
//! when given: [`XdpCounter::attach_from`]; not the probe handshake's datagrams, whose data
//! header says probe) in a per-CPU array and drops, passes or redirects them; every other frame
//! passes untouched.
//!
//! Attached through a BPF link (`BPF_LINK_CREATE`, attach type BPF_XDP): the program stays on
//! the interface only while [`XdpCounter`] holds the link's descriptor, so it is detached when
//! the value drops and also when the process is killed (the kernel closes the descriptor);
//! nothing is pinned. An interface that already has an XDP program is refused
//! ([`SysError::XdpBusy`]): the kernel will not let a link replace a program, and linerate never
//! asks it to.
//!
//! The counters: one per receive queue (key: the queue, [`XSK_SLOTS`] of them, the last also
//! any queue beyond), value `{frames: u64, bytes: u64}` per CPU, `bytes` as the driver saw the
//! frame (without the FCS). A per-CPU value needs no atomics on the hot path;
//! [`XdpCounter::per_queue`] sums the CPUs, [`XdpCounter::counts`] the queues too.

use crate::bpf::asm::{Asm, Cond, Label, Size, R0, R1, R2, R3, R4, R5, R6, R7};
use crate::bpf::sys;
use crate::error::SysError;
use std::ffi::CString;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd};

const HELPER_REDIRECT_MAP: i32 = 51;
const HELPER_XDP_GET_BUFF_LEN: i32 = 188;
const XDP_DROP: i32 = 1;
const XDP_PASS: i32 = 2;

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

/// Frames and bytes counted, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Test frames seen.
    pub frames: u64,
    /// Their bytes (without the FCS).
    pub bytes: u64,
}

impl Counts {
    /// The sum of `parts` (each queue's counts).
    pub fn total(parts: &[Counts]) -> Counts {
        parts.iter().fold(Counts::default(), |a, q| Counts {
            frames: a.frames + q.frames,
            bytes: a.bytes + q.bytes,
        })
    }
}

/// Bytes of one CPU's counter value.
const VALUE_LEN: usize = 16;
/// Rx queues an XSKMAP holds.
pub const XSK_SLOTS: u32 = 64;

/// The program for `ports` and `action`, with the counters' map (and the XSKMAP's) descriptor.
pub fn program(
    ports: PortRange,
    from: Option<IpAddr>,
    action: Action,
    counters: i32,
    xsks: i32,
) -> Option<Vec<crate::bpf::asm::Insn>> {
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
    // Each family's block leaves the destination port (network order) in r5. With a source
    // address, only its family's block is there (the other's would be unreachable code, which
    // the verifier refuses).
    match from {
        None => {
            a.jump_imm(Cond::Eq, R5, 0x0800, v4);
            a.jump_imm(Cond::Ne, R5, 0x86dd, pass);
            ipv6(&mut a, None, pass).goto(port);
            a.label(v4);
            ipv4(&mut a, None, pass);
        }
        Some(IpAddr::V6(src)) => {
            a.jump_imm(Cond::Ne, R5, 0x86dd, pass);
            ipv6(&mut a, Some(src.octets()), pass);
        }
        Some(IpAddr::V4(src)) => {
            a.jump_imm(Cond::Ne, R5, 0x0800, pass);
            ipv4(&mut a, Some(src.octets()), pass);
        }
    }
    // port - first, unsigned: below first wraps to a huge value, so one compare checks both ends.
    a.label(port);
    a.be16(R5).sub_imm(R5, i32::from(ports.first));
    a.jump_imm(Cond::Ge, R5, i32::from(ports.count), pass);
    count(&mut a, counters, act);
    a.label(act);
    match action {
        Action::Drop => a.mov_imm(R0, XDP_DROP).exit(),
        Action::Pass => a.mov_imm(R0, XDP_PASS).exit(),
        // bpf_redirect_map(xsks, rx_queue_index, XDP_PASS): the flags' low bits are the action
        // when the slot is empty.
        Action::Redirect => a
            .load(Size::W, R2, R6, 16)
            .load_map_fd(R1, xsks)
            .mov_imm(R3, XDP_PASS)
            .call(HELPER_REDIRECT_MAP)
            .exit(),
    };
    a.label(pass);
    a.mov_imm(R0, XDP_PASS).exit();
    a.finish()
}

/// IPv6: 14 + 40 + 8 + 3 = 65 bytes; next header UDP (no extension headers: test frames
/// have none); the source address at 22 when `from`; not a probe (its flags at 64); the
/// destination port at 14 + 40 + 2 into r5.
fn ipv6(a: &mut Asm, from: Option<[u8; 16]>, pass: Label) -> &mut Asm {
    a.mov(R4, R2)
        .add_imm(R4, 65)
        .jump_reg(Cond::Gt, R4, R3, pass);
    a.load(Size::B, R5, R2, 20).jump_imm(Cond::Ne, R5, 17, pass);
    if let Some(src) = from {
        source_is(a, 22, &src, pass);
    }
    not_a_probe(a, 64, pass);
    a.load(Size::H, R5, R2, 56)
}

/// `if the data header's flags (at byte `at` of the frame, r2) mark a probe goto pass`: the
/// probe handshake's datagrams to the test's ports, before its frames, are not the test's.
fn not_a_probe(a: &mut Asm, at: i16, pass: Label) {
    a.load(Size::B, R5, R2, at)
        .and_imm(R5, i32::from(wire::datagram::FLAG_PROBE))
        .jump_imm(Cond::Ne, R5, 0, pass);
}

/// IPv4: header length 5 words (test frames have no options), protocol UDP, not a later
/// fragment (whose "port" bytes would be payload); the source address at 26 when `from`; not a
/// probe (its flags at 44); the destination port at 14 + 20 + 2 into r5.
fn ipv4(a: &mut Asm, from: Option<[u8; 4]>, pass: Label) -> &mut Asm {
    a.load(Size::B, R5, R2, 14)
        .and_imm(R5, 0x0f)
        .jump_imm(Cond::Ne, R5, 5, pass);
    a.load(Size::B, R5, R2, 23).jump_imm(Cond::Ne, R5, 17, pass);
    a.load(Size::H, R5, R2, 20)
        .be16(R5)
        .and_imm(R5, 0x1fff)
        .jump_imm(Cond::Ne, R5, 0, pass);
    if let Some(src) = from {
        source_is(a, 26, &src, pass);
    }
    not_a_probe(a, 44, pass);
    a.load(Size::H, R5, R2, 36)
}

/// `if the source address at byte `at` of the frame (r2) is not `octets` goto pass`, a 32-bit
/// word at a time (each compared as loaded: the words of `octets` in host order, zero-extended).
fn source_is<'a>(a: &'a mut Asm, at: i16, octets: &[u8], pass: Label) -> &'a mut Asm {
    for (i, word) in octets.chunks_exact(4).enumerate() {
        let w = u32::from_ne_bytes([word[0], word[1], word[2], word[3]]);
        a.load(Size::W, R5, R2, at + 4 * i as i16)
            .mov32_imm(R4, w as i32)
            .jump_reg(Cond::Ne, R5, R4, pass);
    }
    a
}

/// counters[q].frames += 1; counters[q].bytes += the frame's length, q the frame's receive
/// queue (`ctx->rx_queue_index`; the last slot for a queue beyond it); then `act`.
fn count(a: &mut Asm, counters: i32, act: Label) {
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

/// The counter attached to one interface; detached when dropped (or the process dies).
#[derive(Debug)]
pub struct XdpCounter {
    _link: OwnedFd,
    _prog: OwnedFd,
    counters: OwnedFd,
    xsks: Option<OwnedFd>,
    cpus: usize,
}

/// The index of interface `ifname` in this thread's network namespace.
pub fn ifindex(ifname: &str) -> Result<u32, SysError> {
    let name = CString::new(ifname).map_err(|_| SysError::NoInterface(ifname.into()))?;
    // SAFETY: name is a NUL-terminated string.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(SysError::NoInterface(ifname.into())),
        i => Ok(i),
    }
}

impl XdpCounter {
    /// Loads the program and attaches it to `ifname` (native mode where the driver has it).
    pub fn attach(ifname: &str, ports: PortRange, action: Action) -> Result<Self, SysError> {
        Self::attach_from(ifname, ports, None, action)
    }

    /// [`XdpCounter::attach`], counting only frames from source address `from` (when given):
    /// a test's frames are its client's, and anyone else's to the same ports pass uncounted.
    pub fn attach_from(
        ifname: &str,
        ports: PortRange,
        from: Option<IpAddr>,
        action: Action,
    ) -> Result<Self, SysError> {
        crate::caps::require_xdp()?;
        if ports.count == 0 || u32::from(ports.first) + u32::from(ports.count) > 65536 {
            return Err(SysError::Ports {
                first: ports.first,
                count: ports.count,
            });
        }
        let index = ifindex(ifname)?;
        let cpus = sys::possible_cpus()?;
        let counters = sys::map_create(
            sys::MAP_PERCPU_ARRAY,
            4,
            VALUE_LEN as u32,
            XSK_SLOTS,
            "lr_counts",
        )?;
        let xsks = match action {
            Action::Redirect => Some(sys::map_create(
                sys::MAP_XSKMAP,
                4,
                4,
                XSK_SLOTS,
                "lr_xsks",
            )?),
            _ => None,
        };
        let xsk_fd = xsks.as_ref().map_or(-1, |m| m.as_raw_fd());
        let insns =
            program(ports, from, action, counters.as_raw_fd(), xsk_fd).ok_or_else(|| {
                SysError::Verifier {
                    source: std::io::Error::other("unresolved label"),
                    log: "the program's source has a jump to a label never placed".into(),
                }
            })?;
        let prog = sys::prog_load_xdp(&insns, "lr_count")?;
        let link = sys::link_create_xdp(&prog, index, 0).map_err(|source| {
            match source.raw_os_error() {
                Some(libc::EBUSY) | Some(libc::EEXIST) => SysError::XdpBusy {
                    ifname: ifname.into(),
                    ifindex: index,
                    holder: crate::xdp_query::attached(index)
                        .map(|(id, name)| format!(" (program id {id}, name {name:?})"))
                        .unwrap_or_default(),
                    source,
                },
                Some(libc::ENOSPC) => SysError::XdpQueues {
                    ifname: ifname.into(),
                    source,
                },
                _ => SysError::Call {
                    call: format!("bpf(BPF_LINK_CREATE, XDP on {ifname})"),
                    source,
                },
            }
        })?;
        Ok(Self {
            _link: link,
            _prog: prog,
            counters,
            xsks,
            cpus,
        })
    }

    /// The frames and bytes counted so far, summed over CPUs and queues.
    pub fn counts(&self) -> Result<Counts, SysError> {
        Ok(Counts::total(&self.per_queue()?))
    }

    /// The frames and bytes counted so far on each receive queue, queue 0 up, summed over CPUs;
    /// the queues after the last that counted any left out (the last slot holds any queue past
    /// it too).
    pub fn per_queue(&self) -> Result<Vec<Counts>, SysError> {
        let mut value = vec![0u8; VALUE_LEN * self.cpus];
        let mut queues = Vec::new();
        for q in 0..XSK_SLOTS {
            sys::map_lookup(&self.counters, &q.to_ne_bytes(), &mut value)?;
            let mut c = Counts::default();
            for cpu in value.chunks_exact(VALUE_LEN) {
                let (f, b) = cpu.split_at(8);
                c.frames += u64::from_ne_bytes(f.try_into().unwrap_or_default());
                c.bytes += u64::from_ne_bytes(b.try_into().unwrap_or_default());
            }
            queues.push(c);
        }
        let used = queues
            .iter()
            .rposition(|c| c.frames > 0)
            .map_or(0, |i| i + 1);
        queues.truncate(used);
        Ok(queues)
    }

    /// The XSKMAP (with [`Action::Redirect`]): an AF_XDP socket's descriptor goes in its rx
    /// queue's slot.
    pub fn xsk_map(&self) -> Option<&OwnedFd> {
        self.xsks.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_assembles_with_all_jumps_resolved_forward() {
        let ports = PortRange {
            first: 9000,
            count: 100,
        };
        for action in [Action::Drop, Action::Pass, Action::Redirect] {
            let p = program(ports, None, action, 3, 4).expect("assembles");
            assert!(p.len() < 80, "{action:?}: {} instructions", p.len());
            for i in &p {
                if i.code & 0x07 == 0x05 && i.code & 0xf0 != 0x80 && i.code & 0xf0 != 0x90 {
                    assert!(i.off > 0, "{action:?}: backward or zero jump {i:?}");
                }
            }
        }
    }

    #[test]
    fn the_kernels_verifier_accepts_every_action() {
        if crate::caps::require_xdp().is_err() {
            eprintln!("skipped: loading BPF needs CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN");
            return;
        }
        let counters = sys::map_create(sys::MAP_PERCPU_ARRAY, 4, 16, 1, "lr_test").unwrap();
        let xsks = sys::map_create(sys::MAP_XSKMAP, 4, 4, XSK_SLOTS, "lr_test_xsk").unwrap();
        let ports = PortRange {
            first: 9000,
            count: 1,
        };
        let sources = [
            None,
            Some(IpAddr::from([198, 18, 0, 201])),
            Some(IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xc8])),
        ];
        for action in [Action::Drop, Action::Pass, Action::Redirect] {
            for from in sources {
                let (c, x) = (counters.as_raw_fd(), xsks.as_raw_fd());
                let p = program(ports, from, action, c, x).unwrap();
                if let Err(e) = sys::prog_load_xdp(&p, "lr_test") {
                    panic!("{action:?} from {from:?}: {e}");
                }
            }
        }
    }

    /// A counter for one client's address counts that client's frames to the test's ports and
    /// passes everyone else's, and the client's probes, uncounted, for both families (the program run once per frame by
    /// the kernel's BPF_PROG_RUN, nothing attached). Needs CAP_BPF and CAP_NET_ADMIN.
    #[test]
    fn a_counter_for_one_source_counts_only_its_frames() {
        use crate::{Endpoints, FlowPattern, FrameSpec, Frames};
        if crate::caps::require_xdp().is_err() {
            eprintln!("skipped: loading BPF needs CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN");
            return;
        }
        let frame = |src: IpAddr, dst: IpAddr| {
            let spec = FrameSpec {
                endpoints: Endpoints {
                    src_mac: [2, 0, 0, 0, 0, 1],
                    dst_mac: [2, 0, 0, 0, 0, 2],
                    src,
                    dst,
                    src_port: 40000,
                    dst_port: 9000,
                },
                frame_size: 128,
                mtu: 1500,
                flows: FlowPattern::One,
            };
            let f = Frames::new(&spec).unwrap();
            let mut buf = vec![0u8; f.built_len()];
            f.write(&mut buf, 0, 7, 0);
            buf
        };
        let ports = PortRange {
            first: 9000,
            count: 1,
        };
        let v4 = |d: u8| IpAddr::from([198, 18, 0, d]);
        let v6 = |d: u16| IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, d]);
        for (client, other, dst) in [(v4(201), v4(9), v4(2)), (v6(0xc8), v6(9), v6(2))] {
            let counters = sys::map_create(sys::MAP_PERCPU_ARRAY, 4, 16, 1, "lr_test").unwrap();
            let p = program(ports, Some(client), Action::Pass, counters.as_raw_fd(), -1).unwrap();
            let prog = sys::prog_load_xdp(&p, "lr_test").unwrap();
            let mut out = vec![0u8; 256];
            // The client's probe (the handshake's, flags at the data header's third byte).
            let mut probe = frame(client, dst);
            let flags = if client.is_ipv4() { 44 } else { 64 };
            probe[flags] = wire::datagram::FLAG_PROBE;
            for f in [
                frame(client, dst),
                frame(other, dst),
                probe,
                frame(client, dst),
            ] {
                let (ret, _) = sys::prog_test_run(&prog, &f, &mut out).unwrap();
                assert_eq!(ret, XDP_PASS as u32, "{f:?}");
            }
            let cpus = sys::possible_cpus().unwrap();
            let mut value = vec![0u8; VALUE_LEN * cpus];
            sys::map_lookup(&counters, &0u32.to_ne_bytes(), &mut value).unwrap();
            let frames: u64 = (value.chunks_exact(VALUE_LEN))
                .map(|c| u64::from_ne_bytes(c[..8].try_into().unwrap()))
                .sum();
            assert_eq!(
                frames, 2,
                "{client}'s two frames, not {other}'s nor its probe"
            );
        }
    }
}
