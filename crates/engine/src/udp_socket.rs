//! UDP socket setup shared by both ends: buffers, don't-fragment, path MTU, the setup probe.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use wire::datagram::{write_header, DatagramRepr, FLAG_PROBE, HEADER_LEN};

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
    let sock = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    let size = buffer_bytes.unwrap_or(DEFAULT_UDP_BUFFER) as usize;
    // The kernel caps these silently; a smaller buffer is not an error.
    let _ = sock.set_send_buffer_size(size);
    let _ = sock.set_recv_buffer_size(size);
    let fd = sock.as_raw_fd();
    if local.is_ipv6() {
        set(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )?;
    } else {
        set(
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

fn set(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: a pointer to a live i32 and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The largest UDP payload the path to a connected socket's peer carries unfragmented.
pub fn max_payload(sock: &UdpSocket) -> io::Result<usize> {
    let v6 = sock.peer_addr()?.is_ipv6();
    let (level, name, overhead) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU, IPV6_UDP_OVERHEAD)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU, IPV4_UDP_OVERHEAD)
    };
    let mut mtu: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: a pointer to a live i32 and its size.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut i32).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((mtu as usize).saturating_sub(overhead).min(65_507))
}

/// Client side: sends setup probes for `stream` until the server echoes one, or `timeout`.
pub fn probe(sock: &UdpSocket, stream: u16, timeout: Duration) -> io::Result<()> {
    let mut out = [0u8; HEADER_LEN];
    write_header(&mut out, stream, FLAG_PROBE, 0, 0);
    let mut buf = [0u8; 2048];
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match sock.send(&out) {
            Ok(_) => {}
            // An ICMP error from an earlier probe; the server may not be there yet.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        match sock.recv(&mut buf) {
            Ok(n) => {
                if DatagramRepr::parse(&buf[..n])
                    .is_some_and(|r| r.flags & FLAG_PROBE != 0 && r.stream == stream)
                {
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

/// Server side: waits on every socket for its stream's probe from `peer_ip`, connects each
/// socket to the probe's source (so replies go exactly where the client is, through NAT too)
/// and echoes the probe. Datagrams from any other address are ignored.
pub fn accept_probes(socks: &[UdpSocket], peer_ip: IpAddr, timeout: Duration) -> io::Result<()> {
    let mut done = vec![false; socks.len()];
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 2048];
    for s in socks {
        s.set_nonblocking(true)?;
    }
    while done.iter().any(|d| !d) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let got = done.iter().filter(|d| **d).count();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("only {got} of {} UDP streams were set up within {timeout:?}; is UDP blocked on the way?", socks.len()),
            ));
        }
        let mut fds: Vec<libc::pollfd> = socks
            .iter()
            .map(|s| libc::pollfd {
                fd: s.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a valid array of pollfd of the given length.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                left.as_millis().min(100) as i32,
            )
        };
        for (i, s) in socks.iter().enumerate() {
            while let Ok((n, from)) = s.recv_from(&mut buf) {
                let probe = DatagramRepr::parse(&buf[..n])
                    .filter(|r| r.flags & FLAG_PROBE != 0 && usize::from(r.stream) == i);
                if probe.is_none() || from.ip() != peer_ip {
                    continue;
                }
                s.connect(from)?;
                let _ = s.send(&buf[..n]);
                done[i] = true;
            }
        }
    }
    for s in socks {
        s.set_nonblocking(false)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_handshake_connects_both_ends() {
        let server = udp_socket("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let port = server.local_addr().unwrap().port();
        let client = udp_socket("127.0.0.1:0".parse().unwrap(), None).unwrap();
        client.connect(("127.0.0.1", port)).unwrap();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                accept_probes(
                    std::slice::from_ref(&server),
                    "127.0.0.1".parse().unwrap(),
                    Duration::from_secs(3),
                )
            });
            probe(&client, 0, Duration::from_secs(3)).unwrap();
            h.join().unwrap().unwrap();
        });
        assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
        assert!(max_payload(&client).unwrap() >= 1472);
    }

    #[test]
    fn probes_from_another_address_are_ignored() {
        let server = udp_socket("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let port = server.local_addr().unwrap().port();
        let client = udp_socket("127.0.0.1:0".parse().unwrap(), None).unwrap();
        client.connect(("127.0.0.1", port)).unwrap();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                accept_probes(
                    std::slice::from_ref(&server),
                    "127.0.0.2".parse().unwrap(),
                    Duration::from_millis(400),
                )
            });
            assert!(probe(&client, 0, Duration::from_millis(400)).is_err());
            assert!(h.join().unwrap().is_err());
        });
    }
}
