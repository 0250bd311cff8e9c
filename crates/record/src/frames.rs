//! A frame engine's run (`udp --engine packet|xdp`) as stored: where its frames went, counted
//! at both drivers. The sender counts the frames its driver accepted and refused; the server's
//! XDP counter counts those that reached its driver; the receiver's sockets count those that
//! climbed its stack (or, for the `xdp` engine, those its AF_XDP sockets took from the
//! counter). These are counts, not a breakdown: the run's one loss breakdown is its flow's
//! `loss_causes`, whose stages the driver count splits exactly (on the path: accepted by the
//! sender's driver, never at the receiver's; in the receiving host: at its driver, not at the
//! socket), with the driver count beside them as `loss_causes.at_driver`.

use serde::{Deserialize, Serialize};
use wire::msg::FlowSpread;
use wire::spec::{FramePath, FrameRxPath, UdpEngine};

/// `summary.frames`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameSummary {
    /// The engine that sent (`packet`, `xdp`).
    pub engine: UdpEngine,
    /// How the frames reached the sending driver: an AF_PACKET ring, an AF_XDP socket in copy
    /// or zero-copy mode, or XDP live frames (absent: a record made before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_path: Option<FramePath>,
    /// Why the sender is not the one the engine would have taken: the kernel refused it (an
    /// `xdp` test sends through an AF_XDP socket where live frames are refused; absent: it
    /// took its own, or a record made before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_fallback: Option<String>,
    /// How the receiver took the frames from its driver: up the stack to the test's sockets,
    /// or AF_XDP sockets in copy or zero-copy mode (absent: a record or server before the
    /// field, whose receiver was the stack's sockets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_path: Option<FrameRxPath>,
    /// Why an `xdp` test's receiver took the stack's path rather than AF_XDP sockets (absent:
    /// it did not, or a record or server before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_fallback: Option<String>,
    /// Receive queues with an AF_XDP socket, queue 0 up (absent on the stack's path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_queues: Option<u32>,
    /// Of the frames lost in the receiving host, those the AF_XDP sockets had no room for, as they count
    /// them (absent on the stack's path, whose sockets count theirs in `socket_drops`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_socket_dropped: Option<u64>,
    /// The server's interface the counter was on.
    pub interface: String,
    /// Frames the sending driver accepted.
    pub frames_sent: u64,
    /// Frames the sending driver dropped (each replaced by another; lost at the sender).
    pub frames_refused: u64,
    /// Frames of the test that reached the receiving driver.
    pub frames_at_driver: u64,
    /// Their bytes there (Ethernet header on, FCS off).
    pub bytes_at_driver: u64,
    /// `frames_at_driver` by the receive queue they arrived on, queue 0 up, to the last that
    /// had any (absent: a record or server before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames_per_queue: Option<Vec<u64>>,
    /// `frames_at_driver` by flow (each stream's source × destination ports): how many flows
    /// arrived and the fewest and most frames a flow had (absent: a record or server before
    /// the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows_at_driver: Option<FlowSpread>,
    /// `frames_at_driver` over the receiver's window, frames/s: the rate the path delivered.
    pub pps_at_driver: f64,
}

/// `summary.flows[].interface_frames`: a UDP direction's frames as the interfaces at its two
/// ends counted them over the test (issue 47). The datagrams at the sockets
/// (`packets_sent`, `packets_received`) are not frames: with UDP GSO a sender hands the kernel
/// up to 128 datagrams as one buffer, and a virtual link (veth, loopback) carries it as one
/// packet, never cut into frames. These counts are the interfaces' own, of all they carried
/// over the test (the control connection, ARP, with `--bidir` the other direction), so they are
/// at least the test's frames on a link that cut nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceFrames {
    /// The sending end's interface for the test.
    pub sender_interface: String,
    /// Frames that interface sent over the test (`tx_packets`).
    pub sender_tx_frames: u64,
    /// Their bytes (`tx_bytes`).
    pub sender_tx_bytes: u64,
    /// The receiving end's interface for the test.
    pub receiver_interface: String,
    /// Frames that interface received over the test (`rx_packets`).
    pub receiver_rx_frames: u64,
    /// Their bytes (`rx_bytes`).
    pub receiver_rx_bytes: u64,
    /// Whether either interface is a software link (veth, loopback, bridge): it has no line
    /// rate, and it carries a GSO buffer as one packet.
    pub virtual_link: bool,
    /// Whether both ends counted on one interface (loopback): each count then holds both
    /// directions' packets.
    pub one_interface: bool,
}
