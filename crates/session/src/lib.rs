//! The two ends of a linerate test session, over the control protocol of the `wire` crate.
//!
//! - [`server`]: [`server::serve`] accepts control and data connections on one listener and runs
//!   each client's session on its own threads, within the limits of its [`server::ServerConfig`].
//! - [`client`]: [`client::run`] runs one test against a server and returns its record, handing
//!   live interval samples to a [`client::Progress`].
//! - [`probe`]: a latency probe beside a bulk test (latency under load).
//! - [`target`]: where a client connects, and host name resolution.
//! - [`auth`]: keys, key files and the challenge-response proofs both ends exchange.
//!
//! Measurement and protocol only: nothing here parses flags or prints. The server reports what
//! happens through a [`server::Log`] the caller supplies; shutdown and interrupts arrive as
//! [`engine::Signal`] values, never as globals.

pub mod auth;
pub mod client;
mod control;
pub mod iperf3;
pub mod probe;
pub mod relay;
pub mod rpm;
pub mod server;
pub mod target;
