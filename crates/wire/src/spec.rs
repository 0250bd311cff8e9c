//! The test a client asks for: sent to the server in `Start`, stored with the results.
//!
//! A [`TestSpec`] holds the fields every test kind has (duration, interval, streams, socket
//! buffers, link speed, CPU placement) and its kind's own [`Params`], whose variant is the kind:
//! a spec cannot hold a setting its kind has no use for, nor disagree with itself about its kind
//! (see [`kind`] and [`params`]). Sizes are bytes, times milliseconds, rates per second; field names carry
//! the unit. The binary validates user input into a `TestSpec`; the server re-checks it against
//! its own limits with [`TestSpec::check`], since a peer's spec is untrusted input: that check
//! covers what the types cannot say (ranges and limits).

use serde::{Deserialize, Serialize};

mod amount;
pub mod bounds;
mod check;
mod check_frames;
mod check_rr;

pub use amount::{Amount, AmountError, AmountUnit};
pub use check::SpecError;
pub use check_frames::{frame_flows, pps_flows, FramesRefusal, PpsFlows, PpsFlowsError};
pub mod kind;
pub mod kind_row;
pub mod params;
pub mod rates;

pub use kind::{Params, Shape, TestKind, KINDS};
pub use kind_row::{DataPath, Directions, FamilyId, Headline, KindRow, Loss};
pub use params::{
    FramePath, FrameRxPath, RrParams, RxMode, StreamParams, TcpOptions, UdpEngine, UdpParams,
    UdpRate,
};

/// Which way data flows, seen from the client.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client sends, server receives (the default).
    Send,
    /// Server sends, client receives.
    Reverse,
    /// Both at once, each on its own connections.
    Bidir,
}

/// The direction one data connection carries.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Flow {
    /// Client → server.
    ClientToServer,
    /// Server → client.
    ServerToClient,
}

impl Flow {
    /// Short label for tables: `c→s` / `s→c`.
    pub fn label(self) -> &'static str {
        match self {
            Flow::ClientToServer => "c->s",
            Flow::ServerToClient => "s->c",
        }
    }
}

/// The socket family the data connections use.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// TCP over IPv4 or IPv6.
    Tcp,
    /// A Unix-domain stream socket (the host's stack without a NIC).
    Unix,
}

/// How a stream sender hands data to the kernel.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SendMode {
    /// splice(2) from a pipe holding the pattern's pages, refilled with tee(2): the kernel
    /// references the pages instead of copying from user memory, and finds them without a file
    /// lookup per page. The default for TCP.
    Splice,
    /// sendfile(2) from an in-memory file: the kernel references the pages instead of copying
    /// from user memory (what file and web servers do; iperf3 `-Z`). A run stored before the
    /// field existed reads as this.
    #[default]
    Sendfile,
    /// write(2) from a user buffer: one copy per byte on the sender (iperf3's default).
    Write,
    /// The sender picks per connection (the default for TCP): write(2) where the
    /// connection's congestion control paces its sends (BBR), splice otherwise. Measured: under
    /// BBR's pacing, write moved 1.2-1.5x what splice did on loopback (1.3x for one stream
    /// over a veth pair); without pacing (CUBIC) splice moved 1.6-1.8x what write did
    /// (METHODOLOGY 10c). The mode that ran is in the sender's counts.
    Auto,
}

impl SendMode {
    /// Its `--send-mode` name.
    pub fn name(self) -> &'static str {
        match self {
            SendMode::Splice => "splice",
            SendMode::Sendfile => "sendfile",
            SendMode::Write => "write",
            SendMode::Auto => "auto",
        }
    }
}

/// One test, as the client asked for it: the fields every kind has, and its kind's own.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSpec {
    /// Measured duration, milliseconds.
    pub duration_ms: u64,
    /// Interval between live rows, milliseconds.
    pub interval_ms: u64,
    /// Parallel streams per direction.
    pub streams: u16,
    /// SO_SNDBUF/SO_RCVBUF request, bytes; `None` leaves the kernel's autotuning alone (UDP:
    /// asks for 4 MiB).
    pub window_bytes: Option<u32>,
    /// Link speed for the Performance Index, bits/s (client-side only; informational).
    pub link_speed_bps: Option<u64>,
    /// The CPU the server pins its data threads to (`None`: wherever the scheduler puts them).
    pub server_cpu: Option<u32>,
    /// The CPU the client pins its data threads to (informational for the server; kept so a
    /// stored run says where it ran).
    pub client_cpu: Option<u32>,
    /// Stream kinds' warm-up (`tcp`/`udp -O`), milliseconds: the first part of the
    /// duration, run and shown but left out of the summary. The client polls the server at
    /// its end, and both ends' windows start there (each by its own clock); the server need
    /// not act on it. Absent: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omit_ms: u64,
    /// A test by amount (`-n`, `-k`): each direction moves this much and the test ends once it
    /// has, `duration_ms` being the longest it may take. Absent: a test by time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Amount>,
    /// The kind and its own parameters.
    pub params: Params,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Limits a server enforces on a peer's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecLimits {
    /// Longest test, milliseconds.
    pub max_duration_ms: u64,
    /// Most streams per direction.
    pub max_streams: u16,
    /// Largest write length (and request/response length), bytes: `serve --max-length`.
    pub max_write_len_bytes: u32,
    /// Most destination ports (server sockets) per UDP stream: `serve --max-flows-dst`.
    pub max_flows_dst: u32,
    /// Highest UDP rate per stream a client may ask for, bits/s (`None`: no limit, so `max` is
    /// allowed).
    pub max_rate_bps: Option<u64>,
    /// Whether the server counts a frame engine's frames at its driver (`serve --frames`):
    /// it attaches an XDP program to its interface for such a test.
    pub frames: bool,
    /// Longest `SO_BUSY_POLL` time a client may ask for, µs: [`bounds::SERVER_BUSY_POLL_US`],
    /// or [`bounds::MAX_BUSY_POLL_US`] with `serve --allow-busy-poll`.
    pub max_busy_poll_us: u32,
}

impl Default for SpecLimits {
    fn default() -> Self {
        Self {
            max_duration_ms: bounds::MAX_DURATION_MS,
            max_streams: bounds::MAX_STREAMS,
            // A sender's buffer is at most 4 MiB whatever the length (engine's
            // `MAX_SEND_BUF`); responses and requests are held whole, so they are bounded here,
            // at the top of a default size sweep (`sweep size`: 8M).
            max_write_len_bytes: 8 << 20,
            // Each is a socket of the server's: 10,000 per stream would let two requests hold
            // 20,000 descriptors.
            max_flows_dst: 100,
            max_rate_bps: None,
            frames: false,
            max_busy_poll_us: bounds::SERVER_BUSY_POLL_US,
        }
    }
}

impl SpecLimits {
    /// The protocol's own bounds, for a server whose only client is the process that started
    /// it (a loopback run's in-process server): the budgets that guard a server against its
    /// peers would only refuse what the user asked of their own machine.
    pub fn protocol() -> Self {
        Self {
            max_write_len_bytes: bounds::MAX_WRITE_LEN_BYTES,
            max_flows_dst: check::MAX_UDP_FLOWS,
            max_busy_poll_us: bounds::MAX_BUSY_POLL_US,
            ..Self::default()
        }
    }
}

impl TestSpec {
    /// A test with `params` and linerate's defaults for the common fields: 1 s intervals,
    /// kernel socket buffers, no link speed, no CPU pinning.
    pub fn new(params: Params, streams: u16, duration_ms: u64) -> Self {
        Self {
            duration_ms,
            interval_ms: 1000,
            streams,
            window_bytes: None,
            link_speed_bps: None,
            server_cpu: None,
            client_cpu: None,
            omit_ms: 0,
            amount: None,
            params,
        }
    }

    /// The test kind (the variant of [`TestSpec::params`]).
    pub fn kind(&self) -> TestKind {
        self.params.kind()
    }

    /// Which way data flows; request/response tests always send their requests from the client.
    pub fn direction(&self) -> Direction {
        self.params.direction()
    }

    /// Whether the data connections are Unix-domain stream sockets (only `tcp_stream` can be).
    pub fn is_unix(&self) -> bool {
        self.stream()
            .is_some_and(|s| s.transport == Transport::Unix)
    }

    /// Bytes per send call, what `-l` sets: the TCP write length, the UDP payload, or the
    /// request of a request/response test.
    pub fn message_len_bytes(&self) -> u32 {
        self.params.message_len_bytes()
    }

    /// Sets the bytes per send call to `len`: the write length, the UDP payload, or both the
    /// request and the response of a request/response test.
    pub fn set_message_len_bytes(&mut self, len: u32) {
        self.params.set_message_len_bytes(len)
    }

    /// This test with `len` bytes per send call (see [`TestSpec::set_message_len_bytes`]).
    pub fn with_message_len_bytes(&self, len: u32) -> Self {
        let mut spec = self.clone();
        spec.set_message_len_bytes(len);
        spec
    }

    /// `tcp_stream`'s parameters.
    pub fn stream(&self) -> Option<&StreamParams> {
        self.params.stream()
    }

    /// `tcp_stream`'s parameters, to change.
    pub fn stream_mut(&mut self) -> Option<&mut StreamParams> {
        self.params.stream_mut()
    }

    /// `udp_stream`'s parameters.
    pub fn udp(&self) -> Option<&UdpParams> {
        self.params.udp()
    }

    /// `udp_stream`'s parameters, to change.
    pub fn udp_mut(&mut self) -> Option<&mut UdpParams> {
        self.params.udp_mut()
    }

    /// The request/response kinds' transaction.
    pub fn rr(&self) -> Option<&RrParams> {
        self.params.rr()
    }

    /// The TCP kinds' socket options (`tcp_stream` over a Unix socket has them too, unset).
    pub fn tcp(&self) -> Option<&TcpOptions> {
        self.params.tcp()
    }

    /// The TCP kinds' socket options, to change.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpOptions> {
        self.params.tcp_mut()
    }

    /// The data connections this spec opens, in stream-index order: `(index, flow)`.
    /// For `Bidir`, indices `0..streams` go client→server and `streams..2*streams` back. The
    /// indices end at `u16::MAX` rather than overflow on a peer's unchecked spec: with more than
    /// 32,767 streams per direction (far past the default limit of 128) fewer go back.
    pub fn flows(&self) -> Vec<(u16, Flow)> {
        let n = self.streams;
        match self.direction() {
            Direction::Send => (0..n).map(|i| (i, Flow::ClientToServer)).collect(),
            Direction::Reverse => (0..n).map(|i| (i, Flow::ServerToClient)).collect(),
            Direction::Bidir => (0..n)
                .map(|i| (i, Flow::ClientToServer))
                .chain((n..n.saturating_mul(2)).map(|i| (i, Flow::ServerToClient)))
                .collect(),
        }
    }
}

#[cfg(test)]
pub(crate) fn sample() -> TestSpec {
    let stream = StreamParams::new(Direction::Bidir);
    TestSpec::new(
        Params::TcpStream {
            stream,
            tcp: TcpOptions::default(),
        },
        2,
        1000,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidir_flows_split_indices() {
        let flows = sample().flows();
        assert_eq!(
            flows,
            vec![
                (0, Flow::ClientToServer),
                (1, Flow::ClientToServer),
                (2, Flow::ServerToClient),
                (3, Flow::ServerToClient)
            ]
        );
    }

    #[test]
    fn request_response_always_sends() {
        let mut spec = sample();
        spec.params = Params::defaults(TestKind::TcpCrr);
        assert_eq!(spec.direction(), Direction::Send);
        assert_eq!(
            spec.flows(),
            vec![(0, Flow::ClientToServer), (1, Flow::ClientToServer)]
        );
    }

    #[test]
    fn message_length_is_each_kinds_own() {
        let mut spec = sample();
        spec.set_message_len_bytes(4096);
        assert_eq!(spec.stream().unwrap().write_len_bytes, 4096);
        spec.params = Params::defaults(TestKind::UdpRr);
        spec.set_message_len_bytes(100);
        let rr = spec.rr().unwrap();
        assert_eq!((rr.request_len_bytes, rr.response_len_bytes), (100, 100));
        assert_eq!(spec.message_len_bytes(), 100);
        assert!(spec.tcp().is_none() && spec.udp().is_none());
    }

    #[test]
    fn spec_layout_is_stable() {
        let text = serde_json::to_string(&sample()).unwrap();
        assert_eq!(
            text,
            r#"{"duration_ms":1000,"interval_ms":1000,"streams":2,"window_bytes":null,"link_speed_bps":null,"server_cpu":null,"client_cpu":null,"params":{"kind":"tcp_stream","stream":{"direction":"bidir","transport":"tcp","write_len_bytes":524288,"send_mode":"auto"},"tcp":{"mss_bytes":null,"no_delay":false,"congestion":null,"tos":null}}}"#
        );
        assert_eq!(serde_json::from_str::<TestSpec>(&text).unwrap(), sample());
    }

    #[test]
    fn kind_serializes_in_shared_vocabulary() {
        assert_eq!(
            serde_json::to_string(&TestKind::TcpStream).unwrap(),
            "\"tcp_stream\""
        );
        assert_eq!(TestKind::TcpStream.as_str(), "tcp_stream");
    }
}
