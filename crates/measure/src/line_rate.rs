//! Theoretical Ethernet line rate in frames per second.
//!
//! On the wire each frame is followed by a 12-byte inter-frame gap and preceded by an 8-byte
//! preamble and start delimiter, so a frame of `frame` bytes (FCS included) occupies
//! `frame + 20` bytes of link time: `pps = link_bps / 8 / (frame + 20)`. A 64-byte frame at
//! 10 Gbit/s gives 14 880 952 frames/s.

/// Bytes of preamble, start delimiter and inter-frame gap around every frame.
pub const WIRE_OVERHEAD_BYTES: u32 = 20;
/// Ethernet header (14) + FCS (4) + IPv4 (20) + UDP (8): frame bytes that are not payload.
pub const IPV4_UDP_FRAME_OVERHEAD: u32 = 46;
/// Ethernet header (14) + FCS (4) + IPv6 (40) + UDP (8).
pub const IPV6_UDP_FRAME_OVERHEAD: u32 = 66;

/// Frames per second a link of `link_bps` carries at `frame_bytes` per frame (FCS included).
pub fn pps(link_bps: f64, frame_bytes: u32) -> f64 {
    link_bps / 8.0 / f64::from(frame_bytes + WIRE_OVERHEAD_BYTES)
}

/// UDP payload bytes in a frame of `frame_bytes`, or `None` when the headers do not fit.
pub fn udp_payload(frame_bytes: u32, ipv6: bool) -> Option<u32> {
    let overhead = if ipv6 {
        IPV6_UDP_FRAME_OVERHEAD
    } else {
        IPV4_UDP_FRAME_OVERHEAD
    };
    frame_bytes.checked_sub(overhead)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_line_rates() {
        assert_eq!(pps(10e9, 64).round(), 14_880_952.0);
        assert_eq!(pps(1e9, 64).round(), 1_488_095.0);
        assert_eq!(pps(1e9, 1518).round(), 81_274.0);
    }

    #[test]
    fn payload_of_a_frame() {
        assert_eq!(udp_payload(64, false), Some(18));
        assert_eq!(udp_payload(1518, false), Some(1472));
        assert_eq!(udp_payload(64, true), None);
        assert_eq!(udp_payload(1518, true), Some(1452));
    }
}
