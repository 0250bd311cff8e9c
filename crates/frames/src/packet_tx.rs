//! The `packet` engine: frames sent through an AF_PACKET socket's `PACKET_TX_RING` (TPACKET_V2),
//! with `PACKET_QDISC_BYPASS` so they go straight to the driver, as trafgen does.
//!
//! The ring is a shared mapping of fixed slots; each slot opens with a `tpacket2_hdr` whose
//! `tp_status` passes ownership: AVAILABLE (0, ours) → SEND_REQUEST (1, the kernel's) → back to
//! AVAILABLE when sent, or WRONG_FORMAT (4) when refused. `send(fd, NULL, 0)` tells the kernel to
//! walk the ring.
//!
//! What "sent" means: a frame the driver accepted. A frame the driver drops (a veth peer's full
//! XDP ring, a NIC's full TX queue) comes back AVAILABLE like a sent one, but the kernel then ends
//! that `send` with an error (ENOBUFS), one per dropped frame, so [`crate::send::TxCounts::refused`] counts
//! them, and the sender writes another frame in its place: a run limited to N frames ends with
//! exactly N accepted by the driver (their sequence numbers then have gaps, one per refusal).
//!
//! Invariants: the sender touches only slots it owns (status AVAILABLE); every wait is bounded by
//! the run's deadline plus [`crate::send::DRAIN`] (the loop is [`crate::send`]'s); the socket is bound to one interface by index and built with
//! protocol 0, so it receives nothing.

use crate::error::SysError;
use crate::frame::Frames;
use crate::send::{Control, FrameTx, SendLimit, TxCounts};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const TPACKET_V2: libc::c_int = 1;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_TX_RING: libc::c_int = 13;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
/// Where a TX frame's data starts in a TPACKET_V2 slot: TPACKET_ALIGN(sizeof(tpacket2_hdr)).
const DATA_AT: usize = 32;
/// The ring's geometry: `slots` slots of `slot_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSize {
    /// Bytes per slot (a power of two, at least the frame plus 32).
    pub slot_size: usize,
    /// Slots in the ring.
    pub slots: usize,
}

impl RingSize {
    /// The smallest power-of-two slot for frames of `built_len` bytes, 4096 slots (trafgen's
    /// order of magnitude: enough to keep the driver fed between the sender's batches).
    pub fn for_frames(built_len: usize) -> Self {
        Self {
            slot_size: (built_len + DATA_AT).next_power_of_two().max(128),
            slots: 4096,
        }
    }
}

/// An AF_PACKET socket with a mapped TX ring, bound to one interface.
pub struct PacketTx {
    fd: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    size: RingSize,
    /// Slots `tail..head` (mod slots, `in_ring` of them) are the kernel's, sent in ring order.
    head: usize,
    tail: usize,
    in_ring: usize,
}

// SAFETY: the mapping is owned by this value alone and only touched through &mut self.
unsafe impl Send for PacketTx {}

impl Drop for PacketTx {
    fn drop(&mut self) {
        // SAFETY: ring/ring_len are the mapping made in `open`, unmapped once, here.
        unsafe { libc::munmap(self.ring.cast(), self.ring_len) };
    }
}

/// `setsockopt(fd, level, name, v)`, an error naming `what` (the AF_XDP socket's too).
pub(crate) fn setsockopt<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    v: &T,
    what: &str,
) -> Result<(), SysError> {
    // SAFETY: v points to a T of size_of::<T>() bytes for the call's duration.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(SysError::last(format!("setsockopt({what})")));
    }
    Ok(())
}

impl PacketTx {
    /// Opens the socket on interface `ifindex` with a ring of `size`.
    pub fn open(ifindex: u32, size: RingSize) -> Result<Self, SysError> {
        crate::caps::require_packet()?;
        // SAFETY: plain socket(2); the descriptor is owned at once.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(SysError::last("socket(AF_PACKET, SOCK_RAW)"));
        }
        // SAFETY: raw is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            PACKET_VERSION,
            &TPACKET_V2,
            "PACKET_VERSION TPACKET_V2",
        )?;
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            PACKET_QDISC_BYPASS,
            &1 as &libc::c_int,
            "PACKET_QDISC_BYPASS",
        )?;
        let block = size.slot_size.max(4096);
        let per_block = block / size.slot_size;
        let blocks = size.slots.div_ceil(per_block);
        let req = [
            block as u32,
            blocks as u32,
            size.slot_size as u32,
            (blocks * per_block) as u32,
        ];
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            PACKET_TX_RING,
            &req,
            "PACKET_TX_RING",
        )?;
        let ring_len = block * blocks;
        // SAFETY: maps the ring the kernel just allocated for this descriptor.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(SysError::last("mmap(PACKET_TX_RING)"));
        }
        let tx = Self {
            fd,
            ring: ring.cast(),
            ring_len,
            size: RingSize {
                slots: blocks * per_block,
                ..size
            },
            head: 0,
            tail: 0,
            in_ring: 0,
        };
        tx.bind(ifindex)?;
        Ok(tx)
    }

    fn bind(&self, ifindex: u32) -> Result<(), SysError> {
        // SAFETY: sockaddr_ll is plain data; zero is a valid value of every field.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: sll is a sockaddr_ll of the length given.
        let r = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(SysError::last(format!(
                "bind(AF_PACKET, ifindex {ifindex})"
            )));
        }
        Ok(())
    }

    /// The slot's status word, read and written volatile: the kernel shares it.
    fn status(&self, slot: usize) -> *mut u32 {
        // SAFETY: slot < slots, so the offset is inside the mapping; slots are 32-byte aligned.
        unsafe { self.ring.add(slot * self.size.slot_size).cast() }
    }

    /// Asks the kernel to send the slots marked SEND_REQUEST, without waiting. Returns whether
    /// the driver dropped a frame (the kernel's ENOBUFS; see the module doc).
    fn kick(&self) -> Result<bool, SysError> {
        // SAFETY: a zero-length send with no buffer, as PACKET_TX_RING documents.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
        if r >= 0 {
            return Ok(false);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(false),
            Some(libc::ENOBUFS) => Ok(true),
            _ => Err(SysError::Call {
                call: "send(PACKET_TX_RING)".into(),
                source: e,
            }),
        }
    }

    /// Sends `frames`' frames, flow after flow, until `limit`; `clock` gives each frame's send
    /// time in ns (the data header's `sent_ns`).
    pub fn send(
        &mut self,
        frames: &Frames,
        limit: SendLimit,
        clock: impl Fn() -> u64,
    ) -> Result<TxCounts, SysError> {
        crate::send::send(self, frames, Control::limit(limit), &clock)
    }

    /// Waits up to 1 ms for the ring to have room (POLLOUT).
    fn wait_writable(&self) {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call.
        unsafe { libc::poll(&mut p, 1, 1) };
    }
}

impl FrameTx for PacketTx {
    fn slot_room(&self) -> usize {
        self.size.slot_size - DATA_AT
    }

    fn reap(&mut self) -> (u64, u64) {
        let (mut done, mut wrong) = (0, 0);
        while self.in_ring > 0 {
            // SAFETY: status() points into the mapping.
            match unsafe { self.status(self.tail).read_volatile() } {
                TP_STATUS_AVAILABLE => done += 1,
                TP_STATUS_WRONG_FORMAT => wrong += 1,
                _ => break,
            }
            self.tail = (self.tail + 1) % self.size.slots;
            self.in_ring -= 1;
        }
        (done, wrong)
    }

    fn room(&self) -> u64 {
        (self.size.slots - self.in_ring) as u64
    }

    fn queue(&mut self, frames: &Frames, n: u64, seq: u64, clock: &dyn Fn() -> u64) -> u64 {
        let (len, room) = (frames.built_len(), self.slot_room());
        // One send time per call: the frames of a call go on the ring within microseconds and
        // leave over the kick that follows, so a per-frame clock read (a few % of the core at
        // line rate) would time the writing, not the sending.
        let now = clock();
        let mut queued = 0;
        while queued < n && self.in_ring < self.size.slots {
            // SAFETY: head is not between tail and head, so the slot is ours; its data area is
            // `room` bytes inside the mapping.
            let data = unsafe {
                std::slice::from_raw_parts_mut(
                    self.ring.add(self.head * self.size.slot_size + DATA_AT),
                    room,
                )
            };
            let s = seq + queued;
            frames.write(data, s as usize, s, now);
            let st = self.status(self.head);
            // SAFETY: tp_len is the u32 after tp_status in tpacket2_hdr.
            unsafe { st.add(1).write_volatile(len as u32) };
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            // SAFETY: hands the slot to the kernel.
            unsafe { st.write_volatile(TP_STATUS_SEND_REQUEST) };
            self.head = (self.head + 1) % self.size.slots;
            self.in_ring += 1;
            queued += 1;
        }
        queued
    }

    fn kick(&mut self) -> Result<bool, SysError> {
        PacketTx::kick(self)
    }

    fn wait(&self) {
        self.wait_writable();
    }
}
