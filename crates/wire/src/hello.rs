//! The 8-byte hello both ends send first: `b"LNRT"`, a big-endian u16 version, a flags byte
//! (bit 0: this server asks for a key) and a zero byte. The server follows its hello with a
//! fresh [`NONCE_LEN`]-byte nonce, the challenge of authentication: together the
//! [`Greeting`].
//!
//! Laid out as a checked [`HelloPacket`] view over bytes plus a parsed [`Hello`] repr, so the
//! parse is tested on literal byte arrays and never panics.

use crate::auth::{Nonce, NONCE_LEN};
use crate::WireError;

/// Magic bytes that open every linerate connection.
pub const MAGIC: [u8; 4] = *b"LNRT";
/// The control protocol version this build speaks. Version 8 added authentication: the
/// server's greeting carries a nonce, first messages and their answers carry proofs
/// (docs/PROTOCOL.md section 9); version 9 the `relay` message (`--from`, section 14); version
/// 10 a bidirectional test's own server → client rate (`reverse_pacing_bps`, `reverse_rate`),
/// which an older server would ignore, running the client → server rate both ways; version
/// 12 binds a key's proof to the server it is for (`ClientProof::server`, section 12); version
/// 13 the receive mode (`StreamParams::rx_mode`), which an older server would ignore, copying
/// where the spec (and so the record) says it discarded or mapped; version 14 the send mode
/// `auto` (`StreamParams::send_mode`), which an older server would refuse as undecodable;
/// version 15 the server's qdiscs on the test's interface in its results
/// (`ServerResults::qdiscs`), which an older client would drop from the record unseen, and a
/// UDP sender's own count of the sends its host refused (`StreamCounts::send_drops`); version
/// 16 the frame engines (`UdpParams::engine`), which an older server would ignore, counting
/// frames it never saw sent as a socket test's, and the server's count of them at its driver
/// (`ServerResults::driver`).
pub const PROTOCOL_VERSION: u16 = 16;
/// Length of the hello on the wire.
pub const HELLO_LEN: usize = 8;
/// Length of the server's greeting: its hello and its nonce.
pub const GREETING_LEN: usize = HELLO_LEN + NONCE_LEN;
/// The flag bit of a server that asks every client for a key.
const REQUIRES_KEY: u8 = 1;

/// A checked view over the hello bytes.
#[derive(Debug, Clone, Copy)]
pub struct HelloPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HelloPacket<T> {
    /// Wraps `buffer`, or returns `None` when it is shorter than [`HELLO_LEN`].
    pub fn new_checked(buffer: T) -> Option<Self> {
        (buffer.as_ref().len() >= HELLO_LEN).then_some(Self { buffer })
    }

    /// The four magic bytes.
    pub fn magic(&self) -> [u8; 4] {
        let b = self.buffer.as_ref();
        [b[0], b[1], b[2], b[3]]
    }

    /// The protocol version.
    pub fn version(&self) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[4], b[5]])
    }

    /// The flags byte.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[6]
    }
}

/// The parsed hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// Protocol version of the sender.
    pub version: u16,
    /// A server's: every client must prove it holds a key (`serve --auth-keys`).
    pub requires_key: bool,
}

impl Hello {
    /// The hello this build sends as a client (or as a server without keys).
    pub const fn ours() -> Self {
        Self {
            version: PROTOCOL_VERSION,
            requires_key: false,
        }
    }

    /// Parses a hello, checking the magic (not the version: see [`Hello::check_version`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let packet =
            HelloPacket::new_checked(bytes).ok_or(WireError::Closed { mid_frame: true })?;
        if packet.magic() != MAGIC {
            return Err(WireError::BadMagic {
                found: packet.magic(),
                expected: MAGIC,
            });
        }
        Ok(Self {
            version: packet.version(),
            requires_key: packet.flags() & REQUIRES_KEY != 0,
        })
    }

    /// Errors unless the peer's version equals ours.
    pub fn check_version(self) -> Result<(), WireError> {
        if self.version == PROTOCOL_VERSION {
            Ok(())
        } else {
            Err(WireError::VersionMismatch {
                ours: PROTOCOL_VERSION,
                theirs: self.version,
            })
        }
    }

    /// The bytes on the wire.
    pub fn emit(self) -> [u8; HELLO_LEN] {
        let v = self.version.to_be_bytes();
        let flags = if self.requires_key { REQUIRES_KEY } else { 0 };
        [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], v[0], v[1], flags, 0]
    }
}

/// What the server sends first: its hello and the nonce the client's proof must cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Greeting {
    /// The server's hello.
    pub hello: Hello,
    /// The server's fresh nonce for this connection.
    pub nonce: Nonce,
}

impl Greeting {
    /// The bytes on the wire.
    pub fn emit(&self) -> [u8; GREETING_LEN] {
        let mut out = [0u8; GREETING_LEN];
        out[..HELLO_LEN].copy_from_slice(&self.hello.emit());
        out[HELLO_LEN..].copy_from_slice(&self.nonce.0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literal_bytes() {
        let hello = Hello::parse(&[b'L', b'N', b'R', b'T', 0, 16, 1, 0]).unwrap();
        assert_eq!(hello.version, 16);
        assert!(hello.requires_key);
        assert!(hello.check_version().is_ok());
    }

    #[test]
    fn emit_parse_round_trip() {
        let hello = Hello {
            version: 513,
            requires_key: false,
        };
        let bytes = hello.emit();
        assert_eq!(bytes, [b'L', b'N', b'R', b'T', 2, 1, 0, 0]);
        assert_eq!(Hello::parse(&bytes).unwrap(), hello);
        let greeting = Greeting {
            hello: Hello {
                requires_key: true,
                ..Hello::ours()
            },
            nonce: Nonce([7; NONCE_LEN]),
        };
        let bytes = greeting.emit();
        assert_eq!(&bytes[..HELLO_LEN], &[b'L', b'N', b'R', b'T', 0, 16, 1, 0]);
        assert_eq!(&bytes[HELLO_LEN..], &[7; NONCE_LEN]);
    }

    #[test]
    fn rejects_wrong_magic() {
        let err = Hello::parse(b"GET / HTTP/1.1").unwrap_err();
        assert!(matches!(err, WireError::BadMagic { .. }), "{err}");
    }

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        assert!(Hello::parse(b"LNR").is_err());
        assert!(HelloPacket::new_checked(&b"LNRT\0"[..]).is_none());
    }

    #[test]
    fn version_mismatch_names_both_versions() {
        let err = Hello {
            version: 15,
            requires_key: false,
        }
        .check_version()
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("version 15") && text.contains("version 16"),
            "{text}"
        );
    }

    #[test]
    fn a_version_7_peer_is_told_apart() {
        // Version 7 sent no nonce and no proofs; its hello must fail, not its `start` as an
        // undecodable message.
        let hello = Hello::parse(&[b'L', b'N', b'R', b'T', 0, 7, 0, 0]).unwrap();
        let err = hello.check_version().unwrap_err();
        assert!(
            matches!(
                err,
                WireError::VersionMismatch {
                    ours: 16,
                    theirs: 7
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "protocol version mismatch: this linerate speaks version 16, the peer speaks version 7; \
             run the same linerate release on both ends"
        );
    }
}
