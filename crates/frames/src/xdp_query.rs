//! Which XDP program an interface already has: asked of rtnetlink (`RTM_GETLINK`, the
//! `IFLA_XDP` attribute's `IFLA_XDP_PROG_ID`), then named with `bpf(2)` (`BPF_PROG_GET_FD_BY_ID`,
//! `BPF_OBJ_GET_INFO_BY_FD`), so a refusal to attach can say what is in the way.
//!
//! Best effort and bounded: one request, a 1 s receive timeout; any failure is `None` (the
//! refusal then names the interface alone).

use crate::bpf::sys;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const RTM_GETLINK: u16 = 18;
const RTM_NEWLINK: u16 = 16;
const NLM_F_REQUEST: u16 = 1;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_PROG_ID: u16 = 4;
const NLA_TYPE_MASK: u16 = 0x3fff;

/// The XDP program on interface `ifindex` (any mode): its id and name.
pub fn attached(ifindex: u32) -> Option<(u32, String)> {
    let id = prog_id(ifindex)?;
    let name = sys::prog_name(id).unwrap_or_default();
    Some((id, name))
}

fn prog_id(ifindex: u32) -> Option<u32> {
    // SAFETY: plain socket(2), owned at once when valid.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if raw < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let tv = libc::timeval {
        tv_sec: 1,
        tv_usec: 0,
    };
    // SAFETY: tv is a timeval for the call.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    // nlmsghdr (len, type, flags, seq, pid) + ifinfomsg (family, pad, type, index, flags, change).
    let mut req = [0u8; 32];
    req[0..4].copy_from_slice(&32u32.to_ne_bytes());
    req[4..6].copy_from_slice(&RTM_GETLINK.to_ne_bytes());
    req[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    req[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    // SAFETY: req is a buffer of its length.
    if unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
        return None;
    }
    let mut buf = vec![0u8; 32 * 1024];
    // SAFETY: buf is a buffer of its length.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    let reply = buf.get(..usize::try_from(n).ok()?)?;
    let kind = u16::from_ne_bytes(reply.get(4..6)?.try_into().ok()?);
    if kind != RTM_NEWLINK {
        return None;
    }
    let xdp = attr(reply.get(32..)?, IFLA_XDP)?;
    let id = attr(xdp, IFLA_XDP_PROG_ID)?;
    let id = u32::from_ne_bytes(id.get(..4)?.try_into().ok()?);
    (id != 0).then_some(id)
}

/// The payload of the first attribute of type `want` in a run of netlink attributes.
fn attr(mut rest: &[u8], want: u16) -> Option<&[u8]> {
    while rest.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > rest.len() {
            return None;
        }
        if kind == want {
            return Some(&rest[4..len]);
        }
        rest = rest.get(len.next_multiple_of(4)..).unwrap_or(&[]);
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn attributes_are_found_past_padding_and_nesting_bits() {
        // len 5 (padded to 8), type 1; len 8, type 43 | NLA_F_NESTED, payload 4 bytes.
        let run = [5, 0, 1, 0, 9, 0, 0, 0, 8, 0, 43, 0x80, 1, 2, 3, 4];
        assert_eq!(super::attr(&run, 43), Some(&[1u8, 2, 3, 4][..]));
        assert_eq!(super::attr(&run, 1), Some(&[9u8][..]));
        assert_eq!(super::attr(&run, 7), None);
        assert_eq!(
            super::attr(&[200, 0, 1, 0], 1),
            None,
            "a length past the end"
        );
    }
}
