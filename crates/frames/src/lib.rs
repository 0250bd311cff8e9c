//! linerate's frame engine: Ethernet frames built in user space, sent through an AF_PACKET TX ring and counted at the receiver's driver by an XDP program that needs no compiler.
//!
//! Issue 38, first step: the core, without the command line.
//! - [`frame`]: Ethernet + IPv4/IPv6 + UDP frames carrying the UDP engine's data header
//!   (`wire::datagram`), at any frame size 64..=MTU+18 (FCS counted, as pkt-gen and RFC 2544
//!   count it), with pkt-gen's flow patterns ([`flows::FlowPattern`]).
//! - [`packet_tx`]: the `packet` engine, `PACKET_TX_RING` (TPACKET_V2) with
//!   `PACKET_QDISC_BYPASS`, bounded in frames and in time.
//! - [`xdp`]: the receiver's counter, an XDP program held as Rust source ([`bpf::asm`], an
//!   instruction builder), loaded with the raw `bpf(2)` syscall and attached through a BPF link,
//!   so it is detached when its descriptor closes, also when the process is killed.
//! - [`af_xdp`]: the `xdp` engine's sockets: [`af_xdp::XskTx`] sends, [`af_xdp::XskRx`]
//!   receives what the counter redirects (zero-copy where the driver offers it, copy mode
//!   otherwise, as the kernel granted).
//! - [`send`]: the one send loop both engines run ([`send::FrameTx`]): frame count, time,
//!   pace, a stop raised from outside, the frames accepted so far.
//! - [`caps`]: the capabilities each part needs, checked up front.
//! - [`route`]: the path to a peer (interface, source address, the next hop's MAC), asked of
//!   the kernel over rtnetlink (`measure::netlink`) as `ip route get` and `ip neigh` do; and
//!   the interface an accepted connection arrived on ([`route::arrived_on`]).
//! - [`xdp_live`]: the `xdp` engine's sender where the driver has no zero-copy: XDP live
//!   frames (`BPF_PROG_RUN` redirecting each frame to `ndo_xdp_xmit`), where the driver takes
//!   redirected frames ([`xdp_features`]).
//!
//! Used by `engine::udp_frames` (the client's sender of `udp`, `pps` and `rfc2544 --engine
//! packet|xdp`), the client's check before it asks for a frame test (`session`'s
//! `client/frames_path.rs`) and the server's counter of a frame test (`server/frames.rs`).
//! The server's receiver of an `xdp` test reads [`af_xdp::XskRx`] sockets, one per receive
//! queue (`engine::frame_rx`), their drop statistics (`XDP_STATISTICS`) in the record.
//! What is next (issue 38): live frames paced.
//!
//! AF_PACKET, AF_XDP and BPF are Linux's: those modules exist only there; building frames and
//! assembling programs is portable.
//!
//! Invariants: nothing here panics on user input; every loop that waits on the kernel is bounded
//! in time; every error names the limit or the capability and says what to do.

#[cfg(target_os = "linux")]
pub mod af_xdp;
pub mod bpf;
#[cfg(target_os = "linux")]
pub mod caps;
pub mod error;
pub mod flows;
pub mod frame;
#[cfg(target_os = "linux")]
pub mod packet_tx;
#[cfg(target_os = "linux")]
pub mod route;
#[cfg(target_os = "linux")]
pub mod send;
// The workspace's one runtime-skip helper (std only), shared with every test binary.
#[cfg(test)]
#[path = "../../../tests/skip.rs"]
mod skip;
#[cfg(target_os = "linux")]
pub mod xdp;
#[cfg(target_os = "linux")]
pub mod xdp_features;
#[cfg(target_os = "linux")]
pub mod xdp_live;
#[cfg(target_os = "linux")]
pub mod xdp_query;

pub use error::{FrameError, PathError, SysError};
pub use flows::FlowPattern;
pub use frame::{Endpoints, FrameSpec, Frames};
