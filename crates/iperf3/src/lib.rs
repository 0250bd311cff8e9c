//! Interoperation with iperf3, the installed base: its control protocol at both ends.
//!
//! - [`protocol`]: iperf3's control messages (the cookie, the one-byte states, the
//!   length-prefixed JSON of the parameters and the results), no sockets in it.
//! - [`client`]: linerate as an iperf3 client: iperf3's control protocol to a stock
//!   `iperf3 -s` (`linerate tcp HOST --iperf3`, `linerate udp HOST --iperf3`), linerate's own
//!   data plane, measured by `session::client`'s loop through its `Remote` trait.
//! - [`server`]: iperf3 clients at `linerate serve`'s port, a `session` dialect
//!   ([`Dialect`], plugged into `session::server::ServerConfig::dialects`): the gate reads an
//!   iperf3 client's opening, and its test runs on linerate's data plane.
//! - [`spelling`]: an iperf3 command line given to linerate (`linerate -c HOST`) answered with
//!   the linerate command.
//!
//! docs/PROTOCOL.md section 13 says which subset of iperf3's protocol is spoken and how it maps
//! onto linerate's figures. `session` knows nothing of iperf3: this crate depends on it, not
//! the other way. Nothing here prints; the server's lines go to its log.

pub mod client;
pub mod protocol;
pub mod server;
pub mod spelling;

pub use server::Dialect;
