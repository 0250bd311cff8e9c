//! The server's resource budget: the sockets and buffer memory a test will hold, worked out
//! from its spec ([`Needs::of`]) and drawn from the server's totals (`--max-sockets`,
//! `--max-buffer-memory`) when the session registers, before any of them is opened or
//! allocated.
//!
//! Invariants: a test that would take the server past either total is refused with a message
//! naming the limit and its flag; what a test drew is given back however it ends (the
//! [`super::registry::SessionGuard`]'s drop); the default socket total leaves half of the
//! process's descriptors (and a reserve) to the gate, the listener and the store, so no request
//! can make the server run out of them for everyone else.

use wire::spec::{Flow, Shape, UdpEngine};
use wire::TestSpec;

/// Descriptors kept out of the socket budget whatever the limit: the listener, the iperf3 UDP
/// door, the store, the keys file, stdio, and a margin.
const RESERVED_FDS: usize = 64;
/// What one UDP socket's buffers are counted as: a GSO batch of up to 64 KiB each way.
const UDP_SOCKET_BYTES: u64 = 128 << 10;

/// The server's totals (`serve --max-sockets`, `--max-buffer-memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Sockets all running tests may hold at once: data connections, UDP sockets (each
    /// destination flow is one), connection tests' listeners and connections, control
    /// connections.
    pub max_sockets: usize,
    /// Bytes of user-space buffers all running tests may hold at once (senders' patterns,
    /// receivers' buffers, requests and responses).
    pub max_buffer_bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_sockets: default_max_sockets(engine::sys_io::open_files_limit()),
            // 16 sessions of 128 streams at the default 512 KiB write length, sending.
            max_buffer_bytes: 1 << 30,
        }
    }
}

/// Half the soft limit of open files, less a reserve (at least 16): a server's own
/// descriptors, and a flood of handshakes, have the other half.
pub fn default_max_sockets(open_files: u64) -> usize {
    let half = usize::try_from(open_files / 2).unwrap_or(usize::MAX);
    half.saturating_sub(RESERVED_FDS).max(16)
}

/// What one test holds while it runs, on the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Sockets, its control connection included.
    pub sockets: usize,
    /// User-space buffer bytes.
    pub buffer_bytes: u64,
}

impl Needs {
    /// The server's side of `spec`: counted from the same parameters the engines and
    /// `setup.rs` size their sockets and buffers by.
    pub fn of(spec: &TestSpec) -> Self {
        let flows = spec.flows();
        let mut needs = Self {
            sockets: 1,
            buffer_bytes: 0,
        };
        let send_buf = |len: u32| (len as usize).min(engine::tcp_stream::MAX_SEND_BUF) as u64;
        let read_buf = |len: u32| (len as usize).min(engine::tcp_stream::MAX_READ) as u64;
        for &(_, flow) in &flows {
            let (sockets, bytes) = match spec.params.shape() {
                Shape::TcpStream { stream, .. } => match flow {
                    // A spliced sender's pattern is in a memfd and a pipe as well as (for
                    // write) its buffer: counted twice.
                    Flow::ServerToClient => (1, 2 * send_buf(stream.write_len_bytes)),
                    Flow::ClientToServer => (1, read_buf(stream.write_len_bytes)),
                },
                Shape::UdpStream { udp } => {
                    let sockets = match flow {
                        Flow::ClientToServer => udp.flows_dst.max(1) as usize,
                        Flow::ServerToClient => 1,
                    };
                    (sockets, UDP_SOCKET_BYTES)
                }
                // A request read whole and a response written whole, per stream; a connection
                // test holds one connection per stream at a time.
                Shape::TcpRr { rr, .. } | Shape::TcpConnect { rr, .. } | Shape::UdpRr { rr } => (
                    1,
                    u64::from(rr.request_len_bytes) + u64::from(rr.response_len_bytes),
                ),
            };
            needs.sockets = needs.sockets.saturating_add(sockets);
            needs.buffer_bytes = needs.buffer_bytes.saturating_add(bytes);
        }
        if spec.kind().row().connects {
            // The session's listener.
            needs.sockets += 1;
        }
        if let Some(udp) = spec.udp().filter(|u| u.engine.sends_frames()) {
            // The counter's per-flow counters, in the kernel (`frames::xdp`).
            let block = (flows.len() as u64 * u64::from(udp.flows_dst.max(1))).min(65_535);
            let m = super::frames::matching(udp, 0, (block as u16).saturating_sub(1), None);
            needs.buffer_bytes =
                (needs.buffer_bytes).saturating_add(frames::xdp::flow_counter_bytes(&m));
        }
        if spec.udp().is_some_and(|u| u.engine == UdpEngine::Xdp) {
            // An `xdp` test's AF_XDP receiver (`frames.rs`): a socket and its UMEM per receive
            // queue, for the most queues it opens.
            let queues = super::frames::MAX_XSK_QUEUES as usize;
            let umem = frames::af_xdp::CHUNK as u64 * u64::from(frames::af_xdp::CHUNKS);
            needs.sockets = needs.sockets.saturating_add(queues);
            needs.buffer_bytes = needs.buffer_bytes.saturating_add(queues as u64 * umem);
        }
        needs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::{Direction, StreamParams, TcpOptions, UdpParams};
    use wire::Params;

    #[test]
    fn the_default_socket_budget_is_half_the_descriptors_less_a_reserve() {
        assert_eq!(default_max_sockets(32_768), 16_384 - RESERVED_FDS);
        assert_eq!(default_max_sockets(1024), 512 - RESERVED_FDS);
        assert_eq!(default_max_sockets(40), 16);
    }

    #[test]
    fn a_udp_receivers_destination_flows_are_its_sockets() {
        let udp = UdpParams {
            flows_dst: 50,
            ..UdpParams::new(Direction::Send)
        };
        let spec = TestSpec::new(Params::UdpStream { udp }, 2, 1000);
        assert_eq!(Needs::of(&spec).sockets, 1 + 2 * 50);
    }

    #[test]
    fn an_xdp_tests_receiver_counts_its_af_xdp_sockets_and_their_umem() {
        let of = |engine| {
            let udp = UdpParams {
                engine,
                ..UdpParams::new(Direction::Send)
            };
            Needs::of(&TestSpec::new(Params::UdpStream { udp }, 1, 1000))
        };
        let (packet, xdp) = (of(UdpEngine::Packet), of(UdpEngine::Xdp));
        assert_eq!(xdp.sockets - packet.sockets, 8);
        assert_eq!(xdp.buffer_bytes - packet.buffer_bytes, 8 * (8 << 20));
    }

    /// The counter's per-flow counters live in the kernel, a u64 per flow per possible CPU:
    /// a frame test of 4 streams of pkt-gen's 10,000 flows counts 40,000 of them.
    #[test]
    fn a_frame_tests_per_flow_counters_are_in_its_budget() {
        let of = |engine| {
            let udp = UdpParams {
                engine,
                flows: 100,
                flows_dst: 100,
                ..UdpParams::new(Direction::Send)
            };
            Needs::of(&TestSpec::new(Params::UdpStream { udp }, 4, 1000))
        };
        let cpus = frames::bpf::sys::possible_cpus().unwrap() as u64;
        let keys = 40_000u64
            .min(u64::from(frames::xdp::FLOW_KEYS_MAX))
            .min(frames::xdp::FLOW_MAP_BYTES_MAX / (8 * cpus));
        let (socket, packet) = (of(UdpEngine::Socket), of(UdpEngine::Packet));
        assert_eq!(packet.sockets, socket.sockets);
        assert_eq!(packet.buffer_bytes - socket.buffer_bytes, keys * 8 * cpus);
    }

    #[test]
    fn a_senders_buffer_is_counted_at_the_cap_whatever_the_length() {
        let stream = StreamParams {
            write_len_bytes: 64 << 20,
            ..StreamParams::new(Direction::Reverse)
        };
        let tcp = TcpOptions::default();
        let spec = TestSpec::new(Params::TcpStream { stream, tcp }, 4, 1000);
        let needs = Needs::of(&spec);
        assert_eq!(needs.sockets, 5);
        assert_eq!(
            needs.buffer_bytes,
            4 * 2 * engine::tcp_stream::MAX_SEND_BUF as u64
        );
    }
}
