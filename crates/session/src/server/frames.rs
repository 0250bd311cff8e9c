//! A frame engine's test at the server (`serve --frames`): the test's UDP ports are one
//! contiguous block, so that the XDP counter on the interface the control connection arrived
//! on matches exactly them;
//! the counter is attached as the block opens, before `Accepted` (its frames counted at the
//! driver; the probe handshake's datagrams are not), and detached when the session drops it,
//! also when the server is killed (a BPF link, pinned nowhere). After
//! counting, a `packet` test's frames pass up the stack to the test's sockets, which keep the
//! sequence accounting; an `xdp` test's are redirected to AF_XDP sockets, one per receive queue
//! (`engine::frame_rx` keeps the same accounting without an skb per frame), unless a queue
//! could not get one: then they pass up the stack too, and the record says which.
//!
//! Invariants: the counter goes on the interface the control connection arrived on (the
//! kernel's record of its SYN's incoming interface, `frames::route::arrived_on`), never the one
//! holding the address it arrived at: a client routing to one address of the server through
//! another interface gets the interface its packets use, not that address's. Only the test's
//! own ports are counted (the block is held by the session's sockets, so no other socket has
//! them) at the address the control connection arrived at, and only frames from the client's
//! address (the control connection's peer): another host's frames to those ports, and the
//! client's to another address of this host, are not the test's and pass untouched. An
//! interface that already has an XDP program is refused, never replaced
//! (`frames::SysError::XdpBusy`), and the client is not told which program it is (the server's
//! log says); at most [`MAX_XSK_QUEUES`] AF_XDP sockets per test, counted in its budget
//! (`budget.rs`).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;

use engine::frame_rx::FrameRx;
use engine::udp_socket::udp_socket;
use engine::{Conn, Endpoint};
use frames::af_xdp::{Granted, Mode, XskRx};
use frames::xdp::{Action, Matching, PortRange, XdpCounter};
use wire::msg::{DriverCounts, FlowSpread};
use wire::spec::{Flow, FrameRxPath, UdpEngine};

use super::SessionError;

/// Why an `xdp` test's receiver has no AF_XDP sockets, its frames going up the stack.
#[derive(Debug, thiserror::Error)]
enum NoXskReceiver {
    #[error("{0}'s receive queues are not readable here")]
    QueuesUnknown(String),
    #[error("{0} has {1} receive queues, more than the {MAX_XSK_QUEUES} the receiver opens AF_XDP sockets on")]
    Queues(String, u32),
    #[error("frames of up to {0} bytes, more than an AF_XDP socket's chunk takes ({max})", max = frames::af_xdp::MAX_RX_FRAME)]
    Chunk(usize),
    #[error("the interface: {0}")]
    Interface(frames::SysError),
    #[error("an AF_XDP socket: {0}")]
    Socket(frames::SysError),
}

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

/// A frame test's frames: UDP to its block `first..=last` (each stream's destination ports in
/// turn), from `client`, each stream's source ports from its probe's up.
pub(super) fn matching(
    udp: &wire::spec::UdpParams,
    first: u16,
    last: u16,
    client: Option<IpAddr>,
) -> Matching {
    let side = |n: u32| u16::try_from(n.max(1)).unwrap_or(u16::MAX);
    Matching {
        from: client,
        dst_per_stream: side(udp.flows_dst),
        src_per_stream: side(udp.flows),
        ..Matching::ports(PortRange {
            first,
            count: last - first + 1,
        })
    }
}

/// The counter of one test: on the interface the control connection arrived on, with the
/// test's AF_XDP receiver when it has one.
pub(super) struct FrameCounter {
    counter: XdpCounter,
    interface: String,
    /// Whether the test's frames are IPv6 (the control connection's family).
    ipv6: bool,
    rx: Option<Arc<FrameRx>>,
    /// Why an `xdp` test's frames went up the stack instead of to AF_XDP sockets.
    rx_fallback: Option<String>,
    /// The port block's sockets while AF_XDP sockets take the frames: held, so no other
    /// socket can bind the counter's ports.
    _held: Vec<Conn>,
}

/// The name of the interface the control connection `ctrl` arrived on (its SYN's incoming
/// interface, as the kernel kept it), for a client at `client`.
fn arrival_interface(ctrl: &Conn, client: Option<IpAddr>) -> Result<String, SessionError> {
    let Conn::Tcp(tcp) = ctrl else {
        return Err(SessionError::FramesInterface);
    };
    let ipv6 = client.is_some_and(|c| c.is_ipv6());
    let index = frames::route::arrived_on(tcp.as_fd(), ipv6)?;
    Ok(frames::xdp::ifname(index)?)
}

/// An attach refused because another XDP program holds the interface, as the client is told
/// it: naming the interface, not the program (which [`SessionError::FramesBusy`] keeps for the
/// server's log).
fn unnamed(e: frames::SysError) -> SessionError {
    match e {
        frames::SysError::XdpBusy {
            ifname,
            ifindex,
            holder,
            source,
        } => SessionError::FramesBusy {
            busy: frames::SysError::XdpBusy {
                ifname,
                ifindex,
                holder: String::new(),
                source,
            },
            holder,
        },
        other => SessionError::Frames(other),
    }
}

/// A test's ends for its workers, with its frame counter (`None`: not a frame test).
pub(super) type Ends = (Option<FrameCounter>, Vec<Endpoint>);

impl FrameCounter {
    /// The counter of `spec`'s test when it is a frame engine's, attached as the test's ports
    /// open (`ports`), before `Accepted`: so a client sets its senders up knowing the counter
    /// is on (a veth transmits redirected frames only while its peer has an XDP program), and
    /// every frame after the probes is counted. On the interface the control connection arrived
    /// on, counting frames from its peer's address to its local address only (canonical: a
    /// dual-stack listener sees an IPv4 client as ::ffff:a.b.c.d, its frames as IPv4).
    pub(super) fn for_ports(
        ctrl: &Conn,
        spec: &wire::TestSpec,
        ports: &[u16],
    ) -> Result<Option<Self>, SessionError> {
        let Some(udp) = spec.udp().filter(|u| u.engine.sends_frames()) else {
            return Ok(None);
        };
        let client = ctrl.peer_addr().map(|a| a.ip().to_canonical());
        let interface = arrival_interface(ctrl, client)?;
        let (Some(&first), Some(&last)) = (ports.iter().min(), ports.iter().max()) else {
            return Err(SessionError::FramesInterface);
        };
        let action = match udp.engine {
            UdpEngine::Xdp => Action::Redirect,
            _ => Action::Pass,
        };
        let m = Matching {
            to: ctrl.local_addr().map(|a| a.ip().to_canonical()),
            ..matching(udp, first, last, client)
        };
        let counter = XdpCounter::attach_from(&interface, &m, action).map_err(unnamed)?;
        Ok(Some(Self {
            counter,
            interface,
            ipv6: client.is_some_and(|c| c.is_ipv6()),
            rx: None,
            rx_fallback: None,
            _held: Vec::new(),
        }))
    }

    /// The workers' ends for `conns`, with the counter (`None`: not a frame test): an `xdp`
    /// test's receiving streams read the test's AF_XDP sockets where every receive queue got
    /// one, every other stream its sockets.
    pub(super) fn ends(counter: Option<Self>, spec: &wire::TestSpec, conns: Vec<Conn>) -> Ends {
        let sockets = |conns: Vec<Conn>| conns.into_iter().map(Endpoint::Socket).collect();
        let Some(mut counter) = counter else {
            return (None, sockets(conns));
        };
        let payload = spec.udp().map_or(0, |u| u.payload_len_bytes);
        let Some(map) = counter.counter.xsk_map() else {
            return (Some(counter), sockets(conns));
        };
        let rx = match counter.open_receiver(map, spec.flows().len(), payload) {
            Ok(rx) => rx,
            Err(why) => {
                counter.rx_fallback = Some(why.to_string());
                return (Some(counter), sockets(conns));
            }
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
        (Some(counter), ends)
    }

    /// AF_XDP sockets on every receive queue of the interface, in the counter's XSKMAP `map`;
    /// or why not (the frames then pass up the stack to the test's sockets, its slots being
    /// empty).
    fn open_receiver(
        &self,
        map: &std::os::fd::OwnedFd,
        streams: usize,
        payload: u32,
    ) -> Result<Arc<FrameRx>, NoXskReceiver> {
        let ifname = &self.interface;
        let index = frames::xdp::ifindex(ifname).map_err(NoXskReceiver::Interface)?;
        // Every queue must get a socket (a frame on a queue without one would pass up to
        // sockets nobody reads), and every frame must fit a chunk.
        let queues = (frames::xdp_query::queues(ifname))
            .ok_or_else(|| NoXskReceiver::QueuesUnknown(ifname.clone()))?
            .rx;
        if queues > MAX_XSK_QUEUES {
            return Err(NoXskReceiver::Queues(ifname.clone(), queues));
        }
        // Received without the FCS, with the headers of the test's family.
        let overhead = frames::frame::overhead(self.ipv6) - frames::frame::FCS_LEN;
        let largest = payload as usize + overhead;
        if largest > frames::af_xdp::MAX_RX_FRAME {
            return Err(NoXskReceiver::Chunk(largest));
        }
        let socks = (0..queues)
            .map(|q| XskRx::open(index, q, Mode::Auto, map))
            .collect::<Result<Vec<_>, _>>()
            .map_err(NoXskReceiver::Socket)?;
        Ok(Arc::new(FrameRx::new(socks, streams, payload as usize)))
    }

    /// The interface the counter is on (the one holding the control connection's address).
    pub(super) fn interface(&self) -> &str {
        &self.interface
    }

    /// Why an `xdp` test's frames go up the stack rather than to AF_XDP sockets, if they do.
    pub(super) fn rx_fallback(&self) -> Option<&str> {
        self.rx_fallback.as_deref()
    }

    /// What it counted so far (the counter stays attached until dropped), with how the
    /// receiver took the frames and what its AF_XDP sockets dropped (read once the test's
    /// workers are joined).
    pub(super) fn counts(&self) -> Result<DriverCounts, SessionError> {
        let queues = self.counter.per_queue()?;
        let flows = self.counter.per_flow()?;
        let c = frames::xdp::Counts::total(&queues);
        let rx_path = self.rx.as_ref().map(|rx| match rx.granted() {
            Some(Granted::ZeroCopy) => FrameRxPath::XdpZeroCopy,
            _ => FrameRxPath::XdpCopy,
        });
        Ok(DriverCounts {
            interface: self.interface.clone(),
            frames: c.frames,
            bytes: c.bytes,
            queue_frames: queues.iter().map(|q| q.frames).collect(),
            rx_path: Some(rx_path.unwrap_or(FrameRxPath::Sockets)),
            rx_queues: self.rx.as_ref().map_or(0, |rx| rx.queues()),
            rx_socket_dropped: self.rx.as_ref().map_or(0, |rx| rx.stats().rx_lost()),
            flows: Some(FlowSpread::of(flows.keys, &flows.frames)),
            rx_fallback: self.rx_fallback.clone(),
        })
    }
}
