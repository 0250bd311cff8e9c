//! Each test kind's own parameters, beside the fields every kind shares in [`super::TestSpec`];
//! [`super::kind::Params`] says which kind uses which.
//!
//! Invariants, held by the types rather than by checks: the [`super::kind::Params`] variant *is* the test
//! kind, so a spec cannot carry one kind's settings under another kind's name; a setting
//! lives only in the kinds that use it (a UDP rate only in `udp_stream`, a transaction rate only
//! in the request/response kinds, TCP socket options only in the TCP kinds, a direction only in
//! the stream kinds: request/response always sends its requests from the client); and a UDP
//! rate is one of bits/s, datagrams/s or "as fast as possible", never two at once.
//!
//! A rate is the client → server senders' and, unless a reverse rate says otherwise, the
//! server → client senders' too ([`TcpOptions::pacing_of`], [`UdpParams::rate_of`]). A
//! reverse rate is set only where it differs, so a spec with one rate reads and is written as
//! before the field existed. Ranges, server limits and where a reverse rate may stand
//! (bidirectional stream tests over IP) are [`super::TestSpec::check`]'s.

use serde::{Deserialize, Serialize};

use super::{Direction, Flow, SendMode, Transport};

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
    /// How receivers take data from the kernel (both ends' receivers obey it). Absent: copy,
    /// as every spec before the field (protocol 13) meant.
    #[serde(default, skip_serializing_if = "RxMode::is_copy")]
    pub rx_mode: RxMode,
    /// In-band self probes (responsiveness) the client requests per second on each stream:
    /// the stream is then cut into records, one probe's request or response inside the loaded
    /// direction (TCP only, sent with write(2); engine `self_probe`). Absent: a plain stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_probes_per_s: Option<u32>,
}

impl StreamParams {
    /// TCP, 512 KiB splice calls, `direction`.
    pub fn new(direction: Direction) -> Self {
        Self {
            direction,
            transport: Transport::Tcp,
            write_len_bytes: 512 << 10,
            send_mode: SendMode::Auto,
            rx_mode: RxMode::Copy,
            self_probes_per_s: None,
        }
    }

    /// Why this stream cannot receive in its `rx_mode`, if it cannot: discarding and mapping
    /// are TCP's (a Unix-domain socket copies whatever the flags say), and a stream with self
    /// probes must read its records' headers.
    pub fn rx_mode_refusal(&self) -> Option<&'static str> {
        if self.rx_mode == RxMode::Copy {
            None
        } else if self.transport != Transport::Tcp {
            Some("TCP only, not Unix-domain sockets")
        } else if self.self_probes_per_s.is_some() {
            Some("not with self probes, whose receivers read every record's header")
        } else {
            None
        }
    }
}

/// How a stream receiver takes data from the kernel (`tcp --rx-mode`).
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RxMode {
    /// read(2) into user memory, as applications do: one copy per byte.
    #[default]
    Copy,
    /// recv(2) with MSG_TRUNC: Linux discards TCP data in the kernel and returns the count, no
    /// copy (iperf3 3.19+ `--skip-rx-copy`). Counts stay exact; nothing reaches user memory.
    Trunc,
    /// TCP_ZEROCOPY_RECEIVE: whole pages of received data are mapped into the receiver's
    /// address space; what cannot be mapped (not page-aligned, as with a non-page-multiple
    /// MSS) is copied, and where the kernel refuses mapping at all the receiver copies.
    Zerocopy,
}

impl RxMode {
    /// Whether it is the default, [`RxMode::Copy`] (then the spec leaves the field out).
    pub fn is_copy(&self) -> bool {
        *self == RxMode::Copy
    }

    /// The CLI and JSON name.
    pub fn name(self) -> &'static str {
        match self {
            RxMode::Copy => "copy",
            RxMode::Trunc => "trunc",
            RxMode::Zerocopy => "zerocopy",
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
    /// Pacing of every data connection's sending, bits/s (SO_MAX_PACING_RATE, on both ends);
    /// in a bidirectional test with [`TcpOptions::reverse_pacing_bps`], of the client → server
    /// connections only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_bps: Option<u64>,
    /// A bidirectional `tcp_stream` test's pacing of its server → client connections, bits/s,
    /// when it differs from `pacing_bps` (`tcp --bidir -b A,B`: B). Absent: as `pacing_bps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_pacing_bps: Option<u64>,
    /// TCP_NOTSENT_LOWAT on every data connection, bytes: a sender keeps at most this many
    /// bytes written but not yet sent (`--notsent-lowat`; over a pacing rate's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_lowat_bytes: Option<u32>,
}

impl TcpOptions {
    /// Only `TCP_NODELAY`, as the request/response kinds use.
    pub fn no_delay() -> Self {
        Self {
            no_delay: true,
            ..Self::default()
        }
    }

    /// The pacing of the data connections that carry `flow`, bits/s (`None`: unpaced).
    pub fn pacing_of(&self, flow: Flow) -> Option<u64> {
        match flow {
            Flow::ClientToServer => self.pacing_bps,
            Flow::ServerToClient => self.reverse_pacing_bps.or(self.pacing_bps),
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

impl UdpRate {
    /// Datagrams per second with `payload_len_bytes`-byte payloads, or `None` for as fast as
    /// possible.
    pub fn pps(self, payload_len_bytes: u32) -> Option<f64> {
        match self {
            UdpRate::PacketsPerSec(pps) => Some(pps as f64),
            UdpRate::BitsPerSec(bps) => {
                Some(bps as f64 / (f64::from(payload_len_bytes.max(1)) * 8.0))
            }
            UdpRate::Max => None,
        }
    }

    /// Payload bits per second with `payload_len_bytes`-byte payloads, or `None` for as fast
    /// as possible.
    pub fn bps(self, payload_len_bytes: u32) -> Option<f64> {
        match self {
            UdpRate::BitsPerSec(bps) => Some(bps as f64),
            UdpRate::PacketsPerSec(pps) => Some(pps as f64 * f64::from(payload_len_bytes) * 8.0),
            UdpRate::Max => None,
        }
    }
}

/// How a `udp_stream` sender puts its datagrams on the wire.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UdpEngine {
    /// UDP sockets: sendmmsg with GSO, through the host's stack and qdiscs.
    #[default]
    Socket,
    /// Ethernet frames built by linerate, through an AF_PACKET TX ring straight to the driver
    /// (`PACKET_QDISC_BYPASS`); the server counts them at its driver (protocol 16).
    Packet,
    /// The same frames through AF_XDP sockets (zero-copy where the driver offers it).
    Xdp,
}

/// An engine name that is none of `socket`, `packet`, `xdp`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: the engines are socket, packet and xdp")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for UdpEngine {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Socket, Self::Packet, Self::Xdp]
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEngine(s.to_string()))
    }
}

impl UdpEngine {
    /// Its name on the command line and in the record.
    pub fn name(self) -> &'static str {
        match self {
            Self::Socket => "socket",
            Self::Packet => "packet",
            Self::Xdp => "xdp",
        }
    }

    /// Whether frames bypass the sending host's stack (`packet`, `xdp`).
    pub fn sends_frames(self) -> bool {
        self != Self::Socket
    }
}

/// How a frame engine's frames reached the sending driver (what the engine was granted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FramePath {
    /// An AF_PACKET TX ring (`packet`): the kernel builds an skb per frame.
    PacketRing,
    /// An AF_XDP socket in copy mode: the kernel copies each frame into an skb.
    XdpCopy,
    /// An AF_XDP socket in zero-copy mode: the driver reads the frames from user memory.
    XdpZeroCopy,
    /// XDP live frames: an XDP program run by the kernel (`BPF_PROG_RUN`) redirects each frame
    /// to the driver's `ndo_xdp_xmit`, with no skb (the `xdp` engine where the driver has no
    /// zero-copy and takes redirected frames, for a test unpaced or paced at 100,000 frames/s
    /// per stream or more).
    XdpLive,
}

/// How a frame test's receiver took its frames from the server's driver.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameRxPath {
    /// Passed up the stack to the test's UDP sockets (the `packet` engine's tests).
    Sockets,
    /// Redirected to AF_XDP sockets in copy mode: the kernel copies each frame, no skb.
    XdpCopy,
    /// Redirected to AF_XDP sockets in zero-copy mode: the driver writes user memory.
    XdpZeroCopy,
}

/// `udp_stream`: payload, rate, batching and flows.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpParams {
    /// Which way the datagrams flow.
    pub direction: Direction,
    /// UDP payload of every data datagram, bytes, the linerate header included.
    pub payload_len_bytes: u32,
    /// Target rate per stream; in a bidirectional test with [`UdpParams::reverse_rate`], of
    /// the client → server streams only.
    pub rate: UdpRate,
    /// A bidirectional test's rate per server → client stream, when it differs from `rate`
    /// (`udp --bidir -b A,B`: B). Absent: as `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_rate: Option<UdpRate>,
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
    /// How the sender sends (`socket` when absent, as before protocol 16).
    #[serde(default, skip_serializing_if = "is_socket")]
    pub engine: UdpEngine,
}

fn is_socket(e: &UdpEngine) -> bool {
    *e == UdpEngine::Socket
}

impl UdpParams {
    /// 1472-byte payloads (a 1500-byte IPv4 MTU) as fast as possible, 128 per call with GSO and
    /// GRO, one flow each way, `direction`.
    pub fn new(direction: Direction) -> Self {
        Self {
            direction,
            payload_len_bytes: 1472,
            rate: UdpRate::Max,
            reverse_rate: None,
            burst_packets: 0,
            batch_packets: 128,
            gso: true,
            gro: true,
            flows: 1,
            flows_dst: 1,
            engine: UdpEngine::Socket,
        }
    }

    /// The rate of each stream that carries `flow`.
    pub fn rate_of(&self, flow: Flow) -> UdpRate {
        match flow {
            Flow::ClientToServer => self.rate,
            Flow::ServerToClient => self.reverse_rate.unwrap_or(self.rate),
        }
    }

    /// The target datagram rate of each stream that carries `flow`, or `None` for as fast as
    /// possible.
    pub fn target_pps(&self, flow: Flow) -> Option<f64> {
        self.rate_of(flow).pps(self.payload_len_bytes)
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
    fn rx_mode_reads_as_copy_when_absent_and_is_written_only_when_not_copy() {
        let copy = StreamParams::new(Direction::Send);
        let json = serde_json::to_string(&copy).unwrap();
        assert!(!json.contains("rx_mode"), "{json}");
        assert_eq!(serde_json::from_str::<StreamParams>(&json).unwrap(), copy);
        let trunc = StreamParams {
            rx_mode: RxMode::Trunc,
            ..copy
        };
        let json = serde_json::to_string(&trunc).unwrap();
        assert!(json.contains(r#""rx_mode":"trunc""#), "{json}");
        assert_eq!(serde_json::from_str::<StreamParams>(&json).unwrap(), trunc);
    }

    #[test]
    fn only_tcp_streams_without_self_probes_discard_or_map() {
        let zc = StreamParams {
            rx_mode: RxMode::Zerocopy,
            ..StreamParams::new(Direction::Bidir)
        };
        assert_eq!(zc.rx_mode_refusal(), None);
        let unix = StreamParams {
            transport: Transport::Unix,
            ..zc
        };
        assert!(unix.rx_mode_refusal().unwrap().contains("TCP only"));
        let probed = StreamParams {
            self_probes_per_s: Some(10),
            ..zc
        };
        assert!(probed.rx_mode_refusal().unwrap().contains("self probes"));
        let copy_over_unix = StreamParams {
            rx_mode: RxMode::Copy,
            ..unix
        };
        assert_eq!(copy_over_unix.rx_mode_refusal(), None);
    }

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
                batch_packets: 64,
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
        assert_eq!(udp.target_pps(Flow::ClientToServer), None);
        udp.rate = UdpRate::PacketsPerSec(1000);
        assert_eq!(udp.target_pps(Flow::ClientToServer), Some(1000.0));
        udp.payload_len_bytes = 1250;
        udp.rate = UdpRate::BitsPerSec(10_000_000);
        assert_eq!(udp.target_pps(Flow::ClientToServer), Some(1000.0));
        assert_eq!(udp.rate.bps(1250), Some(10_000_000.0));
        assert_eq!(UdpRate::PacketsPerSec(1000).bps(1250), Some(10_000_000.0));
    }

    #[test]
    fn a_reverse_rate_is_the_server_to_client_senders_own() {
        let mut udp = UdpParams {
            rate: UdpRate::BitsPerSec(50_000_000),
            ..UdpParams::new(Direction::Bidir)
        };
        // One rate: every sender's.
        assert_eq!(udp.rate_of(Flow::ServerToClient), udp.rate);
        udp.reverse_rate = Some(UdpRate::PacketsPerSec(10));
        assert_eq!(udp.rate_of(Flow::ClientToServer), udp.rate);
        assert_eq!(udp.target_pps(Flow::ServerToClient), Some(10.0));
        let mut tcp = TcpOptions {
            pacing_bps: Some(100),
            ..TcpOptions::default()
        };
        assert_eq!(tcp.pacing_of(Flow::ServerToClient), Some(100));
        tcp.reverse_pacing_bps = Some(200);
        assert_eq!(tcp.pacing_of(Flow::ClientToServer), Some(100));
        assert_eq!(tcp.pacing_of(Flow::ServerToClient), Some(200));
    }

    #[test]
    fn a_reverse_rate_is_written_only_when_set_and_old_specs_still_read() {
        let old = r#"{"kind":"udp_stream","udp":{"direction":"bidir","payload_len_bytes":1472,"rate":{"bits_per_sec":1000000},"burst_packets":0,"batch_packets":64,"gso":true,"gro":true,"flows":1,"flows_dst":1}}"#;
        let Params::UdpStream { mut udp } = serde_json::from_str(old).unwrap() else {
            unreachable!()
        };
        assert_eq!(udp.reverse_rate, None);
        assert_eq!(
            serde_json::to_string(&Params::UdpStream { udp }).unwrap(),
            old
        );
        udp.reverse_rate = Some(UdpRate::Max);
        let text = serde_json::to_string(&Params::UdpStream { udp }).unwrap();
        assert!(text.contains(r#""reverse_rate":"max""#), "{text}");
        let tcp = TcpOptions {
            pacing_bps: Some(1),
            reverse_pacing_bps: Some(2),
            ..TcpOptions::default()
        };
        let text = serde_json::to_string(&tcp).unwrap();
        assert!(
            text.ends_with(r#""pacing_bps":1,"reverse_pacing_bps":2}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<TcpOptions>(&text).unwrap(), tcp);
    }
}
