//! Interoperation with iperf3, the installed base: [`client`] speaks iperf3's control
//! protocol to a stock `iperf3 -s` (`linerate tcp HOST --iperf3`, `linerate udp HOST --iperf3`:
//! `udp` for what UDP adds); [`spelling`] answers an iperf3 command line given to linerate
//! (`linerate -c HOST`) with the linerate command. The messages are in
//! `wire::iperf3`; docs/PROTOCOL.md section 13 says which subset and how it maps onto
//! linerate's figures.

pub mod client;
pub mod spelling;
mod udp;
