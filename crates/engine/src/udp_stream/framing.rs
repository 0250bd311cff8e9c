//! What opens a `udp_stream` datagram: linerate's header ([`wire::datagram`]: stream, flags,
//! 40-bit sequence, nanosecond stamp, and FIN datagrams at the end), or iperf3's
//! ([`wire::iperf3_udp`]: seconds, microseconds and a counter from 1, no end-of-stream datagram)
//! for tests with a stock iperf3 at the other end.

use wire::datagram::{write_header as write_linerate, DatagramRepr, HEADER_LEN};
use wire::iperf3_udp;

/// A datagram header layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// linerate's own header; the sender ends with FIN datagrams carrying its total.
    #[default]
    Linerate,
    /// iperf3's header; both ends stop at the control connection's `TEST_END`.
    Iperf3 {
        /// The client asked for 64-bit counters (`udp_counters_64bit`).
        counters_64bit: bool,
    },
}

/// What a received datagram is, for the receiver's accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    /// A data datagram: its sequence number (from 0) and the sender's stamp.
    Data { seq: u64, sent_ns: u64 },
    /// The sender is done and sent `total` data datagrams.
    Fin { total: u64 },
    /// Not this stream's data (another stream, a probe, too short).
    Other,
}

impl Framing {
    /// The header's length, which is also the smallest payload.
    pub(super) fn header_len(self) -> usize {
        match self {
            Self::Linerate => HEADER_LEN,
            Self::Iperf3 { counters_64bit } => iperf3_udp::header_len(counters_64bit),
        }
    }

    /// Whether the sender ends its stream with FIN datagrams (else the control connection
    /// ends it).
    pub(super) fn has_fin(self) -> bool {
        self == Self::Linerate
    }

    /// Writes the header of data datagram `seq` (from 0) of `stream`, sent at `stamp_ns`.
    #[inline]
    pub(super) fn write(self, buf: &mut [u8], stream: u16, seq: u64, stamp_ns: u64) {
        match self {
            Self::Linerate => {
                write_linerate(buf, stream, 0, seq, stamp_ns);
            }
            Self::Iperf3 { counters_64bit } => {
                iperf3_udp::write_header(buf, counters_64bit, seq + 1, stamp_ns);
            }
        }
    }

    /// Reads a datagram received by the receiver of `stream`.
    #[inline]
    pub(super) fn parse(self, datagram: &[u8], stream: u16) -> Arrival {
        match self {
            Self::Linerate => match DatagramRepr::parse(datagram) {
                Some(h) if h.stream != stream || h.is_probe() => Arrival::Other,
                Some(h) if h.is_fin() => Arrival::Fin { total: h.seq },
                Some(h) => Arrival::Data {
                    seq: h.seq,
                    sent_ns: h.sent_ns,
                },
                None => Arrival::Other,
            },
            // Each iperf3 stream has a socket of its own; its counter starts at 1.
            Self::Iperf3 { counters_64bit } => {
                match iperf3_udp::parse_header(datagram, counters_64bit) {
                    Some((pcount, sent_ns)) if pcount > 0 => Arrival::Data {
                        seq: pcount - 1,
                        sent_ns,
                    },
                    _ => Arrival::Other,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_framing_reads_back_what_it_wrote() {
        for framing in [
            Framing::Linerate,
            Framing::Iperf3 {
                counters_64bit: false,
            },
            Framing::Iperf3 {
                counters_64bit: true,
            },
        ] {
            let mut d = [0u8; 64];
            framing.write(&mut d, 3, 41, 5_000_000_000);
            assert_eq!(
                framing.parse(&d, 3),
                Arrival::Data {
                    seq: 41,
                    sent_ns: 5_000_000_000
                },
                "{framing:?}"
            );
        }
    }

    #[test]
    fn iperf3s_counter_zero_and_short_datagrams_are_not_data() {
        let f = Framing::Iperf3 {
            counters_64bit: false,
        };
        assert_eq!(f.parse(&[0u8; 12], 0), Arrival::Other);
        assert_eq!(f.parse(&[0u8; 4], 0), Arrival::Other);
        assert!(!f.has_fin() && Framing::Linerate.has_fin());
    }
}
