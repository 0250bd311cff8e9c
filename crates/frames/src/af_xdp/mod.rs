//! The `xdp` engine's sending side: an AF_XDP socket on one queue of an interface, with its
//! UMEM (frame buffers shared with the kernel) and its rings: tx (frames to send), completion
//! (buffers the kernel is done with), and the fill ring a bind requires (this socket receives
//! nothing; the rx side comes with the receiver's redirect in a later step).
//!
//! Zero-copy where the driver offers it, copy mode otherwise ([`Mode::Auto`]); [`XskTx::granted`]
//! says which the kernel gave, read back with `XDP_OPTIONS`, not assumed. A veth has no
//! zero-copy: it gets copy mode (the kernel builds an skb per frame and hands it to the driver).
//!
//! What "sent" means is as for the packet engine (`packet_tx`): a frame the driver accepted.
//! A frame the driver drops still completes, but ends that `sendto` with EBUSY, one per drop:
//! counted in `refused` and replaced by a new frame.
//!
//! Invariants: a UMEM chunk is either on the free list or in the kernel's hands (tx ring →
//! completion ring), never both; every wait is bounded by the run's deadline plus
//! [`crate::packet_tx::DRAIN`].

pub mod ring;

use crate::error::SysError;
use crate::frame::Frames;
use crate::packet_tx::{SendLimit, TxCounts, DRAIN};
use ring::{Ring, RingOffset};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

const AF_XDP: libc::c_int = 44;
const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_OPTIONS: libc::c_int = 8;
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_OPTIONS_ZEROCOPY: u32 = 1;
const PGOFF_TX_RING: u64 = 0x8000_0000;
const PGOFF_FILL_RING: u64 = 0x1_0000_0000;
const PGOFF_COMPLETION_RING: u64 = 0x1_8000_0000;

/// UMEM chunk size: one frame per chunk, up to 2048 bytes built (a 1518-byte frame fits).
pub const CHUNK: usize = 2048;
/// UMEM chunks: as many as the completion ring holds, so every chunk can be in flight.
const CHUNKS: u32 = 4096;
const TX_ENTRIES: u32 = 2048;

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
    /// The kernel copies each frame into an skb (`XDP_COPY`).
    Copy,
    /// The driver sends from the UMEM itself (`XDP_ZEROCOPY`).
    ZeroCopy,
}

/// `struct xdp_desc`: a frame in the UMEM.
#[repr(C)]
struct Desc {
    addr: u64,
    len: u32,
    options: u32,
}

/// An AF_XDP socket sending on one queue.
pub struct XskTx {
    tx: Ring,
    cq: Ring,
    _fill: Ring,
    fd: OwnedFd,
    umem: *mut u8,
    free: Vec<u64>,
    granted: Granted,
}

// SAFETY: the UMEM and rings belong to this value alone.
unsafe impl Send for XskTx {}

impl Drop for XskTx {
    fn drop(&mut self) {
        // SAFETY: the UMEM mapped in `open`, unmapped once (the rings unmap themselves; the
        // socket closes after, releasing the kernel's hold on the UMEM).
        unsafe { libc::munmap(self.umem.cast(), CHUNK * CHUNKS as usize) };
    }
}

fn sockopt<T>(fd: &OwnedFd, name: libc::c_int, v: &T, what: &str) -> Result<(), SysError> {
    // SAFETY: v is a T of size_of::<T>() bytes for the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(SysError::last(format!("setsockopt(AF_XDP {what})")));
    }
    Ok(())
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

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct Offsets {
    rx: RingOffset,
    tx: RingOffset,
    fr: RingOffset,
    cr: RingOffset,
}

impl XskTx {
    /// Opens a socket on queue `queue` of interface `ifindex` in `mode`.
    pub fn open(ifindex: u32, queue: u32, mode: Mode) -> Result<Self, SysError> {
        crate::caps::require("the xdp engine (AF_XDP)", &[crate::caps::Cap::NetRaw], &[])?;
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
        // Until the value below owns it, a failure must unmap the UMEM itself.
        let reg: [u64; 3] = [umem as u64, umem_len as u64, CHUNK as u64]; // chunk_size, headroom 0
        let r = sockopt(&fd, XDP_UMEM_REG, &reg, "XDP_UMEM_REG")
            .and_then(|_| sockopt(&fd, XDP_UMEM_FILL_RING, &64u32, "XDP_UMEM_FILL_RING"))
            .and_then(|_| {
                sockopt(
                    &fd,
                    XDP_UMEM_COMPLETION_RING,
                    &CHUNKS,
                    "XDP_UMEM_COMPLETION_RING",
                )
            })
            .and_then(|_| sockopt(&fd, XDP_TX_RING, &TX_ENTRIES, "XDP_TX_RING"))
            .and_then(|_| getsockopt::<Offsets>(&fd, XDP_MMAP_OFFSETS, "XDP_MMAP_OFFSETS"));
        let off = match r {
            Ok(off) => off,
            Err(e) => {
                // SAFETY: the mapping made above, not yet owned by a value.
                unsafe { libc::munmap(umem.cast(), umem_len) };
                return Err(e);
            }
        };
        let rings = Ring::map(&fd, off.tx, TX_ENTRIES, 16, PGOFF_TX_RING, "tx").and_then(|tx| {
            let cq = Ring::map(&fd, off.cr, CHUNKS, 8, PGOFF_COMPLETION_RING, "completion")?;
            let fill = Ring::map(&fd, off.fr, 64, 8, PGOFF_FILL_RING, "fill")?;
            Ok((tx, cq, fill))
        });
        let (tx, cq, fill) = match rings {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: as above.
                unsafe { libc::munmap(umem.cast(), umem_len) };
                return Err(e);
            }
        };
        let mut x = Self {
            tx,
            cq,
            _fill: fill,
            fd,
            umem,
            free: (0..u64::from(CHUNKS))
                .rev()
                .map(|i| i * CHUNK as u64)
                .collect(),
            granted: Granted::Copy,
        };
        x.granted = x.bind(ifindex, queue, mode)?;
        Ok(x)
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

    fn bind(&self, ifindex: u32, queue: u32, mode: Mode) -> Result<Granted, SysError> {
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
            call: format!("bind(AF_XDP, ifindex {ifindex}, queue {queue}, {mode:?}): the interface or queue does not support this mode"),
            source,
        })?;
        let flags: u32 = getsockopt(&self.fd, XDP_OPTIONS, "XDP_OPTIONS")?;
        Ok(if flags & XDP_OPTIONS_ZEROCOPY != 0 {
            Granted::ZeroCopy
        } else {
            Granted::Copy
        })
    }

    /// The data path the kernel granted.
    pub fn granted(&self) -> Granted {
        self.granted
    }

    /// Frees the chunks the kernel has completed; returns how many.
    fn complete(&mut self) -> u64 {
        let prod = self.cq.producer();
        let n = prod.wrapping_sub(self.cq.local);
        for _ in 0..n {
            // SAFETY: slots between our consumer and the kernel's producer are filled.
            let addr = unsafe { self.cq.slot::<u64>(self.cq.local).read_volatile() };
            self.free.push(addr);
            self.cq.local = self.cq.local.wrapping_add(1);
        }
        self.cq.publish_consumer(self.cq.local);
        u64::from(n)
    }

    /// Tells the kernel to send; returns whether the driver dropped a frame (EBUSY).
    fn kick(&self) -> Result<bool, SysError> {
        // SAFETY: a zero-length sendto with no buffer, as AF_XDP documents.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
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

    /// Sends `frames`' frames, flow after flow, until `limit`.
    pub fn send(
        &mut self,
        frames: &Frames,
        limit: SendLimit,
        clock: impl Fn() -> u64,
    ) -> Result<TxCounts, SysError> {
        let len = frames.built_len();
        if len > CHUNK {
            return Err(SysError::Slot { len, slot: CHUNK });
        }
        let start = Instant::now();
        let deadline = start + limit.time;
        let mut c = TxCounts::default();
        let (mut seq, mut submitted, mut completed) = (0u64, 0u64, 0u64);
        loop {
            completed += self.complete();
            let in_flight = submitted - completed;
            let accepted = completed.saturating_sub(c.refused);
            let now = Instant::now();
            let room = self.tx.entries() - self.tx.local.wrapping_sub(self.tx.consumer());
            let want = limit.frames.saturating_sub(accepted + in_flight);
            let n = want.min(self.free.len() as u64).min(u64::from(room));
            let n = if now < deadline { n } else { 0 };
            for _ in 0..n {
                let Some(addr) = self.free.pop() else { break };
                // SAFETY: the chunk is ours (free list), CHUNK bytes inside the UMEM.
                let buf =
                    unsafe { std::slice::from_raw_parts_mut(self.umem.add(addr as usize), CHUNK) };
                frames.write(buf, seq as usize, seq, clock());
                // SAFETY: the slot is ours: fewer than `entries` descriptors are outstanding.
                unsafe {
                    self.tx.slot::<Desc>(self.tx.local).write(Desc {
                        addr,
                        len: len as u32,
                        options: 0,
                    })
                };
                self.tx.local = self.tx.local.wrapping_add(1);
                seq += 1;
            }
            submitted += n;
            self.tx.publish_producer(self.tx.local);
            if submitted > completed && self.kick()? {
                c.refused += 1;
            }
            let ended = accepted >= limit.frames || now >= deadline;
            if (ended && submitted == completed) || now >= deadline + DRAIN {
                break;
            }
            if n == 0 {
                std::thread::yield_now();
            }
        }
        c.sent = completed.saturating_sub(c.refused);
        c.bytes = c.sent * len as u64;
        c.elapsed = start.elapsed();
        Ok(c)
    }
}
