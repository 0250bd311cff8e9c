//! The 16-byte header that opens every UDP data-plane datagram: stream, flags, 40-bit sequence
//! number and the sender's send timestamp.
//!
//! ```text
//!  0       2     3                   8                              16
//! +-------+-----+-------------------+-------------------------------+---------
//! |stream |flags|   seq (40-bit)    |        sent_ns (u64)          | payload…
//! +-------+-----+-------------------+-------------------------------+---------
//! ```
//!
//! All fields are big-endian. `stream` is the stream index within the test. `flags` carries
//! [`FLAG_FIN`] (the sender has finished; `seq` then holds the total number of data datagrams
//! sent on the stream) and [`FLAG_PROBE`] (a setup probe or its echo, not data); bits this build
//! does not know are carried through unchanged and ignored by receivers. `seq` counts data
//! datagrams from 0. `sent_ns` is the sender's monotonic clock in nanoseconds: only differences
//! between datagrams of one sender mean anything (the receiver uses them for jitter).
//!
//! Why 16 bytes: the smallest Ethernet frame is 64 bytes including the 14-byte MAC header and
//! the 4-byte FCS, which leaves a 46-byte payload; IPv4 (20) and UDP (8) headers take 28 of
//! those, so a minimum-size frame carries 64 − 46 = 18 bytes of UDP payload. The header must fit
//! in 18 bytes for packet-rate tests to run at true minimum frame size; 16 does, with room for a
//! full 64-bit timestamp because the sequence number is 40 bits. (With IPv6 the smallest frame
//! carrying this header is 82 bytes.) At 10 Mpps a 40-bit sequence lasts about 30 hours, at 20 Mpps (loopback with GSO) about 15; a
//! stream that wraps it within one test would count the wrapped datagrams as late (lost).
//!
//! Layout follows the house pattern: a checked [`DatagramPacket`] view over bytes plus a parsed
//! [`DatagramRepr`]. Invariants: nothing here panics or allocates on any input; a view exists
//! only over a buffer of at least [`HEADER_LEN`] bytes; a sequence number above [`SEQ_MAX`] is
//! masked to its low 40 bits when written, never rejected. Per-packet hot loops use
//! [`write_header`] and [`DatagramRepr::parse`].

/// Length of the datagram header on the wire, in bytes.
pub const HEADER_LEN: usize = 16;
/// Flag: the sender has finished this stream; `seq` holds the total number of data datagrams sent.
pub const FLAG_FIN: u8 = 0x01;
/// Flag: a setup probe (or its echo), not a data datagram.
pub const FLAG_PROBE: u8 = 0x02;
/// The largest sequence number the 40-bit field holds.
pub const SEQ_MAX: u64 = (1 << 40) - 1;

/// Byte offsets of the fields.
mod field {
    use core::ops::Range;
    pub const STREAM: Range<usize> = 0..2;
    pub const FLAGS: usize = 2;
    pub const SEQ: Range<usize> = 3..8;
    pub const SENT_NS: Range<usize> = 8..16;
}

/// The header bytes for these field values; `seq` is masked to 40 bits.
#[inline]
fn header_bytes(stream: u16, flags: u8, seq: u64, sent_ns: u64) -> [u8; HEADER_LEN] {
    let s = stream.to_be_bytes();
    let q = (seq & SEQ_MAX).to_be_bytes();
    let t = sent_ns.to_be_bytes();
    [
        s[0], s[1], flags, q[3], q[4], q[5], q[6], q[7], t[0], t[1], t[2], t[3], t[4], t[5], t[6],
        t[7],
    ]
}

/// Writes a header into the first [`HEADER_LEN`] bytes of `buf`, leaving the rest untouched.
///
/// The per-packet fast path: no allocation, no view. `seq` above [`SEQ_MAX`] is masked to its
/// low 40 bits. Returns `false`, writing nothing, when `buf` is shorter than [`HEADER_LEN`].
#[inline]
pub fn write_header(buf: &mut [u8], stream: u16, flags: u8, seq: u64, sent_ns: u64) -> bool {
    match buf.first_chunk_mut::<HEADER_LEN>() {
        Some(head) => {
            *head = header_bytes(stream, flags, seq, sent_ns);
            true
        }
        None => false,
    }
}

/// A checked view over a datagram: header then payload.
#[derive(Debug, Clone, Copy)]
pub struct DatagramPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> DatagramPacket<T> {
    /// Wraps `buffer`, or returns `None` when it is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Option<Self> {
        (buffer.as_ref().len() >= HEADER_LEN).then_some(Self { buffer })
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The header bytes. Never panics: `new_checked` guaranteed the length (the zero fallback
    /// only covers an `AsRef` impl that changes length between calls).
    #[inline]
    fn header(&self) -> [u8; HEADER_LEN] {
        self.buffer
            .as_ref()
            .first_chunk::<HEADER_LEN>()
            .copied()
            .unwrap_or([0; HEADER_LEN])
    }

    /// The stream index.
    pub fn stream(&self) -> u16 {
        let h = self.header();
        u16::from_be_bytes([h[field::STREAM.start], h[field::STREAM.start + 1]])
    }

    /// The flag bits, including any this build does not know.
    pub fn flags(&self) -> u8 {
        self.header()[field::FLAGS]
    }

    /// Whether [`FLAG_FIN`] is set.
    pub fn is_fin(&self) -> bool {
        self.flags() & FLAG_FIN != 0
    }

    /// Whether [`FLAG_PROBE`] is set.
    pub fn is_probe(&self) -> bool {
        self.flags() & FLAG_PROBE != 0
    }

    /// The 40-bit sequence number (at most [`SEQ_MAX`]).
    pub fn seq(&self) -> u64 {
        let h = self.header();
        let mut q = [0u8; 8];
        q[3..].copy_from_slice(&h[field::SEQ]);
        u64::from_be_bytes(q)
    }

    /// The sender's monotonic send time, in nanoseconds.
    pub fn sent_ns(&self) -> u64 {
        let h = self.header();
        let mut t = [0u8; 8];
        t.copy_from_slice(&h[field::SENT_NS]);
        u64::from_be_bytes(t)
    }

    /// The bytes after the header (possibly empty).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DatagramPacket<T> {
    /// Writes `bytes` at `range` of the header; a no-op if the buffer has shrunk (it cannot
    /// through this API).
    #[inline]
    fn put(&mut self, range: core::ops::Range<usize>, bytes: &[u8]) {
        if let Some(dst) = self.buffer.as_mut().get_mut(range) {
            dst.copy_from_slice(bytes);
        }
    }

    /// Sets the stream index.
    pub fn set_stream(&mut self, stream: u16) {
        self.put(field::STREAM, &stream.to_be_bytes());
    }

    /// Sets the flag bits.
    pub fn set_flags(&mut self, flags: u8) {
        self.put(field::FLAGS..field::FLAGS + 1, &[flags]);
    }

    /// Sets the sequence number. A value above [`SEQ_MAX`] is masked to its low 40 bits.
    pub fn set_seq(&mut self, seq: u64) {
        self.put(field::SEQ, &(seq & SEQ_MAX).to_be_bytes()[3..]);
    }

    /// Sets the sender's send time, in nanoseconds.
    pub fn set_sent_ns(&mut self, sent_ns: u64) {
        self.put(field::SENT_NS, &sent_ns.to_be_bytes());
    }

    /// The bytes after the header, writable (possibly empty).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..)
            .unwrap_or(&mut [])
    }
}

/// A parsed datagram header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DatagramRepr {
    /// Stream index within the test.
    pub stream: u16,
    /// Flag bits ([`FLAG_FIN`], [`FLAG_PROBE`], and any unknown bits, carried through).
    pub flags: u8,
    /// Sequence number; only the low 40 bits go on the wire. With [`FLAG_FIN`], the total
    /// number of data datagrams sent on the stream.
    pub seq: u64,
    /// The sender's monotonic send time, in nanoseconds.
    pub sent_ns: u64,
}

impl DatagramRepr {
    /// Parses the header at the start of `bytes`; `None` when shorter than [`HEADER_LEN`].
    /// Bytes after the header are ignored.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let packet = DatagramPacket::new_checked(bytes)?;
        Some(Self {
            stream: packet.stream(),
            flags: packet.flags(),
            seq: packet.seq(),
            sent_ns: packet.sent_ns(),
        })
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`; `seq` is masked to 40
    /// bits. Returns `false`, writing nothing, when `buf` is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> bool {
        write_header(buf, self.stream, self.flags, self.seq, self.sent_ns)
    }

    /// Whether [`FLAG_FIN`] is set.
    pub fn is_fin(&self) -> bool {
        self.flags & FLAG_FIN != 0
    }

    /// Whether [`FLAG_PROBE`] is set.
    pub fn is_probe(&self) -> bool {
        self.flags & FLAG_PROBE != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LITERAL: [u8; HEADER_LEN] = [
        0x01, 0x02, 0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
        0x0f,
    ];

    fn literal_repr() -> DatagramRepr {
        DatagramRepr {
            stream: 0x0102,
            flags: FLAG_FIN,
            seq: 0x03_0405_0607,
            sent_ns: 0x0809_0a0b_0c0d_0e0f,
        }
    }

    #[test]
    fn parses_literal_bytes() {
        let repr = DatagramRepr::parse(&LITERAL).unwrap();
        assert_eq!(repr, literal_repr());
        assert!(repr.is_fin() && !repr.is_probe());
    }

    #[test]
    fn emits_literal_bytes_and_leaves_payload_alone() {
        let mut buf = [0xaau8; HEADER_LEN + 2];
        assert!(literal_repr().emit(&mut buf));
        assert_eq!(buf[..HEADER_LEN], LITERAL);
        assert_eq!(buf[HEADER_LEN..], [0xaa, 0xaa]);

        let mut fast = [0u8; HEADER_LEN];
        assert!(write_header(
            &mut fast,
            0x0102,
            FLAG_FIN,
            0x03_0405_0607,
            0x0809_0a0b_0c0d_0e0f
        ));
        assert_eq!(fast, LITERAL);
    }

    #[test]
    fn packet_view_reads_and_writes_fields() {
        let mut buf = [0u8; HEADER_LEN + 3];
        let mut packet = DatagramPacket::new_checked(&mut buf[..]).unwrap();
        packet.set_stream(0x0102);
        packet.set_flags(FLAG_FIN);
        packet.set_seq(0x03_0405_0607);
        packet.set_sent_ns(0x0809_0a0b_0c0d_0e0f);
        packet.payload_mut().copy_from_slice(b"xyz");
        assert_eq!(packet.stream(), 0x0102);
        assert_eq!(packet.seq(), 0x03_0405_0607);
        assert_eq!(packet.sent_ns(), 0x0809_0a0b_0c0d_0e0f);
        assert!(packet.is_fin() && !packet.is_probe());
        assert_eq!(packet.payload(), b"xyz");
        assert_eq!(buf[..HEADER_LEN], LITERAL);
    }

    #[test]
    fn minimum_header_has_empty_payload() {
        let packet = DatagramPacket::new_checked(&LITERAL[..]).unwrap();
        assert!(packet.payload().is_empty());
    }

    #[test]
    fn short_input_is_none_not_a_panic() {
        assert_eq!(DatagramRepr::parse(&LITERAL[..HEADER_LEN - 1]), None);
        assert_eq!(DatagramRepr::parse(&[]), None);
        assert!(DatagramPacket::new_checked(&LITERAL[..3]).is_none());
        let mut short = [0u8; HEADER_LEN - 1];
        assert!(!literal_repr().emit(&mut short));
        assert!(!write_header(&mut short, 1, 0, 1, 1));
        assert_eq!(short, [0u8; HEADER_LEN - 1], "nothing written on failure");
    }

    #[test]
    fn seq_above_40_bits_is_masked() {
        let mut buf = [0u8; HEADER_LEN];
        let repr = DatagramRepr {
            seq: u64::MAX,
            ..literal_repr()
        };
        assert!(repr.emit(&mut buf));
        assert_eq!(buf[3..8], [0xff; 5]);
        assert_eq!(DatagramRepr::parse(&buf).unwrap().seq, SEQ_MAX);

        let mut packet = DatagramPacket::new_checked(&mut buf[..]).unwrap();
        packet.set_seq(SEQ_MAX + 1 + 7);
        assert_eq!(packet.seq(), 7);
        assert_eq!(
            packet.stream(),
            0x0102,
            "masking does not spill into stream"
        );
        assert_eq!(
            packet.flags(),
            FLAG_FIN,
            "masking does not spill into flags"
        );
    }

    #[test]
    fn unknown_flags_are_carried_through() {
        let mut buf = [0u8; HEADER_LEN];
        let repr = DatagramRepr {
            flags: 0xf0 | FLAG_PROBE,
            ..literal_repr()
        };
        assert!(repr.emit(&mut buf));
        let back = DatagramRepr::parse(&buf).unwrap();
        assert_eq!(back.flags, 0xf2);
        assert!(back.is_probe() && !back.is_fin());
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let parsed = DatagramRepr::parse(&bytes);
            prop_assert_eq!(parsed.is_some(), bytes.len() >= HEADER_LEN);
        }

        #[test]
        fn emit_parse_round_trip(
            stream in any::<u16>(),
            flags in any::<u8>(),
            seq in 0..=SEQ_MAX,
            sent_ns in any::<u64>(),
            extra in 0usize..8,
        ) {
            let repr = DatagramRepr { stream, flags, seq, sent_ns };
            let mut buf = vec![0u8; HEADER_LEN + extra];
            prop_assert!(repr.emit(&mut buf));
            prop_assert_eq!(DatagramRepr::parse(&buf), Some(repr));
        }

        #[test]
        fn any_seq_parses_back_masked(seq in any::<u64>()) {
            let mut buf = [0u8; HEADER_LEN];
            prop_assert!(write_header(&mut buf, 0, 0, seq, 0));
            prop_assert_eq!(DatagramRepr::parse(&buf).map(|r| r.seq), Some(seq & SEQ_MAX));
        }
    }
}
