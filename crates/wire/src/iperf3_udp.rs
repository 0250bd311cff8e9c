//! iperf3's UDP data plane (docs/PROTOCOL.md section 13): the header that opens every data
//! datagram, and the four-byte connect message and reply that set up a stream. Facts from
//! iperf3's source (`iperf_udp.c`, `iperf.h`); no code of it.
//!
//! ```text
//!  0        4        8                        12 or 16
//! +--------+--------+------------------------+---------
//! |  sec   |  usec  | pcount (u32, or u64)   | payload…
//! +--------+--------+------------------------+---------
//! ```
//!
//! All fields are big-endian. `sec`/`usec` are the sender's clock when it sent the datagram
//! (only differences between one sender's datagrams mean anything: the receiver's jitter);
//! `pcount` counts a stream's data datagrams from 1. The counter is 64 bits when the client's
//! parameters say `udp_counters_64bit`, else 32. There is no end-of-stream datagram: both ends
//! stop at the control connection's `TEST_END`.
//!
//! A stream starts with the client sending a connect datagram from its data socket to the
//! server's port; the server answers from the socket it then keeps for that stream. iperf3
//! writes both as host-order `u32`s: a little-endian host sends [`CONNECT_MSG`] ("9876") and
//! answers [`CONNECT_REPLY`] ("6789"), a big-endian one the same bytes reversed; releases
//! before 3.11 sent 123456789 and answered 987654321. [`reply_to`] answers each in its own
//! byte order; [`is_connect_reply`] takes any of the answers.
//!
//! Invariants: nothing here panics or allocates on any input; writing into a buffer shorter
//! than the header writes nothing and says so.

/// The client's connect datagram ("9876").
pub const CONNECT_MSG: [u8; 4] = *b"9876";
/// The server's reply ("6789").
pub const CONNECT_REPLY: [u8; 4] = *b"6789";
/// The reply of iperf3 servers before 3.11 (987654321 in host order on a little-endian host).
pub const LEGACY_CONNECT_REPLY: [u8; 4] = [0xb1, 0x68, 0xde, 0x3a];

/// The header's length: 12 bytes with a 32-bit counter, 16 with a 64-bit one.
pub const fn header_len(counters_64bit: bool) -> usize {
    if counters_64bit {
        16
    } else {
        12
    }
}

/// Writes a header for datagram `pcount` (from 1) sent at `sent_ns` into the start of `buf`;
/// `false`, writing nothing, when `buf` is too short. A 32-bit counter keeps `pcount`'s low
/// 32 bits.
#[inline]
pub fn write_header(buf: &mut [u8], counters_64bit: bool, pcount: u64, sent_ns: u64) -> bool {
    let len = header_len(counters_64bit);
    let Some(head) = buf.get_mut(..len) else {
        return false;
    };
    let sec = (sent_ns / 1_000_000_000) as u32;
    let usec = ((sent_ns % 1_000_000_000) / 1000) as u32;
    head[0..4].copy_from_slice(&sec.to_be_bytes());
    head[4..8].copy_from_slice(&usec.to_be_bytes());
    if counters_64bit {
        head[8..16].copy_from_slice(&pcount.to_be_bytes());
    } else {
        head[8..12].copy_from_slice(&(pcount as u32).to_be_bytes());
    }
    true
}

/// A datagram's `(pcount, sent_ns)`, or `None` when it is shorter than the header.
#[inline]
pub fn parse_header(buf: &[u8], counters_64bit: bool) -> Option<(u64, u64)> {
    let head = buf.get(..header_len(counters_64bit))?;
    let word = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let sent_ns = u64::from(word(0)) * 1_000_000_000 + u64::from(word(4)) * 1000;
    let pcount = if counters_64bit {
        (u64::from(word(8)) << 32) | u64::from(word(12))
    } else {
        u64::from(word(8))
    };
    Some((pcount, sent_ns))
}

/// Whether four bytes are a server's answer to a connect datagram: current or legacy, from a
/// host of either byte order.
pub fn is_connect_reply(b: &[u8]) -> bool {
    let mut reversed = [0u8; 4];
    if let Ok(b4) = <[u8; 4]>::try_from(b) {
        reversed = b4;
        reversed.reverse();
    }
    b == CONNECT_REPLY
        || b == LEGACY_CONNECT_REPLY
        || reversed == CONNECT_REPLY
        || reversed == LEGACY_CONNECT_REPLY
}

/// The answer to a client's connect datagram, in the client's byte order; `None` when the
/// datagram is no connect datagram of any iperf3 release.
pub fn reply_to(connect: &[u8]) -> Option<[u8; 4]> {
    let legacy_msg = 123_456_789u32.to_le_bytes();
    let flip = |mut b: [u8; 4]| {
        b.reverse();
        b
    };
    let b: [u8; 4] = connect.try_into().ok()?;
    if b == CONNECT_MSG {
        Some(CONNECT_REPLY)
    } else if b == flip(CONNECT_MSG) {
        Some(flip(CONNECT_REPLY))
    } else if b == legacy_msg {
        Some(LEGACY_CONNECT_REPLY)
    } else if b == flip(legacy_msg) {
        Some(flip(LEGACY_CONNECT_REPLY))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_32_bit_header_on_the_wire() {
        let mut b = [0xffu8; 14];
        assert!(write_header(&mut b, false, 7, 3_000_004_999));
        assert_eq!(
            b,
            [0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff],
            "sec 3, usec 4 (ns below a µs dropped), pcount 7, payload untouched"
        );
        assert_eq!(parse_header(&b, false), Some((7, 3_000_004_000)));
    }

    #[test]
    fn a_64_bit_header_keeps_the_whole_count() {
        let mut b = [0u8; 16];
        let pcount = (5u64 << 32) | 9;
        assert!(write_header(&mut b, true, pcount, 1_000));
        assert_eq!(&b[8..], &[0, 0, 0, 5, 0, 0, 0, 9]);
        assert_eq!(parse_header(&b, true), Some((pcount, 1_000)));
    }

    #[test]
    fn short_buffers_are_refused_not_indexed() {
        assert!(!write_header(&mut [0u8; 11], false, 1, 0));
        assert!(!write_header(&mut [0u8; 15], true, 1, 0));
        assert_eq!(parse_header(&[0u8; 11], false), None);
        assert_eq!(parse_header(&[0u8; 15], true), None);
        assert_eq!(parse_header(&[], true), None);
    }

    #[test]
    fn connect_bytes_are_iperf3s_host_order_words() {
        // iperf3 writes 0x36373839 / 0x39383736 as a little-endian u32 on x86.
        assert_eq!(CONNECT_MSG, 0x3637_3839u32.to_le_bytes());
        assert_eq!(CONNECT_REPLY, 0x3938_3736u32.to_le_bytes());
        assert_eq!(LEGACY_CONNECT_REPLY, 987_654_321u32.to_le_bytes());
        assert!(is_connect_reply(b"6789") && is_connect_reply(&LEGACY_CONNECT_REPLY));
        // A big-endian server's answers.
        assert!(is_connect_reply(b"9876") && is_connect_reply(&[0x3a, 0xde, 0x68, 0xb1]));
        assert!(!is_connect_reply(b"1234") && !is_connect_reply(b"6789!"));
    }

    #[test]
    fn each_connect_datagram_is_answered_in_its_own_byte_order() {
        assert_eq!(reply_to(b"9876"), Some(*b"6789"));
        assert_eq!(reply_to(b"6789"), Some(*b"9876"));
        assert_eq!(
            reply_to(&123_456_789u32.to_le_bytes()),
            Some(LEGACY_CONNECT_REPLY)
        );
        assert_eq!(
            reply_to(&123_456_789u32.to_be_bytes()),
            Some(987_654_321u32.to_be_bytes())
        );
        assert_eq!(reply_to(b"hello"), None);
        assert_eq!(reply_to(b"abcd"), None);
    }
}
