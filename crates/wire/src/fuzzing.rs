//! Fuzz targets over everything a peer can send (feature `arbitrary`): the same functions run a
//! million inputs in the stable test suite (`tests/fuzz.rs` at the workspace root) and, for
//! longer runs, under libFuzzer (`fuzz/`, `cargo fuzz run TARGET` where a nightly toolchain is).
//!
//! Each target takes raw bytes and checks properties, panicking only when one fails:
//! - [`messages`]: a structured message built from the bytes (`arbitrary`), encoded, then a
//!   mutated copy decoded: decoding never panics, a decoded spec's checks never panic, and an
//!   unmutated `ClientMsg` decodes to itself;
//! - [`raw_frame`]: the bytes as a frame, a hello and a greeting, decoded as both message types;
//! - [`datagram`]: a datagram header parsed from the bytes, and a header built from them that
//!   parses back to its fields.

use arbitrary::{Arbitrary, Unstructured};

use crate::datagram::{DatagramRepr, HEADER_LEN};
use crate::frame::{decode, encode};
use crate::spec::SpecLimits;
use crate::{ClientMsg, Hello, ServerMsg};

/// Numbers a mutation writes over a number in the JSON: the edges of every integer type a
/// field has, and floats JSON allows but no field should take.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "-1e308",
    "0.5",
    "99999999999999999999999999999999",
];

/// A structured message of either direction, encoded, mutated and decoded.
pub fn messages(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(client) = bool::arbitrary(&mut u) else {
        return;
    };
    let mut frame = Vec::new();
    if client {
        let Ok(msg) = ClientMsg::arbitrary(&mut u) else {
            return;
        };
        if encode(&msg, &mut frame).is_err() {
            return;
        }
        // A message decodes to itself (unless a float was not finite: JSON has no such value).
        if let Ok(Some((back, used))) = decode::<ClientMsg>(&frame) {
            assert_eq!(used, frame.len());
            assert_eq!(
                back, msg,
                "a client message changed on its way through JSON"
            );
        }
    } else {
        let Ok(msg) = ServerMsg::arbitrary(&mut u) else {
            return;
        };
        if encode(&msg, &mut frame).is_err() {
            return;
        }
    }
    mutate(&mut frame, &mut u);
    decode_both(&frame);
}

/// What a hostile client sends first, from the bytes: a hello (ours, another version or
/// garbage) and then a structured client message encoded and mutated, or raw bytes. For
/// live-server fuzzing.
pub fn hostile_opening(data: &[u8]) -> Vec<u8> {
    let mut u = Unstructured::new(data);
    let mut out = match u.int_in_range(0..=9u8).unwrap_or(0) {
        0 => Hello {
            version: u16::arbitrary(&mut u).unwrap_or(0),
            ..Hello::ours()
        }
        .emit()
        .to_vec(),
        1 => u.bytes(u.len().min(8)).unwrap_or(&[]).to_vec(),
        _ => Hello::ours().emit().to_vec(),
    };
    let mut frame = Vec::new();
    match ClientMsg::arbitrary(&mut u) {
        Ok(msg) if encode(&msg, &mut frame).is_ok() => mutate(&mut frame, &mut u),
        _ => frame.extend_from_slice(u.take_rest()),
    }
    out.extend_from_slice(&frame);
    out
}

/// Raw bytes as everything the gate and the client read first: a hello, a frame as it came,
/// and the bytes as a frame's body behind a length prefix that fits.
pub fn raw_frame(data: &[u8]) {
    if let Ok(hello) = Hello::parse(data) {
        let _ = hello.check_version();
    }
    decode_both(data);
    // After a hello, as the gate reads a first message.
    if data.len() > crate::HELLO_LEN {
        decode_both(&data[crate::HELLO_LEN..]);
    }
    let mut framed = (data.len() as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(data);
    decode_both(&framed);
}

/// JSON made of the protocol's own words: each byte picks a token, so the decoder meets
/// messages that are nearly right far more often than random bytes would make them.
pub fn json_soup(data: &[u8]) {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"type\"",
        "\"start\"",
        "\"attach\"",
        "\"spec\"",
        "\"session\"",
        "\"stream\"",
        "\"auth\"",
        "\"user\"",
        "\"nonce\"",
        "\"mac\"",
        "\"params\"",
        "\"kind\"",
        "\"tcp_stream\"",
        "\"udp_stream\"",
        "\"tcp_rr\"",
        "\"duration_ms\"",
        "\"interval_ms\"",
        "\"streams\"",
        "\"udp\"",
        "\"rate\"",
        "\"max\"",
        "\"direction\"",
        "\"send\"",
        "null",
        "true",
        "false",
        "0",
        "1",
        "18446744073709551616",
        "-1",
        "1e999",
        "\"\\u0000\"",
        "\"ab\"",
    ];
    let mut body = String::new();
    for &b in data {
        body.push_str(TOKENS[usize::from(b) % TOKENS.len()]);
    }
    raw_frame(body.as_bytes());
}

/// A datagram header from raw bytes, and one built from them.
pub fn datagram(data: &[u8]) {
    let parsed = DatagramRepr::parse(data);
    assert_eq!(parsed.is_some(), data.len() >= HEADER_LEN);
    let mut u = Unstructured::new(data);
    let (Ok(stream), Ok(flags), Ok(seq), Ok(sent_ns)) = (
        u16::arbitrary(&mut u),
        u8::arbitrary(&mut u),
        u64::arbitrary(&mut u),
        u64::arbitrary(&mut u),
    ) else {
        return;
    };
    let mut buf = [0u8; HEADER_LEN];
    assert!(crate::datagram::write_header(
        &mut buf, stream, flags, seq, sent_ns
    ));
    let back = DatagramRepr::parse(&buf).expect("a full header parses");
    assert_eq!(
        (back.stream, back.flags, back.seq, back.sent_ns),
        (stream, flags, seq & crate::datagram::SEQ_MAX, sent_ns)
    );
}

/// Decodes `frame` as either message; whatever decodes is checked and encodes again.
fn decode_both(frame: &[u8]) {
    if let Ok(Some((msg, used))) = decode::<ClientMsg>(frame) {
        assert!(used <= frame.len());
        if let ClientMsg::Start { spec, .. } = &msg {
            let _ = spec.check(&SpecLimits::default());
            let _ = spec.flows();
            let _ = spec.kind();
        }
        let mut again = Vec::new();
        let _ = encode(&msg, &mut again);
    }
    if let Ok(Some((msg, _))) = decode::<ServerMsg>(frame) {
        let mut again = Vec::new();
        let _ = encode(&msg, &mut again);
    }
}

/// One to four of: a flipped byte, a truncation, a number swapped for an edge value, deep
/// nesting, a wrong length prefix, random bytes inserted.
fn mutate(frame: &mut Vec<u8>, u: &mut Unstructured<'_>) {
    let rounds = u.int_in_range(0..=4u8).unwrap_or(0);
    for _ in 0..rounds {
        let len = frame.len();
        let at = u.choose_index(len.max(1)).unwrap_or(0).min(len);
        match u.int_in_range(0..=6u8).unwrap_or(0) {
            0 if at < len => frame[at] ^= 1 << u.int_in_range(0..=7u8).unwrap_or(0),
            1 => frame.truncate(at),
            2 => swap_number(frame, at, u),
            3 => {
                let depth = u.int_in_range(1..=5000usize).unwrap_or(1);
                let body: Vec<u8> = std::iter::repeat_n(b'[', depth)
                    .chain(std::iter::repeat_n(b']', depth))
                    .collect();
                frame.truncate(4.min(len));
                frame.extend_from_slice(&body);
            }
            4 if len >= 4 => {
                let prefix = *u
                    .choose(&[0u32, 1, u32::MAX, 1 << 20, (1 << 20) + 1])
                    .unwrap_or(&0);
                frame[..4].copy_from_slice(&prefix.to_be_bytes());
            }
            5 => {
                let n = u.int_in_range(0..=16usize).unwrap_or(0);
                let extra = u.bytes(n).unwrap_or(&[]);
                let tail = frame.split_off(at);
                frame.extend_from_slice(extra);
                frame.extend_from_slice(&tail);
            }
            _ => fix_prefix(frame),
        }
    }
}

/// Replaces the first run of digits at or after `at` with an edge value, and fixes the prefix.
fn swap_number(frame: &mut Vec<u8>, at: usize, u: &mut Unstructured<'_>) {
    let Some(start) = (at..frame.len()).find(|&i| frame[i].is_ascii_digit()) else {
        return;
    };
    let end = (start..frame.len())
        .find(|&i| !frame[i].is_ascii_digit())
        .unwrap_or(frame.len());
    let number = u.choose(NUMBERS).copied().unwrap_or("0");
    frame.splice(start..end, number.bytes());
    fix_prefix(frame);
}

/// Sets the length prefix to the body's length, so a mutation reaches the JSON decoder.
fn fix_prefix(frame: &mut [u8]) {
    if frame.len() >= 4 {
        let body = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&body.to_be_bytes());
    }
}
