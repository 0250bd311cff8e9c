//! Errors from decoding and encoding control messages.

use thiserror::Error;

/// Everything that can go wrong on the control channel's byte level.
#[derive(Debug, Error)]
pub enum WireError {
    /// The peer's first bytes were not linerate's magic.
    #[error(
        "peer is not a linerate endpoint (first bytes {found:02x?}, expected {expected:02x?})"
    )]
    BadMagic {
        /// Magic bytes received.
        found: [u8; 4],
        /// Magic bytes expected.
        expected: [u8; 4],
    },
    /// Both sides speak linerate, but different protocol versions.
    #[error("protocol version mismatch: this linerate speaks version {ours}, the peer speaks version {theirs}; run the same linerate release on both ends")]
    VersionMismatch {
        /// Our version.
        ours: u16,
        /// The peer's version.
        theirs: u16,
    },
    /// A frame announced a length above the cap.
    #[error("control frame of {len} bytes exceeds the {max}-byte limit")]
    FrameTooLarge {
        /// Announced length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// An iperf3 JSON message announced no bytes.
    #[error("empty iperf3 message")]
    EmptyMessage,
    /// A frame's body was not a valid message.
    #[error("malformed control message: {0}")]
    Malformed(#[from] serde_json::Error),
    /// The connection closed before a complete frame arrived.
    #[error("connection closed by peer{}", if *.mid_frame { " in the middle of a message" } else { "" })]
    Closed {
        /// Whether some bytes of a frame had arrived.
        mid_frame: bool,
    },
    /// The peer sent nothing for this long: no next message, or no rest of one.
    #[error("peer sent nothing for {0:?}")]
    Timeout(std::time::Duration),
    /// The peer sent nothing at all, for this long, where it speaks first (a server's hello).
    #[error("peer sent nothing for {0:?}")]
    Silent(std::time::Duration),
    /// An I/O error while reading or writing.
    #[error("control connection: {0}")]
    Io(#[from] std::io::Error),
}
