//! iperf3 clients' UDP streams at `linerate serve` (docs/PROTOCOL.md section 13): each stream
//! opens with a connect datagram to the server's port, which carries no cookie, so streams are
//! told apart by their source address.
//!
//! One unconnected socket on the server's port (the [`UdpDoor`]) takes every connect datagram;
//! the gate reads it and hands the sender's address to the iperf3 test that claimed that
//! address ([`UdpDoor::claim`]). The test answers from a socket of its own on the same port,
//! connected to the stream's address, which the kernel then prefers for that address's
//! datagrams. Invariants: one UDP test per client address at a time (a second is refused, so
//! streams are never mixed); a datagram no test waits for is dropped and logged; the door is
//! read only by the gate, without blocking.

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::Instant;

use engine::udp_socket::shared_port_socket;
use engine::Conn;
use wire::iperf3_udp::reply_to;

/// Connect datagrams the gate reads per wake, at most.
const READS_PER_WAKE: usize = 64;

/// A stream's connect datagram: where from, and the answer in its byte order.
type Connect = (SocketAddr, [u8; 4]);

/// The server port's UDP socket and the tests waiting for their streams, by client address.
pub(super) struct UdpDoor {
    socket: Option<UdpSocket>,
    /// Every client address running a UDP test; the sender while it waits for streams.
    claims: Mutex<HashMap<IpAddr, Option<SyncSender<Connect>>>>,
}

impl UdpDoor {
    /// The door on `port` of `addr` (the control listener's address), nonblocking; without a
    /// socket (and why, for the log) when it cannot be bound.
    pub(super) fn open(addr: Option<SocketAddr>) -> (Self, Option<String>) {
        let bound = addr.map(|a| {
            shared_port_socket(a, None).and_then(|s| {
                s.set_nonblocking(true)?;
                Ok(s)
            })
        });
        let (socket, why) = match bound {
            Some(Ok(s)) => (Some(s), None),
            Some(Err(e)) => (None, Some(format!("iperf3 UDP tests off: {e}"))),
            None => (None, None),
        };
        let door = Self {
            socket,
            claims: Mutex::new(HashMap::new()),
        };
        (door, why)
    }

    /// The socket the gate polls.
    pub(super) fn fd(&self) -> Option<RawFd> {
        self.socket.as_ref().map(|s| s.as_raw_fd())
    }

    /// Whether the door is open (iperf3 UDP tests can run).
    pub(super) fn is_open(&self) -> bool {
        self.socket.is_some()
    }

    /// Reads the waiting connect datagrams (a bounded number) and hands each sender's address
    /// to the test that claimed its IP; `admit` says whether an address may connect at all.
    /// Returns lines for the log about datagrams no test took.
    pub(super) fn read(&self, admit: impl Fn(IpAddr) -> bool) -> Vec<String> {
        let mut lines = Vec::new();
        let Some(sock) = &self.socket else {
            return lines;
        };
        let mut buf = [0u8; 64];
        for _ in 0..READS_PER_WAKE {
            let (len, from) = match sock.recv_from(&mut buf) {
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // An ICMP error from an earlier reply, reported here: nothing to do with it.
                Err(_) => continue,
            };
            let from = SocketAddr::new(from.ip().to_canonical(), from.port());
            if !admit(from.ip()) {
                continue;
            }
            let Some(reply) = reply_to(&buf[..len.min(buf.len())]) else {
                lines.push(format!(
                    "{from}: UDP datagram dropped: not iperf3's connect datagram"
                ));
                continue;
            };
            let tx = self
                .claims
                .lock()
                .ok()
                .and_then(|m| m.get(&from.ip()).cloned().flatten());
            let why = match tx.map(|tx| tx.try_send((from, reply))) {
                Some(Ok(())) => continue,
                Some(Err(TrySendError::Full(_))) => "beyond the streams its test asked for",
                Some(Err(TrySendError::Disconnected(_))) | None => {
                    "no iperf3 UDP test from that address waits for a stream"
                }
            };
            lines.push(format!("{from}: UDP datagram dropped: {why}"));
        }
        lines
    }

    /// Claims `ip` for one UDP test until the claim is dropped; `None` when a test from that
    /// address holds it already.
    pub(super) fn claim(&self, ip: IpAddr, streams: usize) -> Option<UdpClaim<'_>> {
        let ip = ip.to_canonical();
        let mut claims = self.claims.lock().ok()?;
        if claims.contains_key(&ip) {
            return None;
        }
        // Room for a stray duplicate beside every stream.
        let (tx, rx) = mpsc::sync_channel(streams * 2);
        claims.insert(ip, Some(tx));
        Some(UdpClaim {
            door: self,
            ip,
            arrivals: rx,
        })
    }
}

/// Why a UDP test's streams are not all there: iperf3's client is told with
/// `STREAM_CONNECT`, the log with these words.
#[derive(Debug, thiserror::Error)]
pub(super) enum StreamsError {
    /// The deadline (serve --setup-timeout) passed with `came` of the `asked` streams in.
    #[error("{came} of {asked} UDP streams came in time")]
    Late { came: usize, asked: usize },
    /// A stream's own socket on the server's port could not be opened.
    #[error("UDP stream from {from}: {error}")]
    Open {
        from: SocketAddr,
        error: engine::EngineError,
    },
    /// A stream's own socket could not be connected to it or answer it.
    #[error("UDP stream from {from}: {error}")]
    Answer {
        from: SocketAddr,
        error: std::io::Error,
    },
}

/// One test's hold on its client's address (see [`UdpDoor::claim`]).
pub(super) struct UdpClaim<'a> {
    door: &'a UdpDoor,
    ip: IpAddr,
    arrivals: Receiver<Connect>,
}

impl UdpClaim<'_> {
    /// The test's `n` streams, in the order their connect datagrams came, each a socket on
    /// `local` (the server's address and port) connected to its stream and already answered;
    /// `Err` with how many came when the rest do not by `deadline`, or the stream that could
    /// not be answered.
    pub(super) fn streams(
        &self,
        n: usize,
        local: SocketAddr,
        window: Option<u32>,
        deadline: Instant,
    ) -> Result<Vec<Conn>, StreamsError> {
        let local = SocketAddr::new(local.ip().to_canonical(), local.port());
        let mut seen = HashSet::new();
        let mut conns = Vec::with_capacity(n);
        while conns.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok((from, reply)) = self.arrivals.recv_timeout(left) else {
                return Err(StreamsError::Late {
                    came: conns.len(),
                    asked: n,
                });
            };
            if !seen.insert(from) {
                continue;
            }
            let socket = shared_port_socket(local, window)
                .map_err(|error| StreamsError::Open { from, error })?;
            socket
                .connect(from)
                .and_then(|()| socket.send(&reply))
                .map_err(|error| StreamsError::Answer { from, error })?;
            conns.push(Conn::Udp(socket));
        }
        // No more streams: datagrams from the address are no longer handed on.
        if let Ok(mut m) = self.door.claims.lock() {
            m.insert(self.ip, None);
        }
        Ok(conns)
    }
}

impl Drop for UdpClaim<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.door.claims.lock() {
            m.remove(&self.ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use wire::iperf3_udp::CONNECT_REPLY;

    /// A client's stream: connect datagram to the door, the reply from the server's port.
    fn connect(door_addr: SocketAddr) -> UdpSocket {
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(door_addr).unwrap();
        c.send(&wire::iperf3_udp::CONNECT_MSG).unwrap();
        c
    }

    #[test]
    fn streams_are_answered_from_the_servers_port_and_kept_apart() {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let (door, why) = UdpDoor::open(Some(addr));
        assert!(why.is_none(), "{why:?}");
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let claim = door.claim(ip, 2).unwrap();
        assert!(
            door.claim(ip, 1).is_none(),
            "a second test from one address"
        );
        let clients = [connect(addr), connect(addr)];
        std::thread::sleep(Duration::from_millis(20));
        assert!(door.read(|_| true).is_empty());
        let deadline = Instant::now() + Duration::from_secs(2);
        let conns = claim.streams(2, addr, None, deadline).unwrap();
        for (client, conn) in clients.iter().zip(&conns) {
            let mut b = [0u8; 4];
            client
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            assert_eq!(client.recv(&mut b).unwrap(), 4);
            assert_eq!(b, CONNECT_REPLY);
            // Data now reaches the stream's own socket, not the door.
            client.send(b"data").unwrap();
            let Conn::Udp(s) = conn else { panic!() };
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            assert_eq!(s.recv(&mut b).unwrap(), 4);
        }
        assert_eq!(door.read(|_| true).len(), 0);
        // A stray connect after the streams are made is dropped and logged.
        connect(addr);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(door.read(|_| true).len(), 1);
        drop(claim);
        assert!(door.claim(ip, 1).is_some(), "the address is free again");
    }

    #[test]
    fn only_connect_datagrams_are_taken_and_each_is_answered_in_its_byte_order() {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let (door, _) = UdpDoor::open(Some(addr));
        let claim = door.claim("127.0.0.1".parse().unwrap(), 1).unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(addr).unwrap();
        c.send(b"not a connect datagram").unwrap();
        c.send(b"6789").unwrap(); // a big-endian iperf3's connect
        std::thread::sleep(Duration::from_millis(20));
        let lines = door.read(|_| true);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("not iperf3's connect datagram"),
            "{lines:?}"
        );
        let deadline = Instant::now() + Duration::from_secs(2);
        claim.streams(1, addr, None, deadline).unwrap();
        let mut b = [0u8; 4];
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(c.recv(&mut b).unwrap(), 4);
        assert_eq!(&b, b"9876", "the answer in the client's byte order");
    }
}
