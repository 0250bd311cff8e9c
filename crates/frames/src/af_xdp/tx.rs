//! The sending side: frames written into free UMEM chunks, their descriptors put on the tx
//! ring, the kernel kicked with `sendto`, and chunks taken back from the completion ring.
//!
//! What "sent" means is as for the packet engine (`packet_tx`): a frame the driver accepted.
//! A frame the driver drops still completes, but ends that `sendto` with EBUSY, one per drop:
//! counted in `refused` and replaced by a new frame.
//!
//! Invariants: a UMEM chunk is either on the free list or in the kernel's hands (tx ring →
//! completion ring), never both; every wait is bounded by the run's deadline plus
//! [`crate::send::DRAIN`] (the loop is [`crate::send`]'s).

use super::socket::{Socket, CHUNK, CHUNKS, PGOFF_TX_RING, XDP_TX_RING};
use super::{ring::Ring, Desc, Granted, Mode};
use crate::error::SysError;
use crate::frame::Frames;
use crate::send::{Control, FrameTx, SendLimit, TxCounts};
use std::os::fd::AsRawFd;

const TX_ENTRIES: u32 = 2048;

/// An AF_XDP socket sending on one queue.
pub struct XskTx {
    tx: Ring,
    sock: Socket,
    free: Vec<u64>,
    granted: Granted,
}

// SAFETY: the UMEM and rings belong to this value alone.
unsafe impl Send for XskTx {}

impl XskTx {
    /// Opens a socket on queue `queue` of interface `ifindex` in `mode`.
    pub fn open(ifindex: u32, queue: u32, mode: Mode) -> Result<Self, SysError> {
        let sock = Socket::open(XDP_TX_RING, TX_ENTRIES)?;
        let tx = Ring::map(&sock.fd, sock.off.tx, TX_ENTRIES, 16, PGOFF_TX_RING, "tx")?;
        let granted = sock.bind(ifindex, queue, mode)?;
        let free = (0..u64::from(CHUNKS))
            .rev()
            .map(|i| i * CHUNK as u64)
            .collect();
        Ok(Self {
            tx,
            sock,
            free,
            granted,
        })
    }

    /// The data path the kernel granted.
    pub fn granted(&self) -> Granted {
        self.granted
    }

    /// The socket's own counters (`tx_invalid_descs` is this side's).
    pub fn stats(&self) -> Result<super::XskStats, SysError> {
        self.sock.stats()
    }

    /// Frees the chunks the kernel has completed; returns how many.
    fn complete(&mut self) -> u64 {
        let cq = &mut self.sock.cq;
        let n = cq.producer().wrapping_sub(cq.local);
        for _ in 0..n {
            // SAFETY: slots between our consumer and the kernel's producer are filled.
            let addr = unsafe { cq.slot::<u64>(cq.local).read_volatile() };
            self.free.push(addr);
            cq.local = cq.local.wrapping_add(1);
        }
        cq.publish_consumer(cq.local);
        u64::from(n)
    }

    /// Tells the kernel to send; returns whether the driver dropped a frame (EBUSY).
    fn kick(&self) -> Result<bool, SysError> {
        let fd = self.sock.fd.as_raw_fd();
        // SAFETY: a zero-length sendto with no buffer, as AF_XDP documents.
        let r = unsafe {
            libc::sendto(
                fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r >= 0 {
            return Ok(false);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(false),
            Some(libc::EBUSY) => Ok(true),
            _ => Err(SysError::Call {
                call: "sendto(AF_XDP)".into(),
                source: e,
            }),
        }
    }

    /// Puts up to `n` frames on the tx ring from sequence number `seq`; returns how many.
    fn queue(&mut self, frames: &Frames, n: u64, seq: u64, clock: &dyn Fn() -> u64) -> u64 {
        let len = frames.built_len();
        // One send time per call, as the packet engine's (`packet_tx`).
        let now = clock();
        let mut done = 0;
        while done < n {
            let Some(addr) = self.free.pop() else { break };
            // SAFETY: the chunk is ours (it was on the free list).
            if let Some(buf) = unsafe { self.sock.bytes(addr, CHUNK) } {
                frames.write(buf, (seq + done) as usize, seq + done, now);
            }
            let desc = Desc {
                addr,
                len: len as u32,
                options: 0,
            };
            // SAFETY: fewer than `entries` descriptors are outstanding, so the slot is ours.
            unsafe { self.tx.slot::<Desc>(self.tx.local).write(desc) };
            self.tx.local = self.tx.local.wrapping_add(1);
            done += 1;
        }
        self.tx.publish_producer(self.tx.local);
        done
    }

    /// Sends `frames`' frames, flow after flow, until `limit`.
    pub fn send(
        &mut self,
        frames: &Frames,
        limit: SendLimit,
        clock: impl Fn() -> u64,
    ) -> Result<TxCounts, SysError> {
        crate::send::send(self, frames, Control::limit(limit), &clock)
    }
}

impl FrameTx for XskTx {
    fn slot_room(&self) -> usize {
        CHUNK
    }

    fn reap(&mut self) -> (u64, u64) {
        (self.complete(), 0)
    }

    fn room(&self) -> u64 {
        let ring = self.tx.entries() - self.tx.local.wrapping_sub(self.tx.consumer());
        u64::from(ring).min(self.free.len() as u64)
    }

    fn queue(&mut self, frames: &Frames, n: u64, seq: u64, clock: &dyn Fn() -> u64) -> u64 {
        XskTx::queue(self, frames, n, seq, clock)
    }

    fn kick(&mut self) -> Result<bool, SysError> {
        XskTx::kick(self)
    }

    fn wait(&self) {
        std::thread::yield_now();
    }
}
