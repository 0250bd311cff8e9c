//! The `xdp` engine: AF_XDP sockets, each on one queue of an interface, with a UMEM (frame
//! buffers shared with the kernel) and its rings. [`XskTx`] sends (tx and completion rings),
//! [`XskRx`] receives what the XDP counter redirects to it (rx and fill rings).
//!
//! Zero-copy where the driver offers it, copy mode otherwise ([`Mode::Auto`]); `granted()` says
//! which the kernel gave, read back with `XDP_OPTIONS`, not assumed. A veth has no zero-copy:
//! it gets copy mode (the kernel builds an skb per sent frame, copies each received one).

pub mod ring;
mod rx;
mod socket;
mod tx;

pub use rx::XskRx;
pub use socket::{CHUNK, CHUNKS};
pub use tx::XskTx;

/// Which data path to ask the kernel for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Zero-copy if the driver has it, copy mode otherwise.
    Auto,
    /// Copy mode only.
    Copy,
    /// Zero-copy only (refused by drivers without it).
    ZeroCopy,
}

/// The data path the kernel granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granted {
    /// The kernel copies each frame (`XDP_COPY`).
    Copy,
    /// The driver reads and writes the UMEM itself (`XDP_ZEROCOPY`).
    ZeroCopy,
}

/// `struct xdp_desc`: a frame in the UMEM.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Desc {
    addr: u64,
    len: u32,
    options: u32,
}
