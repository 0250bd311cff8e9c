//! Interoperation with iperf3, the installed base: [`client`] speaks iperf3's control
//! protocol to a stock `iperf3 -s` (`linerate tcp HOST --iperf3`, `linerate udp HOST --iperf3`:
//! `udp` for what UDP adds). The messages are in
//! `wire::iperf3`; docs/PROTOCOL.md section 13 says which subset and how it maps onto
//! linerate's figures.

pub mod client;
mod udp;
