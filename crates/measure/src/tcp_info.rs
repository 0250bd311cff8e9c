//! TCP_INFO: what the kernel knows about a TCP connection: retransmits, RTT, cwnd, MSS, MTU,
//! and on newer kernels the delivery and pacing rates, unsent bytes and the "chrono" times
//! (busy, limited by the receive window, limited by the send buffer).
//!
//! The kernel's `struct tcp_info` grows with its version, and getsockopt says how many bytes it
//! filled; libc's struct stops short of the newer fields. So the bytes are read whole and parsed
//! at the offsets of `linux/tcp.h` ([`parse`]): a field the kernel did not fill is `None`, never
//! a zero that looks measured.

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
    /// Bytes of `struct tcp_info` the kernel filled: which of the fields below it knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info_bytes: Option<u32>,
    /// Slow-start threshold, segments (`tcpi_snd_ssthresh`; "infinite" reads as `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_ssthresh_segments: Option<u32>,
    /// Pacing rate, bits/s (`tcpi_pacing_rate` × 8; Linux 4.0+; unlimited reads as `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_rate_bps: Option<u64>,
    /// Segments sent, retransmissions included (`tcpi_segs_out`; Linux 4.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segs_out: Option<u32>,
    /// Bytes written but not yet sent (`tcpi_notsent_bytes`; Linux 4.6+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_bytes: Option<u32>,
    /// Lowest round-trip time seen, µs (`tcpi_min_rtt`; Linux 4.6+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
    /// Delivery rate of the latest sample, bits/s (`tcpi_delivery_rate` × 8; Linux 4.9+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// Time with data in flight or waiting, µs, the three chrono states together
    /// (`tcpi_busy_time`; Linux 4.10+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_us: Option<u64>,
    /// Of `busy_us`, time limited by the receiver's window, µs (`tcpi_rwnd_limited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// Of `busy_us`, time limited by the send buffer, µs (`tcpi_sndbuf_limited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
    /// Bytes retransmitted (`tcpi_bytes_retrans`; Linux 4.19+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// Segments the receiver reported receiving twice (D-SACK): retransmissions that were
    /// not needed, usually after reordering (`tcpi_dsack_dups`; Linux 5.0+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack_dups: Option<u32>,
    /// Reordering events seen (`tcpi_reord_seen`; Linux 5.0+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reord_seen: Option<u32>,
    /// The peer's advertised receive window after scaling, bytes (`tcpi_snd_wnd`; Linux 5.4+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd_bytes: Option<u32>,
}

/// The kernel's `struct tcp_info` offsets (linux/tcp.h), each field's first byte.
mod offset {
    pub const SND_MSS: usize = 16;
    pub const RCV_MSS: usize = 20;
    pub const PMTU: usize = 60;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_SSTHRESH: usize = 76;
    pub const SND_CWND: usize = 80;
    pub const TOTAL_RETRANS: usize = 100;
    pub const PACING_RATE: usize = 104;
    pub const SEGS_OUT: usize = 136;
    pub const NOTSENT_BYTES: usize = 144;
    pub const MIN_RTT: usize = 148;
    pub const DELIVERY_RATE: usize = 160;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const SNDBUF_LIMITED: usize = 184;
    pub const BYTES_RETRANS: usize = 208;
    pub const DSACK_DUPS: usize = 216;
    pub const REORD_SEEN: usize = 220;
    pub const SND_WND: usize = 228;
}

/// Room for every field above and what newer kernels add after them.
pub const MAX_INFO_BYTES: usize = 512;

/// The `u32` at `at` in the first `len` bytes (native byte order, as the kernel writes it).
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Parses the bytes the kernel filled (exactly those: pass the length getsockopt returned).
pub fn parse(bytes: &[u8]) -> TcpInfo {
    use offset::*;
    let word = |at| u32_at(bytes, at).unwrap_or(0);
    // The kernel's "no limit" values: ssthresh 0x7fffffff, pacing rate ~0.
    let ssthresh = u32_at(bytes, SND_SSTHRESH).filter(|&s| s < 0x7fff_ffff);
    let pacing = u64_at(bytes, PACING_RATE)
        .filter(|&r| r != u64::MAX)
        .map(|r| r.saturating_mul(8));
    TcpInfo {
        retransmits: word(TOTAL_RETRANS),
        rtt_us: word(RTT),
        rttvar_us: word(RTTVAR),
        snd_cwnd_segments: word(SND_CWND),
        snd_mss_bytes: word(SND_MSS),
        pmtu_bytes: word(PMTU),
        info_bytes: Some(bytes.len() as u32),
        snd_ssthresh_segments: ssthresh,
        pacing_rate_bps: pacing,
        segs_out: u32_at(bytes, SEGS_OUT),
        notsent_bytes: u32_at(bytes, NOTSENT_BYTES),
        min_rtt_us: u32_at(bytes, MIN_RTT),
        delivery_rate_bps: u64_at(bytes, DELIVERY_RATE).map(|r| r.saturating_mul(8)),
        busy_us: u64_at(bytes, BUSY_TIME),
        rwnd_limited_us: u64_at(bytes, RWND_LIMITED),
        sndbuf_limited_us: u64_at(bytes, SNDBUF_LIMITED),
        bytes_retrans: u64_at(bytes, BYTES_RETRANS),
        dsack_dups: u32_at(bytes, DSACK_DUPS),
        reord_seen: u32_at(bytes, REORD_SEEN),
        snd_wnd_bytes: u32_at(bytes, SND_WND),
    }
}

impl TcpInfo {
    /// Share of the busy time limited by the receiver's window, % (Linux 4.10+).
    pub fn rwnd_limited_pct(&self) -> Option<f64> {
        share(self.rwnd_limited_us?, self.busy_us?)
    }

    /// Share of the busy time limited by the send buffer, %.
    pub fn sndbuf_limited_pct(&self) -> Option<f64> {
        share(self.sndbuf_limited_us?, self.busy_us?)
    }
}

fn share(part: u64, busy: u64) -> Option<f64> {
    (busy > 0).then(|| part as f64 / busy as f64 * 100.0)
}

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{rcv_mss, read};

#[cfg(test)]
mod tests {
    use super::*;

    /// A `tcp_info` of `len` bytes with `value` written at `at`.
    fn bytes_with(len: usize, fields: &[(usize, u64, usize)]) -> Vec<u8> {
        let mut b = vec![0u8; len];
        for &(at, value, size) in fields {
            b[at..at + size].copy_from_slice(&value.to_ne_bytes()[..size]);
        }
        b
    }

    #[test]
    fn fields_a_kernel_did_not_fill_are_none() {
        // 104 bytes: a 3.x kernel, up to tcpi_total_retrans.
        let old = parse(&bytes_with(
            104,
            &[(offset::TOTAL_RETRANS, 7, 4), (offset::RTT, 250, 4)],
        ));
        assert_eq!((old.retransmits, old.rtt_us), (7, 250));
        assert_eq!(old.info_bytes, Some(104));
        assert_eq!(
            (old.pacing_rate_bps, old.busy_us, old.min_rtt_us),
            (None, None, None)
        );
        let new = parse(&bytes_with(
            232,
            &[
                (offset::BUSY_TIME, 1_000_000, 8),
                (offset::RWND_LIMITED, 250_000, 8),
                (offset::SNDBUF_LIMITED, 0, 8),
                (offset::DELIVERY_RATE, 125_000_000, 8),
                (offset::PACING_RATE, u64::MAX, 8),
                (offset::SND_SSTHRESH, 0x7fff_ffff, 4),
                (offset::SND_WND, 65_536, 4),
                (offset::DSACK_DUPS, 9, 4),
            ],
        ));
        assert_eq!(new.snd_wnd_bytes, Some(65_536));
        assert_eq!(old.snd_wnd_bytes, None);
        assert_eq!((new.dsack_dups, new.reord_seen), (Some(9), Some(0)));
        assert_eq!(new.rwnd_limited_pct(), Some(25.0));
        assert_eq!(new.sndbuf_limited_pct(), Some(0.0));
        assert_eq!(new.delivery_rate_bps, Some(1_000_000_000));
        assert_eq!(new.pacing_rate_bps, None, "unlimited");
        assert_eq!(new.snd_ssthresh_segments, None, "infinite");
    }

    #[test]
    fn short_or_empty_input_is_not_a_panic() {
        assert_eq!(parse(&[]).info_bytes, Some(0));
        assert_eq!(parse(&[1, 2, 3]).rtt_us, 0);
    }
}
