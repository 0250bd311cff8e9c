//! Socket send and receive as bare system calls, for the request/response hot paths.
//!
//! glibc's `send` and `recv` are thread-cancellation points: in a process with more than one
//! thread (linerate always has several), each call turns asynchronous cancellation on before
//! the system call and off after it, two atomic updates of the thread's cancel state. linerate
//! never cancels a thread, so the loops that make one small call per message call the kernel
//! directly. With client and server on one core, six alternating pairs of 2 s `rr` runs (64-byte
//! messages, loopback) gave p50 8.54 µs and 111,900 transactions/s through glibc, 8.31 µs and
//! 116,800/s this way (medians); netperf TCP_RR, single-threaded, 118,000/s in the same runs.

use std::io;
use std::os::fd::RawFd;

/// `send(fd, buf, MSG_NOSIGNAL)`, as std's sockets send: bytes taken.
#[inline]
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    send_with(fd, buf, 0)
}

/// `send(fd, buf, flags | MSG_NOSIGNAL)`: bytes taken.
#[inline]
pub fn send_with(fd: RawFd, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: sendto(2) reads `buf.len()` bytes from a valid slice; no address is passed.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            buf.as_ptr(),
            buf.len(),
            flags | libc::MSG_NOSIGNAL,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::socklen_t,
        )
    };
    result(n)
}

/// `recv(fd, buf, 0)`: bytes read, 0 at end of stream.
#[inline]
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    recv_with(fd, buf, 0)
}

/// `recv(fd, buf, flags)`: bytes read, 0 at end of stream.
#[inline]
pub fn recv_with(fd: RawFd, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: recvfrom(2) writes at most `buf.len()` bytes into a valid slice; no address is
    // asked for.
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            buf.as_mut_ptr(),
            buf.len(),
            flags,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    result(n)
}

fn result(n: libc::c_long) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Waits up to `timeout` (at least 1 ms) until any of `fds` is readable, closed or in error;
/// which of them are, in the order given (none on a timeout, an interrupt or a failed poll).
pub fn poll_readable(fds: &[RawFd], timeout: std::time::Duration) -> Vec<bool> {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `set` is a valid array of `set.len()` pollfds for the call's duration.
    let n = unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, ms) };
    set.iter().map(|p| n > 0 && p.revents != 0).collect()
}

/// The soft limit on this process's open descriptors (`RLIMIT_NOFILE`); 1024, Linux's usual
/// default, if it cannot be read.
pub fn open_files_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the valid struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    lim.rlim_cur
}

/// Buffers from 128 KiB up are mapped for themselves and unmapped when freed, and an arena
/// keeps at most 128 KiB free at its top (glibc's `mallopt` thresholds, fixed rather than
/// raised by the first big buffer freed, which would let each of up to 8 arenas a core keep
/// half a MiB or more for good). For a long-running server; elsewhere it does nothing.
pub fn bound_freed_memory_kept() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for param in [libc::M_MMAP_THRESHOLD, libc::M_TRIM_THRESHOLD] {
        // SAFETY: mallopt only sets the allocator's own tunables.
        unsafe {
            libc::mallopt(param, 128 << 10);
        }
    }
}

/// Hands the allocator's free memory back to the operating system (glibc's `malloc_trim`:
/// every arena's free pages, not only the top of the main heap). A server calls it when its
/// last test ends, so its resident memory returns near its idle size instead of keeping each
/// thread arena's high-water mark; elsewhere it does nothing.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn sends_and_receives_like_the_socket_calls() {
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(send(a.as_raw_fd(), b"request").unwrap(), 7);
        let mut buf = [0u8; 16];
        assert_eq!(recv(b.as_raw_fd(), &mut buf).unwrap(), 7);
        assert_eq!(&buf[..7], b"request");
        drop(a);
        assert_eq!(recv(b.as_raw_fd(), &mut buf).unwrap(), 0, "end of stream");
        let err = send(b.as_raw_fd(), b"x").unwrap_err();
        assert_eq!(
            err.raw_os_error(),
            Some(libc::EPIPE),
            "no SIGPIPE: an error"
        );
        assert_eq!(
            recv(-1, &mut buf).unwrap_err().raw_os_error(),
            Some(libc::EBADF)
        );
    }
}
