//! `udp_stream` with a frame engine (`--engine packet|xdp`): the client's senders build the
//! Ethernet frames themselves (`frames`) and hand them to the driver through an AF_PACKET TX
//! ring, an AF_XDP socket or XDP live frames, past the sending host's stack and qdiscs. The
//! receiver, behind the server's XDP counter that counts the frames at its driver, is the
//! server's usual `udp_stream` socket receiver for `packet` and its AF_XDP sockets for `xdp`
//! (`crate::frame_rx`).
//!
//! Each stream's frames carry the datagram header with its stream index and one sequence
//! number per frame; they go from the stream's UDP socket's own address and port (the socket
//! did the probe handshake, so the server's receiver takes them) to the server's ports for the
//! stream, varying source and destination ports as pkt-gen's flow patterns do. The peer's MAC
//! and the interface come from the kernel's route and neighbour entry for the server
//! (`frames::route`): frames go only where the control connection goes.
//!
//! A frame the sending driver drops (its kick fails) still used a sequence number: it counts as
//! sent and refused (`send_drops`), as the socket engine counts the sends its host refused. No
//! FIN datagram follows the frames: the server's counter would count it among them.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use frames::af_xdp::{Granted, Mode, XskTx};
use frames::packet_tx::{PacketTx, RingSize};
use frames::route::Path;
use frames::send::{send, Control, FrameTx, Progress, SendLimit, TxCounts};
use frames::xdp_live::LiveTx;
use frames::{Endpoints, FlowPattern, FrameSpec, Frames};
use measure::clock::now_ns;
use measure::cpu::CpuTime;
use wire::msg::{SendDrops, StreamCounts};
use wire::spec::{Flow, FramePath, UdpEngine, UdpParams};

use crate::{Conn, Endpoint, EngineError, Role, StreamControl, StreamEngine, StreamReport};

/// Longest a frame sender runs if nothing stops it (the test's stop always comes first).
const MOST: Duration = Duration::from_secs(24 * 3600);

/// The frame engines' `udp_stream` sender.
#[derive(Debug, Clone)]
pub struct UdpFrames {
    engine: UdpEngine,
    payload: usize,
    target_pps: Option<f64>,
    flows: u32,
    flows_dst: u32,
}

impl UdpFrames {
    /// A sender for `udp` (its engine one of the frame engines), keeping `sends`' rate.
    pub fn new(udp: &UdpParams, sends: Flow) -> Self {
        Self {
            engine: udp.engine,
            payload: udp.payload_len_bytes as usize,
            target_pps: udp.target_pps(sends),
            flows: udp.flows,
            flows_dst: udp.flows_dst,
        }
    }

    fn pattern(&self) -> FlowPattern {
        match (self.flows > 1, self.flows_dst > 1) {
            (false, false) => FlowPattern::One,
            (true, false) => FlowPattern::SourcePorts,
            (false, true) => FlowPattern::DestinationPorts,
            (true, true) => FlowPattern::SourceAndDestination,
        }
    }

    /// The stream's frames from `sock`'s address to its peer's, and the path they take.
    fn frames(&self, sock: &UdpSocket, stream: u16) -> Result<(Frames, Path), EngineError> {
        let (local, peer) = (sock.local_addr()?, sock.peer_addr()?);
        let path = frames::route::path_to(peer.ip()).map_err(|e| invalid(e.to_string()))?;
        let spec = FrameSpec {
            endpoints: Endpoints {
                src_mac: path.src_mac,
                dst_mac: path.dst_mac,
                src: local.ip(),
                dst: peer.ip(),
                src_port: local.port(),
                dst_port: peer.port(),
            },
            frame_size: self.payload + frames::frame::overhead(peer.is_ipv6()),
            mtu: path.mtu,
            flows: self.pattern(),
        };
        let built = Frames::new(&spec).map_err(|e| invalid(format!("-l {}: {e}", self.payload)))?;
        Ok((built.of_stream(stream), path))
    }

    /// The engine's sender on `ifindex`. `xdp` takes, in order: an AF_XDP socket where the
    /// driver offers zero-copy; XDP live frames where it transmits redirected frames and the
    /// test is unpaced or paced at [`LIVE_PACED_MIN_PPS`] or more per stream
    /// (`frames::xdp_live`: no skb per frame); else an AF_XDP socket in
    /// copy mode. An AF_XDP socket takes a transmit queue of its own: stream *i*'s queue *i*.
    /// A kernel that refuses live frames gets the socket instead: the sender, and why it is
    /// not the one the test would have taken.
    fn open(
        &self,
        path: &Path,
        frames: &Frames,
        stream: u16,
    ) -> Result<(Sender, Option<String>), EngineError> {
        let ifindex = path.ifindex;
        if self.engine != UdpEngine::Xdp {
            let ring = RingSize::for_frames(frames.built_len());
            let tx = PacketTx::open(ifindex, ring).map_err(sys)?;
            return Ok((Sender::Ring(Box::new(tx), FramePath::PacketRing), None));
        }
        let features = frames::xdp_features::of(ifindex);
        let live = features.is_some_and(|f| f.ndo_xmit() && !f.zero_copy())
            && live_at(self.target_pps)
            && frames::xdp_live::fits(frames);
        let mut fallback = None;
        if live {
            match LiveTx::open(ifindex, frames) {
                Ok(tx) => return Ok((Sender::Live(tx), None)),
                Err(e) if LiveTx::refused(&e) => fallback = Some(e.to_string()),
                Err(e) => return Err(sys(e)),
            }
        }
        let queue = u32::from(stream);
        if let Some(q) = frames::xdp_query::queues(&path.ifname).filter(|q| queue >= q.tx) {
            return Err(invalid(too_few_queues(&path.ifname, q.tx)));
        }
        let tx = XskTx::open(ifindex, queue, Mode::Auto).map_err(sys)?;
        let path = match tx.granted() {
            Granted::ZeroCopy => FramePath::XdpZeroCopy,
            Granted::Copy => FramePath::XdpCopy,
        };
        Ok((Sender::Ring(Box::new(tx), path), fallback))
    }
}

/// A stream's sender set up ([`StreamEngine::prepare`]): its frames, the sender they go
/// through, and the socket whose address and port they carry (held, so no other socket takes
/// that port meanwhile).
pub struct Prepared {
    frames: Frames,
    sender: Sender,
    /// Why the sender is not the one the test would have taken.
    fallback: Option<String>,
    _sock: UdpSocket,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = match &self.sender {
            Sender::Ring(_, path) => *path,
            Sender::Live(_) => FramePath::XdpLive,
        };
        f.debug_struct("Prepared")
            .field("path", &path)
            .finish_non_exhaustive()
    }
}

/// A stream's sender: a ring the send loop fills, or XDP live frames.
enum Sender {
    Ring(Box<dyn FrameTx + Send>, FramePath),
    Live(LiveTx),
}

impl Sender {
    /// Sends; the counts, the path, and the CPU of any thread but this one that sent.
    fn send(&mut self, frames: &Frames, ctl: Control) -> Result<Sent, EngineError> {
        match self {
            Sender::Ring(tx, path) => {
                let c = send(tx.as_mut(), frames, ctl, &now_ns).map_err(sys)?;
                Ok((c, *path, CpuTime::default()))
            }
            Sender::Live(tx) => {
                let (c, runner) = tx.send(ctl, &now_ns).map_err(sys)?;
                Ok((c, FramePath::XdpLive, runner))
            }
        }
    }
}

/// What a sender did: counts, path, other threads' CPU.
type Sent = (TxCounts, FramePath, CpuTime);

/// The lowest rate per stream a paced `xdp` test sends live frames at: the program paces them
/// (a frame not yet due is not sent, and the run goes on), so the runner spins its core
/// whatever the rate, where the AF_XDP socket sleeps between frames; below this rate the
/// socket is the cheaper sender and reaches it.
pub const LIVE_PACED_MIN_PPS: f64 = 100_000.0;

/// Whether a stream at `target_pps` (`None`: unpaced) takes live frames where the driver
/// transmits redirected frames.
pub fn live_at(target_pps: Option<f64>) -> bool {
    target_pps.is_none_or(|r| r >= LIVE_PACED_MIN_PPS)
}

/// Why an `xdp` test has more streams than `ifname` has transmit queues for its AF_XDP
/// sockets, naming both ways out.
pub fn too_few_queues(ifname: &str, queues: u32) -> String {
    format!(
        "--engine xdp: each stream's AF_XDP socket takes a transmit queue of its own and {ifname} has {queues}: use -P {queues} at most, or give it more (ethtool -L {ifname} tx N)"
    )
}

fn invalid(why: String) -> EngineError {
    EngineError::Io(io::Error::new(ErrorKind::InvalidInput, why))
}

fn sys(e: frames::SysError) -> EngineError {
    invalid(format!("--engine: {e}"))
}

impl UdpFrames {
    /// `end`'s sender for `stream`, set up: its frames from the socket's address and port to
    /// the server's block, and the engine's sender on the route's interface.
    fn prepared(&self, end: Endpoint, role: Role, stream: u16) -> Result<Prepared, EngineError> {
        let (sock, extra_dst) = match (role, end.into_socket(self.name())?) {
            (Role::Sender, Conn::Udp(sock)) => (sock, Vec::new()),
            (Role::Sender, Conn::UdpMulti(m)) => (m.sock, m.extra_dst),
            _ => {
                return Err(invalid(
                    "a frame engine only sends, from a connected UDP socket".into(),
                ))
            }
        };
        check_block(sock.peer_addr()?, &extra_dst)?;
        let (frames, path) = self.frames(&sock, stream)?;
        let (sender, fallback) = self.open(&path, &frames, stream)?;
        Ok(Prepared {
            frames,
            sender,
            fallback,
            _sock: sock,
        })
    }
}

/// The server's ports for this stream must be one block from its main port on, as a server of
/// protocol 16 gives a frame test (the frames vary the destination port by offset).
fn check_block(peer: SocketAddr, extra_dst: &[SocketAddr]) -> Result<(), EngineError> {
    let consecutive = (extra_dst.iter().enumerate())
        .all(|(i, d)| u32::from(d.port()) == u32::from(peer.port()) + i as u32 + 1);
    match consecutive {
        true => Ok(()),
        false => Err(invalid(
            "the server's UDP ports for this stream are not one block: a frame test needs a server of protocol 16 started with --frames".into(),
        )),
    }
}

impl StreamEngine for UdpFrames {
    fn name(&self) -> &'static str {
        "udp_frames"
    }

    fn prepare(&self, end: Endpoint, role: Role, stream: u16) -> Result<Endpoint, EngineError> {
        let prepared = self.prepared(end, role, stream)?;
        Ok(Endpoint::FrameSender(Box::new(prepared)))
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let cpu_start = CpuTime::thread_now();
        let Prepared {
            frames,
            mut sender,
            fallback,
            _sock,
        } = match end {
            Endpoint::FrameSender(prepared) => *prepared,
            end => self.prepared(end, role, ctl.stream)?,
        };
        let payload = self.payload as u64;
        let stop = || ctl.stop.is_raised() || ctl.abort.is_raised();
        let tell = |p: Progress| {
            let used = p.accepted + p.refused;
            ctl.counter.publish_packets(used * payload, used);
            ctl.counter.publish_helper_cpu(p.helper_cpu);
        };
        let control = Control {
            limit: SendLimit {
                frames: u64::MAX,
                time: MOST,
            },
            frames_per_s: self.target_pps,
            stop: Some(&stop),
            sent: Some(&tell),
        };
        let (c, path, runner_cpu) = sender.send(&frames, control)?;
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        let used = c.sent + c.refused;
        let counts = StreamCounts {
            bytes: used * payload,
            packets: used,
            send_drops: Some(SendDrops {
                datagrams: c.refused,
                sends: c.refused,
            }),
            ..StreamCounts::default()
        };
        Ok(StreamReport {
            bytes_total: counts.bytes,
            counts,
            cpu: CpuTime::thread_now().since(cpu_start).plus(runner_cpu),
            frame_path: Some(path),
            frame_fallback: fallback,
            ..Default::default()
        })
    }
}
