//! Just enough rtnetlink for linerate's questions to the kernel: a `NETLINK_ROUTE` socket with a
//! receive timeout ([`open`]), a request ([`request`]), and a bounded ask ([`ask`]; [`ask_on`]
//! for a generic-netlink family, as `frames::xdp_features` asks the `netdev` family) whose
//! answer is walked as messages and attributes. The qdisc dump (`qdisc/netlink.rs`) opens its
//! socket here; the frame engine asks the route, link and neighbour of a peer and an
//! interface's XDP program (`frames::route`, `frames::xdp_query`).
//!
//! Parsing works on plain byte slices ([`messages`], [`attrs`]) so it is tested without a
//! kernel; a truncated or malformed message ends the walk instead of reading past it. Every
//! read waits at most [`READ_TIMEOUT`], and an answer is read at most `MAX_READS` times.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// Longest wait for one reply datagram.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Most reply datagrams read for one request (a dump of a large neighbour table is several).
const MAX_READS: usize = 4096;
/// Bytes of a netlink message header.
pub const NLMSG_HDR: usize = 16;

/// One netlink message: its type and its payload (after the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// `nlmsg_type`, e.g. `RTM_NEWROUTE`.
    pub kind: u16,
    /// The bytes after the header.
    pub payload: &'a [u8],
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The messages of one datagram, in order; stops at the first malformed one.
pub fn messages(buf: &[u8]) -> Vec<Message<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let (Some(len), Some(kind)) = (u32_at(buf, at), u16_at(buf, at + 4)) {
        let len = len as usize;
        if len < NLMSG_HDR || at + len > buf.len() {
            break;
        }
        out.push(Message {
            kind,
            payload: &buf[at + NLMSG_HDR..at + len],
        });
        at += align4(len);
    }
    out
}

/// The route attributes after a fixed header of `skip` bytes: (type, value) pairs; stops at
/// the first malformed one.
pub fn attrs(payload: &[u8], skip: usize) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = skip;
    while let (Some(len), Some(kind)) = (u16_at(payload, at), u16_at(payload, at + 2)) {
        let len = usize::from(len);
        if len < 4 || at + len > payload.len() {
            break;
        }
        out.push((kind & 0x3fff, &payload[at + 4..at + len]));
        at += align4(len);
    }
    out
}

/// The value of the first attribute of type `want` in `run` (as [`attrs`] walks them).
pub fn attr<'a>(run: &[(u16, &'a [u8])], want: u16) -> Option<&'a [u8]> {
    run.iter().find(|(t, _)| *t == want).map(|(_, v)| *v)
}

/// A request: header, a fixed part and attributes (type, value).
pub fn request(kind: u16, flags: u16, fixed: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut body = fixed.to_vec();
    body.resize(align4(body.len()), 0);
    for (t, v) in attrs {
        body.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
        body.extend_from_slice(&t.to_ne_bytes());
        body.extend_from_slice(v);
        body.resize(align4(body.len()), 0);
    }
    let mut out = Vec::with_capacity(NLMSG_HDR + body.len());
    out.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&(flags | libc::NLM_F_REQUEST as u16).to_ne_bytes());
    out.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    out.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    out.extend(body);
    out
}

/// Sends `req` on a fresh NETLINK_ROUTE socket and hands every reply message to `each` until
/// the reply is complete (one message, or a dump's `NLMSG_DONE`). A kernel error is returned
/// as one.
pub fn ask(req: &[u8], dump: bool, each: impl FnMut(Message)) -> io::Result<()> {
    ask_on(libc::NETLINK_ROUTE, req, dump, each)
}

/// One interface's `RTM_GETLINK` reply (`ip link show dev`), read by `read` from its payload
/// (the 16-byte `ifinfomsg`, then the attributes): `Ok(None)` when no link message came back
/// or `read` found nothing in it.
pub fn link<T>(ifindex: u32, read: impl Fn(&[u8]) -> Option<T>) -> io::Result<Option<T>> {
    // struct ifinfomsg: family, pad, type (u16), index (i32), flags (u32), change (u32).
    let mut fixed = [0u8; 16];
    fixed[4..8].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    let req = request(libc::RTM_GETLINK, 0, &fixed, &[]);
    let mut found = None;
    ask(&req, false, |m| {
        if m.kind == libc::RTM_NEWLINK {
            found = read(m.payload);
        }
    })?;
    Ok(found)
}

/// [`ask`] on a socket of netlink `protocol` (`NETLINK_GENERIC` for a generic family's
/// request, whose payload opens with the 4-byte `genlmsghdr`).
pub fn ask_on(
    protocol: libc::c_int,
    req: &[u8],
    dump: bool,
    mut each: impl FnMut(Message),
) -> io::Result<()> {
    let fd = open_on(protocol, READ_TIMEOUT)?;
    // SAFETY: req is a valid buffer of req.len() bytes; the socket is ours.
    let sent = unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..MAX_READS {
        // SAFETY: buf is a valid, writable buffer of buf.len() bytes.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        for m in messages(&buf[..n as usize]) {
            match i32::from(m.kind) {
                libc::NLMSG_DONE => return Ok(()),
                libc::NLMSG_ERROR => {
                    let code = u32_at(m.payload, 0).map_or(0, |c| c as i32);
                    if code == 0 {
                        return Ok(()); // an acknowledgement
                    }
                    return Err(io::Error::from_raw_os_error(-code));
                }
                _ => each(m),
            }
        }
        if !dump {
            return Ok(());
        }
    }
    Err(io::Error::other("reply longer than expected"))
}

/// A `NETLINK_ROUTE` socket whose reads wait at most `timeout`.
pub fn open(timeout: Duration) -> io::Result<OwnedFd> {
    open_on(libc::NETLINK_ROUTE, timeout)
}

/// A netlink socket of `protocol` whose reads wait at most `timeout`.
fn open_on(protocol: libc::c_int, timeout: Duration) -> io::Result<OwnedFd> {
    // SAFETY: plain socket call; the descriptor is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            protocol,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: tv is a valid timeval for the length given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_found_past_padding_and_nesting_bits() {
        // len 5 (padded to 8), type 1; len 8, type 43 | NLA_F_NESTED, payload 4 bytes.
        let run = [5, 0, 1, 0, 9, 0, 0, 0, 8, 0, 43, 0x80, 1, 2, 3, 4];
        let walked = attrs(&run, 0);
        assert_eq!(attr(&walked, 43), Some(&[1u8, 2, 3, 4][..]));
        assert_eq!(attr(&walked, 1), Some(&[9u8][..]));
        assert_eq!(attr(&walked, 7), None);
        let past_the_end = attrs(&[200, 0, 1, 0], 0);
        assert_eq!(attr(&past_the_end, 1), None, "a length past the end");
    }

    #[test]
    fn a_request_reads_back_as_its_message_and_attributes() {
        let req = request(
            26,
            0,
            &[2, 32, 0, 0],
            &[(1, &[198, 18, 0, 2]), (4, &[7, 0, 0, 0])],
        );
        assert_eq!(req.len() % 4, 0);
        let ms = messages(&req);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].kind, 26);
        let a = attrs(ms[0].payload, 4);
        assert_eq!(a, [(1, &[198u8, 18, 0, 2][..]), (4, &[7u8, 0, 0, 0][..])]);
    }

    #[test]
    fn truncated_or_lying_lengths_end_the_walk() {
        let req = request(26, 0, &[2, 32, 0, 0], &[(1, &[198, 18, 0, 2])]);
        assert!(messages(&req[..req.len() - 1]).is_empty());
        let mut lying = req.clone();
        lying[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(messages(&lying).is_empty());
        let mut short_attr = req[NLMSG_HDR..].to_vec();
        short_attr[4..6].copy_from_slice(&200u16.to_ne_bytes());
        assert!(attrs(&short_attr, 4).is_empty());
        assert!(attrs(&[1, 2], 4).is_empty());
    }
}
