//! Every socket option linerate sets, in one place, with errors that name the flag.
//!
//! The client applies options before connecting (MSS must be set before the SYN); the server
//! applies the same options to each accepted data connection.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use wire::spec::Flow;
use wire::TestSpec;

pub use crate::congestion::check_congestion;
use crate::congestion::set_congestion;
use crate::{Conn, EngineError};

/// The socket options a spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketOptions {
    /// SO_SNDBUF and SO_RCVBUF, bytes.
    pub window_bytes: Option<u32>,
    /// TCP_MAXSEG, bytes.
    pub mss_bytes: Option<u32>,
    /// TCP_NODELAY.
    pub no_delay: bool,
    /// TCP_CONGESTION.
    pub congestion: Option<String>,
    /// IP_TOS / IPV6_TCLASS.
    pub tos: Option<u8>,
    /// SO_BUSY_POLL, µs.
    pub busy_poll_us: Option<u32>,
    /// SO_MAX_PACING_RATE, bits/s.
    pub pacing_bps: Option<u64>,
    /// TCP_NOTSENT_LOWAT, bytes (set after the pacing's own).
    pub notsent_lowat_bytes: Option<u32>,
}

impl SocketOptions {
    /// The options of `spec`'s client → server connections (of every connection, in a test
    /// with one rate): its window, its kind's TCP options, its transaction's busy poll.
    pub fn from_spec(spec: &TestSpec) -> Self {
        Self::for_flow(spec, Flow::ClientToServer)
    }

    /// The options of `spec`'s connections that carry `flow`: as [`SocketOptions::from_spec`],
    /// paced at that flow's rate (a bidirectional test's server → client rate may differ).
    pub fn for_flow(spec: &TestSpec, flow: Flow) -> Self {
        let tcp = spec.tcp().cloned().unwrap_or_default();
        Self {
            window_bytes: spec.window_bytes,
            mss_bytes: tcp.mss_bytes,
            no_delay: tcp.no_delay,
            pacing_bps: tcp.pacing_of(flow),
            notsent_lowat_bytes: tcp.notsent_lowat_bytes,
            congestion: tcp.congestion,
            tos: tcp.tos,
            busy_poll_us: spec.rr().and_then(|rr| rr.busy_poll_us),
        }
    }

    /// Refuses TCP-only options for a Unix-domain transport.
    pub fn check_unix(&self) -> Result<(), EngineError> {
        if self.mss_bytes.is_some() {
            return Err(EngineError::NotForUnix("--mss"));
        }
        if self.congestion.is_some() {
            return Err(EngineError::NotForUnix("--congestion"));
        }
        if self.tos.is_some() {
            return Err(EngineError::NotForUnix("--tos"));
        }
        if self.no_delay {
            return Err(EngineError::NotForUnix("--no-delay"));
        }
        if self.pacing_bps.is_some() {
            return Err(EngineError::NotForUnix("--rate"));
        }
        if self.notsent_lowat_bytes.is_some() {
            return Err(EngineError::NotForUnix("--notsent-lowat"));
        }
        Ok(())
    }

    /// Applies what must precede `connect`, plus everything else, to a fresh TCP socket.
    fn apply_tcp(&self, fd: RawFd, v6: bool) -> Result<(), EngineError> {
        self.apply_window(fd)?;
        if let Some(mss) = self.mss_bytes {
            set_int(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_MAXSEG,
                mss as i32,
                "--mss",
                mss,
            )?;
        }
        if self.no_delay {
            set_int(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                1,
                "--no-delay",
                "",
            )?;
        }
        if let Some(name) = &self.congestion {
            set_congestion(fd, name)?;
        }
        if let Some(us) = self.busy_poll_us {
            set_int(
                fd,
                libc::SOL_SOCKET,
                libc::SO_BUSY_POLL,
                us as i32,
                "--busy-poll",
                us,
            )?;
        }
        if let Some(tos) = self.tos {
            let (level, opt) = if v6 {
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
            } else {
                (libc::IPPROTO_IP, libc::IP_TOS)
            };
            set_int(fd, level, opt, tos as i32, "--tos", tos)?;
        }
        if let Some(bps) = self.pacing_bps {
            set_pacing(fd, bps)?;
        }
        if let Some(bytes) = self.notsent_lowat_bytes {
            set_int(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NOTSENT_LOWAT,
                bytes.min(i32::MAX as u32) as i32,
                "--notsent-lowat",
                bytes,
            )?;
        }
        Ok(())
    }

    fn apply_window(&self, fd: RawFd) -> Result<(), EngineError> {
        if let Some(w) = self.window_bytes {
            set_int(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                w as i32,
                "--window",
                w,
            )?;
            set_int(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                w as i32,
                "--window",
                w,
            )?;
        }
        Ok(())
    }

    /// Applies the accepted-side options to a listening socket, whose accepted connections
    /// inherit them (Linux copies the listener's socket state into each new connection).
    pub fn apply_listener(&self, listener: &std::net::TcpListener) -> Result<(), EngineError> {
        self.apply_accepted_tcp(listener.as_raw_fd(), listener.local_addr())
    }

    /// Applies the options to an accepted (server-side) data connection. MSS is not applied
    /// here: the client's SYN already carried it.
    pub fn apply_accepted(&self, conn: &Conn) -> Result<(), EngineError> {
        match conn {
            Conn::Unix(_) | Conn::Udp(_) | Conn::UdpFrom(..) | Conn::UdpMulti(_) => {
                self.apply_window(conn.as_raw_fd())
            }
            Conn::Tcp(s) => self.apply_accepted_tcp(s.as_raw_fd(), s.local_addr()),
            Conn::CrrListener(l) => self.apply_listener(&l.listener),
        }
    }

    /// Everything but MSS, on an accepted connection or a listener at `local`.
    fn apply_accepted_tcp(
        &self,
        fd: RawFd,
        local: io::Result<SocketAddr>,
    ) -> Result<(), EngineError> {
        let accepted = SocketOptions {
            mss_bytes: None,
            ..self.clone()
        };
        accepted.apply_tcp(fd, local.is_ok_and(|a| a.is_ipv6()))
    }
}

/// Opens a TCP data or control connection to `addr` with `opts` applied before the SYN.
pub fn connect_tcp(
    addr: SocketAddr,
    bind: Option<SocketAddr>,
    opts: &SocketOptions,
    timeout: Duration,
) -> Result<Conn, ConnectError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(ConnectError::Io)?;
    opts.apply_tcp(sock.as_raw_fd(), addr.is_ipv6())
        .map_err(ConnectError::Option)?;
    if let Some(local) = bind {
        sock.bind(&local.into())
            .map_err(|e| ConnectError::Bind(local, e))?;
    }
    sock.connect_timeout(&addr.into(), timeout)
        .map_err(ConnectError::Io)?;
    Ok(Conn::Tcp(sock.into()))
}

/// Opens a blocking TCP connection for a connect/request/response transaction: the fewest
/// system calls that still bound the connect. A write timeout of `poll` is set before the SYN;
/// a blocking connect waits at most the write timeout, so it is retried, checking `abort`
/// between tries, until `timeout` has passed. Reads get no timeout (it would arm a kernel timer
/// at every wait): the caller registers the socket with its [`crate::Abort`].
pub fn connect_tcp_quick(
    addr: SocketAddr,
    opts: &SocketOptions,
    poll: Duration,
    timeout: Duration,
    abort: impl Fn() -> bool,
) -> Result<std::net::TcpStream, ConnectError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(ConnectError::Io)?;
    opts.apply_tcp(sock.as_raw_fd(), addr.is_ipv6())
        .map_err(ConnectError::Option)?;
    sock.set_write_timeout(Some(poll))
        .map_err(ConnectError::Io)?;
    let deadline = std::time::Instant::now() + timeout;
    let target = addr.into();
    loop {
        match sock.connect(&target) {
            Ok(()) => break,
            Err(e) if e.raw_os_error() == Some(libc::EISCONN) => break,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINPROGRESS | libc::EALREADY | libc::EINTR)
                ) =>
            {
                if abort() || std::time::Instant::now() >= deadline {
                    return Err(ConnectError::Io(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("connection to {addr} timed out"),
                    )));
                }
            }
            Err(e) => return Err(ConnectError::Io(e)),
        }
    }
    Ok(sock.into())
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// A socket option was refused.
    #[error(transparent)]
    Option(EngineError),
    /// The local address could not be bound.
    #[error("--bind {0}: {1}")]
    Bind(SocketAddr, io::Error),
    /// socket() or connect() failed.
    #[error("{0}")]
    Io(io::Error),
}

/// The socket buffer size this host grants for a request of `bytes` (the smaller of send and
/// receive), found on a scratch socket. Linux silently caps requests at
/// net.core.wmem_max/rmem_max and reports double the usable size; this undoes the doubling.
pub fn granted_window(bytes: u32) -> Result<u32, EngineError> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    let opts = SocketOptions {
        window_bytes: Some(bytes),
        ..Default::default()
    };
    opts.apply_window(sock.as_raw_fd())?;
    let snd = sock.send_buffer_size()? / 2;
    let rcv = sock.recv_buffer_size()? / 2;
    Ok(snd.min(rcv) as u32)
}

/// The SO_BUSY_POLL value this host keeps for a request of `us` (0: the kernel ignores it, e.g.
/// without CAP_NET_ADMIN above net.core.busy_read, or without busy-poll support).
pub fn granted_busy_poll(us: u32) -> Result<u32, EngineError> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    setsockopt_int(
        sock.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_BUSY_POLL,
        us as i32,
    )
    .map_err(|source| EngineError::SocketOption {
        option: "--busy-poll",
        value: us.to_string(),
        source,
    })?;
    let value = getsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_BUSY_POLL)?;
    Ok(value.max(0) as u32)
}

/// Sets an integer socket option.
pub(crate) fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: i32,
) -> io::Result<()> {
    setsockopt_value(fd, level, name, value)
}

/// Reads an int-valued socket option.
pub(crate) fn getsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: a pointer to a live i32 and its size.
    let rc =
        unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut i32).cast(), &mut len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// Sets a socket option of plain-data type `T` (every fixed-size option linerate sets).
fn setsockopt_value<T: Copy>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: T,
) -> io::Result<()> {
    // SAFETY: passes a pointer to a live `T` and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// SO_MAX_PACING_RATE of `bps` bits/s: the kernel paces the socket's sending to it (TCP's own
/// pacing, or the fq qdisc's). A rate above 32 bits of bytes/s is passed as 64 bits.
///
/// Also TCP_NOTSENT_LOWAT of [`paced_unsent_bytes`]: without it a paced sender fills its whole
/// send buffer (megabytes) with bytes the pacer releases slowly, so at the test's end the
/// stream cannot drain in time (4 MiB at 1 Mbit/s is half a minute) and the sender's count runs
/// far ahead of what left.
fn set_pacing(fd: RawFd, bps: u64) -> Result<(), EngineError> {
    let bytes_per_sec = bps / 8;
    let (level, name) = (libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE);
    match u32::try_from(bytes_per_sec) {
        Ok(small) => setsockopt_value(fd, level, name, small),
        Err(_) => setsockopt_value(fd, level, name, bytes_per_sec),
    }
    .map_err(|source| EngineError::SocketOption {
        option: "--rate",
        value: format!("{bps} bit/s"),
        source,
    })?;
    let lowat = paced_unsent_bytes(bps);
    set_int(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        lowat,
        "--rate",
        format!("{bps} bit/s (TCP_NOTSENT_LOWAT {lowat} B)"),
    )
}

/// The unsent bytes a paced sender may queue: 20 ms at its rate, at least 16 KiB, at most
/// 4 MiB.
fn paced_unsent_bytes(bps: u64) -> i32 {
    (bps / 8 / 50).clamp(16 << 10, 4 << 20) as i32
}

/// [`setsockopt_int`] with an error that names the user's flag and value.
fn set_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: i32,
    option: &'static str,
    shown: impl ToString,
) -> Result<(), EngineError> {
    setsockopt_int(fd, level, name, value).map_err(|source| EngineError::SocketOption {
        option,
        value: shown.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's SO_MAX_PACING_RATE of `fd`, bytes/s, read as 64 bits.
    fn pacing_of(fd: RawFd) -> u64 {
        let mut value = 0u64;
        let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `value`.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_MAX_PACING_RATE,
                (&mut value as *mut u64).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        value
    }

    #[test]
    fn a_paced_sender_queues_20_ms_of_unsent_bytes() {
        assert_eq!(paced_unsent_bytes(1_000_000), 16 << 10);
        assert_eq!(paced_unsent_bytes(1_000_000_000), 2_500_000);
        assert_eq!(paced_unsent_bytes(100_000_000_000), 4 << 20);
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set_pacing(sock.as_raw_fd(), 1_000_000_000).unwrap();
        let fd = sock.as_raw_fd();
        let lowat = getsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT).unwrap();
        assert_eq!(lowat, 2_500_000);
    }

    #[test]
    fn pacing_rates_above_32_bits_of_bytes_go_in_whole() {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set_pacing(sock.as_raw_fd(), 1_000_000_000).unwrap();
        assert_eq!(pacing_of(sock.as_raw_fd()), 125_000_000);
        // 100 Gbit/s is 12.5 GB/s, past u32.
        set_pacing(sock.as_raw_fd(), 100_000_000_000).unwrap();
        assert_eq!(pacing_of(sock.as_raw_fd()), 12_500_000_000);
    }

    #[test]
    fn granted_window_is_what_the_kernel_allows() {
        assert_eq!(granted_window(64 << 10).unwrap(), 64 << 10);
        let max = std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap();
        let max: u32 = max.trim().parse().unwrap();
        assert!(granted_window(1 << 30).unwrap() <= max);
    }

    #[test]
    fn tcp_only_options_are_refused_for_unix() {
        let opts = SocketOptions {
            mss_bytes: Some(1000),
            ..Default::default()
        };
        assert!(opts.check_unix().unwrap_err().to_string().contains("--mss"));
        let opts = SocketOptions {
            window_bytes: Some(1 << 20),
            ..Default::default()
        };
        assert!(opts.check_unix().is_ok());
    }

    #[test]
    fn accepted_connections_inherit_the_listeners_options() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let opts = SocketOptions {
            window_bytes: Some(96 << 10),
            no_delay: true,
            tos: Some(0x20),
            ..Default::default()
        };
        opts.apply_listener(&listener).unwrap();
        socket2::SockRef::from(&listener)
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let sock = socket2::SockRef::from(&accepted);
        assert_eq!(sock.recv_buffer_size().unwrap(), 2 * (96 << 10));
        assert!(sock.tcp_nodelay().unwrap());
        assert_eq!(sock.tos_v4().unwrap(), 0x20);
        assert_eq!(
            sock.read_timeout().unwrap(),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn quick_connect_opens_and_refuses() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let poll = Duration::from_millis(100); // whole jiffies: the kernel rounds timeouts
        let s = connect_tcp_quick(addr, &SocketOptions::default(), poll, poll * 4, || false);
        let s = s.unwrap();
        assert_eq!(s.write_timeout().unwrap(), Some(poll));
        assert_eq!(s.read_timeout().unwrap(), None);
        drop(listener);
        let refused = connect_tcp_quick(addr, &SocketOptions::default(), poll, poll, || false);
        let Err(ConnectError::Io(e)) = refused else {
            panic!("{refused:?}")
        };
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn connect_applies_options() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let opts = SocketOptions {
            mss_bytes: Some(1000),
            no_delay: true,
            window_bytes: Some(256 << 10),
            ..Default::default()
        };
        let conn = connect_tcp(
            listener.local_addr().unwrap(),
            None,
            &opts,
            Duration::from_secs(2),
        )
        .unwrap();
        let info = measure::tcp_info::read(conn.as_raw_fd()).unwrap();
        assert!(info.snd_mss_bytes <= 1000, "{info:?}");
    }
}
