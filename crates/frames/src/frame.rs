//! Ethernet + IPv4/IPv6 + UDP frames carrying linerate's data header (`wire::datagram`: stream,
//! flags, sequence number, send timestamp), built once per flow as a template and stamped per
//! frame.
//!
//! Sizes count the 4-byte FCS the NIC appends, as pkt-gen and RFC 2544 do: a 64-byte frame is 60
//! bytes built. The range is 64..=MTU+18 for IPv4 and 82..=MTU+18 for IPv6 (the smallest frame
//! whose UDP payload holds the 16-byte data header). The data header's `stream` is the flow's
//! index, so a receiver can account per flow.
//!
//! Invariants: every frame [`Frames::write`] produces has a correct IPv4 header checksum and a
//! correct, non-zero UDP checksum (over the pseudo-header, the UDP header and the whole payload;
//! the padding after the data header is zeros, so the template's partial sum covers it); the
//! IPv4 header is constant per flow (identification 0, DF set), so its checksum is in the
//! template.

use crate::error::FrameError;
use crate::flows::FlowPattern;
use std::net::IpAddr;
use wire::datagram::{write_header, HEADER_LEN};

/// Bytes of the Ethernet header (no VLAN tag).
pub const ETH_LEN: usize = 14;
/// Bytes of the FCS the NIC appends, counted in a frame's size but not built.
pub const FCS_LEN: usize = 4;
/// Bytes of a UDP header.
pub const UDP_LEN: usize = 8;
/// The smallest Ethernet frame, FCS included.
pub const MIN_FRAME: usize = 64;

/// Who sends to whom: MAC addresses, IP addresses and the base UDP ports of the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    /// The sender's MAC address.
    pub src_mac: [u8; 6],
    /// The next hop's MAC address.
    pub dst_mac: [u8; 6],
    /// The source address.
    pub src: IpAddr,
    /// The destination address.
    pub dst: IpAddr,
    /// The first source port.
    pub src_port: u16,
    /// The first destination port.
    pub dst_port: u16,
}

/// What frames to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSpec {
    /// Addresses and base ports.
    pub endpoints: Endpoints,
    /// The frame size, FCS included.
    pub frame_size: usize,
    /// The sending interface's MTU (the largest frame is MTU + 18).
    pub mtu: usize,
    /// How flows differ.
    pub flows: FlowPattern,
}

/// One flow's headers and the UDP checksum's partial sum over everything but the data header.
#[derive(Debug, Clone)]
struct Template {
    headers: Vec<u8>,
    partial: u32,
}

/// The frames of a test: one template per flow, all of one size.
#[derive(Debug, Clone)]
pub struct Frames {
    templates: Vec<Template>,
    built_len: usize,
    udp_at: usize,
    /// The data header's stream index: a test's stream, or (`None`) each frame's flow.
    stream: Option<u16>,
    pattern: FlowPattern,
    base_ports: (u16, u16),
}

/// The bytes a test frame of this family carries besides its UDP payload: the Ethernet, IP
/// and UDP headers and the FCS (a frame's size is its payload's plus this).
pub fn overhead(ipv6: bool) -> usize {
    let ip = if ipv6 { 40 } else { 20 };
    ETH_LEN + ip + UDP_LEN + FCS_LEN
}

/// The frame-size range for this family and MTU, FCS included.
pub fn size_range(ipv6: bool, mtu: usize) -> (usize, usize) {
    let min = (overhead(ipv6) + HEADER_LEN).max(MIN_FRAME);
    (min, mtu + ETH_LEN + FCS_LEN)
}

/// The UDP payload of a received frame (Ethernet, then IPv4 without options or IPv6 without
/// extension headers, then UDP), as long as the UDP header says, or `None` for any other
/// frame: the receiver's reading of what [`Frames::write`] built.
pub fn udp_payload(frame: &[u8]) -> Option<&[u8]> {
    let ip = frame.get(ETH_LEN..)?;
    let udp = match u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) {
        0x0800 if ip.first()? & 0x0f == 5 && *ip.get(9)? == 17 => ip.get(20..)?,
        0x86dd if *ip.get(6)? == 17 => ip.get(40..)?,
        _ => return None,
    };
    let len = usize::from(u16::from_be_bytes([*udp.get(4)?, *udp.get(5)?]));
    udp.get(UDP_LEN..len.max(UDP_LEN))
}

impl Frames {
    /// The templates for `spec`, or why it cannot be built.
    pub fn new(spec: &FrameSpec) -> Result<Self, FrameError> {
        let e = &spec.endpoints;
        let ipv6 = match (e.src, e.dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) => false,
            (IpAddr::V6(_), IpAddr::V6(_)) => true,
            (src, dst) => return Err(FrameError::Family { src, dst }),
        };
        let (min, max) = size_range(ipv6, spec.mtu);
        if spec.frame_size < min || spec.frame_size > max {
            return Err(FrameError::Size {
                size: spec.frame_size,
                min,
                max,
                mtu: spec.mtu,
                family: if ipv6 { "IPv6" } else { "IPv4" },
            });
        }
        let (ns, nd) = spec.flows.sides();
        check_ports("source", e.src_port, ns)?;
        check_ports("destination", e.dst_port, nd)?;
        let built_len = spec.frame_size - FCS_LEN;
        let templates = (0..spec.flows.count())
            .map(|i| {
                let (so, doff) = spec.flows.offsets(i);
                template(e, e.src_port + so, e.dst_port + doff, built_len)
            })
            .collect();
        let udp_at = ETH_LEN + if ipv6 { 40 } else { 20 };
        Ok(Self {
            templates,
            built_len,
            udp_at,
            stream: None,
            pattern: spec.flows,
            base_ports: (e.src_port, e.dst_port),
        })
    }

    /// These frames with `stream` in every data header (a test's stream index, as its
    /// receiver counts it), instead of the flow's index.
    pub fn of_stream(self, stream: u16) -> Self {
        Self {
            stream: Some(stream),
            ..self
        }
    }

    /// Bytes each frame takes in a buffer (the frame size less the FCS).
    pub fn built_len(&self) -> usize {
        self.built_len
    }

    /// How many flows there are.
    pub fn flows(&self) -> usize {
        self.templates.len()
    }

    /// How the flows differ, and flow 0's (source, destination) ports.
    pub fn pattern(&self) -> (FlowPattern, (u16, u16)) {
        (self.pattern, self.base_ports)
    }

    /// Where the UDP header starts (after the Ethernet and IP headers).
    pub fn udp_at(&self) -> usize {
        self.udp_at
    }

    /// Whether the frames are IPv6.
    pub fn ipv6(&self) -> bool {
        self.udp_at == ETH_LEN + 40
    }

    /// The data header's stream field: the test's stream, or `None` when it is each frame's flow.
    pub fn stream(&self) -> Option<u16> {
        self.stream
    }

    /// Writes flow `flow`'s frame (modulo the flow count) with sequence number `seq` and send
    /// time `sent_ns` into the start of `buf`; returns the bytes written, or 0 when `buf` is
    /// shorter than [`Frames::built_len`].
    #[inline]
    pub fn write(&self, buf: &mut [u8], flow: usize, seq: u64, sent_ns: u64) -> usize {
        let Some(out) = buf.get_mut(..self.built_len) else {
            return 0;
        };
        let t = &self.templates[flow % self.templates.len()];
        let (head, rest) = out.split_at_mut(t.headers.len());
        head.copy_from_slice(&t.headers);
        rest.fill(0);
        let stream = self.stream.unwrap_or((flow % self.templates.len()) as u16);
        write_header(rest, stream, 0, seq, sent_ns);
        let mut sum = t.partial;
        if let Some(h) = rest.first_chunk::<HEADER_LEN>() {
            sum += ones_sum(h);
        }
        let csum = match !fold(sum) {
            0 => 0xffff,
            c => c,
        };
        out[self.udp_at + 6..self.udp_at + 8].copy_from_slice(&csum.to_be_bytes());
        self.built_len
    }
}

fn check_ports(what: &'static str, port: u16, count: u16) -> Result<(), FrameError> {
    let limit = 65536 - u32::from(count);
    if u32::from(port) > limit {
        return Err(FrameError::Ports {
            what,
            port,
            count: u32::from(count),
            limit,
        });
    }
    Ok(())
}

/// One flow's headers (Ethernet, IP, UDP with its checksum field zero) and partial sum.
fn template(e: &Endpoints, sport: u16, dport: u16, built_len: usize) -> Template {
    let mut h = Vec::with_capacity(ETH_LEN + 40 + UDP_LEN);
    h.extend_from_slice(&e.dst_mac);
    h.extend_from_slice(&e.src_mac);
    let mut pseudo = Vec::with_capacity(40);
    match (e.src, e.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            h.extend_from_slice(&0x0800u16.to_be_bytes());
            let total = (built_len - ETH_LEN) as u16;
            let mut ip = [0u8; 20];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip[6] = 0x40; // DF: test frames are never fragmented
            ip[8] = 64;
            ip[9] = 17;
            ip[12..16].copy_from_slice(&s.octets());
            ip[16..20].copy_from_slice(&d.octets());
            let c = !fold(ones_sum(&ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            h.extend_from_slice(&ip);
            pseudo.extend_from_slice(&s.octets());
            pseudo.extend_from_slice(&d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            h.extend_from_slice(&0x86ddu16.to_be_bytes());
            let payload = (built_len - ETH_LEN - 40) as u16;
            let mut ip = [0u8; 40];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&payload.to_be_bytes());
            ip[6] = 17;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&s.octets());
            ip[24..40].copy_from_slice(&d.octets());
            h.extend_from_slice(&ip);
            pseudo.extend_from_slice(&s.octets());
            pseudo.extend_from_slice(&d.octets());
        }
        // Frames::new refused mixed families before calling this.
        _ => {}
    }
    let udp_len = (built_len - h.len()) as u16;
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    let mut udp = [0u8; UDP_LEN];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&dport.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    h.extend_from_slice(&udp);
    let partial = ones_sum(&pseudo) + ones_sum(&udp);
    Template {
        headers: h,
        partial,
    }
}

/// The one's-complement sum of `bytes` as big-endian 16-bit words (an odd last byte padded),
/// not yet folded. Inputs here are at most a few hundred bytes, so u32 does not overflow.
fn ones_sum(bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    let mut sum: u32 = chunks
        .by_ref()
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// Folds a 32-bit sum into 16 bits with end-around carry.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Test frames' ends, one set for every test of this crate that builds frames.
#[cfg(test)]
pub(crate) mod testing {
    use super::Endpoints;
    use std::net::IpAddr;

    /// A source and destination in the benchmarking ranges: 198.18.0.0/15 (IPv4) and
    /// 2001:2::/48 (IPv6, RFC 5180).
    pub(crate) fn pair(v6: bool) -> (IpAddr, IpAddr) {
        match v6 {
            false => ([198, 18, 0, 1].into(), [198, 18, 0, 2].into()),
            true => (
                [0x2001, 2, 0, 0, 0, 0, 0, 1].into(),
                [0x2001, 2, 0, 0, 0, 0, 0, 2].into(),
            ),
        }
    }

    /// Frames from `src`:`src_port` to `dst`:`dst_port` between two locally administered MACs.
    pub(crate) fn endpoints(src: IpAddr, dst: IpAddr, src_port: u16, dst_port: u16) -> Endpoints {
        Endpoints {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src,
            dst,
            src_port,
            dst_port,
        }
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
