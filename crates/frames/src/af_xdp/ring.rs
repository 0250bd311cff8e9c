//! One of an AF_XDP socket's four rings, mapped from the kernel: a producer index, a consumer
//! index and a power-of-two array of descriptors (16-byte `xdp_desc` for rx/tx, 8-byte UMEM
//! addresses for fill/completion).
//!
//! Invariants: indices are free-running u32s (the slot is `index & mask`); our side writes only
//! the index it owns (the producer of tx and fill, the consumer of rx and completion), with a
//! release store after the descriptors it covers, and reads the other with an acquire load.

use crate::error::SysError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// `struct xdp_ring_offset`: where the producer, consumer, descriptors and flags sit.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RingOffset {
    /// Offset of the producer index.
    pub producer: u64,
    /// Offset of the consumer index.
    pub consumer: u64,
    /// Offset of the descriptor array.
    pub desc: u64,
    /// Offset of the flags word (XDP_RING_NEED_WAKEUP).
    pub flags: u64,
}

/// A mapped ring.
pub struct Ring {
    map: *mut u8,
    len: usize,
    off: RingOffset,
    mask: u32,
    /// Our cached copy of the index we own.
    pub local: u32,
}

// SAFETY: the mapping belongs to this value alone; the shared indices are atomics.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}

impl Ring {
    /// Maps the ring of `entries` descriptors of `desc_size` bytes at page offset `pgoff`.
    pub fn map(
        fd: &OwnedFd,
        off: RingOffset,
        entries: u32,
        desc_size: usize,
        pgoff: u64,
        what: &str,
    ) -> Result<Self, SysError> {
        let len = off.desc as usize + entries as usize * desc_size;
        // SAFETY: maps the ring the kernel made for this socket; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff as libc::off_t,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(SysError::last(format!("mmap(AF_XDP {what} ring)")));
        }
        Ok(Self {
            map: map.cast(),
            len,
            off,
            mask: entries - 1,
            local: 0,
        })
    }

    fn index(&self, at: u64) -> &AtomicU32 {
        // SAFETY: the offset is the kernel's, inside the mapping, 4-byte aligned.
        unsafe { &*self.map.add(at as usize).cast::<AtomicU32>() }
    }

    /// The kernel's producer index (acquire).
    pub fn producer(&self) -> u32 {
        self.index(self.off.producer).load(Ordering::Acquire)
    }

    /// The kernel's consumer index (acquire).
    pub fn consumer(&self) -> u32 {
        self.index(self.off.consumer).load(Ordering::Acquire)
    }

    /// Publishes our producer index (release: after the descriptors it covers).
    pub fn publish_producer(&self, v: u32) {
        self.index(self.off.producer).store(v, Ordering::Release);
    }

    /// Publishes our consumer index (release: after we have read the descriptors).
    pub fn publish_consumer(&self, v: u32) {
        self.index(self.off.consumer).store(v, Ordering::Release);
    }

    /// A pointer to descriptor slot `i & mask` of type `T`.
    pub fn slot<T>(&self, i: u32) -> *mut T {
        let at = self.off.desc as usize + (i & self.mask) as usize * std::mem::size_of::<T>();
        // SAFETY: the slot is inside the mapping (masked index, len computed from entries).
        unsafe { self.map.add(at).cast() }
    }

    /// The ring's size.
    pub fn entries(&self) -> u32 {
        self.mask + 1
    }
}
