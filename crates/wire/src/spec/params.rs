//! Each test kind's own parameters, beside the fields every kind shares in [`super::TestSpec`];
//! [`super::kind::Params`] says which kind uses which.
//!
//! Invariants, held by the types rather than by checks: the [`Params`] variant *is* the test
//! kind, so a spec cannot carry one kind's settings under another kind's name; a setting
//! lives only in the kinds that use it (a UDP rate only in `udp_stream`, a transaction rate only
//! in the request/response kinds, TCP socket options only in the TCP kinds, a direction only in
//! the stream kinds: request/response always sends its requests from the client); and a UDP
//! rate is one of bits/s, datagrams/s or "as fast as possible", never two at once. Ranges and
//! server limits are [`super::TestSpec::check`]'s.

use serde::{Deserialize, Serialize};

use super::{Direction, SendMode, Transport};

/// `tcp_stream`: what each stream writes, which way, over what.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamParams {
    /// Which way the data flows.
    pub direction: Direction,
    /// Socket family of the data connections.
    pub transport: Transport,
    /// Bytes per write (and per read) call.
    pub write_len_bytes: u32,
    /// How senders hand data to the kernel.
    pub send_mode: SendMode,
}

impl StreamParams {
    /// TCP, 512 KiB splice calls, `direction`.
    pub fn new(direction: Direction) -> Self {
        Self {
            direction,
            transport: Transport::Tcp,
            write_len_bytes: 512 << 10,
            send_mode: SendMode::Splice,
        }
    }
}

/// Socket options of the TCP kinds' data connections.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TcpOptions {
    /// TCP_MAXSEG request, bytes; set before connecting.
    pub mss_bytes: Option<u32>,
    /// TCP_NODELAY on every data connection.
    pub no_delay: bool,
    /// TCP_CONGESTION algorithm name.
    pub congestion: Option<String>,
    /// IP TOS / IPv6 traffic class byte (UDP sockets never set it, so it lives here).
    pub tos: Option<u8>,
    /// Pacing of every data connection's sending, bits/s (SO_MAX_PACING_RATE, on both ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_bps: Option<u64>,
}

impl TcpOptions {
    /// Only `TCP_NODELAY`, as the request/response kinds use.
    pub fn no_delay() -> Self {
        Self {
            no_delay: true,
            ..Self::default()
        }
    }
}

/// How fast a UDP sender sends, per stream.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UdpRate {
    /// Target UDP payload rate, bits/s.
    BitsPerSec(u64),
    /// Target datagram rate, datagrams/s.
    PacketsPerSec(u64),
    /// As fast as the sender can.
    Max,
}

/// `udp_stream`: payload, rate, batching and flows.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpParams {
    /// Which way the datagrams flow.
    pub direction: Direction,
    /// UDP payload of every data datagram, bytes, the linerate header included.
    pub payload_len_bytes: u32,
    /// Target rate per stream.
    pub rate: UdpRate,
    /// Datagrams sent back to back per pacing step; 0 paces smoothly.
    pub burst_packets: u32,
    /// Datagrams per sendmmsg/recvmmsg call; 1 sends and receives one per syscall.
    pub batch_packets: u16,
    /// Let the kernel segment batches (UDP_SEGMENT) where it can.
    pub gso: bool,
    /// Let the kernel coalesce arriving datagrams (UDP_GRO) where it can.
    pub gro: bool,
    /// Source ports each stream's sender spreads its datagrams over (flows change every batch).
    pub flows: u32,
    /// Destination ports each stream's receiver listens on; the sender rotates over them every
    /// batch.
    pub flows_dst: u32,
}

impl UdpParams {
    /// 1472-byte payloads (a 1500-byte IPv4 MTU) as fast as possible, 64 per call with GSO and
    /// GRO, one flow each way, `direction`.
    pub fn new(direction: Direction) -> Self {
        Self {
            direction,
            payload_len_bytes: 1472,
            rate: UdpRate::Max,
            burst_packets: 0,
            batch_packets: 64,
            gso: true,
            gro: true,
            flows: 1,
            flows_dst: 1,
        }
    }

    /// The target datagram rate per stream, or `None` for as fast as possible.
    pub fn target_pps(&self) -> Option<f64> {
        match self.rate {
            UdpRate::PacketsPerSec(pps) => Some(pps as f64),
            UdpRate::BitsPerSec(bps) => {
                Some(bps as f64 / (f64::from(self.payload_len_bytes.max(1)) * 8.0))
            }
            UdpRate::Max => None,
        }
    }
}

/// The request/response kinds' transaction.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RrParams {
    /// Request bytes (`udp_rr`: the request datagram's UDP payload, header included).
    pub request_len_bytes: u32,
    /// Response bytes (`udp_rr`: the response datagram's UDP payload, header included).
    pub response_len_bytes: u32,
    /// Warm-up at the start left out of the summary, milliseconds.
    pub omit_ms: u64,
    /// Transactions started per second per stream, on a fixed schedule; `None`: back to back.
    pub transactions_per_sec: Option<u64>,
    /// SO_BUSY_POLL on the data sockets, µs (the receive path polls the device instead of
    /// sleeping).
    pub busy_poll_us: Option<u32>,
}

impl RrParams {
    /// Back-to-back transactions of `request_len_bytes` and `response_len_bytes`, no warm-up,
    /// no busy polling.
    pub fn new(request_len_bytes: u32, response_len_bytes: u32) -> Self {
        Self {
            request_len_bytes,
            response_len_bytes,
            omit_ms: 0,
            transactions_per_sec: None,
            busy_poll_us: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Params, TestKind};
    use super::*;

    #[test]
    fn the_variant_is_the_kind() {
        for kind in [
            TestKind::TcpStream,
            TestKind::UdpStream,
            TestKind::TcpRr,
            TestKind::UdpRr,
            TestKind::TcpCrr,
        ] {
            let params = Params::defaults(kind);
            assert_eq!(params.kind(), kind);
            let json = serde_json::to_value(&params).unwrap();
            assert_eq!(json["kind"], kind.as_str(), "{json}");
        }
    }

    #[test]
    fn wire_layout_is_stable() {
        let udp = Params::UdpStream {
            udp: UdpParams {
                rate: UdpRate::BitsPerSec(1_000_000),
                ..UdpParams::new(Direction::Send)
            },
        };
        assert_eq!(
            serde_json::to_string(&udp).unwrap(),
            r#"{"kind":"udp_stream","udp":{"direction":"send","payload_len_bytes":1472,"rate":{"bits_per_sec":1000000},"burst_packets":0,"batch_packets":64,"gso":true,"gro":true,"flows":1,"flows_dst":1}}"#
        );
        let rr = Params::defaults(TestKind::TcpRr);
        assert_eq!(
            serde_json::to_string(&rr).unwrap(),
            r#"{"kind":"tcp_rr","rr":{"request_len_bytes":64,"response_len_bytes":64,"omit_ms":0,"transactions_per_sec":null,"busy_poll_us":null},"tcp":{"mss_bytes":null,"no_delay":true,"congestion":null,"tos":null}}"#
        );
        assert_eq!(serde_json::to_string(&UdpRate::Max).unwrap(), r#""max""#);
    }

    #[test]
    fn a_kind_cannot_take_another_kinds_settings() {
        // A UDP rate in a TCP test, or TCP options in a UDP one, is not a spec at all.
        let bad = [
            r#"{"kind":"tcp_stream","udp":{"direction":"send","payload_len_bytes":1472,"rate":"max","burst_packets":0,"batch_packets":64,"gso":true,"gro":true,"flows":1,"flows_dst":1}}"#,
            r#"{"kind":"udp_rr","tcp":{"mss_bytes":null,"no_delay":true,"congestion":null,"tos":null}}"#,
            r#"{"kind":"udp_stream","udp":{"direction":"send","payload_len_bytes":1472,"rate":{"bits_per_sec":1,"packets_per_sec":2},"burst_packets":0,"batch_packets":64,"gso":true,"gro":true,"flows":1,"flows_dst":1}}"#,
        ];
        for text in bad {
            assert!(serde_json::from_str::<Params>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn target_pps_follows_the_rate() {
        let mut udp = UdpParams::new(Direction::Send);
        assert_eq!(udp.target_pps(), None);
        udp.rate = UdpRate::PacketsPerSec(1000);
        assert_eq!(udp.target_pps(), Some(1000.0));
        udp.payload_len_bytes = 1250;
        udp.rate = UdpRate::BitsPerSec(10_000_000);
        assert_eq!(udp.target_pps(), Some(1000.0));
    }
}
