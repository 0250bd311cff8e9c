//! The batches of `udp_stream`'s data path: the buffers, iovecs and message headers of one
//! sendmmsg(2) or recvmmsg(2) call, with UDP GSO segments on the way out and GRO segments (and,
//! when asked, each datagram's source address) on the way in. Allocated once per stream; nothing
//! here allocates, formats or logs per batch.

use std::io::{self, ErrorKind};
use std::net::IpAddr;
use std::os::fd::RawFd;

/// Turns on a UDP offload socket option; false where the kernel does not have it.
pub(super) fn enable(fd: RawFd, option: libc::c_int, value: libc::c_int) -> bool {
    crate::sockopt::setsockopt_int(fd, libc::SOL_UDP, option, value).is_ok()
}

/// Most datagrams in one GSO send: the kernel's UDP_MAX_SEGMENTS since Linux 6.x. An older
/// kernel refuses more than [`GSO_OLD_MAX_SEGMENTS`] with EINVAL; the sender then drops to that.
pub(super) const GSO_MAX_SEGMENTS: usize = 128;
/// UDP_MAX_SEGMENTS before Linux 6.x.
pub(super) const GSO_OLD_MAX_SEGMENTS: usize = 64;
/// Largest UDP payload in one send, which bounds a GSO message.
pub(super) const MAX_UDP_PAYLOAD: usize = 65_507;
/// Receive buffer per message with GRO (a coalesced message is at most 64 KiB).
pub(super) const GRO_MESSAGE: usize = 65_536;
/// Control buffer per received message (room for one UDP_GRO cmsg).
pub(super) const CONTROL_LEN: usize = 64;

/// Buffers and headers for one sendmmsg/recvmmsg call, allocated once. Each message holds up
/// to `segments` datagrams of `payload` bytes (more than one only with GSO/GRO).
pub(super) struct Batch {
    buf: Vec<u8>,
    msg_cap: usize,
    payload: usize,
    segments: usize,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    control: Vec<u8>,
    names: Vec<libc::sockaddr_storage>,
}

impl Batch {
    pub(super) fn new(
        messages: usize,
        segments: usize,
        payload: usize,
        msg_cap: usize,
        with_control: bool,
    ) -> Self {
        let buf = crate::pattern(messages * msg_cap);
        let control = vec![
            0u8;
            if with_control {
                messages * CONTROL_LEN
            } else {
                0
            }
        ];
        let mut batch = Self {
            buf,
            msg_cap,
            payload,
            segments,
            iov: Vec::with_capacity(messages),
            msgs: Vec::with_capacity(messages),
            control,
            names: Vec::new(),
        };
        for i in 0..messages {
            batch.iov.push(libc::iovec {
                // SAFETY: the offset is inside `buf`, whose heap block never moves.
                iov_base: unsafe { batch.buf.as_mut_ptr().add(i * msg_cap) }.cast(),
                iov_len: msg_cap,
            });
        }
        for i in 0..messages {
            // SAFETY: mmsghdr is plain data; zero is a valid empty header.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: the index is inside `iov`, whose heap block never moves.
            m.msg_hdr.msg_iov = unsafe { batch.iov.as_mut_ptr().add(i) };
            m.msg_hdr.msg_iovlen = 1;
            batch.msgs.push(m);
        }
        batch
    }

    /// Datagram `k` of the batch: message `k / segments`, slot `k % segments`.
    #[inline]
    pub(super) fn datagram_mut(&mut self, k: usize) -> &mut [u8] {
        let at = (k / self.segments) * self.msg_cap + (k % self.segments) * self.payload;
        &mut self.buf[at..at + self.payload]
    }

    /// Sets the message lengths for `n` datagrams; returns the number of messages.
    #[inline]
    pub(super) fn prepare_send(&mut self, n: usize) -> usize {
        let messages = n.div_ceil(self.segments);
        for m in 0..messages {
            let count = (n - m * self.segments).min(self.segments);
            self.iov[m].iov_len = count * self.payload;
        }
        messages
    }

    /// The whole messages `datagrams` datagrams of a send fill (a call's count that stopped
    /// short, which is always whole messages).
    #[inline]
    pub(super) fn messages_holding(&self, datagrams: usize) -> usize {
        datagrams / self.segments
    }

    /// Datagrams in the first `messages` messages of a send of `n`.
    #[inline]
    pub(super) fn datagrams_in(&self, messages: usize, n: usize) -> usize {
        (messages * self.segments).min(n)
    }

    /// Asks receives to record each datagram's source address.
    pub(super) fn want_sources(&mut self) {
        // SAFETY: sockaddr_storage is plain data; zero is valid.
        self.names = vec![unsafe { std::mem::zeroed() }; self.msgs.len()];
    }

    /// The source IP of received message `i`, when sources are recorded.
    #[inline]
    pub(super) fn source(&self, i: usize) -> Option<IpAddr> {
        let name = self.names.get(i)?;
        // SAFETY: the kernel wrote a sockaddr of the family it states into the storage, which
        // is large and aligned enough for any of them.
        unsafe {
            match i32::from(name.ss_family) {
                libc::AF_INET => {
                    let a = &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                    Some(IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let a = &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                    let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
                    Some(ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4))
                }
                _ => None,
            }
        }
    }

    /// Resets lengths and control buffers before a receive.
    #[inline]
    pub(super) fn prepare_receive(&mut self) {
        let with_control = !self.control.is_empty();
        let with_names = !self.names.is_empty();
        for (i, m) in self.msgs.iter_mut().enumerate() {
            m.msg_len = 0;
            if with_names {
                // SAFETY: the index is inside `names`, whose heap block never moves.
                m.msg_hdr.msg_name = unsafe { self.names.as_mut_ptr().add(i) }.cast();
                m.msg_hdr.msg_namelen =
                    std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            }
            if with_control {
                // SAFETY: the offset is inside `control`, whose heap block never moves.
                m.msg_hdr.msg_control =
                    unsafe { self.control.as_mut_ptr().add(i * CONTROL_LEN) }.cast();
                m.msg_hdr.msg_controllen = CONTROL_LEN as _;
            }
        }
    }

    /// Received message `i` and the GRO segment size the kernel reported for it, if any.
    #[inline]
    pub(super) fn received(&self, i: usize) -> (&[u8], Option<usize>) {
        let m = &self.msgs[i];
        let len = (m.msg_len as usize).min(self.msg_cap);
        let mut gro = None;
        if !self.control.is_empty() && m.msg_hdr.msg_controllen > 0 {
            // SAFETY: the kernel filled `msg_control` with `msg_controllen` bytes of cmsgs;
            // the CMSG_* macros walk them within that length.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                        let size =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                        gro = usize::try_from(size).ok().filter(|s| *s > 0);
                    }
                    c = libc::CMSG_NXTHDR(&m.msg_hdr, c);
                }
            }
        }
        (&self.buf[i * self.msg_cap..i * self.msg_cap + len], gro)
    }
}

#[inline]
pub(super) fn sendmmsg(fd: RawFd, batch: &mut Batch, messages: usize) -> io::Result<usize> {
    // SAFETY: `msgs` holds at least `messages` initialised headers pointing into live buffers.
    let rc = unsafe { libc::sendmmsg(fd, batch.msgs.as_mut_ptr(), messages as libc::c_uint, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

#[inline]
pub(super) fn send_one(fd: RawFd, datagram: &[u8]) -> io::Result<usize> {
    // SAFETY: a valid buffer and its length.
    let rc = unsafe { libc::send(fd, datagram.as_ptr().cast(), datagram.len(), 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(1)
    }
}

/// Reads up to a batch of messages from `fd`; `flags` is `MSG_WAITFORONE` (block, by the
/// socket's timeout, for the first only) or `MSG_DONTWAIT` (never block).
#[inline]
pub(super) fn recvmmsg(fd: RawFd, batch: &mut Batch, flags: libc::c_int) -> io::Result<usize> {
    batch.prepare_receive();
    // SAFETY: `msgs` holds initialised headers pointing into live buffers of `msg_cap` bytes
    // and control buffers of CONTROL_LEN bytes.
    let rc = unsafe {
        libc::recvmmsg(
            fd,
            batch.msgs.as_mut_ptr(),
            batch.msgs.len() as libc::c_uint,
            flags,
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

#[inline]
pub(super) fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock
            | ErrorKind::TimedOut
            | ErrorKind::Interrupted
            | ErrorKind::ConnectionRefused
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}
