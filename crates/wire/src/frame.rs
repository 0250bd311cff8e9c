//! Length-delimited frames: a big-endian u32 body length, then a JSON body.
//!
//! [`decode`] works on a buffer and returns `Ok(None)` for an incomplete frame, so it can be
//! driven by any I/O; [`read_frame`] and [`write_frame`] are the blocking helpers the control
//! channel uses. A length above [`MAX_FRAME_LEN`] is rejected before anything is allocated.

use std::io::{ErrorKind, Read, Write};

use serde::{de::DeserializeOwned, Serialize};

use crate::WireError;

/// Largest accepted frame body, in bytes.
pub const MAX_FRAME_LEN: usize = 1 << 20;
const LEN_PREFIX: usize = 4;

/// Appends `msg` as one frame to `out`.
pub fn encode<T: Serialize>(msg: &T, out: &mut Vec<u8>) -> Result<(), WireError> {
    let start = out.len();
    out.extend_from_slice(&[0; LEN_PREFIX]);
    serde_json::to_writer(&mut *out, msg)?;
    let len = out.len() - start - LEN_PREFIX;
    if len > MAX_FRAME_LEN {
        out.truncate(start);
        return Err(WireError::FrameTooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    out[start..start + LEN_PREFIX].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(())
}

/// Decodes one frame from the front of `buf`: `Ok(Some((msg, consumed)))`, or `Ok(None)` when
/// `buf` does not yet hold a whole frame.
pub fn decode<T: DeserializeOwned>(buf: &[u8]) -> Result<Option<(T, usize)>, WireError> {
    let Some(prefix) = buf.get(..LEN_PREFIX) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    if len > MAX_FRAME_LEN {
        return Err(WireError::FrameTooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    let Some(body) = buf.get(LEN_PREFIX..LEN_PREFIX + len) else {
        return Ok(None);
    };
    Ok(Some((serde_json::from_slice(body)?, LEN_PREFIX + len)))
}

/// Writes `msg` as one frame.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), WireError> {
    let mut buf = Vec::with_capacity(256);
    encode(msg, &mut buf)?;
    w.write_all(&buf)?;
    w.flush()?;
    Ok(())
}

/// Reads exactly one frame. A read timeout set on the socket surfaces as [`WireError::Timeout`]
/// with `idle` as the duration named.
pub fn read_frame<R: Read, T: DeserializeOwned>(
    r: &mut R,
    idle: std::time::Duration,
) -> Result<T, WireError> {
    let mut prefix = [0u8; LEN_PREFIX];
    read_full(r, &mut prefix, false, idle)?;
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME_LEN {
        return Err(WireError::FrameTooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    let mut body = vec![0u8; len];
    read_full(r, &mut body, true, idle)?;
    Ok(serde_json::from_slice(&body)?)
}

/// Reads exactly `buf.len()` bytes, mapping EOF and timeouts to typed errors.
pub fn read_full<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    mid_frame: bool,
    idle: std::time::Duration,
) -> Result<(), WireError> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => {
                return Err(WireError::Closed {
                    mid_frame: mid_frame || filled > 0,
                })
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(WireError::Timeout(idle))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::ClientMsg;

    #[test]
    fn round_trip_and_incomplete() {
        let mut buf = Vec::new();
        encode(&ClientMsg::Poll { seq: 7 }, &mut buf).unwrap();
        encode(&ClientMsg::Stop, &mut buf).unwrap();
        for cut in 0..buf.len() {
            // Every strict prefix of the first frame is incomplete, never an error.
            let first_len = 4 + u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if cut < first_len {
                assert!(
                    decode::<ClientMsg>(&buf[..cut]).unwrap().is_none(),
                    "cut {cut}"
                );
            }
        }
        let (msg, used) = decode::<ClientMsg>(&buf).unwrap().unwrap();
        assert_eq!(msg, ClientMsg::Poll { seq: 7 });
        let (msg, _) = decode::<ClientMsg>(&buf[used..]).unwrap().unwrap();
        assert_eq!(msg, ClientMsg::Stop);
    }

    #[test]
    fn oversized_length_is_rejected_before_allocation() {
        let buf = [0xff, 0xff, 0xff, 0xff, b'{'];
        let err = decode::<ClientMsg>(&buf).unwrap_err();
        assert!(matches!(err, WireError::FrameTooLarge { .. }), "{err}");
        let err = read_frame::<_, ClientMsg>(&mut &buf[..], std::time::Duration::ZERO).unwrap_err();
        assert!(matches!(err, WireError::FrameTooLarge { .. }), "{err}");
    }

    #[test]
    fn garbage_body_is_malformed() {
        let buf = [0, 0, 0, 3, b'x', b'y', b'z'];
        assert!(matches!(
            decode::<ClientMsg>(&buf).unwrap_err(),
            WireError::Malformed(_)
        ));
    }

    #[test]
    fn eof_mid_frame_is_reported() {
        let buf = [0, 0, 0, 10, b'{'];
        let err = read_frame::<_, ClientMsg>(&mut &buf[..], std::time::Duration::ZERO).unwrap_err();
        assert!(
            matches!(err, WireError::Closed { mid_frame: true }),
            "{err}"
        );
        let err = read_frame::<_, ClientMsg>(&mut &[][..], std::time::Duration::ZERO).unwrap_err();
        assert!(
            matches!(err, WireError::Closed { mid_frame: false }),
            "{err}"
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::msg::{ClientMsg, ServerMsg};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode::<ClientMsg>(&bytes);
            let _ = decode::<ServerMsg>(&bytes);
            let _ = crate::Hello::parse(&bytes);
            let _ = read_frame::<_, ClientMsg>(&mut &bytes[..], std::time::Duration::ZERO);
        }

        #[test]
        fn counters_round_trip(seq in any::<u64>(), bytes in proptest::collection::vec(any::<u64>(), 0..64)) {
            let counts = bytes.iter().map(|&b| crate::msg::StreamCounts { bytes: b, packets: b / 3, rx: None, tcp_info: None, receive: None, send_mode: None, send_drops: None }).collect();
            let msg = ServerMsg::Counters { seq, counts, cpu: None };
            let mut buf = Vec::new();
            encode(&msg, &mut buf).unwrap();
            prop_assert_eq!(decode::<ServerMsg>(&buf).unwrap().unwrap(), (msg, buf.len()));
        }
    }
}
