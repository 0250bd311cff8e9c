//! linerate's control protocol, with no sockets in it.
//!
//! A control or data connection opens with an 8-byte [`hello`] (magic + version) in each
//! direction, the server's followed by a nonce for authentication ([`auth`]), then carries typed messages ([`msg::ClientMsg`], [`msg::ServerMsg`]) in
//! length-delimited frames ([`frame`]) capped at [`frame::MAX_FRAME_LEN`]. The test a client asks
//! for travels as a [`spec::TestSpec`], the same value that is stored with the run's results.
//!
//! Invariants: decoding never panics on any input; an incomplete frame decodes to `Ok(None)`;
//! every error names what was wrong. docs/PROTOCOL.md describes the exchange.

pub mod auth;
pub mod datagram;
pub mod driver;
pub mod error;
pub mod escape;
pub mod frame;
#[cfg(feature = "arbitrary")]
pub mod fuzzing;
pub mod hello;
pub mod iperf3_udp;
pub mod msg;
pub mod spec;

pub use error::WireError;
pub use hello::{Greeting, Hello, GREETING_LEN, HELLO_LEN, MAGIC, PROTOCOL_VERSION};
pub use msg::{ClientMsg, ServerMsg};
pub use spec::{Direction, Params, TestKind, TestSpec};
