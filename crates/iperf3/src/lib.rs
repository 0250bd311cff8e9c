//! Interoperation with iperf3, the installed base.
//!
//! - [`client`]: linerate as an iperf3 client: iperf3's control protocol to a stock
//!   `iperf3 -s` (`linerate tcp HOST --iperf3`, `linerate udp HOST --iperf3`), linerate's own
//!   data plane, measured by `session::client`'s loop through its `Remote` trait.
//! - [`spelling`]: an iperf3 command line given to linerate (`linerate -c HOST`) answered with
//!   the linerate command.
//!
//! The messages are in `wire::iperf3`; docs/PROTOCOL.md section 13 says which subset and how
//! it maps onto linerate's figures. Nothing here prints.

pub mod client;
pub mod spelling;
