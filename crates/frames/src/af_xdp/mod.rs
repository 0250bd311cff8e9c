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
pub use socket::{CHUNK, CHUNKS, MAX_RX_FRAME};
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

/// A socket's own counters (`XDP_STATISTICS`): frames the kernel had for it and could not
/// deliver, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Dropped for other reasons (in copy mode: no free chunk on the fill ring).
    pub rx_dropped: u64,
    /// Dropped for an invalid rx descriptor.
    pub rx_invalid_descs: u64,
    /// Sends dropped for an invalid tx descriptor.
    pub tx_invalid_descs: u64,
    /// Dropped because the rx ring was full (the reader fell behind).
    pub rx_ring_full: u64,
    /// Times the kernel found the fill ring empty.
    pub rx_fill_ring_empty: u64,
}

impl std::ops::Add for XskStats {
    type Output = Self;

    /// Two sockets' counters summed, field by field.
    fn add(self, o: Self) -> Self {
        Self {
            rx_dropped: self.rx_dropped + o.rx_dropped,
            rx_invalid_descs: self.rx_invalid_descs + o.rx_invalid_descs,
            tx_invalid_descs: self.tx_invalid_descs + o.tx_invalid_descs,
            rx_ring_full: self.rx_ring_full + o.rx_ring_full,
            rx_fill_ring_empty: self.rx_fill_ring_empty + o.rx_fill_ring_empty,
        }
    }
}

impl XskStats {
    /// Frames for this socket that never reached its rx ring.
    pub fn rx_lost(&self) -> u64 {
        self.rx_dropped + self.rx_invalid_descs + self.rx_ring_full
    }
}

/// `struct xdp_desc`: a frame in the UMEM.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Desc {
    addr: u64,
    len: u32,
    options: u32,
}
