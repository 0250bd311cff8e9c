//! The rtnetlink dump of an interface's qdiscs (and an htb's classes): one `NETLINK_ROUTE`
//! socket (`crate::netlink::open`), one request, the kernel's multipart answer read until
//! `NLMSG_DONE`.
//!
//! Bounded: the answer is read at most [`MAX_READS`] times within the socket's receive timeout
//! of [`TIMEOUT`] each, and at most [`MAX_QDISCS`](super::MAX_QDISCS) qdiscs of the interface
//! are kept. Every length in the answer is checked against the bytes that hold it.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use super::options::{self, Attrs};
use super::{handle_words, parent_words, Qdisc, QdiscCounts, QdiscError, MAX_QDISCS};

const RTM_GETQDISC: u16 = 38;
const RTM_GETTCLASS: u16 = 42;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_HDR: usize = 16;
/// `struct tcmsg`: family, 3 pad bytes, ifindex, handle, parent, info.
const TCMSG: usize = 20;

const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TCA_STATS_PKT64: u16 = 8;

/// Reads of the answer at most (each up to 64 KiB: thousands of qdiscs).
const MAX_READS: usize = 256;
/// How long one read of the answer may wait.
const TIMEOUT: Duration = Duration::from_secs(1);

/// One qdisc or class as the kernel dumped it.
pub(super) struct TcObject {
    pub ifindex: i32,
    pub handle: u32,
    pub parent: u32,
    pub kind: String,
    pub options: Vec<u8>,
    pub counts: Option<QdiscCounts>,
}

pub(super) fn read(interface: &str) -> Result<Vec<Qdisc>, QdiscError> {
    let ifindex = ifindex(interface)?;
    let sock = open()?;
    let objects = dump(&sock, RTM_GETQDISC, ifindex, 1)?;
    let mut out = Vec::new();
    for o in objects.iter().filter(|o| o.ifindex == ifindex) {
        if out.len() == MAX_QDISCS {
            break;
        }
        let mut q = qdisc_of(o);
        if o.kind == "htb" {
            // An htb's rate is its root classes' (their parent is the root, TC_H_ROOT).
            let classes = dump(&sock, RTM_GETTCLASS, ifindex, 2)?;
            q.rate_bps = options::htb_rate(&classes, o.handle);
        }
        out.push(q);
    }
    Ok(out)
}

/// The qdisc a dumped object describes: its names, counters and the options of its kind.
pub(super) fn qdisc_of(o: &TcObject) -> Qdisc {
    let mut q = Qdisc {
        kind: o.kind.clone(),
        handle: handle_words(o.handle),
        parent: parent_words(o.parent),
        counts: o.counts,
        ..Qdisc::default()
    };
    options::fill(&mut q, &o.options);
    q
}

fn ifindex(interface: &str) -> Result<i32, QdiscError> {
    let name = std::ffi::CString::new(interface)
        .map_err(|_| QdiscError::NoInterface(interface.to_string()))?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    i32::try_from(index)
        .ok()
        .filter(|&i| i > 0)
        .ok_or_else(|| QdiscError::NoInterface(interface.to_string()))
}

fn open() -> Result<OwnedFd, QdiscError> {
    Ok(crate::netlink::open(TIMEOUT)?)
}

/// Sends one dump request of `kind` (for classes the kernel needs the interface) and collects
/// the answer's objects.
fn dump(sock: &OwnedFd, kind: u16, ifindex: i32, seq: u32) -> Result<Vec<TcObject>, QdiscError> {
    let mut req = [0u8; NLMSG_HDR + TCMSG];
    req[0..4].copy_from_slice(&((NLMSG_HDR + TCMSG) as u32).to_ne_bytes());
    req[4..6].copy_from_slice(&kind.to_ne_bytes());
    req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req[8..12].copy_from_slice(&seq.to_ne_bytes());
    req[NLMSG_HDR] = libc::AF_UNSPEC as u8;
    req[NLMSG_HDR + 4..NLMSG_HDR + 8].copy_from_slice(&ifindex.to_ne_bytes());
    // SAFETY: `req` is a complete request of the length given; the kernel is the address.
    let sent = unsafe {
        let mut addr: libc::sockaddr_nl = std::mem::zeroed();
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        libc::sendto(
            sock.as_raw_fd(),
            req.as_ptr().cast(),
            req.len(),
            0,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error().into());
    }
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::new();
    for _ in 0..MAX_READS {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error().into());
        }
        if parse_messages(&buf[..n as usize], seq, &mut out)? {
            return Ok(out);
        }
    }
    Err(QdiscError::Malformed("the dump did not end"))
}

/// Adds the objects of one read to `out`; true at the dump's end.
pub(super) fn parse_messages(
    mut bytes: &[u8],
    seq: u32,
    out: &mut Vec<TcObject>,
) -> Result<bool, QdiscError> {
    while bytes.len() >= NLMSG_HDR {
        let len = u32_at(bytes, 0) as usize;
        if len < NLMSG_HDR || len > bytes.len() {
            return Err(QdiscError::Malformed("a message longer than the read"));
        }
        let kind = u16::from_ne_bytes([bytes[4], bytes[5]]);
        let body = &bytes[NLMSG_HDR..len];
        if u32_at(bytes, 8) == seq {
            match kind {
                NLMSG_DONE => return Ok(true),
                NLMSG_ERROR => {
                    let errno = body
                        .get(..4)
                        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    if errno != 0 {
                        return Err(io::Error::from_raw_os_error(-errno).into());
                    }
                    return Ok(true);
                }
                _ => {
                    if let Some(o) = object(body) {
                        out.push(o);
                    }
                }
            }
        }
        bytes = &bytes[align(len).min(bytes.len())..];
    }
    Ok(false)
}

/// A qdisc or class message: its `tcmsg` and attributes.
fn object(body: &[u8]) -> Option<TcObject> {
    let tcm = body.get(..TCMSG)?;
    let mut o = TcObject {
        ifindex: i32::from_ne_bytes(tcm[4..8].try_into().ok()?),
        handle: u32_at(tcm, 8),
        parent: u32_at(tcm, 12),
        kind: String::new(),
        options: Vec::new(),
        counts: None,
    };
    for (t, v) in Attrs(&body[TCMSG..]) {
        match t {
            TCA_KIND => {
                let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
                o.kind = String::from_utf8_lossy(&v[..end.min(super::MAX_NAME_LEN)]).into_owned();
            }
            TCA_OPTIONS => o.options = v.to_vec(),
            TCA_STATS2 => o.counts = Some(stats(v)),
            _ => {}
        }
    }
    Some(o)
}

/// `TCA_STATS2`: `gnet_stats_basic` (bytes u64, packets u32), `gnet_stats_queue` (qlen,
/// backlog, drops, requeues, overlimits: u32 each), and the 64-bit packet count when present.
fn stats(nested: &[u8]) -> QdiscCounts {
    let mut c = QdiscCounts::default();
    for (t, v) in Attrs(nested) {
        match t {
            TCA_STATS_BASIC if v.len() >= 12 => {
                c.bytes = u64::from_ne_bytes(v[0..8].try_into().unwrap_or_default());
                c.packets = u64::from(u32_at(v, 8));
            }
            TCA_STATS_PKT64 if v.len() >= 8 => {
                c.packets = u64::from_ne_bytes(v[0..8].try_into().unwrap_or_default());
            }
            TCA_STATS_QUEUE if v.len() >= 20 => {
                c.backlog_packets = u64::from(u32_at(v, 0));
                c.backlog_bytes = u64::from(u32_at(v, 4));
                c.drops = u64::from(u32_at(v, 8));
                c.requeues = u64::from(u32_at(v, 12));
                c.overlimits = u64::from(u32_at(v, 16));
            }
            _ => {}
        }
    }
    c
}

/// The u32 at `at` (native order); 0 past the end (callers check lengths first).
pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// Netlink's 4-byte alignment.
pub(super) fn align(n: usize) -> usize {
    (n + 3) & !3
}
