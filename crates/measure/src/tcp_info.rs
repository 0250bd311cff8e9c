//! TCP_INFO: what the kernel knows about a TCP connection (retransmits, RTT, cwnd, MSS, MTU).

use serde::{Deserialize, Serialize};

/// The TCP_INFO fields linerate reports, read from the sending socket.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub retransmits: u32,
    /// Smoothed round-trip time, µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Round-trip time variation, µs (`tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub snd_cwnd_segments: u32,
    /// Sender maximum segment size, bytes (`tcpi_snd_mss`).
    pub snd_mss_bytes: u32,
    /// Path MTU, bytes (`tcpi_pmtu`).
    pub pmtu_bytes: u32,
}

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::read;
