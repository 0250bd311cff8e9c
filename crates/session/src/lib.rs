//! The two ends of a linerate test session, over the control protocol of the `wire` crate.
//!
//! - [`server`]: [`server::serve`] accepts control and data connections on one listener and runs
//!   each client's session on its own threads, within the limits of its [`server::ServerConfig`];
//!   other protocols at the same port through a [`server::Dialect`] the caller plugs in (iperf3's,
//!   from the `iperf3` crate, which depends on this one), and the server's counters ([`server::ServerMetrics`]) with
//!   their OpenMetrics text (served over HTTP by the `ui` crate's `metrics`).
//! - [`client`]: [`client::run`] runs one test against a server and returns its record, handing
//!   live interval samples to an [`events::Observer`] (the terminal's live table in `report`,
//!   `--json-stream`'s writer in `events`).
//! - [`client::remote`]: the far end as the measuring loop sees it, public so that another
//!   protocol's server can stand behind it (the `iperf3` crate's client of a stock `iperf3 -s`).
//! - [`relay`]: third-party tests (`--from`): the messages between the controller and the relay.
//! - [`target`]: where a client connects, and host name resolution.
//! - [`auth`]: keys, key files and the challenge-response proofs both ends exchange.
//!
//! Measurement and protocol only: nothing here parses flags or prints. The methods built on the
//! client (`linerate rpm`, latency under load, a mesh's pairs) are the `sweep` crate's, above
//! this one: nothing here depends on sweeps. The server reports what happens through a
//! [`server::Log`] the caller supplies; shutdown and interrupts arrive as [`engine::Signal`]
//! values, never as globals.

pub mod auth;
pub mod client;
mod control;
pub mod relay;
pub mod server;
// The workspace's one runtime-skip helper (std only), shared with every test binary.
#[cfg(test)]
#[path = "../../../tests/skip.rs"]
mod skip;
pub mod target;

pub use control::{ReadBy, HANDSHAKE_TIMEOUT};
