//! What a `udp_stream` sender learns from its failed sends: which sends its own host refused,
//! and which failures only report an ICMP error the path sent back.
//!
//! With `IP_RECVERR` (`IPV6_RECVERR`) set, a send that the local stack or a qdisc dropped fails
//! with `ENOBUFS` instead of succeeding silently (Linux `udp_send_skb`: without the option the
//! kernel counts the drop in `Udp: SndbufErrors`, once per GSO message, and reports success).
//! The refused send is one message: with sendmmsg(2) the kernel stops at the first message that
//! fails and, having sent others, returns their count and drops the error. A call that fails
//! at its first message reports `ENOBUFS`; a call that stops short before its send timeout
//! could have run out can only have met an error too (a full buffer would have blocked until
//! the timeout), so that message is counted as refused and not sent again
//! ([`Refusals::stopped_short`]). Every refused message, and its datagrams, is counted once, and
//! a qdisc's own drop counter equals the datagrams lost at it. A qdisc that accepted a GSO message in part (tbf segments one above its
//! burst and may queue only some segments) returns success: those segments are not seen here,
//! only in the qdisc's own drop counter.
//!
//! The option also turns ICMP errors from the path into errors of later sends on a connected
//! socket (host or network unreachable, which without it only hard errors do). Those queue an
//! entry on the socket's error queue, which [`path_reported`] drains; a failure with nothing
//! there is the local stack's own (no route) and still ends the test.

use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};

use wire::msg::SendDrops;

use crate::sockopt::setsockopt_int;

/// Error-queue entries read at most per failed send (the queue is bounded by the receive buffer).
const DRAIN_MOST: usize = 64;

/// Asks `sock` to report its host's drops as `ENOBUFS` (and ICMP errors in its error queue);
/// whether the kernel took the option.
pub(super) fn ask_for_errors(sock: &UdpSocket) -> bool {
    let fd = sock.as_raw_fd();
    let v6 = sock.local_addr().is_ok_and(|a| a.is_ipv6());
    let v4 = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVERR, 1).is_ok();
    if v6 {
        // An IPv6 socket sends IPv4-mapped destinations through the IPv4 path too, which
        // reads IP_RECVERR: both, and the IPv6 one must hold.
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, 1).is_ok()
    } else {
        v4
    }
}

/// A sender's count of what its host refused: `None` when its sockets could not ask.
#[derive(Debug, Clone, Copy)]
pub(super) struct Refusals(Option<SendDrops>);

impl Refusals {
    /// Counting when `asked` (every sending socket took `IP_RECVERR`).
    pub(super) fn new(asked: bool) -> Self {
        Self(asked.then(SendDrops::default))
    }

    /// One refused message of `datagrams` datagrams.
    #[inline]
    pub(super) fn add(&mut self, datagrams: usize) {
        if let Some(d) = &mut self.0 {
            d.datagrams += datagrams as u64;
            d.sends += 1;
        }
    }

    /// After a send call that took `done` of `n` datagrams and began at `stamp_ns`
    /// (`now_ns`): the datagrams of the message it stopped at, counted as refused, when that
    /// can only have been a refusal (counting, and the call returned well before the send
    /// timeout, so not for a full buffer); 0 otherwise, and the message is sent again. sendmmsg
    /// keeps only the count of what it sent and drops the error; counting the message as
    /// refused and lost, as a first message's `ENOBUFS` is, rather than sending it again, keeps
    /// a qdisc's drop counter equal to the loss.
    pub(super) fn stopped_short(
        &mut self,
        batch: &super::batch::Batch,
        done: usize,
        n: usize,
        stamp_ns: u64,
    ) -> usize {
        let quick = crate::POLL_INTERVAL.as_nanos() as u64 / 2;
        if self.0.is_none() || measure::clock::now_ns().saturating_sub(stamp_ns) >= quick {
            return 0;
        }
        let messages = batch.messages_holding(done);
        let k = batch.datagrams_in(messages + 1, n) - batch.datagrams_in(messages, n);
        self.add(k);
        k
    }

    /// The final count.
    pub(super) fn total(&self) -> Option<SendDrops> {
        self.0
    }
}

/// Whether `e`, a failed send on `fd`, only reports an ICMP error the path sent back for an
/// earlier datagram (drained from the error queue here): the sender carries on, the datagram
/// that met it counting as lost.
pub(super) fn path_reported(fd: RawFd, e: &std::io::Error) -> bool {
    let icmp = [
        libc::EHOSTUNREACH,
        libc::ENETUNREACH,
        libc::EHOSTDOWN,
        libc::ENONET,
        libc::EPROTO,
    ];
    if !e.raw_os_error().is_some_and(|c| icmp.contains(&c)) {
        return false;
    }
    let mut found = false;
    for _ in 0..DRAIN_MOST {
        let mut data = [0u8; 64];
        let mut control = [0u8; 256];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        // SAFETY: msghdr is plain data; zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() as _;
        // SAFETY: the header points at live buffers of the lengths it states.
        let rc = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if rc < 0 {
            break;
        }
        found = true;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_datagrams_and_sends_only_when_asked() {
        let mut r = Refusals::new(true);
        r.add(54);
        r.add(1);
        assert_eq!(
            r.total(),
            Some(SendDrops {
                datagrams: 55,
                sends: 2
            })
        );
        let mut none = Refusals::new(false);
        none.add(3);
        assert_eq!(none.total(), None);
    }

    #[test]
    fn a_udp_socket_takes_the_option_and_a_local_failure_is_not_the_paths() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(ask_for_errors(&s));
        let unreachable = std::io::Error::from_raw_os_error(libc::EHOSTUNREACH);
        assert!(!path_reported(s.as_raw_fd(), &unreachable), "empty queue");
        let other = std::io::Error::from_raw_os_error(libc::EPERM);
        assert!(!path_reported(s.as_raw_fd(), &other));
    }
}
