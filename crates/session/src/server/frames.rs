//! A frame engine's test at the server (`serve --frames`): the test's UDP ports are one
//! contiguous block, so that the XDP counter on the server's interface matches exactly them;
//! the counter is attached for the test (its frames counted at the driver) and detached when
//! the session drops it, also when the server is killed (a BPF link, pinned nowhere). After
//! counting, a `packet` test's frames pass up the stack to the test's sockets, which keep the
//! sequence accounting; an `xdp` test's are redirected to AF_XDP sockets, one per receive queue
//! (`engine::frame_rx` keeps the same accounting without an skb per frame), unless a queue
//! could not get one: then they pass up the stack too, and the record says which.
//!
//! Invariants: only the test's own ports are counted (the block is held by the session's
//! sockets, so no other socket has them), and only frames from the client's address (the
//! control connection's peer), so another host's frames to those ports are not the test's; an
//! interface that already has an XDP program is refused, never replaced
//! (`frames::SysError::XdpBusy`); at most [`MAX_XSK_QUEUES`] AF_XDP sockets per test, counted
//! in its budget (`budget.rs`).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;

use engine::frame_rx::FrameRx;
use engine::udp_socket::udp_socket;
use engine::{Conn, Endpoint};
use frames::af_xdp::{Granted, Mode, XskRx};
use frames::xdp::{Action, PortRange, XdpCounter};
use wire::msg::DriverCounts;
use wire::spec::{Flow, FrameRxPath, UdpEngine};

use super::SessionError;

/// Tries at finding a free block of ports before giving up.
const BLOCK_TRIES: usize = 32;

/// `n` UDP sockets on `ip` at consecutive ports, each with `window` buffers.
pub(super) fn port_block(
    ip: IpAddr,
    n: usize,
    window: Option<u32>,
) -> Result<Vec<UdpSocket>, SessionError> {
    let mut last = None;
    for _ in 0..BLOCK_TRIES {
        let first = udp_socket(SocketAddr::new(ip, 0), window).map_err(SessionError::UdpSocket)?;
        let base = first.local_addr()?.port();
        let mut block = vec![first];
        for k in 1..n {
            let Some(port) = u16::try_from(k).ok().and_then(|k| base.checked_add(k)) else {
                break;
            };
            match udp_socket(SocketAddr::new(ip, port), window) {
                Ok(s) => block.push(s),
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        if block.len() == n {
            return Ok(block);
        }
    }
    Err(SessionError::UdpSocket(last.unwrap_or_else(|| {
        engine::EngineError::Io(std::io::Error::other(format!(
            "no {n} consecutive free UDP ports found in {BLOCK_TRIES} tries"
        )))
    })))
}

/// Receive queues an `xdp` test's receiver opens AF_XDP sockets on, at most: an interface
/// with more is received through the stack's sockets (each socket's UMEM is 8 MiB, counted in
/// the test's budget for this many).
pub const MAX_XSK_QUEUES: u32 = 8;

/// The counter of one test: on the interface holding the control connection's local address,
/// with the test's AF_XDP receiver when it has one.
pub(super) struct FrameCounter {
    counter: XdpCounter,
    interface: String,
    rx: Option<Arc<FrameRx>>,
    /// The port block's sockets while AF_XDP sockets take the frames: held, so no other
    /// socket can bind the counter's ports.
    _held: Vec<Conn>,
}

/// A test's ends for its workers, with its frame counter (`None`: not a frame test).
pub(super) type Ends = (Option<FrameCounter>, Vec<Endpoint>);

impl FrameCounter {
    /// The counter of `spec`'s test when it is a frame engine's, and the workers' ends: the
    /// `xdp` engine's receiving streams read the test's AF_XDP sockets where every receive
    /// queue got one, every other stream its sockets.
    pub(super) fn for_test(
        spec: &wire::TestSpec,
        interface: Option<&str>,
        client: Option<IpAddr>,
        conns: Vec<Conn>,
    ) -> Result<Ends, SessionError> {
        let Some(udp) = spec.udp().filter(|u| u.engine.sends_frames()) else {
            return Ok((None, conns.into_iter().map(Endpoint::Socket).collect()));
        };
        let xsk = udp.engine == UdpEngine::Xdp;
        let action = if xsk { Action::Redirect } else { Action::Pass };
        let mut counter = Self::attach(interface, client, &conns, action)?;
        let rx = xsk
            .then(|| counter.open_receiver(spec.flows().len(), udp.payload_len_bytes))
            .flatten();
        let Some(rx) = rx else {
            return Ok((
                Some(counter),
                conns.into_iter().map(Endpoint::Socket).collect(),
            ));
        };
        let mut ends = Vec::with_capacity(conns.len());
        for ((_, flow), conn) in spec.flows().into_iter().zip(conns) {
            match flow {
                Flow::ClientToServer => {
                    counter._held.push(conn);
                    ends.push(Endpoint::Frames(Arc::clone(&rx)));
                }
                Flow::ServerToClient => ends.push(Endpoint::Socket(conn)),
            }
        }
        counter.rx = Some(rx);
        Ok((Some(counter), ends))
    }

    /// Attaches the counter for the ports of `conns` (one contiguous block) on `interface`,
    /// counting frames from `client`'s address only (the control connection's peer).
    pub(super) fn attach(
        interface: Option<&str>,
        client: Option<IpAddr>,
        conns: &[Conn],
        action: Action,
    ) -> Result<Self, SessionError> {
        let interface = interface.ok_or(SessionError::FramesInterface)?;
        let ports: Vec<u16> = conns.iter().flat_map(local_ports).collect();
        let (Some(&first), Some(&last)) = (ports.iter().min(), ports.iter().max()) else {
            return Err(SessionError::FramesInterface);
        };
        let range = PortRange {
            first,
            count: last - first + 1,
        };
        let counter = XdpCounter::attach_from(interface, range, client, action)?;
        Ok(Self {
            counter,
            interface: interface.to_string(),
            rx: None,
            _held: Vec::new(),
        })
    }

    /// AF_XDP sockets on every receive queue of the interface, in the counter's XSKMAP; `None`
    /// (the frames then pass up the stack to the test's sockets, its slots being empty) when
    /// the interface has more than [`MAX_XSK_QUEUES`] or an unknown count, its frames can be
    /// larger than a socket's chunk takes, or a socket could not be opened.
    fn open_receiver(&self, streams: usize, payload: u32) -> Option<Arc<FrameRx>> {
        let map = self.counter.xsk_map()?;
        let index = frames::xdp::ifindex(&self.interface).ok()?;
        // Every queue must get a socket (a frame on a queue without one would pass up to
        // sockets nobody reads), and every frame must fit a chunk.
        let queues = frames::xdp_query::queues(&self.interface)?.rx;
        let largest = payload as usize + 8 + 40 + frames::frame::ETH_LEN;
        if queues > MAX_XSK_QUEUES || largest > frames::af_xdp::MAX_RX_FRAME {
            return None;
        }
        let socks = (0..queues)
            .map(|q| XskRx::open(index, q, Mode::Auto, map))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Some(Arc::new(FrameRx::new(socks, streams, payload as usize)))
    }

    /// What it counted so far (the counter stays attached until dropped), with how the
    /// receiver took the frames and what its AF_XDP sockets dropped (read once the test's
    /// workers are joined).
    pub(super) fn counts(&self) -> Result<DriverCounts, SessionError> {
        let c = self.counter.counts()?;
        let rx_path = self.rx.as_ref().map(|rx| match rx.granted() {
            Some(Granted::ZeroCopy) => FrameRxPath::XdpZeroCopy,
            _ => FrameRxPath::XdpCopy,
        });
        Ok(DriverCounts {
            interface: self.interface.clone(),
            frames: c.frames,
            bytes: c.bytes,
            rx_path: Some(rx_path.unwrap_or(FrameRxPath::Sockets)),
            rx_queues: self.rx.as_ref().map_or(0, |rx| rx.queues()),
            rx_socket_dropped: self.rx.as_ref().map_or(0, |rx| rx.stats().rx_lost()),
        })
    }
}

/// Every local port of a UDP data connection.
fn local_ports(conn: &Conn) -> Vec<u16> {
    let port = |s: &UdpSocket| s.local_addr().ok().map(|a| a.port());
    match conn {
        Conn::Udp(s) | Conn::UdpFrom(s, _) => port(s).into_iter().collect(),
        Conn::UdpMulti(m) => std::iter::once(&m.sock)
            .chain(&m.extra_recv)
            .filter_map(port)
            .collect(),
        _ => Vec::new(),
    }
}
