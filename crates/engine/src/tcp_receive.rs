//! The receiving end of a `tcp_stream` connection, in the spec's receive mode
//! ([`RxMode`]): `copy` reads into user memory (one copy per byte, as applications do); `trunc`
//! asks the kernel to discard TCP data with MSG_TRUNC, counting it without a copy; `zerocopy`
//! maps whole pages of received data into the receiver's memory with TCP_ZEROCOPY_RECEIVE and
//! copies only what cannot be mapped (see [`ZeroCopy`]).
//!
//! Invariants: every mode counts every byte exactly once, so the receiver's total equals the
//! sender's; the three counts of [`ReceiveCounts`] add up to that total. A kernel that refuses
//! zerocopy at its first call (mmap or getsockopt) leaves the stream copying, and the counts
//! say so (`mode: copy`, `refused`). Over a Unix-domain socket every mode copies (the spec
//! check refuses the others there).
//!
//! At high rates every mode raises SO_RCVLOWAT (see [`LowWater`]) so that each wake-up takes a
//! large block instead of one segment; MSG_TRUNC reads and poll(2) obey it as reads do.

use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use wire::msg::{ReceiveCounts, StreamCounts, ZerocopyRefusal};
use wire::spec::RxMode;

use crate::{is_retry, Conn, EngineError, StreamControl, StreamReport, POLL_INTERVAL};

/// Reads `conn` to its end in `mode`, at most `len` bytes a call.
pub(crate) fn receive(
    conn: &mut Conn,
    len: usize,
    mode: RxMode,
    ctl: StreamControl<'_>,
) -> Result<StreamReport, EngineError> {
    let mut buf = vec![0u8; len];
    let mut counts = ReceiveCounts {
        mode: if conn.is_tcp() { mode } else { RxMode::Copy },
        ..Default::default()
    };
    match counts.mode {
        RxMode::Copy => counts.copied_bytes = drain(conn, &mut buf, ctl, |c, b| c.read(b))?,
        RxMode::Trunc => {
            counts.discarded_bytes = drain(conn, &mut buf, ctl, |c, b| {
                crate::sys_io::recv_with(c.as_raw_fd(), b, libc::MSG_TRUNC)
            })?
        }
        RxMode::Zerocopy => {
            let zc = ZeroCopy::new(conn.as_raw_fd(), len);
            zerocopy_or_copy(zc, conn, &mut buf, ctl, &mut counts)?
        }
    }
    counts.rcv_mss_bytes = rcv_mss(conn);
    let total = counts.total_bytes();
    Ok(StreamReport {
        bytes_total: total,
        counts: StreamCounts {
            bytes: total,
            receive: Some(counts),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Receives through `zc`, or, where the kernel refused it, copies, saying so in `counts`.
fn zerocopy_or_copy(
    zc: Result<ZeroCopy, ZerocopyRefusal>,
    conn: &mut Conn,
    buf: &mut [u8],
    ctl: StreamControl<'_>,
    counts: &mut ReceiveCounts,
) -> Result<(), EngineError> {
    match zc {
        Ok(zc) => zc.run(conn, buf, ctl, counts),
        Err(refused) => {
            counts.mode = RxMode::Copy;
            counts.refused = Some(refused);
            counts.copied_bytes = drain(conn, buf, ctl, |c, b| c.read(b))?;
            Ok(())
        }
    }
}

/// Calls `take` (one read of at most `buf.len()` bytes) until end of stream; the bytes taken.
#[inline]
fn drain(
    conn: &mut Conn,
    buf: &mut [u8],
    ctl: StreamControl<'_>,
    mut take: impl FnMut(&mut Conn, &mut [u8]) -> std::io::Result<usize>,
) -> Result<u64, EngineError> {
    let mut total = 0u64;
    let fd = conn.as_raw_fd();
    let mut low_water = LowWater::new(buf.len());
    loop {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        match take(conn, buf) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                ctl.counter.publish(total);
                low_water.after_read(fd, n);
            }
            Err(e) if is_retry(e.kind()) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// The receive MSS of a TCP connection (`tcpi_rcv_mss`), bytes.
fn rcv_mss(conn: &Conn) -> Option<u32> {
    if !conn.is_tcp() {
        return None;
    }
    measure::tcp_info::rcv_mss(conn.as_raw_fd()).ok().flatten()
}

/// `TCP_ZEROCOPY_RECEIVE` (linux/tcp.h), which the libc crate does not define.
const TCP_ZEROCOPY_RECEIVE: libc::c_int = 35;

/// `struct tcp_zerocopy_receive` of linux/tcp.h (64 bytes; older kernels read a prefix).
#[repr(C)]
#[derive(Debug, Default)]
struct TcpZerocopyReceive {
    /// In: the mapping's address.
    address: u64,
    /// In: bytes to map at most; out: bytes mapped.
    length: u32,
    /// Out: bytes to read with a copy before anything more can be mapped.
    recv_skip_hint: u32,
    /// Out: bytes still queued.
    inq: u32,
    /// Out: the socket's pending error, negated.
    err: i32,
    copybuf_address: u64,
    copybuf_len: i32,
    flags: u32,
    msg_control: u64,
    msg_controllen: u64,
    msg_flags: u32,
    reserved: u32,
}

/// What one TCP_ZEROCOPY_RECEIVE call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapped {
    /// Bytes mapped.
    mapped: u32,
    /// Bytes to copy before more can be mapped.
    skip: u32,
}

/// A receiver that maps received pages into a region of its own, as the kernel's
/// `tcp_mmap` selftest does: the socket is mmap'ed once (read-only, shared); each
/// getsockopt maps the next whole pages of the queue at the region's start, replacing the
/// previous call's pages, and says how many bytes must be copied (`recv_skip_hint`) before
/// more can be mapped: data not laid out in whole pages, such as segments of an MSS that is
/// not a page multiple, or less than a page queued.
#[derive(Debug)]
pub(crate) struct ZeroCopy {
    fd: RawFd,
    region: *mut libc::c_void,
    len: usize,
}

impl ZeroCopy {
    /// Maps a region of `len` bytes (rounded up to whole pages) of the socket `fd` and checks
    /// that the kernel takes TCP_ZEROCOPY_RECEIVE on it; the refusal otherwise.
    pub(crate) fn new(fd: RawFd, len: usize) -> Result<Self, ZerocopyRefusal> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = len.max(1).div_ceil(page) * page;
        // SAFETY: a fresh shared read-only mapping of the socket at an address the kernel
        // picks; nothing else refers to that range. Unmapped in `Drop`.
        let region = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if region == libc::MAP_FAILED {
            return Err(ZerocopyRefusal::Mmap { errno: errno() });
        }
        let zc = Self { fd, region, len };
        // A call that maps nothing (length 0) tells whether the kernel takes the option at all
        // (EIO: it does, and the stream has already ended).
        match zc.call(0) {
            Err(e) if e.raw_os_error() != Some(libc::EIO) => Err(ZerocopyRefusal::Getsockopt {
                errno: e.raw_os_error().unwrap_or(0),
            }),
            _ => Ok(zc),
        }
    }

    /// One TCP_ZEROCOPY_RECEIVE of at most `len` bytes into the region.
    fn call(&self, len: u32) -> std::io::Result<Mapped> {
        let mut zc = TcpZerocopyReceive {
            address: self.region as u64,
            length: len,
            ..Default::default()
        };
        let mut optlen = std::mem::size_of::<TcpZerocopyReceive>() as libc::socklen_t;
        // SAFETY: `zc` is a valid, writable tcp_zerocopy_receive of `optlen` bytes; the
        // address is this value's own mapping of the socket.
        let r = unsafe {
            libc::getsockopt(
                self.fd,
                libc::IPPROTO_TCP,
                TCP_ZEROCOPY_RECEIVE,
                (&mut zc as *mut TcpZerocopyReceive).cast(),
                &mut optlen,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if zc.err != 0 {
            return Err(std::io::Error::from_raw_os_error(zc.err.saturating_abs()));
        }
        Ok(Mapped {
            mapped: zc.length,
            skip: zc.recv_skip_hint,
        })
    }

    /// Receives to the end of the stream, counting mapped and copied bytes into `counts`.
    fn run(
        &self,
        conn: &mut Conn,
        buf: &mut [u8],
        ctl: StreamControl<'_>,
        counts: &mut ReceiveCounts,
    ) -> Result<(), EngineError> {
        let mut low_water = LowWater::new(buf.len());
        let chunk = u32::try_from(self.len).unwrap_or(u32::MAX);
        loop {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            let (mapped, copy) = match self.call(chunk) {
                Ok(m) => (m.mapped, m.skip as usize),
                // EIO: end of stream with nothing queued; the read below sees the end (or
                // the connection's error).
                Err(e) if e.raw_os_error() == Some(libc::EIO) => (0, buf.len()),
                Err(e) if is_retry(e.kind()) => continue,
                Err(e) => return Err(e.into()),
            };
            let mut copied = 0;
            if copy > 0 {
                let n = copy.min(buf.len());
                match conn.read(&mut buf[..n]) {
                    Ok(0) if mapped == 0 => break,
                    Ok(n) => copied = n,
                    Err(e) if is_retry(e.kind()) => {}
                    Err(e) => return Err(e.into()),
                }
            } else if mapped == 0 {
                // Nothing queued: wait for data (or the end). A poll that fails leaves the
                // next getsockopt to report the socket's error.
                crate::sys_io::poll_readable(&[self.fd], POLL_INTERVAL);
                continue;
            }
            counts.mapped_bytes += u64::from(mapped);
            counts.copied_bytes += copied as u64;
            ctl.counter
                .publish(counts.mapped_bytes + counts.copied_bytes);
            low_water.after_read(self.fd, mapped as usize + copied);
        }
        Ok(())
    }
}

impl Drop for ZeroCopy {
    fn drop(&mut self) {
        // SAFETY: `region` is this value's mapping of `len` bytes; nothing refers to it after.
        unsafe { libc::munmap(self.region, self.len) };
    }
}

// SAFETY: the region is only a kernel-managed mapping this value owns; nothing reads it.
unsafe impl Send for ZeroCopy {}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Adapts SO_RCVLOWAT to the arrival rate, measured over windows of [`LowWater::WINDOW`].
///
/// On, a read waits for `mark` bytes (or the socket's receive timeout, or end of stream), so
/// bytes already in the kernel can be counted up to `mark` bytes late: at the on-threshold
/// rate and above that is at most ~1 ms of data. Off, every arrival is read at once. Raising
/// it roughly halves the receiver's cost per byte on loopback; it switches back below
/// [`LowWater::OFF_BPS`] so slow links count bytes promptly.
#[derive(Debug)]
pub(crate) struct LowWater {
    mark: i32,
    on: bool,
    window_start: Instant,
    window_bytes: u64,
}

impl LowWater {
    /// Rate above which the low-water mark is raised, bits/s.
    pub const ON_BPS: f64 = 2e9;
    /// Rate below which it is lowered again, bits/s.
    pub const OFF_BPS: f64 = 1e9;
    /// How often the rate is judged.
    pub const WINDOW: Duration = Duration::from_millis(50);
    /// Largest mark used, bytes (≈1 ms at `ON_BPS`).
    pub const MAX_MARK: usize = 256 << 10;

    pub(crate) fn new(read_len: usize) -> Self {
        Self {
            mark: read_len.min(Self::MAX_MARK) as i32,
            on: false,
            window_start: Instant::now(),
            window_bytes: 0,
        }
    }

    /// Accounts `n` bytes just read; every window, switches the mark on or off by rate.
    #[inline]
    pub(crate) fn after_read(&mut self, fd: RawFd, n: usize) {
        self.window_bytes += n as u64;
        let elapsed = self.window_start.elapsed();
        if elapsed < Self::WINDOW {
            return;
        }
        let bps = self.window_bytes as f64 * 8.0 / elapsed.as_secs_f64();
        let want = if self.on {
            bps >= Self::OFF_BPS
        } else {
            bps >= Self::ON_BPS
        };
        if want != self.on
            && crate::sockopt::setsockopt_int(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                if want { self.mark } else { 1 },
            )
            .is_ok()
        {
            self.on = want;
        }
        self.window_start = Instant::now();
        self.window_bytes = 0;
    }
}

#[cfg(test)]
#[path = "tcp_receive/tests.rs"]
mod tests;
