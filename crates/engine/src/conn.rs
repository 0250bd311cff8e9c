//! A data socket ([`Conn`]: TCP, Unix-domain, UDP, or a `tcp_crr` session's listener), a
//! listener for the control port, and what a worker drives ([`Endpoint`]): a socket, or the
//! [`CrrTarget`] a `tcp_crr` requester connects to afresh for every transaction.
//!
//! Invariant: a `Conn` always holds a socket, so every `Conn` has a descriptor; an address
//! to connect to later is a `CrrTarget`, never a `Conn`. Everything above this module is
//! transport-agnostic; TCP-only options are refused for Unix sockets in [`crate::sockopt`].

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// A data socket.
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
    /// `tcp_crr` responders: the session's listener, shared by its responder threads.
    CrrListener(std::sync::Arc<CrrListener>),
}

/// A `tcp_crr` session's listener: who may use it, and what its responders turned away.
///
/// Invariant: a connection from anywhere but `only_from` is closed as soon as it is accepted,
/// before a byte of it is read; a transaction that stalls is dropped (see `crate::tcp_crr`).
/// Both are counted, for the session to report.
#[derive(Debug)]
pub struct CrrListener {
    /// The listening socket.
    pub listener: TcpListener,
    /// The only address transactions may come from (the control connection's peer); `None`:
    /// any.
    pub only_from: Option<std::net::IpAddr>,
    /// Connections from other addresses, closed unanswered.
    pub strangers: std::sync::atomic::AtomicU64,
    /// Transactions dropped because they stalled or broke off.
    pub dropped: std::sync::atomic::AtomicU64,
}

impl CrrListener {
    /// `listener` (bound; listening or not), taking transactions from `only_from` alone
    /// (`None`: from anyone), listening with `backlog` and the responders' options (see
    /// `tcp_crr::listen`: set before anyone can connect).
    pub fn new(
        listener: TcpListener,
        only_from: Option<std::net::IpAddr>,
        backlog: i32,
    ) -> io::Result<Self> {
        crate::tcp_crr::listen(&listener, backlog)?;
        Ok(Self {
            listener,
            only_from,
            strangers: Default::default(),
            dropped: Default::default(),
        })
    }

    /// Hands connections to accept at the handshake, not at their first data: for
    /// transactions without a request (`tcp_cc`), which TCP_DEFER_ACCEPT would hold back.
    pub fn accept_at_handshake(&self) -> io::Result<()> {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.listener);
        crate::sockopt::setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, 0)
    }
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

    /// Whether a TCP connection's peer is this host itself: a loopback address, or the same
    /// address as the local end (a connection to one's own interface address is routed over
    /// loopback too). A peer in another network namespace has an address of its own, so a veth
    /// pair counts as elsewhere, as a remote host does.
    pub fn peer_on_this_host(&self) -> bool {
        match self {
            Conn::Tcp(s) => match (s.local_addr(), s.peer_addr()) {
                (Ok(l), Ok(p)) => p.ip().is_loopback() || p.ip() == l.ip(),
                _ => false,
            },
            _ => false,
        }
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
            Conn::CrrListener(_) => Ok(()),
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
            Conn::CrrListener(_) => Ok(()),
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
            Conn::CrrListener(l) => l.listener.set_nonblocking(on),
        }
    }

    /// Half-closes or closes the connection.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Unix(s) => s.shutdown(how),
            Conn::Udp(_) | Conn::UdpFrom(..) | Conn::UdpMulti(_) | Conn::CrrListener(_) => Ok(()),
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
            Conn::CrrListener(_) => "connection listener".into(),
        }
    }

    /// The peer's IP address, for TCP and UDP.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        match self {
            Conn::Tcp(s) => s.peer_addr().ok(),
            Conn::Udp(s) => s.peer_addr().ok(),
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
            Conn::CrrListener(l) => l.listener.local_addr().ok(),
            Conn::Unix(_) => None,
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
            Conn::CrrListener(_) => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "a listener has no data",
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
            Conn::UdpFrom(..) | Conn::UdpMulti(_) | Conn::CrrListener(_) => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "not a connected socket",
            )),
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
            Conn::CrrListener(l) => l.listener.as_raw_fd(),
        }
    }
}

/// Where a `tcp_crr` requester connects for every transaction (the session's own listener),
/// and the options each new connection gets. An address, not a socket: each transaction opens
/// its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrrTarget {
    /// The listener's address.
    pub addr: SocketAddr,
    /// Socket options set on each connection before it connects.
    pub options: crate::sockopt::SocketOptions,
}

/// What a worker drives: a data socket, or the target a `tcp_crr` requester connects to.
#[derive(Debug)]
pub enum Endpoint {
    /// A socket the engine reads and writes (or, for `tcp_crr` responders, accepts on).
    Socket(Conn),
    /// `tcp_crr` requesters: a new connection to this target per transaction.
    Connect(CrrTarget),
    /// A frame test's receivers at the server: the test's AF_XDP sockets, shared by its
    /// receiving streams (see `crate::frame_rx`).
    Frames(std::sync::Arc<crate::frame_rx::FrameRx>),
    /// A frame test's sender at the client, set up before the test began (its frames built,
    /// its ring or program open: `crate::udp_frames`).
    FrameSender(Box<crate::udp_frames::Prepared>),
}

impl Endpoint {
    /// The socket, for an engine that needs one; the error names the `engine`.
    pub fn into_socket(self, engine: &str) -> io::Result<Conn> {
        match self {
            Endpoint::Socket(conn) => Ok(conn),
            Endpoint::Connect(target) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{engine} runs on a socket, not on connections to {}",
                    target.addr
                ),
            )),
            Endpoint::Frames(_) | Endpoint::FrameSender(_) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{engine} runs on a socket, not on a frame engine's"),
            )),
        }
    }
}

impl From<Conn> for Endpoint {
    fn from(conn: Conn) -> Self {
        Endpoint::Socket(conn)
    }
}

impl From<CrrTarget> for Endpoint {
    fn from(target: CrrTarget) -> Self {
        Endpoint::Connect(target)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_target_is_not_a_socket() {
        let target = CrrTarget {
            addr: SocketAddr::from(([127, 0, 0, 1], 9)),
            options: crate::sockopt::SocketOptions::default(),
        };
        let err = Endpoint::from(target).into_socket("tcp_rr").unwrap_err();
        assert_eq!(
            err.to_string(),
            "tcp_rr runs on a socket, not on connections to 127.0.0.1:9"
        );
        let (a, _b) = UnixStream::pair().unwrap();
        let end = Endpoint::from(Conn::Unix(a));
        assert!(matches!(end.into_socket("tcp_stream"), Ok(Conn::Unix(_))));
    }
}
