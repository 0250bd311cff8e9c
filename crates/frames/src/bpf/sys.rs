//! The raw `bpf(2)` calls this crate makes: create a map, look up an element, update one, load
//! a program, create a link. `bpf_attr` is passed as a zeroed 128-byte buffer with each field
//! written at its offset from include/uapi/linux/bpf.h (the kernel reads only the fields of the
//! command and checks that the rest is zero).
//!
//! Invariant: every descriptor the kernel returns is wrapped in an `OwnedFd` at once, so maps,
//! programs and links are released when their owner drops (or the process dies).

use super::asm::Insn;
use crate::error::SysError;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const MAP_CREATE: libc::c_long = 0;
const MAP_LOOKUP_ELEM: libc::c_long = 1;
const MAP_UPDATE_ELEM: libc::c_long = 2;
const PROG_LOAD: libc::c_long = 5;
const PROG_GET_FD_BY_ID: libc::c_long = 13;
const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const LINK_CREATE: libc::c_long = 28;
const PROG_TEST_RUN: libc::c_long = 10;
/// BPF_F_TEST_XDP_LIVE_FRAMES.
const TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;

/// BPF_MAP_TYPE_PERCPU_ARRAY.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// `BPF_MAP_TYPE_ARRAY`.
pub const MAP_ARRAY: u32 = 2;
/// BPF_MAP_TYPE_XSKMAP.
pub const MAP_XSKMAP: u32 = 17;
/// BPF_PROG_TYPE_XDP.
pub const PROG_XDP: u32 = 6;
/// BPF_XDP, the attach type of an XDP link.
pub const ATTACH_XDP: u32 = 37;

/// A `union bpf_attr`, zeroed, 8-byte aligned.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Self([0; 128])
    }
    fn u32(&mut self, at: usize, v: u32) -> &mut Self {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, at: usize, v: u64) -> &mut Self {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name(&mut self, at: usize, name: &str) -> &mut Self {
        let n = name.len().min(15);
        self.0[at..at + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
}

/// bpf(cmd, attr): the returned value, or the OS error.
fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: attr is a valid 128-byte bpf_attr for the command; pointers inside it are valid
    // for the call's duration (the callers keep what they point to alive).
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

fn fd_of(r: libc::c_long) -> OwnedFd {
    // SAFETY: r is a new descriptor the kernel just returned to us alone.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

/// Creates a map.
pub fn map_create(
    kind: u32,
    key: u32,
    value: u32,
    entries: u32,
    name: &str,
) -> Result<OwnedFd, SysError> {
    let mut a = Attr::new();
    a.u32(0, kind)
        .u32(4, key)
        .u32(8, value)
        .u32(12, entries)
        .name(28, name);
    bpf(MAP_CREATE, &mut a)
        .map(fd_of)
        .map_err(|source| SysError::Call {
            call: format!("bpf(BPF_MAP_CREATE, {name})"),
            source,
        })
}

/// Reads element `key` into `value` (for a per-CPU map, one slot per possible CPU).
pub fn map_lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> Result<(), SysError> {
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, key.as_ptr() as u64)
        .u64(16, value.as_mut_ptr() as u64);
    bpf(MAP_LOOKUP_ELEM, &mut a)
        .map(|_| ())
        .map_err(|source| SysError::Call {
            call: "bpf(BPF_MAP_LOOKUP_ELEM)".into(),
            source,
        })
}

/// Writes element `key` (BPF_ANY).
pub fn map_update(map: &OwnedFd, key: &[u8], value: &[u8]) -> Result<(), SysError> {
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, key.as_ptr() as u64)
        .u64(16, value.as_ptr() as u64);
    bpf(MAP_UPDATE_ELEM, &mut a)
        .map(|_| ())
        .map_err(|source| SysError::Call {
            call: "bpf(BPF_MAP_UPDATE_ELEM)".into(),
            source,
        })
}

/// Loads an XDP program; a refusal carries the verifier's log.
pub fn prog_load_xdp(insns: &[Insn], name: &str) -> Result<OwnedFd, SysError> {
    let license = b"GPL\0";
    let mut log = vec![0u8; 64 * 1024];
    let load = |level: u32, log: &mut [u8]| {
        let mut a = Attr::new();
        a.u32(0, PROG_XDP)
            .u32(4, insns.len() as u32)
            .u64(8, insns.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .u32(24, level)
            .u32(28, if level > 0 { log.len() as u32 } else { 0 })
            .u64(
                32,
                if level > 0 {
                    log.as_mut_ptr() as u64
                } else {
                    0
                },
            )
            .name(48, name)
            .u32(68, ATTACH_XDP);
        bpf(PROG_LOAD, &mut a)
    };
    match load(0, &mut log) {
        Ok(fd) => Ok(fd_of(fd)),
        // Loaded again with the log on only when it failed: the log costs verifier time.
        Err(first) => match load(1, &mut log) {
            Ok(fd) => Ok(fd_of(fd)),
            Err(_) => {
                let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
                Err(SysError::Verifier {
                    source: first,
                    log: String::from_utf8_lossy(&log[..end]).into_owned(),
                })
            }
        },
    }
}

/// Attaches `prog` to interface `ifindex` as an XDP link (`flags`: 0 lets the kernel pick
/// native mode where the driver has it); the program stays attached while the returned
/// descriptor is open.
pub fn link_create_xdp(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(4, ifindex)
        .u32(8, ATTACH_XDP)
        .u32(12, flags);
    bpf(LINK_CREATE, &mut a).map(fd_of)
}

/// Runs XDP program `prog` `repeat` times over `frame` in live-frames mode
/// (`BPF_F_TEST_XDP_LIVE_FRAMES`): each run's frame is a real one, and what the program
/// redirects is transmitted by the target device's `ndo_xdp_xmit`, without an skb (the kernel's
/// default batch of 64 frames per flush).
pub fn prog_test_run_live(prog: &OwnedFd, frame: &[u8], repeat: u32) -> io::Result<()> {
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(8, frame.len() as u32)
        .u64(16, frame.as_ptr() as u64)
        .u32(32, repeat)
        .u32(64, TEST_XDP_LIVE_FRAMES);
    bpf(PROG_TEST_RUN, &mut a).map(|_| ())
}

/// Runs XDP program `prog` once over `frame` (no live frames: nothing is transmitted); the
/// program's return value and the frame as it left the program, in `out`.
pub fn prog_test_run(prog: &OwnedFd, frame: &[u8], out: &mut [u8]) -> io::Result<(u32, usize)> {
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(8, frame.len() as u32)
        .u32(12, out.len() as u32)
        .u64(16, frame.as_ptr() as u64)
        .u64(24, out.as_mut_ptr() as u64)
        .u32(32, 1);
    bpf(PROG_TEST_RUN, &mut a)?;
    let word = |at: usize| u32::from_ne_bytes(a.0[at..at + 4].try_into().unwrap_or_default());
    Ok((word(4), word(12) as usize))
}

/// The name of the loaded program with id `id` (`struct bpf_prog_info`'s `name`, at byte 64).
pub fn prog_name(id: u32) -> Option<String> {
    let mut a = Attr::new();
    a.u32(0, id);
    let fd = bpf(PROG_GET_FD_BY_ID, &mut a).map(fd_of).ok()?;
    let mut info = [0u8; 256];
    let mut a = Attr::new();
    a.u32(0, fd.as_raw_fd() as u32)
        .u32(4, info.len() as u32)
        .u64(8, info.as_mut_ptr() as u64);
    bpf(OBJ_GET_INFO_BY_FD, &mut a).ok()?;
    let name = &info[64..80];
    let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
    Some(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// How many CPUs the kernel may ever bring up: a per-CPU map's value has one slot for each.
pub fn possible_cpus() -> Result<usize, SysError> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").map_err(|source| {
        SysError::Call {
            call: "read /sys/devices/system/cpu/possible".into(),
            source,
        }
    })?;
    Ok(count_cpu_list(text.trim()))
}

/// Counts the CPUs in a list such as "0-3,8,10-11".
fn count_cpu_list(list: &str) -> usize {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(p.parse::<usize>().is_ok()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_lists_count_like_the_kernels() {
        assert_eq!(super::count_cpu_list("0-1"), 2);
        assert_eq!(super::count_cpu_list("0"), 1);
        assert_eq!(super::count_cpu_list("0-3,8,10-11"), 7);
    }
}
