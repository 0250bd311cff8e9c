//! The receiving side: an AF_XDP socket on one rx queue, in the XSKMAP slot of that queue so
//! the XDP counter's [`crate::xdp::Action::Redirect`] hands it the test's frames.
//!
//! Every UMEM chunk starts on the fill ring; the kernel copies (copy mode) or DMAs (zero-copy) a
//! frame into one and puts its descriptor on the rx ring; the frame is read in place and its
//! chunk goes back on the fill ring.
//!
//! Invariant: a chunk is on the fill ring, in the kernel's hands, or being read, never two at
//! once; the fill ring holds every chunk, so returning one never overflows it.

use super::socket::{Socket, CHUNK, CHUNKS, PGOFF_RX_RING, XDP_RX_RING};
use super::{ring::Ring, Desc, Granted, Mode};
use crate::bpf::sys;
use crate::error::SysError;
use std::os::fd::{AsRawFd, OwnedFd};

const RX_ENTRIES: u32 = 2048;

/// An AF_XDP socket receiving on one queue.
pub struct XskRx {
    rx: Ring,
    sock: Socket,
    granted: Granted,
}

// SAFETY: the UMEM and rings belong to this value alone.
unsafe impl Send for XskRx {}

impl XskRx {
    /// Opens a socket on queue `queue` of `ifindex` in `mode` and puts it in `xsk_map`'s slot
    /// for that queue (the map of an [`crate::xdp::XdpCounter`] attached with `Redirect`).
    pub fn open(ifindex: u32, queue: u32, mode: Mode, xsk_map: &OwnedFd) -> Result<Self, SysError> {
        let mut sock = Socket::open(XDP_RX_RING, RX_ENTRIES)?;
        let rx = Ring::map(&sock.fd, sock.off.rx, RX_ENTRIES, 16, PGOFF_RX_RING, "rx")?;
        let fill = &mut sock.fill;
        for i in 0..CHUNKS {
            // SAFETY: the fill ring is empty and holds CHUNKS entries.
            unsafe {
                fill.slot::<u64>(fill.local)
                    .write(u64::from(i) * CHUNK as u64)
            };
            fill.local = fill.local.wrapping_add(1);
        }
        fill.publish_producer(fill.local);
        let granted = sock.bind(ifindex, queue, mode)?;
        let fd = sock.fd.as_raw_fd() as u32;
        sys::map_update(xsk_map, &queue.to_ne_bytes(), &fd.to_ne_bytes())?;
        Ok(Self { rx, sock, granted })
    }

    /// The data path the kernel granted.
    pub fn granted(&self) -> Granted {
        self.granted
    }

    /// The socket's own counters: what the kernel could not deliver to it.
    pub fn stats(&self) -> Result<super::XskStats, SysError> {
        self.sock.stats()
    }

    /// Hands each frame on the rx ring now to `each` (waiting up to `wait_ms` for one when the
    /// ring is empty, not at all for 0) and gives their chunks back to the kernel; returns how
    /// many. One pass over the ring.
    pub fn recv(&mut self, wait_ms: i32, mut each: impl FnMut(&[u8])) -> u32 {
        let mut n = self.rx.producer().wrapping_sub(self.rx.local);
        if n == 0 && wait_ms > 0 {
            self.wait(wait_ms);
            n = self.rx.producer().wrapping_sub(self.rx.local);
        }
        for _ in 0..n {
            // SAFETY: slots between our consumer and the kernel's producer are filled.
            let d = unsafe { self.rx.slot::<Desc>(self.rx.local).read_volatile() };
            self.rx.local = self.rx.local.wrapping_add(1);
            // SAFETY: the rx ring handed this frame's chunk to us.
            if let Some(frame) = unsafe { self.sock.bytes(d.addr, d.len as usize) } {
                each(frame);
            }
            let fill = &mut self.sock.fill;
            // SAFETY: the fill ring has room: it holds every chunk and this one was out.
            unsafe {
                fill.slot::<u64>(fill.local)
                    .write(d.addr & !(CHUNK as u64 - 1))
            };
            fill.local = fill.local.wrapping_add(1);
        }
        if n > 0 {
            self.rx.publish_consumer(self.rx.local);
            self.sock.fill.publish_producer(self.sock.fill.local);
        }
        n
    }

    /// The socket's descriptor, to wait on several sockets at once (POLLIN: frames to read).
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.sock.fd.as_raw_fd()
    }

    /// Waits up to `ms` for frames (POLLIN).
    fn wait(&self, ms: i32) {
        let mut p = libc::pollfd {
            fd: self.sock.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
}
