//! UDP socket setup shared by both ends: buffers, don't-fragment, path MTU, the setup probe.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use wire::datagram::{write_header, DatagramRepr, FLAG_PROBE, HEADER_LEN};

use crate::sockopt::setsockopt_int;
use crate::EngineError;

/// Socket buffer asked for on UDP sockets when the user gives no `--window`: bursts at high
/// packet rates need more than the default (the kernel caps it at net.core.rmem_max/wmem_max).
pub const DEFAULT_UDP_BUFFER: u32 = 4 << 20;

/// IPv4 + UDP header bytes, and IPv6 + UDP.
pub const IPV4_UDP_OVERHEAD: usize = 28;
/// IPv6 + UDP header bytes.
pub const IPV6_UDP_OVERHEAD: usize = 48;

/// A UDP socket bound to `local`, with buffers and path-MTU discovery set (datagrams are never
/// fragmented: one that does not fit the path fails to send instead).
pub fn udp_socket(local: SocketAddr, buffer_bytes: Option<u32>) -> Result<UdpSocket, EngineError> {
    bound(local, Some(buffer_bytes.unwrap_or(DEFAULT_UDP_BUFFER)))
}

/// An extra sending socket for one more flow of a stream: same local IP, a new port, the
/// kernel's default buffers (thousands of flows must not each take megabytes), connected to
/// `peer`.
pub fn flow_socket(local_ip: IpAddr, peer: SocketAddr) -> Result<UdpSocket, EngineError> {
    let sock = bound(SocketAddr::new(local_ip, 0), None)?;
    sock.connect(peer)?;
    Ok(sock)
}

/// A UDP socket on a port other sockets share (`SO_REUSEADDR` on every one of them): iperf3's
/// UDP streams all use the server's one port, the unconnected socket taking each stream's
/// connect message and a connected socket per stream, which the kernel prefers for its peer's
/// datagrams. An IPv6 wildcard address takes IPv4 datagrams too. Buffers as [`udp_socket`].
pub fn shared_port_socket(
    local: SocketAddr,
    buffer_bytes: Option<u32>,
) -> Result<UdpSocket, EngineError> {
    bound_with(
        local,
        Some(buffer_bytes.unwrap_or(DEFAULT_UDP_BUFFER)),
        true,
    )
}

/// `SO_MEMINFO` (asm-generic/socket.h; the libc crate does not export it on every target).
const SO_MEMINFO: libc::c_int = 55;

/// Datagrams the kernel dropped at this socket since it was made, its own drop counter
/// (`sk_drops`: what `SO_RXQ_OVFL` reports; read here with `SO_MEMINFO`, Linux 4.13+, so the
/// receive path needs no control messages). A full receive buffer is nearly always the cause.
/// `None` where the kernel does not answer.
pub fn socket_drops(fd: std::os::fd::RawFd) -> Option<u64> {
    let mut info = [0u32; 16];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, and sets `len` to what it wrote.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let at = libc::SK_MEMINFO_DROPS as usize;
    (rc == 0 && (len as usize) > at * 4).then(|| u64::from(info[at]))
}

fn bound(local: SocketAddr, buffer_bytes: Option<u32>) -> Result<UdpSocket, EngineError> {
    bound_with(local, buffer_bytes, false)
}

fn bound_with(
    local: SocketAddr,
    buffer_bytes: Option<u32>,
    shared_port: bool,
) -> Result<UdpSocket, EngineError> {
    let sock = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if shared_port {
        sock.set_reuse_address(true)?;
        if local.is_ipv6() && local.ip().is_unspecified() {
            sock.set_only_v6(false)?;
        }
    }
    if let Some(size) = buffer_bytes {
        // The kernel caps these silently; a smaller buffer is not an error.
        let _ = sock.set_send_buffer_size(size as usize);
        let _ = sock.set_recv_buffer_size(size as usize);
    }
    let fd = sock.as_raw_fd();
    if local.is_ipv6() {
        setsockopt_int(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )?;
    } else {
        setsockopt_int(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
        )?;
    }
    sock.bind(&local.into())
        .map_err(|e| EngineError::Io(io::Error::new(e.kind(), format!("bind {local}: {e}"))))?;
    Ok(sock.into())
}

/// The largest UDP payload the path to a connected socket's peer carries unfragmented.
pub fn max_payload(sock: &UdpSocket) -> io::Result<usize> {
    let v6 = sock.peer_addr()?.is_ipv6();
    let (level, name, overhead) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU, IPV6_UDP_OVERHEAD)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU, IPV4_UDP_OVERHEAD)
    };
    let mtu = crate::sockopt::getsockopt_int(sock.as_raw_fd(), level, name)?;
    Ok((mtu as usize).saturating_sub(overhead).min(65_507))
}

/// Client side: sends setup probes for `stream` to `server` until it echoes one, or `timeout`.
/// The socket stays unconnected (a multi-flow receiver must not be; see [`accept_probes`]).
pub fn probe(
    sock: &UdpSocket,
    server: SocketAddr,
    stream: u16,
    timeout: Duration,
) -> io::Result<()> {
    let mut out = [0u8; HEADER_LEN];
    write_header(&mut out, stream, FLAG_PROBE, 0, 0);
    let mut buf = [0u8; 2048];
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match sock.send_to(&out, server) {
            Ok(_) => {}
            // An ICMP error from an earlier probe; the server may not be there yet.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let echo = DatagramRepr::parse(&buf[..n])
                    .is_some_and(|r| r.flags & FLAG_PROBE != 0 && r.stream == stream);
                if echo && from == server {
                    return Ok(());
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no answer to UDP setup probes for stream {stream} within {timeout:?}; is UDP blocked on the way?"),
    ))
}

/// The largest UDP payload the path to `dest` carries unfragmented (asked on a scratch socket).
pub fn max_payload_to(dest: SocketAddr) -> io::Result<usize> {
    let local: SocketAddr = if dest.is_ipv6() {
        "[::]:0".parse()
    } else {
        "0.0.0.0:0".parse()
    }
    .map_err(|_| io::Error::other("address"))?;
    let sock = bound(local, None).map_err(|e| io::Error::other(e.to_string()))?;
    sock.connect(dest)?;
    max_payload(&sock)
}

/// Server side: waits on every socket for its stream's probe from `peer_ip`, echoes it, and
/// returns each probe's source address (where the client's socket really is, through NAT too).
/// Datagrams from any other address are ignored. The sockets stay unconnected: a socket bound
/// to port 0 that is connected and later disconnected would lose its port.
pub fn accept_probes(
    socks: &[UdpSocket],
    peer_ip: IpAddr,
    timeout: Duration,
) -> io::Result<Vec<SocketAddr>> {
    let mut done: Vec<Option<SocketAddr>> = vec![None; socks.len()];
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 2048];
    for s in socks {
        s.set_nonblocking(true)?;
    }
    while done.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let got = done.iter().filter(|d| d.is_some()).count();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("only {got} of {} UDP streams were set up within {timeout:?}; is UDP blocked on the way?", socks.len()),
            ));
        }
        let fds: Vec<std::os::fd::RawFd> = socks.iter().map(|s| s.as_raw_fd()).collect();
        crate::sys_io::poll_readable(&fds, left.min(Duration::from_millis(100)));
        for (i, s) in socks.iter().enumerate() {
            // Up to the stream's probe and no further: what comes after it (the client may
            // start sending as soon as the echo arrives) is the test's, and stays queued.
            while done[i].is_none() {
                let Ok((n, from)) = s.recv_from(&mut buf) else {
                    break;
                };
                let probe = DatagramRepr::parse(&buf[..n])
                    .filter(|r| r.flags & FLAG_PROBE != 0 && usize::from(r.stream) == i);
                if probe.is_none() || from.ip() != peer_ip {
                    continue;
                }
                let _ = s.send_to(&buf[..n], from);
                done[i] = Some(from);
            }
        }
    }
    for s in socks {
        s.set_nonblocking(false)?;
    }
    Ok(done.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (UdpSocket, UdpSocket, SocketAddr) {
        let server = udp_socket("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let to = server.local_addr().unwrap();
        let client = udp_socket("127.0.0.1:0".parse().unwrap(), None).unwrap();
        (server, client, to)
    }

    #[test]
    fn a_fresh_socket_has_dropped_nothing() {
        let (a, _, _) = pair();
        assert_eq!(socket_drops(a.as_raw_fd()), Some(0));
        assert_eq!(socket_drops(-1), None);
    }

    #[test]
    fn probe_handshake_finds_the_client() {
        let (server, client, to) = pair();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let sources = std::thread::scope(|s| {
            let h = s.spawn(|| {
                accept_probes(std::slice::from_ref(&server), peer, Duration::from_secs(3))
            });
            probe(&client, to, 0, Duration::from_secs(3)).unwrap();
            h.join().unwrap().unwrap()
        });
        assert_eq!(sources, vec![client.local_addr().unwrap()]);
        assert!(max_payload_to(to).unwrap() >= 1472);
    }

    /// The client starts its stream when the echo arrives, which can be before the server has
    /// left `accept_probes` (a busy host): a datagram behind the probe is the test's first and
    /// must stay queued for it. Before, the server read it and dropped it, and `rr --udp`
    /// counted a lost request it never saw.
    #[test]
    fn a_datagram_right_behind_the_probe_stays_for_the_test() {
        let (server, client, to) = pair();
        let mut probe = [0u8; HEADER_LEN];
        write_header(&mut probe, 0, FLAG_PROBE, 0, 0);
        let mut first = [0u8; HEADER_LEN];
        write_header(&mut first, 0, 0, 0, 1);
        client.send_to(&probe, to).unwrap();
        client.send_to(&first, to).unwrap();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let sources = accept_probes(std::slice::from_ref(&server), peer, Duration::from_secs(3));
        assert_eq!(sources.unwrap(), vec![client.local_addr().unwrap()]);
        server
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let mut buf = [0u8; 64];
        let n = server
            .recv(&mut buf)
            .expect("the first datagram is still queued");
        assert_eq!(&buf[..n], &first);
    }

    #[test]
    fn probes_from_another_address_are_ignored() {
        let (server, client, to) = pair();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                accept_probes(
                    std::slice::from_ref(&server),
                    other,
                    Duration::from_millis(400),
                )
            });
            assert!(probe(&client, to, 0, Duration::from_millis(400)).is_err());
            assert!(h.join().unwrap().is_err());
        });
    }
}
