//! The sender's zero-copy source for TCP: the pattern's pages held in a pipe, duplicated with
//! tee(2) into a second pipe that splice(2) empties into the socket.
//!
//! sendfile(2) from a memfd looks every 4 KiB page up in the file again on every call (about a
//! fifth of a loopback sender's CPU); tee(2) only takes references to pages already in a pipe.
//! The stream carries whole copies of the pattern in order: the second pipe is refilled only
//! when the socket has taken everything in it.
//!
//! The whole pattern is held, one page per 4 KiB of it: every page reference the sender takes
//! (tee), hands on (splice) and the receiver drops (freeing the skb) is an atomic on that
//! page's refcount, and both cores do them. Holding only the first 64 KiB and teeing it again
//! and again put every one of those atomics on the same 16 pages, whose cache lines then
//! bounced between the cores on every call (tee, pipe release and skb free were 40 % of a
//! loopback sender's profile): holding all 128 pages of the default 512 KiB took one loopback
//! stream from 103-107 to 120-139 Gbit/s under CUBIC (alternating runs), two streams unchanged.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The pattern in a pipe (`held`), and the pipe it is duplicated into for each send (`out`).
#[derive(Debug)]
pub(crate) struct SpliceSource {
    held: (OwnedFd, OwnedFd),
    out: (OwnedFd, OwnedFd),
    len: usize,
    queued: usize,
}

impl SpliceSource {
    /// Holds the first `len` bytes of `file` in a pipe, or says why that is not possible here (a
    /// pipe cannot be made that large: above /proc/sys/fs/pipe-max-size for an unprivileged
    /// process).
    pub(crate) fn new(file: &std::fs::File, len: usize) -> io::Result<Self> {
        let held = pipe_of(len)?;
        let out = pipe_of(len)?;
        let mut off: libc::loff_t = 0;
        while (off as usize) < len {
            // SAFETY: both descriptors are open; `off` is a valid pointer.
            let n = unsafe {
                libc::splice(
                    file.as_raw_fd(),
                    &mut off,
                    held.1.as_raw_fd(),
                    std::ptr::null_mut(),
                    len - off as usize,
                    0,
                )
            };
            if n <= 0 {
                return Err(if n == 0 {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "pattern file shorter than its length",
                    )
                } else {
                    io::Error::last_os_error()
                });
            }
        }
        Ok(Self {
            held,
            out,
            len,
            queued: 0,
        })
    }

    /// Sends up to one pattern's worth of bytes, at most `max`, to `sock`; returns how many it
    /// took.
    pub(crate) fn send(&mut self, sock: RawFd, max: usize) -> io::Result<usize> {
        if self.queued == 0 {
            self.refill()?;
        }
        // SAFETY: the pipe's read end and the socket are open; null offsets for both.
        let n = unsafe {
            libc::splice(
                self.out.0.as_raw_fd(),
                std::ptr::null_mut(),
                sock,
                std::ptr::null_mut(),
                self.queued.min(max),
                0,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        self.queued -= n as usize;
        Ok(n as usize)
    }
}

impl SpliceSource {
    /// Fills the empty `out` pipe with one whole pattern, teed from `held` (in more than one
    /// call only where the kernel takes part of one).
    fn refill(&mut self) -> io::Result<()> {
        while self.queued < self.len {
            let want = self.len - self.queued;
            // SAFETY: both descriptors are open pipe ends.
            let n = unsafe { libc::tee(self.held.0.as_raw_fd(), self.out.1.as_raw_fd(), want, 0) };
            if n <= 0 {
                if self.queued > 0 && n == 0 {
                    break;
                }
                return Err(io::Error::last_os_error());
            }
            self.queued += n as usize;
        }
        Ok(())
    }
}

/// A pipe (read end, write end) holding at least `len` bytes.
fn pipe_of(len: usize) -> io::Result<(OwnedFd, OwnedFd)> {
    let size =
        libc::c_int::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let pipe = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETPIPE_SZ takes an int argument; the descriptor is open.
    let got = unsafe { libc::fcntl(pipe.1.as_raw_fd(), libc::F_SETPIPE_SZ, size) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_stream_is_whole_patterns_in_order_even_when_the_socket_takes_part_of_a_call() {
        whole_patterns_in_order(100_000); // not a whole number of pages
        whole_patterns_in_order((192 << 10) + 4096); // whole pages
    }

    fn whole_patterns_in_order(len: usize) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // Small buffers at both ends (the accepted socket inherits the listener's), a 1 ms send
        // timeout, and a reader that waits until a call came back short: the socket must take
        // part of a call.
        let small = |fd| {
            crate::sockopt::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 8192).unwrap();
            crate::sockopt::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, 8192).unwrap();
        };
        small(listener.as_raw_fd());
        let tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        small(tx.as_raw_fd());
        tx.set_write_timeout(Some(std::time::Duration::from_millis(1)))
            .unwrap();
        let file = crate::tcp_stream::PatternFile::new(len).unwrap();
        let mut source = SpliceSource::new(&file.file, len).unwrap();
        let want = 3 * len + 12_345;
        let short_call = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&short_call);
        let sender = std::thread::spawn(move || {
            let (mut sent, mut calls, mut partial) = (0, 0, 0);
            while sent < want {
                match source.send(tx.as_raw_fd(), usize::MAX) {
                    Ok(n) => {
                        sent += n;
                        calls += 1;
                        partial += usize::from(n < len);
                        if n < len {
                            seen.store(true, std::sync::atomic::Ordering::Release);
                        }
                    }
                    Err(e) if crate::is_retry(e.kind()) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            (sent, calls, partial)
        });
        let mut got = Vec::new();
        let waiting = std::time::Instant::now();
        while !short_call.load(std::sync::atomic::Ordering::Acquire)
            && waiting.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut chunk = vec![0u8; 4096];
        while got.len() < want {
            let n = rx.read(&mut chunk).unwrap();
            got.extend_from_slice(&chunk[..n]);
        }
        let (sent, calls, partial) = sender.join().unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        while got.len() < sent {
            let n = rx.read(&mut chunk).unwrap();
            got.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(got.len(), sent);
        assert!(partial > 0, "{calls} calls, none partial");
        let pattern = crate::pattern(len);
        for (i, block) in got.chunks(len).enumerate() {
            assert_eq!(block, &pattern[..block.len()], "block {i}");
        }
    }
}
