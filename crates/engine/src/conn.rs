//! A connected stream socket, TCP or Unix-domain, and a listener for either.
//!
//! Everything above this module is transport-agnostic; TCP-only options are refused for Unix
//! sockets in [`crate::sockopt`].

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// A connected stream socket.
#[derive(Debug)]
pub enum Conn {
    /// TCP over IPv4/IPv6.
    Tcp(TcpStream),
    /// Unix-domain stream socket.
    Unix(UnixStream),
    /// A UDP socket connected to its peer (datagrams, not a stream).
    Udp(UdpSocket),
    /// An unconnected UDP socket taking datagrams from any port of one IP address: a receiver
    /// whose sender spreads its datagrams over several source ports (`--flows`).
    UdpFrom(UdpSocket, std::net::IpAddr),
    /// A UDP stream end spread over several destination ports (`--flows-dst`): a receiver
    /// listens on `sock` and `extra_recv`, taking datagrams from any port of `only_from`; a
    /// sender sends from `sock` (connected) and rotates over `extra_dst` too.
    UdpMulti(UdpMulti),
    /// `tcp_crr` requesters: where each transaction connects afresh.
    CrrTarget(SocketAddr, crate::sockopt::SocketOptions),
    /// `tcp_crr` responders: the session's listener, shared by its responder threads.
    CrrListener(std::sync::Arc<TcpListener>),
}

/// The sockets and addresses of a [`Conn::UdpMulti`].
#[derive(Debug)]
pub struct UdpMulti {
    /// The stream's main socket.
    pub sock: UdpSocket,
    /// Receivers: the peer's address (every source port is accepted).
    pub only_from: Option<std::net::IpAddr>,
    /// Receivers: sockets on further destination ports.
    pub extra_recv: Vec<UdpSocket>,
    /// Senders: further destinations, besides the one `sock` is connected to.
    pub extra_dst: Vec<SocketAddr>,
}

impl Conn {
    /// Whether this is a TCP connection.
    pub fn is_tcp(&self) -> bool {
        matches!(self, Conn::Tcp(_))
    }

    /// Sets SO_RCVTIMEO.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_read_timeout(t),
            Conn::Unix(s) => s.set_read_timeout(t),
            Conn::Udp(s) | Conn::UdpFrom(s, _) | Conn::UdpMulti(UdpMulti { sock: s, .. }) => {
                s.set_read_timeout(t)
            }
            // Per-transaction connections get their timeouts when they are made.
            Conn::CrrTarget(..) | Conn::CrrListener(_) => Ok(()),
        }
    }

    /// Sets SO_SNDTIMEO.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_write_timeout(t),
            Conn::Unix(s) => s.set_write_timeout(t),
            Conn::Udp(s) | Conn::UdpFrom(s, _) | Conn::UdpMulti(UdpMulti { sock: s, .. }) => {
                s.set_write_timeout(t)
            }
            Conn::CrrTarget(..) | Conn::CrrListener(_) => Ok(()),
        }
    }

    /// Switches non-blocking mode.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_nonblocking(on),
            Conn::Unix(s) => s.set_nonblocking(on),
            Conn::Udp(s) | Conn::UdpFrom(s, _) | Conn::UdpMulti(UdpMulti { sock: s, .. }) => {
                s.set_nonblocking(on)
            }
            Conn::CrrListener(l) => l.set_nonblocking(on),
            Conn::CrrTarget(..) => Ok(()),
        }
    }

    /// Half-closes or closes the connection.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Unix(s) => s.shutdown(how),
            Conn::Udp(_) | Conn::UdpFrom(..) | Conn::UdpMulti(_) => Ok(()),
            Conn::CrrTarget(..) | Conn::CrrListener(_) => Ok(()),
        }
    }

    /// A second handle to the same socket.
    pub fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Udp(s) => Conn::Udp(s.try_clone()?),
            Conn::UdpFrom(s, ip) => Conn::UdpFrom(s.try_clone()?, *ip),
            Conn::UdpMulti(m) => Conn::UdpMulti(UdpMulti {
                sock: m.sock.try_clone()?,
                only_from: m.only_from,
                extra_recv: m
                    .extra_recv
                    .iter()
                    .map(|s| s.try_clone())
                    .collect::<io::Result<_>>()?,
                extra_dst: m.extra_dst.clone(),
            }),
            Conn::CrrTarget(a, o) => Conn::CrrTarget(*a, o.clone()),
            Conn::CrrListener(l) => Conn::CrrListener(std::sync::Arc::clone(l)),
        })
    }

    /// The peer's address, printable.
    pub fn peer(&self) -> String {
        match self {
            Conn::Tcp(s) => s
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| "?".into()),
            Conn::Unix(_) => "unix peer".into(),
            Conn::Udp(s) => s
                .peer_addr()
                .map(|a| format!("udp {a}"))
                .unwrap_or_else(|_| "?".into()),
            Conn::UdpFrom(_, ip) => format!("udp from {ip}"),
            Conn::UdpMulti(m) => {
                format!("udp, {} ports", 1 + m.extra_recv.len() + m.extra_dst.len())
            }
            Conn::CrrTarget(a, _) => format!("connections to {a}"),
            Conn::CrrListener(_) => "connection listener".into(),
        }
    }

    /// The peer's IP address, for TCP and UDP.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        match self {
            Conn::Tcp(s) => s.peer_addr().ok(),
            Conn::Udp(s) => s.peer_addr().ok(),
            Conn::CrrTarget(a, _) => Some(*a),
            Conn::UdpFrom(..) | Conn::UdpMulti(_) | Conn::Unix(_) | Conn::CrrListener(_) => None,
        }
    }

    /// The local IP address, for TCP and UDP.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Conn::Tcp(s) => s.local_addr().ok(),
            Conn::Udp(s) | Conn::UdpFrom(s, _) | Conn::UdpMulti(UdpMulti { sock: s, .. }) => {
                s.local_addr().ok()
            }
            Conn::CrrListener(l) => l.local_addr().ok(),
            Conn::Unix(_) | Conn::CrrTarget(..) => None,
        }
    }
}

impl Read for Conn {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Unix(s) => s.read(buf),
            Conn::Udp(s) | Conn::UdpFrom(s, _) | Conn::UdpMulti(UdpMulti { sock: s, .. }) => {
                s.recv(buf)
            }
            Conn::CrrTarget(..) | Conn::CrrListener(_) => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "a connection target or listener has no data",
            )),
        }
    }
}

impl Write for Conn {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Unix(s) => s.write(buf),
            Conn::Udp(s) => s.send(buf),
            Conn::UdpFrom(..) | Conn::UdpMulti(_) | Conn::CrrTarget(..) | Conn::CrrListener(_) => {
                Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "not a connected socket",
                ))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Conn {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Conn::Tcp(s) => s.as_raw_fd(),
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Udp(s) | Conn::UdpFrom(s, _) | Conn::UdpMulti(UdpMulti { sock: s, .. }) => {
                s.as_raw_fd()
            }
            Conn::CrrListener(l) => l.as_raw_fd(),
            // No socket yet: each transaction makes its own. -1 makes any socket call fail
            // with EBADF instead of touching another descriptor.
            Conn::CrrTarget(..) => -1,
        }
    }
}

/// A listening socket of either family.
#[derive(Debug)]
pub enum Listener {
    /// TCP listener.
    Tcp(TcpListener),
    /// Unix-domain listener; the path is removed when the listener is dropped.
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Accepts one connection.
    pub fn accept(&self) -> io::Result<Conn> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Conn::Tcp(s)),
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Conn::Unix(s)),
        }
    }

    /// Makes `accept` return `WouldBlock` instead of waiting.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(on),
            Listener::Unix(l, _) => l.set_nonblocking(on),
        }
    }

    /// The TCP address it listens on, if TCP.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        match self {
            Listener::Tcp(l) => l.local_addr().ok(),
            Listener::Unix(..) => None,
        }
    }

    /// Where it listens, printable.
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| "?".into()),
            Listener::Unix(_, p) => format!("unix:{}", p.display()),
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l, _) => l.as_raw_fd(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}
