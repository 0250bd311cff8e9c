//! What an AF_XDP socket's two sides share: the socket, its UMEM (CHUNKS buffers of CHUNK
//! bytes, shared with the kernel), its rings' sizes and offsets, and the bind that says which
//! data path (copy or zero-copy) the kernel granted.
//!
//! Invariant: the UMEM is unmapped only when the socket value drops, after its rings (declared
//! before it in the owners, so dropped first) and with the descriptor closing last.

use super::ring::{Ring, RingOffset};
use super::{Granted, Mode};
use crate::error::SysError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const AF_XDP: libc::c_int = 44;
const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
pub(super) const XDP_RX_RING: libc::c_int = 2;
pub(super) const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_STATISTICS: libc::c_int = 7;
const XDP_OPTIONS: libc::c_int = 8;
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_OPTIONS_ZEROCOPY: u32 = 1;
pub(super) const PGOFF_RX_RING: u64 = 0;
pub(super) const PGOFF_TX_RING: u64 = 0x8000_0000;
const PGOFF_FILL_RING: u64 = 0x1_0000_0000;
const PGOFF_COMPLETION_RING: u64 = 0x1_8000_0000;

/// UMEM chunk size: one frame per chunk, up to 2048 bytes built (a 1518-byte frame fits).
pub const CHUNK: usize = 2048;
/// The largest frame a receiving socket takes: a chunk less the headroom the kernel keeps in
/// front of each received frame (`XDP_PACKET_HEADROOM`).
pub const MAX_RX_FRAME: usize = CHUNK - 256;
/// UMEM chunks; the fill and completion rings hold as many, so every chunk can be in flight.
pub const CHUNKS: u32 = 4096;

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Offsets {
    pub rx: RingOffset,
    pub tx: RingOffset,
    pub fr: RingOffset,
    pub cr: RingOffset,
}

/// An AF_XDP socket with its UMEM registered, its fill and completion rings mapped.
pub(super) struct Socket {
    pub fill: Ring,
    pub cq: Ring,
    pub off: Offsets,
    pub umem: *mut u8,
    pub fd: OwnedFd,
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: the UMEM mapped in `open`, unmapped once.
        unsafe { libc::munmap(self.umem.cast(), CHUNK * CHUNKS as usize) };
    }
}

pub(super) fn sockopt<T>(
    fd: &OwnedFd,
    name: libc::c_int,
    v: &T,
    what: &str,
) -> Result<(), SysError> {
    crate::packet_tx::setsockopt(fd, SOL_XDP, name, v, &format!("AF_XDP {what}"))
}

fn getsockopt<T: Default>(fd: &OwnedFd, name: libc::c_int, what: &str) -> Result<T, SysError> {
    let mut v = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: v is a T of len bytes for the call.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            name,
            (&mut v as *mut T).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(SysError::last(format!("getsockopt(AF_XDP {what})")));
    }
    Ok(v)
}

impl Socket {
    /// A socket with its UMEM registered and one more ring (`ring`: rx or tx, of `entries`)
    /// asked for before the offsets are read.
    pub fn open(ring: libc::c_int, entries: u32) -> Result<Self, SysError> {
        crate::caps::require_xsk()?;
        // SAFETY: plain socket(2), owned at once.
        let raw = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(SysError::last(
                "socket(AF_XDP): the kernel needs CONFIG_XDP_SOCKETS",
            ));
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem_len = CHUNK * CHUNKS as usize;
        // SAFETY: an anonymous private mapping, checked below.
        let umem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if umem == libc::MAP_FAILED {
            return Err(SysError::last("mmap(AF_XDP UMEM)"));
        }
        let umem: *mut u8 = umem.cast();
        let r = Self::rings(&fd, umem, ring, entries);
        match r {
            Ok((off, fill, cq)) => Ok(Self {
                fill,
                cq,
                off,
                umem,
                fd,
            }),
            Err(e) => {
                // SAFETY: the mapping made above, owned by no value yet.
                unsafe { libc::munmap(umem.cast(), umem_len) };
                Err(e)
            }
        }
    }

    fn rings(
        fd: &OwnedFd,
        umem: *mut u8,
        ring: libc::c_int,
        entries: u32,
    ) -> Result<(Offsets, Ring, Ring), SysError> {
        // struct xdp_umem_reg, first version: addr, len, chunk_size, headroom 0.
        let reg: [u64; 3] = [umem as u64, (CHUNK * CHUNKS as usize) as u64, CHUNK as u64];
        sockopt(fd, XDP_UMEM_REG, &reg, "XDP_UMEM_REG")?;
        sockopt(fd, XDP_UMEM_FILL_RING, &CHUNKS, "XDP_UMEM_FILL_RING")?;
        sockopt(
            fd,
            XDP_UMEM_COMPLETION_RING,
            &CHUNKS,
            "XDP_UMEM_COMPLETION_RING",
        )?;
        sockopt(
            fd,
            ring,
            &entries,
            if ring == XDP_RX_RING {
                "XDP_RX_RING"
            } else {
                "XDP_TX_RING"
            },
        )?;
        let off: Offsets = getsockopt(fd, XDP_MMAP_OFFSETS, "XDP_MMAP_OFFSETS")?;
        let fill = Ring::map(fd, off.fr, CHUNKS, 8, PGOFF_FILL_RING, "fill")?;
        let cq = Ring::map(fd, off.cr, CHUNKS, 8, PGOFF_COMPLETION_RING, "completion")?;
        Ok((off, fill, cq))
    }

    fn bind_as(&self, ifindex: u32, queue: u32, flags: u16) -> std::io::Result<()> {
        // struct sockaddr_xdp { u16 family; u16 flags; u32 ifindex; u32 queue_id; u32 shared_umem_fd; }
        let mut sa = [0u8; 16];
        sa[0..2].copy_from_slice(&(AF_XDP as u16).to_ne_bytes());
        sa[2..4].copy_from_slice(&flags.to_ne_bytes());
        sa[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        sa[8..12].copy_from_slice(&queue.to_ne_bytes());
        // SAFETY: sa is a sockaddr_xdp of the length given.
        let r = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                sa.as_ptr().cast(),
                sa.len() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Binds to queue `queue` of `ifindex` in `mode`; returns what the kernel granted.
    pub fn bind(&self, ifindex: u32, queue: u32, mode: Mode) -> Result<Granted, SysError> {
        let tried = match mode {
            Mode::ZeroCopy => self.bind_as(ifindex, queue, XDP_ZEROCOPY),
            Mode::Copy => self.bind_as(ifindex, queue, XDP_COPY),
            // A driver without zero-copy refuses XDP_ZEROCOPY before anything is set up, so
            // the socket can bind again in copy mode.
            Mode::Auto => self
                .bind_as(ifindex, queue, XDP_ZEROCOPY)
                .or_else(|_| self.bind_as(ifindex, queue, XDP_COPY)),
        };
        tried.map_err(|source| SysError::Call {
            call: format!(
                "bind(AF_XDP, ifindex {ifindex}, queue {queue}, {mode:?}): the interface or queue does not support this mode"
            ),
            source,
        })?;
        let flags: u32 = getsockopt(&self.fd, XDP_OPTIONS, "XDP_OPTIONS")?;
        Ok(if flags & XDP_OPTIONS_ZEROCOPY != 0 {
            Granted::ZeroCopy
        } else {
            Granted::Copy
        })
    }

    /// The socket's `XDP_STATISTICS`.
    pub fn stats(&self) -> Result<super::XskStats, SysError> {
        let v: [u64; 6] = getsockopt(&self.fd, XDP_STATISTICS, "XDP_STATISTICS")?;
        Ok(super::XskStats {
            rx_dropped: v[0],
            rx_invalid_descs: v[1],
            tx_invalid_descs: v[2],
            rx_ring_full: v[3],
            rx_fill_ring_empty: v[4],
        })
    }

    /// `len` bytes of the UMEM from `addr`, or `None` past its end (a descriptor the kernel
    /// wrote is never past it; the check keeps a bad one from reading out of bounds).
    ///
    /// # Safety
    /// The bytes must be this side's: a chunk on its free list or one the rx ring handed over.
    pub unsafe fn bytes(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let at = usize::try_from(addr).ok()?;
        if at.checked_add(len)? > CHUNK * CHUNKS as usize {
            return None;
        }
        // SAFETY: inside the UMEM (checked above); the caller owns the bytes.
        Some(unsafe { std::slice::from_raw_parts_mut(self.umem.add(at), len) })
    }
}
