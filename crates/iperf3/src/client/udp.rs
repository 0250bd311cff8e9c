//! `linerate udp --iperf3`: the UDP side of speaking to a stock `iperf3 -s`. Each stream is a
//! UDP socket connected to the server's port that announces itself with iperf3's connect
//! datagram and waits for the answer; data carries iperf3's datagram header
//! ([`engine::udp_stream::Framing::Iperf3`], 64-bit counters); the server's results give a
//! receiver's datagram counts as iperf3 keeps them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::protocol::StreamResults;
use engine::udp_socket::udp_socket;
use engine::udp_stream::{Framing, UdpStream};
use engine::{Conn, Endpoint, StreamEngine};
use wire::iperf3_udp::{is_connect_reply, CONNECT_MSG};
use wire::msg::StreamCounts;
use wire::spec::{Flow, UdpParams, UdpRate};

use session::client::ClientError;
use session::HANDSHAKE_TIMEOUT;

/// linerate always asks for 64-bit counters (every iperf3 3.x server takes them).
pub(super) const FRAMING: Framing = Framing::Iperf3 {
    counters_64bit: true,
};

/// The engine of a UDP test against iperf3.
pub(super) fn engine(udp: &UdpParams) -> Box<dyn StreamEngine> {
    Box::new(UdpStream::framed(udp, FRAMING, Flow::ClientToServer))
}

/// iperf3's `bandwidth` for a UDP rate, bits/s of payload per stream (0: unlimited).
pub(super) fn bandwidth(udp: &UdpParams) -> u64 {
    match udp.rate {
        UdpRate::BitsPerSec(bps) => bps,
        UdpRate::PacketsPerSec(pps) => pps * u64::from(udp.payload_len_bytes) * 8,
        UdpRate::Max => 0,
    }
}

/// One UDP stream to the iperf3 server at `addr`: a socket connected to the server's port,
/// announced with iperf3's connect datagram and answered.
pub(super) fn connect(
    addr: SocketAddr,
    bind: Option<SocketAddr>,
    window: Option<u32>,
) -> Result<Endpoint, ClientError> {
    let unspecified = match addr.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let local = SocketAddr::new(bind.map_or(unspecified, |b| b.ip()), 0);
    let failed = |e: String| {
        ClientError::Protocol(format!(
            "iperf3 server: opening a UDP stream to {addr}: {e}"
        ))
    };
    let sock: UdpSocket = udp_socket(local, window).map_err(|e| failed(e.to_string()))?;
    sock.connect(addr).map_err(|e| failed(e.to_string()))?;
    sock.send(&CONNECT_MSG).map_err(|e| failed(e.to_string()))?;
    sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| failed(e.to_string()))?;
    let mut reply = [0u8; 4];
    match sock.recv(&mut reply) {
        Ok(4) if is_connect_reply(&reply) => Ok(Endpoint::Socket(Conn::Udp(sock))),
        Ok(_) => Err(failed(format!(
            "its answer {reply:02x?} is not iperf3's to a connect datagram"
        ))),
        Err(e) => Err(failed(format!(
            "no answer to the connect datagram ({e}); is UDP to port {} blocked?",
            addr.port()
        ))),
    }
}

/// How long to let the last datagrams arrive, and be read, before `TEST_END`, when this end
/// sends: the iperf3 server stops counting at `TEST_END`, so datagrams still on their way (or
/// unread in its socket) would count as neither received nor lost there; linerate counts them
/// as lost. Two smoothed round trips of the control connection, and 20 ms.
pub(super) fn settle(ctrl: &impl AsRawFd) -> Duration {
    let rtt_us = measure::tcp_info::read(ctrl.as_raw_fd()).map_or(0, |i| u64::from(i.rtt_us));
    (Duration::from_micros(2 * rtt_us) + Duration::from_millis(20)).min(Duration::from_secs(1))
}

/// A UDP stream's counts from the iperf3 server's results: a receiver's as iperf3 keeps them
/// (`packets` the highest counter seen, `errors` the gaps below it, jitter), a sender's
/// datagrams sent.
pub(super) fn counts(s: &StreamResults, server_receives: bool) -> StreamCounts {
    let count = |v: i64| u64::try_from(v).unwrap_or(0);
    if !server_receives {
        return StreamCounts {
            bytes: s.bytes,
            packets: count(s.packets),
            ..StreamCounts::default()
        };
    }
    s.udp_receiver_counts()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receivers_figures_become_its_sequence_accounting() {
        let s = StreamResults {
            id: 1,
            bytes: 98_000,
            packets: 100,
            errors: 2,
            jitter: 0.000_25,
            ..StreamResults::default()
        };
        let c = counts(&s, true);
        let rx = c.rx.unwrap();
        assert_eq!((rx.unique, rx.lost_so_far, rx.highest_seq), (98, 2, 99));
        assert_eq!(rx.lost(100), 2, "sent = received + lost");
        assert_eq!(rx.jitter_ns, 250_000);
        let sent = counts(&s, false);
        assert_eq!((sent.packets, sent.rx), (100, None));
    }

    #[test]
    fn rates_become_iperf3s_bandwidth() {
        let mut udp = UdpParams::new(wire::Direction::Send);
        assert_eq!(bandwidth(&udp), 0);
        udp.rate = UdpRate::PacketsPerSec(1000);
        udp.payload_len_bytes = 100;
        assert_eq!(bandwidth(&udp), 800_000);
    }
}
