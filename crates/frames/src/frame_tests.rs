//! The frames against an independent reading: checksums recomputed byte by byte over the whole
//! frame (a 64-bit accumulator, no template, no partial sums), sizes, flows, refusals.

use super::*;
use std::collections::HashSet;
use wire::datagram::DatagramPacket;

fn endpoints(v6: bool) -> Endpoints {
    let (src, dst) = testing::pair(v6);
    testing::endpoints(src, dst, 40000, 9000)
}

fn frames(v6: bool, size: usize, flows: FlowPattern) -> Result<Frames, FrameError> {
    Frames::new(&FrameSpec {
        endpoints: endpoints(v6),
        frame_size: size,
        mtu: 1500,
        flows,
    })
}

/// RFC 1071 the slow way: every 16-bit word of every part into a u64, folded at the end.
fn rfc1071(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    let mut sum: u64 = 0;
    for (i, b) in bytes.iter().enumerate() {
        sum += if i % 2 == 0 {
            u64::from(*b) << 8
        } else {
            u64::from(*b)
        };
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Checks a built frame from its bytes alone: lengths, both checksums, the data header.
fn verify(f: &[u8], v6: bool, seq: u64, sent_ns: u64) -> (u16, u16) {
    let ip_len = if v6 { 40 } else { 20 };
    let udp = &f[ETH_LEN + ip_len..];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    assert_eq!(udp_len, udp.len(), "UDP length");
    let proto_len = [0u8, 17, udp[4], udp[5]];
    let pseudo: Vec<u8> = if v6 {
        assert_eq!(&f[12..14], &[0x86, 0xdd]);
        let plen = usize::from(u16::from_be_bytes([f[18], f[19]]));
        assert_eq!(plen, udp.len(), "IPv6 payload length");
        [&f[22..54], &proto_len[..]].concat()
    } else {
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
        assert_eq!(total, f.len() - ETH_LEN, "IPv4 total length");
        assert_eq!(rfc1071(&[&f[14..34]]), 0xffff, "IPv4 header checksum");
        [&f[26..34], &proto_len[..]].concat()
    };
    assert_ne!(&udp[6..8], &[0, 0], "UDP checksum present");
    assert_eq!(rfc1071(&[&pseudo, udp]), 0xffff, "UDP checksum");
    let d = DatagramPacket::new_checked(&udp[8..]).expect("data header");
    assert_eq!((d.seq(), d.sent_ns()), (seq, sent_ns));
    (
        u16::from_be_bytes([udp[0], udp[1]]),
        u16::from_be_bytes([udp[2], udp[3]]),
    )
}

#[test]
fn every_size_and_family_has_both_checksums_right_by_an_independent_sum() {
    let mut buf = vec![0xa5u8; 2048];
    for v6 in [false, true] {
        let min = if v6 { 82 } else { 64 };
        for size in [
            min,
            min + 1,
            65,
            128,
            255,
            256,
            511,
            512,
            1024,
            1280,
            1517,
            1518,
        ] {
            if size < min {
                continue;
            }
            let f = frames(v6, size, FlowPattern::One).expect("in range");
            for (seq, ns) in [(0, 0), (1, u64::MAX), ((1 << 40) - 1, 123_456_789)] {
                let n = f.write(&mut buf, 0, seq, ns);
                assert_eq!(n, size - FCS_LEN, "{size} bytes built without the FCS");
                verify(&buf[..n], v6, seq, ns);
            }
        }
    }
}

#[test]
fn a_64_byte_frame_is_60_bytes_built_and_a_1518_byte_frame_1514() {
    assert_eq!(frames(false, 64, FlowPattern::One).unwrap().built_len(), 60);
    assert_eq!(
        frames(false, 1518, FlowPattern::One).unwrap().built_len(),
        1514
    );
}

#[test]
fn sizes_outside_the_range_are_refused_naming_it() {
    for (v6, size, min) in [
        (false, 63, 64),
        (false, 1519, 64),
        (true, 81, 82),
        (true, 1519, 82),
    ] {
        let err = frames(v6, size, FlowPattern::One).unwrap_err();
        assert!(
            matches!(err, FrameError::Size { min: m, max: 1518, .. } if m == min),
            "{err:?}"
        );
        assert!(err.to_string().contains(&format!("{min}..=1518")), "{err}");
    }
    let jumbo = Frames::new(&FrameSpec {
        endpoints: endpoints(false),
        frame_size: 9018,
        mtu: 9000,
        flows: FlowPattern::One,
    });
    assert_eq!(jumbo.map(|f| f.built_len()), Ok(9014));
}

#[test]
fn each_pattern_writes_its_count_of_distinct_port_pairs_with_checksums_right() {
    let mut buf = [0u8; 128];
    for (p, n) in FlowPattern::ALL.into_iter().zip([1, 100, 100, 10_000]) {
        let f = frames(false, 64, p).unwrap();
        assert_eq!(f.flows(), n);
        let mut pairs = HashSet::new();
        for i in 0..n {
            let len = f.write(&mut buf, i, i as u64, 7);
            let (s, d) = verify(&buf[..len], false, i as u64, 7);
            assert!((40000..40100).contains(&s) && (9000..9100).contains(&d));
            let stream = u16::from_be_bytes([buf[42], buf[43]]);
            assert_eq!(
                usize::from(stream),
                i,
                "the data header's stream is the flow"
            );
            pairs.insert((s, d));
        }
        assert_eq!(pairs.len(), n, "{p:?}");
    }
}

#[test]
fn ports_that_would_run_past_65535_and_mixed_families_are_refused() {
    let mut e = endpoints(false);
    e.dst_port = 65500;
    let spec = FrameSpec {
        endpoints: e,
        frame_size: 64,
        mtu: 1500,
        flows: FlowPattern::DestinationPorts,
    };
    assert!(matches!(
        Frames::new(&spec),
        Err(FrameError::Ports { limit: 65436, .. })
    ));
    e.dst = endpoints(true).dst;
    let spec = FrameSpec {
        endpoints: e,
        ..spec
    };
    assert!(matches!(Frames::new(&spec), Err(FrameError::Family { .. })));
}

#[test]
fn a_short_buffer_gets_nothing_written() {
    let f = frames(false, 64, FlowPattern::One).unwrap();
    let mut buf = [0u8; 59];
    assert_eq!(f.write(&mut buf, 0, 0, 0), 0);
    assert!(buf.iter().all(|b| *b == 0));
}

#[test]
fn the_receivers_reading_finds_the_header_each_family_and_size_was_written_with() {
    for v6 in [false, true] {
        let min = size_range(v6, 1500).0;
        for size in [min, min + 1, 512, 1518] {
            let f = frames(v6, size, FlowPattern::SourceAndDestination).unwrap();
            let mut buf = vec![0u8; f.built_len()];
            // Padding past the datagram (as a short frame gets on the wire) is not payload.
            buf.extend_from_slice(&[0xee; 8]);
            f.write(&mut buf, 3, 77, 123_456);
            let payload = udp_payload(&buf).expect("a test frame");
            assert_eq!(
                payload.len(),
                f.built_len() - f.udp_at() - UDP_LEN,
                "{size}"
            );
            let h = DatagramPacket::new_checked(payload).unwrap();
            assert_eq!((h.seq(), h.sent_ns()), (77, 123_456), "v6 {v6} size {size}");
        }
    }
    let f = frames(false, 64, FlowPattern::One).unwrap();
    let mut buf = vec![0u8; f.built_len()];
    f.write(&mut buf, 0, 1, 1);
    let mut tcp = buf.clone();
    tcp[ETH_LEN + 9] = 6;
    let mut options = buf.clone();
    options[ETH_LEN] = 0x46;
    for other in [&tcp[..], &options[..], &buf[..30]] {
        assert_eq!(udp_payload(other), None);
    }
}
