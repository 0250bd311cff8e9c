//! The engine trait: how one data connection is driven for a test kind.

use std::time::Instant;

use measure::{cpu::CpuTime, tcp_info::TcpInfo};
use wire::msg::StreamCounts;
use wire::spec::Flow;
use wire::spec::Shape;
use wire::TestSpec;

use crate::{Abort, Endpoint, EngineError, Signal, StreamCounters};

/// Which end of a data connection this worker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Writes data.
    Sender,
    /// Reads data.
    Receiver,
}

/// What a worker shares with its orchestrator.
#[derive(Debug, Clone, Copy)]
pub struct StreamControl<'a> {
    /// Stream index (carried in datagram headers).
    pub stream: u16,
    /// The worker's running counters.
    pub counter: &'a StreamCounters,
    /// Raised when the test time is over: senders stop, receivers drain to end of stream.
    pub stop: &'a Signal,
    /// Raised to give up at once (peer gone, drain took too long, shutdown).
    pub abort: &'a Abort,
    /// When the test's window opened ([`crate::Workers::start_clock`]): a paced requester's
    /// schedule starts here, however late its thread first ran.
    pub origin: Instant,
    /// A test by amount: what this end's senders have left to send, shared among them
    /// (`None`: a test by time, or a receiver).
    pub budget: Option<&'a crate::budget::Budget>,
}

/// What a worker reports when its connection is done.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamReport {
    /// Bytes written or read over the whole connection.
    pub bytes_total: u64,
    /// CPU time of the worker thread while it ran.
    pub cpu: CpuTime,
    /// TCP_INFO taken at the end, on the sending side of a TCP connection.
    pub tcp_info: Option<TcpInfo>,
    /// Final counters (UDP: datagrams, and a receiver's sequence accounting).
    pub counts: StreamCounts,
    /// Request/response requesters: every round trip.
    pub latency: Option<measure::latency::Latency>,
    /// UDP request/response requesters: requests never answered.
    pub lost_transactions: u64,
    /// Paced requesters: schedule slots that passed without a request (see `pace`).
    pub slots_missed: u64,
    /// A frame engine's sender: how its frames reached the driver.
    pub frame_path: Option<wire::spec::FramePath>,
    /// Why that is not the path the engine would have taken (the kernel refused it).
    pub frame_fallback: Option<String>,
}

/// Drives one data connection of a test kind. One implementation per file.
pub trait StreamEngine: Send + Sync {
    /// The engine's name in messages: its file's (`tcp_rr`, `udp_frames`).
    fn name(&self) -> &'static str;

    /// Runs `end` (a socket, or a `tcp_crr` requester's target) as `role` until the stream
    /// ends (see [`StreamControl`]).
    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError>;

    /// Sets `end` up for `role` before the test begins, so its set-up is not in the test's
    /// window: a frame sender builds its frames and opens its ring or program
    /// (`udp_frames`). Every other engine takes `end` as it is.
    fn prepare(&self, end: Endpoint, role: Role, stream: u16) -> Result<Endpoint, EngineError> {
        let _ = (role, stream);
        Ok(end)
    }

    /// Whether a worker runs this engine with a descriptor table of its own (see
    /// `fd_table`) when its connection is a stream socket: that socket and the standard
    /// streams only, so that its socket calls skip the reference counting a shared table
    /// costs. Such an engine ends its streams with an explicit `shutdown`, and registers no
    /// socket it opens itself with the abort.
    fn private_fd_table(&self) -> bool {
        false
    }
}

/// The engine for a spec's test kind, configured from the kind's parameters, for the end whose
/// senders carry `sends` (the client's: client → server; the server's: server → client), so
/// that they keep that flow's rate.
pub fn engine_for(spec: &TestSpec, sends: Flow) -> Box<dyn StreamEngine> {
    use crate::round_trips::RrShape;
    match spec.params.shape() {
        Shape::TcpStream { stream, .. } => match stream.self_probes_per_s {
            // The client requests; the server answers only.
            Some(per_s) => Box::new(crate::self_probe::SelfProbe::new(match sends {
                Flow::ClientToServer => f64::from(per_s),
                Flow::ServerToClient => 0.0,
            })),
            None => Box::new(
                crate::tcp_stream::TcpStream::new(
                    stream.write_len_bytes as usize,
                    stream.send_mode,
                )
                .with_rx_mode(stream.rx_mode)
                .with_streams(spec.streams),
            ),
        },
        // A frame engine sends from the client; the server receives with `UdpStream`, on its
        // sockets or, given `Endpoint::Frames`, on AF_XDP sockets (`frame_rx`).
        Shape::UdpStream { udp } if udp.engine.sends_frames() && sends == Flow::ClientToServer => {
            Box::new(crate::udp_frames::UdpFrames::new(udp, sends))
        }
        Shape::UdpStream { udp } => Box::new(crate::udp_stream::UdpStream::new(udp, sends)),
        Shape::TcpRr { rr, .. } => Box::new(crate::tcp_rr::TcpRr::new(RrShape::of(rr))),
        // A connection per transaction (`tcp_crr`; `tcp_cc`, whose transaction is empty).
        Shape::TcpConnect { rr, .. } => Box::new(crate::tcp_crr::TcpCrr::new(RrShape::of(rr))),
        Shape::UdpRr { rr } => {
            Box::new(crate::udp_rr::UdpRr::new(RrShape::of(rr)).with_busy_poll(rr.busy_poll_us))
        }
    }
}
