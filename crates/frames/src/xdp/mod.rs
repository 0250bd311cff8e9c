//! The receiver's counter: an XDP program ([`program`], written with [`crate::bpf::asm`]) that
//! counts the test's frames (UDP to a destination-port range, over IPv4 or IPv6, from one
//! source address and to one destination address when given: [`XdpCounter::attach_from`]; not
//! the probe handshake's
//! datagrams, whose data header says probe) per receive queue and per flow in per-CPU arrays,
//! and drops, passes or redirects them; every other frame passes untouched.
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
//! [`XdpCounter::per_queue`] sums the CPUs, [`XdpCounter::counts`] the queues too. And one per
//! flow key (frames per CPU; [`XdpCounter::per_flow`]), at most [`flow_keys_held`] of them.

use crate::bpf::sys;
use crate::error::SysError;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

mod program;
pub use program::{program, Action, Family, Maps, Matching, PortRange, XSK_SLOTS};

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

/// Bytes of one CPU's per-queue counter value.
const VALUE_LEN: usize = 16;
/// Flow keys a counter holds at most, whatever the test: reading them back is a lookup each.
pub const FLOW_KEYS_MAX: u32 = 1 << 17;
/// Bytes the per-flow counters may take (a u64 per key per possible CPU).
pub const FLOW_MAP_BYTES_MAX: u64 = 64 << 20;

/// The flow keys a counter for `m` holds on a host with `cpus` possible CPUs: every key the
/// test's frames can have, up to [`FLOW_KEYS_MAX`] and [`FLOW_MAP_BYTES_MAX`].
pub fn flow_keys_held(m: &Matching, cpus: usize) -> u32 {
    let by_bytes = FLOW_MAP_BYTES_MAX / (8 * cpus.max(1) as u64);
    m.flow_keys()
        .min(FLOW_KEYS_MAX)
        .min(u32::try_from(by_bytes).unwrap_or(u32::MAX))
        .max(1)
}

/// The bytes of per-flow counters a counter for `m` allocates in the kernel (the server's
/// budget counts them).
pub fn flow_counter_bytes(m: &Matching) -> u64 {
    let cpus = sys::possible_cpus().unwrap_or(1);
    u64::from(flow_keys_held(m, cpus)) * 8 * cpus as u64
}

/// Frames per flow key, summed over CPUs, for every key the counter holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowCounts {
    /// Keys the test's frames could have ([`Matching::flow_keys`]).
    pub keys: u32,
    /// Frames by key, for the keys held (a prefix of them when the test has more).
    pub frames: Vec<u64>,
}

/// The counter attached to one interface; detached when dropped (or the process dies).
#[derive(Debug)]
pub struct XdpCounter {
    /// `None`: loaded, not attached (the tests run it with `BPF_PROG_RUN`).
    _link: Option<OwnedFd>,
    prog: OwnedFd,
    /// Per receive queue: frames and bytes per CPU.
    counters: OwnedFd,
    /// Per flow key: frames per CPU, `held` keys.
    flows: OwnedFd,
    /// Per stream: its first source port, which the program learns from the stream's probe.
    _bases: OwnedFd,
    xsks: Option<OwnedFd>,
    /// Flow keys the test's frames can have ([`Matching::flow_keys`]).
    keys: u32,
    /// Of them, the keys `flows` holds ([`flow_keys_held`]): the first `held`.
    held: u32,
    /// Possible CPUs: the slots of a per-CPU value.
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

/// The name of interface `index` in this thread's network namespace.
pub fn ifname(index: u32) -> Result<String, SysError> {
    let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `name` has the IF_NAMESIZE bytes if_indextoname writes at most.
    let named = unsafe { libc::if_indextoname(index, name.as_mut_ptr()) };
    if named.is_null() {
        return Err(SysError::NoInterface(format!("index {index}")));
    }
    // SAFETY: on success `name` holds a NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

/// `prog` attached to `ifname` through a BPF link; an interface with a program already is
/// refused by name, with the holder when known.
fn attach_link(prog: &OwnedFd, ifname: &str, index: u32) -> Result<OwnedFd, SysError> {
    sys::link_create_xdp(prog, index, 0).map_err(|source| match source.raw_os_error() {
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
    })
}

impl XdpCounter {
    /// Loads the program and attaches it to `ifname` (native mode where the driver has it).
    pub fn attach(ifname: &str, ports: PortRange, action: Action) -> Result<Self, SysError> {
        Self::attach_from(ifname, &Matching::ports(ports), action)
    }

    /// [`XdpCounter::attach`] for the frames `m` matches: a test's frames are its client's
    /// (`m.from`) to the server's address (`m.to`), and anyone else's to the same ports, or
    /// the client's to another address of the host, pass uncounted.
    pub fn attach_from(ifname: &str, m: &Matching, action: Action) -> Result<Self, SysError> {
        let index = ifindex(ifname)?;
        let mut counter = Self::load(m, action)?;
        counter._link = Some(attach_link(&counter.prog, ifname, index)?);
        Ok(counter)
    }

    /// The program for `m` and `action` and its maps, loaded, attached nowhere.
    fn load(m: &Matching, action: Action) -> Result<Self, SysError> {
        crate::caps::require_xdp()?;
        if let Err((from, to)) = m.family() {
            return Err(SysError::Families { from, to });
        }
        let ports = m.ports;
        let streams_fit = m.dst_per_stream > 0 && ports.count % m.dst_per_stream == 0;
        if ports.count == 0
            || u32::from(ports.first) + u32::from(ports.count) > 65536
            || !streams_fit
        {
            return Err(SysError::Ports {
                first: ports.first,
                count: ports.count,
            });
        }
        let cpus = sys::possible_cpus()?;
        let held = flow_keys_held(m, cpus);
        let counters = sys::map_create(
            sys::MAP_PERCPU_ARRAY,
            4,
            VALUE_LEN as u32,
            XSK_SLOTS,
            "lr_counts",
        )?;
        let flows = sys::map_create(sys::MAP_PERCPU_ARRAY, 4, 8, held, "lr_flows")?;
        let bases = sys::map_create(sys::MAP_ARRAY, 4, 4, m.streams(), "lr_bases")?;
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
        let maps = Maps {
            counters: counters.as_raw_fd(),
            flows: flows.as_raw_fd(),
            bases: bases.as_raw_fd(),
            xsks: xsks.as_ref().map_or(-1, |m| m.as_raw_fd()),
            flow_keys: held,
        };
        let insns = program(m, action, &maps).ok_or_else(|| SysError::Verifier {
            source: std::io::Error::other("unresolved label"),
            log: "the program's source has a jump to a label never placed".into(),
        })?;
        Ok(Self {
            _link: None,
            prog: sys::prog_load_xdp(&insns, "lr_count")?,
            counters,
            flows,
            _bases: bases,
            xsks,
            keys: m.flow_keys(),
            held,
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

    /// The frames counted so far for each flow key the counter holds, summed over CPUs (one
    /// lookup per key: read at the end of a test, not on its way).
    pub fn per_flow(&self) -> Result<FlowCounts, SysError> {
        let mut value = vec![0u8; 8 * self.cpus];
        let mut frames = Vec::with_capacity(self.held as usize);
        for key in 0..self.held {
            sys::map_lookup(&self.flows, &key.to_ne_bytes(), &mut value)?;
            let sum = (value.chunks_exact(8))
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
                .sum();
            frames.push(sum);
        }
        Ok(FlowCounts {
            keys: self.keys,
            frames,
        })
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
    use crate::{FlowPattern, FrameSpec, Frames};
    use std::net::IpAddr;

    const NEEDS: &str = "skipped: loading BPF needs CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN";

    #[test]
    fn the_kernels_verifier_accepts_every_action_family_and_address() {
        if crate::caps::require_xdp().is_err() {
            return eprintln!("{NEEDS}");
        }
        let sources = [
            None,
            Some(IpAddr::from([198, 18, 0, 201])),
            Some(IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xc8])),
        ];
        for action in [Action::Drop, Action::Pass, Action::Redirect] {
            // Every source with every destination of its family (or none).
            let pairs = sources
                .iter()
                .flat_map(|&f| sources.iter().map(move |&t| (f, t)));
            let pairs =
                pairs.filter(|(f, t)| f.zip(*t).is_none_or(|(f, t)| f.is_ipv4() == t.is_ipv4()));
            for (from, to) in pairs {
                for (d, s) in [(1, 1), (100, 100)] {
                    let m = Matching {
                        from,
                        to,
                        dst_per_stream: d,
                        src_per_stream: s,
                        ..Matching::ports(PortRange {
                            first: 9000,
                            count: 2 * d,
                        })
                    };
                    if let Err(e) = XdpCounter::load(&m, action) {
                        panic!("{action:?} from {from:?} to {to:?}, {s}×{d}: {e}");
                    }
                }
            }
        }
    }

    /// Stream `stream`'s frame of flow `flow` (its pattern's index) from `src` to `dst`, the
    /// streams' ports as the server's block and the client's sockets would have them.
    fn frame(src: IpAddr, dst: IpAddr, flows: FlowPattern, stream: u16, flow: usize) -> Vec<u8> {
        let (_, per_dst) = flows.sides();
        let spec = FrameSpec {
            endpoints: crate::frame::testing::endpoints(
                src,
                dst,
                40000 + 1000 * stream,
                9000 + per_dst * stream,
            ),
            frame_size: 128,
            mtu: 1500,
            flows,
        };
        let f = Frames::new(&spec).unwrap().of_stream(stream);
        let mut buf = vec![0u8; f.built_len()];
        f.write(&mut buf, flow, 7, 0);
        buf
    }

    /// The client's probe for `stream`: its flow 0's frame, flagged probe.
    fn probe(src: IpAddr, dst: IpAddr, flows: FlowPattern, stream: u16) -> Vec<u8> {
        let mut p = frame(src, dst, flows, stream, 0);
        let flags = if src.is_ipv4() { 44 } else { 64 };
        p[flags] = wire::datagram::FLAG_PROBE;
        p
    }

    fn run(c: &XdpCounter, frames: &[Vec<u8>]) {
        let mut out = vec![0u8; 256];
        for f in frames {
            let (ret, _) = sys::prog_test_run(&c.prog, f, &mut out).unwrap();
            assert_eq!(ret, program::XDP_PASS as u32, "{f:?}");
        }
    }

    /// A counter for one client's address counts that client's frames to the test's ports and
    /// passes everyone else's, and the client's probes, uncounted, for both families (the
    /// program run once per frame by the kernel's BPF_PROG_RUN, nothing attached).
    #[test]
    fn a_counter_for_one_source_counts_only_its_frames() {
        if crate::caps::require_xdp().is_err() {
            return eprintln!("{NEEDS}");
        }
        let v4 = |d: u8| IpAddr::from([198, 18, 0, d]);
        let v6 = |d: u16| IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, d]);
        let one = FlowPattern::One;
        for (client, other, dst) in [(v4(201), v4(9), v4(2)), (v6(0xc8), v6(9), v6(2))] {
            let m = Matching {
                from: Some(client),
                ..Matching::ports(PortRange {
                    first: 9000,
                    count: 1,
                })
            };
            let c = XdpCounter::load(&m, Action::Pass).unwrap();
            let mine = frame(client, dst, one, 0, 0);
            let frames = [
                mine.clone(),
                frame(other, dst, one, 0, 0),
                probe(client, dst, one, 0),
                mine,
            ];
            run(&c, &frames);
            assert_eq!(
                c.counts().unwrap().frames,
                2,
                "{client}'s two frames, not {other}'s nor its probe"
            );
            // Its flow's count starts at the probe, which gave the stream's base.
            assert_eq!(c.per_flow().unwrap().frames, vec![1], "{client}");
        }
    }

    /// A counter for the client's frames to one address of the host (the server's end of the
    /// control connection) counts those and passes the client's frames to another address of
    /// the host at the same port uncounted, for both families (issue 48: an `xdp` test's
    /// counter redirected them away from the sockets holding that address and port). A
    /// source and a destination of two families are refused.
    #[test]
    fn a_counter_for_one_destination_passes_frames_to_another_address_uncounted() {
        if crate::caps::require_xdp().is_err() {
            return eprintln!("{NEEDS}");
        }
        let v4 = |d: u8| IpAddr::from([198, 18, 0, d]);
        let v6 = |d: u16| IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, d]);
        let one = FlowPattern::One;
        for (client, dst, other) in [(v4(1), v4(2), v4(3)), (v6(1), v6(2), v6(3))] {
            let m = Matching {
                from: Some(client),
                to: Some(dst),
                ..Matching::ports(PortRange {
                    first: 9000,
                    count: 1,
                })
            };
            let c = XdpCounter::load(&m, Action::Pass).unwrap();
            let frames = [
                frame(client, dst, one, 0, 0),
                frame(client, other, one, 0, 0),
                frame(client, other, one, 0, 0),
            ];
            run(&c, &frames);
            assert_eq!(c.counts().unwrap().frames, 1, "only {client} → {dst}");
        }
        let mixed = Matching {
            from: Some(v4(1)),
            to: Some(v6(2)),
            ..Matching::ports(PortRange {
                first: 9000,
                count: 1,
            })
        };
        let err = XdpCounter::load(&mixed, Action::Pass).unwrap_err();
        assert!(matches!(err, SysError::Families { .. }), "{err}");
    }

    /// With two streams of 10,000 flows, each frame is counted under its own (stream, source
    /// port, destination port) key once the stream's first probe gave its base; before it, per
    /// queue only.
    #[test]
    fn each_flow_of_each_stream_has_its_own_count() {
        if crate::caps::require_xdp().is_err() {
            return eprintln!("{NEEDS}");
        }
        let (src, dst) = (IpAddr::from([198, 18, 0, 1]), IpAddr::from([198, 18, 0, 2]));
        let all = FlowPattern::SourceAndDestination;
        let m = Matching {
            from: Some(src),
            dst_per_stream: 100,
            src_per_stream: 100,
            ..Matching::ports(PortRange {
                first: 9000,
                count: 200,
            })
        };
        let c = XdpCounter::load(&m, Action::Pass).unwrap();
        // Before stream 1's probe: counted per queue only.
        run(&c, &[frame(src, dst, all, 1, 5)]);
        let picked = [(0, 0), (0, 1), (0, 9_999), (1, 250), (1, 250), (1, 9_999)];
        // A later probe from another source port (flow 100's: source offset 1) does not move
        // the stream's base.
        let mut late = frame(src, dst, all, 0, 100);
        late[44] = wire::datagram::FLAG_PROBE;
        let mut frames = vec![probe(src, dst, all, 0), probe(src, dst, all, 1), late];
        frames.extend(picked.iter().map(|&(s, i)| frame(src, dst, all, s, i)));
        run(&c, &frames);
        let per_flow = c.per_flow().unwrap();
        assert_eq!(per_flow.keys, 20_000);
        assert_eq!(c.counts().unwrap().frames, 7);
        // Key: (port offset in the block) × 100 + source offset; the pattern's flow i is
        // source offset i / 100, destination offset i % 100.
        let key = |s: u16, i: usize| (usize::from(s) * 100 + i % 100) * 100 + i / 100;
        let mut want = vec![0u64; 20_000];
        for &(s, i) in &picked {
            want[key(s, i)] += 1;
        }
        assert_eq!(per_flow.frames, want);
    }
}
