//! A worker thread's own file-descriptor table, for the request/response loops.
//!
//! The threads of a process share one descriptor table, and the kernel pays for that on every
//! system call that names a descriptor: it takes a reference on the file and drops it after the
//! call (two atomic operations), because another thread could close the descriptor meanwhile.
//! A process with a single thread skips both, and netperf, sockperf and a C ping-pong are
//! single-threaded. A TCP request/response loop makes two such calls per transaction on each
//! end, so its worker asks for a table of its own, holding only its connection and standard
//! input, output and error: [`make_private`].
//!
//! Measured (C ping-pong over loopback, 64-byte messages, both ends on one core, ten
//! alternating 1 s runs): single-threaded p50 7.81 µs; the same program with one idle extra
//! thread 7.89 µs; that program after `unshare(CLONE_FILES)` 7.81 µs again. `linerate rr`,
//! sixteen alternating pairs: p50 8.27–8.34 µs with the shared table, 8.20–8.22 µs with its own.
//!
//! The worker's copy and the shared table's copy name the same socket under the same number.
//! The shared copy stays open while the worker runs, so that [`crate::Abort`] (raised from
//! another thread, in the shared table) can still shut the socket down; the worker's owner
//! closes it once the worker has ended ([`crate::Workers`]). Until then the socket is not
//! released when the worker drops its connection, so engines that run this way end their
//! streams with an explicit `shutdown` rather than relying on close.

use std::io;
use std::os::fd::RawFd;

/// Gives the calling thread a descriptor table of its own that holds only `keep` and
/// descriptors 0–2. Other threads keep the shared table, `keep` included.
///
/// Code running on this thread afterwards must not use any other descriptor opened before the
/// call (they are closed here). Descriptors it opens are its own: their numbers mean nothing
/// to other threads, so it must not register them with [`crate::Abort::wake_on_raise`], whose
/// shutdown runs in the raising thread's table.
pub(crate) fn make_private(keep: RawFd) -> io::Result<()> {
    // SAFETY: unshare(2) takes no pointers; with CLONE_FILES it only replaces this thread's
    // reference to the shared table by a copy of it.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // The copy holds a reference to every file the process had open; dropping them keeps this
    // thread from delaying the close of other threads' sockets (their FIN) until it ends.
    // Failure (a kernel before 5.9 has no close_range) only leaves those references in place.
    if keep >= 3 {
        close_range(3, keep as u32 - 1);
        close_range(keep as u32 + 1, u32::MAX);
    } else {
        close_range(3, u32::MAX);
    }
    Ok(())
}

/// Closes the shared table's copy of a descriptor that a worker took into its own table, once
/// that worker has ended.
pub(crate) fn close_shared_copy(fd: RawFd) {
    // SAFETY: close(2) takes no pointers. `fd` is this table's copy of a worker's connection:
    // no object here owns it any more (the connection moved to the worker), so nothing else
    // closes or uses it.
    unsafe { libc::close(fd) };
}

fn close_range(first: u32, last: u32) {
    if first <= last {
        // SAFETY: close_range(2) takes no pointers; it closes descriptors of this thread's own
        // table only (see `make_private`).
        unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    fn is_open(fd: RawFd) -> bool {
        // SAFETY: fcntl(F_GETFD) takes no pointers.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    }

    /// The thread keeps its socket and stdio, loses every other descriptor, and opens its own;
    /// the shared table keeps everything, and the socket outlives the thread's copy until the
    /// shared copy is closed too.
    #[test]
    fn a_private_table_keeps_the_connection_only() {
        let (mine, mut peer) = UnixStream::pair().unwrap();
        let (other, _other_peer) = UnixStream::pair().unwrap();
        let (fd, other_fd) = (mine.as_raw_fd(), other.as_raw_fd());
        let (opened_there, seen) = std::thread::spawn(move || {
            make_private(fd).unwrap();
            let seen = (is_open(fd), is_open(other_fd), is_open(2));
            let (a, _b) = UnixStream::pair().unwrap();
            let opened = a.as_raw_fd();
            (&mine).write_all(b"x").unwrap();
            drop(mine); // closes the thread's copy only
            std::mem::forget(a); // released with the thread's table
            (opened, seen)
        })
        .join()
        .unwrap();
        assert_eq!(
            seen,
            (true, false, true),
            "connection, other socket, stderr"
        );
        assert!(
            is_open(other_fd),
            "other threads still see their descriptors"
        );
        assert!(
            is_open(fd),
            "the shared copy of the connection is still open"
        );
        let mut buf = [0u8; 1];
        assert_eq!(peer.read(&mut buf).unwrap(), 1);
        peer.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        assert!(peer.read(&mut buf).is_err(), "no end of stream yet");
        close_shared_copy(fd);
        peer.set_read_timeout(None).unwrap();
        assert_eq!(
            peer.read(&mut buf).unwrap(),
            0,
            "closed once both copies are"
        );
        // The thread's own descriptor number may be taken here by anything; nothing to check
        // beyond the thread having had one.
        assert!(opened_there >= 0);
    }
}
