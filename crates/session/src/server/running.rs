//! Starting a server: the dual-stack TCP listener `linerate serve` opens, and a server running
//! on a thread of the calling process (the in-process server of a loopback run, and of tests),
//! stopped and joined when its handle is dropped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::thread::JoinHandle;

use engine::{Listener, Signal};
use socket2::{Domain, Protocol, Socket, Type};

use super::{serve, Log, ServerConfig};

/// Opens a TCP listener on `bind`; with no address, on every IPv6 and IPv4 address of `port`
/// (every IPv4 address on a host without IPv6).
pub fn listen_tcp(bind: Option<SocketAddr>, port: u16) -> std::io::Result<Listener> {
    let addr = bind.unwrap_or(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port));
    let open = |addr: SocketAddr| -> std::io::Result<Listener> {
        let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        sock.set_reuse_address(true)?;
        if addr.is_ipv6() && bind.is_none() {
            sock.set_only_v6(false)?;
        }
        sock.bind(&addr.into())?;
        sock.listen(1024)?;
        Ok(Listener::Tcp(sock.into()))
    };
    match open(addr) {
        Err(e) if bind.is_none() && e.raw_os_error() == Some(libc::EAFNOSUPPORT) => {
            open(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port))
        }
        other => other,
    }
}

/// A server serving `listener` on a thread of this process until the handle is dropped.
pub struct ServerThread {
    shutdown: Signal,
    handle: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Starts serving on a thread named `lr-server`.
    pub fn start(listener: Listener, config: ServerConfig, log: Log) -> std::io::Result<Self> {
        let shutdown = Signal::new();
        let s = shutdown.clone();
        let handle = std::thread::Builder::new()
            .name("lr-server".into())
            .spawn(move || serve(listener, s, config, log, || ()))?;
        Ok(Self {
            shutdown,
            handle: Some(handle),
        })
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.shutdown.raise();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
