//! The congestion control algorithm of a TCP socket (TCP_CONGESTION): only a name the host
//! lists in `tcp_available_congestion_control` is ever set. [`check_congestion`] runs before a
//! test's sockets are made, on every path that takes a name from a peer or a flag (the
//! server's setup, its iperf3 path, the client commands); the per-socket set in
//! `sockopt::SocketOptions::apply` then does not read the list again (one read per test, not
//! per `tcp_crr` connection). Why: with CAP_NET_ADMIN, an unlisted name makes the kernel try
//! to load a module `tcp_<name>`.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

use crate::EngineError;

/// The list of congestion control algorithms the host offers to unprivileged sockets' peers.
const AVAILABLE_CONGESTION: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Checks that a congestion control algorithm can be used, before any test starts: it must be
/// one the host lists as available, so a name from a peer never reaches TCP_CONGESTION
/// unlisted (with CAP_NET_ADMIN the kernel would try to load a module `tcp_<name>`). Every
/// path that takes a name from a peer or a flag calls this before the sockets are made; the
/// per-socket options ([`crate::sockopt::SocketOptions`], as each socket is made) then set it
/// without reading the list again.
pub fn check_congestion(name: &str) -> Result<(), EngineError> {
    let available = std::fs::read_to_string(AVAILABLE_CONGESTION)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    if !available.split(' ').any(|a| a == name) {
        return Err(EngineError::UnknownCongestion {
            name: name.to_string(),
            available: if available.is_empty() {
                format!("none listed in {AVAILABLE_CONGESTION}")
            } else {
                available
            },
        });
    }
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    set_congestion(sock.as_raw_fd(), name)
}

/// The congestion control algorithm a TCP socket runs (TCP_CONGESTION), if it can be read.
pub(crate) fn congestion_of(fd: RawFd) -> Option<String> {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: the pointer and length describe `name`, which outlives the call; the kernel
    // writes at most `len` bytes and stores the length it wrote.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let name = &name[..(len as usize).min(name.len())];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    std::str::from_utf8(&name[..end]).ok().map(str::to_string)
}

pub(crate) fn set_congestion(fd: RawFd, name: &str) -> Result<(), EngineError> {
    // SAFETY: the pointer and length describe `name`'s bytes, which outlive the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOENT) || err.raw_os_error() == Some(libc::EPERM) {
        let available = std::fs::read_to_string(AVAILABLE_CONGESTION)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        return Err(EngineError::UnknownCongestion {
            name: name.to_string(),
            available,
        });
    }
    Err(EngineError::SocketOption {
        option: "--congestion",
        value: name.to_string(),
        source: err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sockets_congestion_control_reads_back_as_set() {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set_congestion(sock.as_raw_fd(), "reno").unwrap();
        assert_eq!(congestion_of(sock.as_raw_fd()).as_deref(), Some("reno"));
    }

    #[test]
    fn unknown_congestion_names_what_is_available() {
        let err = check_congestion("no-such-algo").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("no-such-algo") && text.contains("available"),
            "{text}"
        );
        check_congestion("reno")
            .or_else(|_| check_congestion("cubic"))
            .unwrap();
    }

    #[test]
    fn a_congestion_name_the_host_does_not_list_never_reaches_the_kernel() {
        // "foo" would make a privileged kernel try to load tcp_foo; a prefix of a listed
        // name or a list of names is not a listed name either.
        for name in ["foo", "cub", "cubic reno", "", "reno\n"] {
            let err = check_congestion(name).unwrap_err().to_string();
            assert!(
                err.contains("not available on this host; available: "),
                "{err}"
            );
            assert!(
                !err.ends_with("available: "),
                "names the available ones: {err}"
            );
        }
    }
}
