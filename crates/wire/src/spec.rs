//! The test a client asks for: sent to the server in `Start`, stored with the results.
//!
//! Sizes are bytes, times milliseconds, rates bits per second; field names carry the unit.
//! The binary validates user input into a `TestSpec`; the server re-checks it against its own
//! limits with [`TestSpec::check`], since a peer's spec is untrusted input.

use serde::{Deserialize, Serialize};

/// Which test runs. Spelled as netperf/neper spell them, in the CLI, JSON and storage alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Bulk TCP (or Unix stream socket) transfer.
    TcpStream,
    /// UDP datagrams at a paced rate, with loss, reordering and jitter accounting.
    UdpStream,
    /// TCP request/response: one request, one response, repeat; round-trip latency.
    TcpRr,
    /// UDP request/response: one datagram each way, repeat; unanswered requests are lost.
    UdpRr,
    /// TCP connect, request, response, close, repeat: connection rate and latency.
    TcpCrr,
}

impl TestKind {
    /// The shared vocabulary name, e.g. `tcp_stream`.
    pub fn as_str(self) -> &'static str {
        match self {
            TestKind::TcpStream => "tcp_stream",
            TestKind::UdpStream => "udp_stream",
            TestKind::TcpRr => "tcp_rr",
            TestKind::UdpRr => "udp_rr",
            TestKind::TcpCrr => "tcp_crr",
        }
    }

    /// Whether the data path is UDP.
    pub fn is_udp(self) -> bool {
        matches!(self, TestKind::UdpStream | TestKind::UdpRr)
    }

    /// Whether this is a request/response test.
    pub fn is_rr(self) -> bool {
        matches!(self, TestKind::TcpRr | TestKind::UdpRr | TestKind::TcpCrr)
    }
}

/// Which way data flows, seen from the client.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// TCP over IPv4 or IPv6.
    Tcp,
    /// A Unix-domain stream socket (the host's stack without a NIC).
    Unix,
}

/// How a stream sender hands data to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SendMode {
    /// splice(2) from a pipe holding the pattern's pages, refilled with tee(2): the kernel
    /// references the pages instead of copying from user memory, and finds them without a file
    /// lookup per page. The default for TCP.
    Splice,
    /// sendfile(2) from an in-memory file: the kernel references the pages instead of copying
    /// from user memory (what file and web servers do; iperf3 `-Z`). A spec without
    /// `send_mode` (stored before the field existed) reads as this.
    #[default]
    Sendfile,
    /// write(2) from a user buffer: one copy per byte on the sender (iperf3's default).
    Write,
}

/// One test, as the client asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    /// Test kind.
    pub kind: TestKind,
    /// Socket family of the data connections.
    pub transport: Transport,
    /// Measured duration, milliseconds.
    pub duration_ms: u64,
    /// Interval between live rows, milliseconds.
    pub interval_ms: u64,
    /// Parallel streams per direction.
    pub streams: u16,
    /// Direction of the data.
    pub direction: Direction,
    /// Bytes per write (and per read) call.
    pub write_len_bytes: u32,
    /// How senders write.
    #[serde(default)]
    pub send_mode: SendMode,
    /// SO_SNDBUF/SO_RCVBUF request, bytes; `None` leaves the kernel's autotuning alone.
    pub window_bytes: Option<u32>,
    /// TCP_MAXSEG request, bytes.
    pub mss_bytes: Option<u32>,
    /// TCP_NODELAY on every data connection.
    pub no_delay: bool,
    /// TCP_CONGESTION algorithm name.
    pub congestion: Option<String>,
    /// IP TOS / IPv6 traffic class byte.
    pub tos: Option<u8>,
    /// Link speed for the Performance Index, bits/s (client-side only; informational).
    pub link_speed_bps: Option<u64>,
    /// UDP: target payload rate per stream, bits/s; `None` with `pps` also `None` is as fast as
    /// the sender can.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// UDP: target datagrams per second per stream (instead of `rate_bps`). Request/response
    /// tests: transactions started per second per stream (`None`: back to back).
    #[serde(default)]
    pub pps: Option<u64>,
    /// UDP: datagrams sent back to back per pacing step; 0 paces smoothly.
    #[serde(default)]
    pub burst_packets: u32,
    /// UDP: datagrams per sendmmsg/recvmmsg call; 1 sends and receives one per syscall.
    #[serde(default = "default_batch")]
    pub batch_packets: u16,
    /// UDP: let the kernel segment batches (UDP_SEGMENT) where it can.
    #[serde(default = "default_true")]
    pub gso: bool,
    /// UDP: let the kernel coalesce arriving datagrams (UDP_GRO) where it can.
    #[serde(default = "default_true")]
    pub gro: bool,
    /// UDP: source ports each stream's sender spreads its datagrams over (flows change every
    /// batch).
    #[serde(default = "default_flows")]
    pub flows: u32,
    /// UDP: destination ports each stream's receiver listens on; the sender rotates over them
    /// every batch.
    #[serde(default = "default_flows")]
    pub flows_dst: u32,
    /// Request/response tests: response bytes (the request is `write_len_bytes`).
    #[serde(default)]
    pub response_len_bytes: u32,
    /// Request/response tests: warm-up at the start left out of the summary, milliseconds.
    #[serde(default)]
    pub omit_ms: u64,
    /// SO_BUSY_POLL on the data sockets, µs (the receive path polls the device instead of
    /// sleeping).
    #[serde(default)]
    pub busy_poll_us: Option<u32>,
    /// The CPU the server pins its data threads to (`None`: wherever the scheduler puts them).
    #[serde(default)]
    pub server_cpu: Option<u32>,
    /// The CPU the client pins its data threads to (informational for the server; kept so a
    /// stored run says where it ran).
    #[serde(default)]
    pub client_cpu: Option<u32>,
}

fn default_flows() -> u32 {
    1
}

fn default_true() -> bool {
    true
}

fn default_batch() -> u16 {
    64
}

/// Limits a server enforces on a peer's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecLimits {
    /// Longest test, milliseconds.
    pub max_duration_ms: u64,
    /// Most streams per direction.
    pub max_streams: u16,
    /// Largest write length, bytes.
    pub max_write_len_bytes: u32,
    /// Highest UDP rate per stream a client may ask for, bits/s (`None`: no limit, so `max` is
    /// allowed).
    pub max_udp_rate_bps: Option<u64>,
}

impl Default for SpecLimits {
    fn default() -> Self {
        Self {
            max_duration_ms: 24 * 3600 * 1000,
            max_streams: 128,
            max_write_len_bytes: 64 << 20,
            max_udp_rate_bps: None,
        }
    }
}

impl TestSpec {
    /// A `kind` test with linerate's defaults for everything not given: TCP, 1 s intervals,
    /// 512 KiB splice calls, kernel socket buffers, no other options.
    pub fn new(kind: TestKind, direction: Direction, streams: u16, duration_ms: u64) -> Self {
        Self {
            kind,
            transport: Transport::Tcp,
            duration_ms,
            interval_ms: 1000,
            streams,
            direction,
            write_len_bytes: 512 << 10,
            send_mode: SendMode::Splice,
            window_bytes: None,
            mss_bytes: None,
            no_delay: false,
            congestion: None,
            tos: None,
            link_speed_bps: None,
            rate_bps: None,
            pps: None,
            burst_packets: 0,
            batch_packets: default_batch(),
            gso: true,
            gro: true,
            flows: 1,
            flows_dst: 1,
            response_len_bytes: 0,
            omit_ms: 0,
            busy_poll_us: None,
            server_cpu: None,
            client_cpu: None,
        }
    }

    /// UDP: the target datagram rate per stream, or `None` for as fast as possible.
    pub fn target_pps(&self) -> Option<f64> {
        match (self.pps, self.rate_bps) {
            (Some(pps), _) => Some(pps as f64),
            (None, Some(bps)) => Some(bps as f64 / (f64::from(self.write_len_bytes.max(1)) * 8.0)),
            (None, None) => None,
        }
    }

    /// The data connections this spec opens, in stream-index order: `(index, flow)`.
    /// For `Bidir`, indices `0..streams` go client→server and `streams..2*streams` back.
    pub fn flows(&self) -> Vec<(u16, Flow)> {
        let n = self.streams;
        match self.direction {
            Direction::Send => (0..n).map(|i| (i, Flow::ClientToServer)).collect(),
            Direction::Reverse => (0..n).map(|i| (i, Flow::ServerToClient)).collect(),
            Direction::Bidir => (0..n)
                .map(|i| (i, Flow::ClientToServer))
                .chain((n..2 * n).map(|i| (i, Flow::ServerToClient)))
                .collect(),
        }
    }

    /// Checks the spec against `limits`; the error says which field and what is allowed.
    pub fn check(&self, limits: &SpecLimits) -> Result<(), String> {
        if self.streams == 0 || self.streams > limits.max_streams {
            return Err(format!(
                "streams {} outside 1..={} (server limit)",
                self.streams, limits.max_streams
            ));
        }
        if self.duration_ms == 0 || self.duration_ms > limits.max_duration_ms {
            return Err(format!(
                "duration {} ms outside 1..={} ms (server limit)",
                self.duration_ms, limits.max_duration_ms
            ));
        }
        if self.write_len_bytes == 0 || self.write_len_bytes > limits.max_write_len_bytes {
            return Err(format!(
                "write length {} bytes outside 1..={} (server limit)",
                self.write_len_bytes, limits.max_write_len_bytes
            ));
        }
        if self.kind.is_udp() {
            if self.kind == TestKind::UdpRr {
                for (what, len) in [
                    ("request", self.write_len_bytes),
                    ("response", self.response_len_bytes),
                ] {
                    if !(16..=65_507).contains(&len) {
                        return Err(format!("UDP {what} {len} bytes outside 16..=65507"));
                    }
                }
                if self.flows != 1 || self.flows_dst != 1 {
                    return Err(
                        "flows and destination flows apply to udp_stream, not udp_rr".into(),
                    );
                }
            }
            if self.transport != Transport::Tcp {
                return Err("UDP tests run over IP, not Unix-domain sockets".into());
            }
            if self.write_len_bytes > 65_507 {
                return Err(format!(
                    "UDP payload {} bytes above the 65507-byte limit",
                    self.write_len_bytes
                ));
            }
            if self.flows == 0 || self.flows > 10_000 {
                return Err(format!("UDP flows {} outside 1..=10000", self.flows));
            }
            if self.flows_dst == 0 || self.flows_dst > 10_000 {
                return Err(format!(
                    "UDP destination flows {} outside 1..=10000",
                    self.flows_dst
                ));
            }
            // A request/response test keeps one datagram in flight: it limits itself.
            if let Some(limit) = limits
                .max_udp_rate_bps
                .filter(|_| self.kind == TestKind::UdpStream)
            {
                let asked = self
                    .target_pps()
                    .map(|pps| pps * f64::from(self.write_len_bytes) * 8.0);
                if asked.is_none_or(|bps| bps > limit as f64) {
                    return Err(format!(
                        "UDP rate {} per stream above this server's limit of {limit} bit/s (serve --max-rate)",
                        asked.map_or("max".to_string(), |b| format!("{b:.0} bit/s"))
                    ));
                }
            }
            if self.pps == Some(0) || self.rate_bps == Some(0) || self.batch_packets == 0 {
                return Err("UDP rate, packet rate and batch must be above 0".into());
            }
        }
        if self.kind.is_rr() {
            if self.direction != Direction::Send {
                return Err(
                    "request/response tests send requests from the client; no --reverse or --bidir"
                        .into(),
                );
            }
            if self.omit_ms >= self.duration_ms {
                return Err(format!(
                    "warm-up of {} ms leaves nothing of a {} ms test",
                    self.omit_ms, self.duration_ms
                ));
            }
            if self.pps == Some(0) || self.pps.is_some_and(|r| r > 10_000_000) {
                return Err(format!(
                    "request rate {} per second outside 1..=10000000",
                    self.pps.unwrap_or(0)
                ));
            }
            if self.response_len_bytes == 0 || self.response_len_bytes > limits.max_write_len_bytes
            {
                return Err(format!(
                    "response length {} bytes outside 1..={} (server limit)",
                    self.response_len_bytes, limits.max_write_len_bytes
                ));
            }
        }
        if self.interval_ms == 0 || self.interval_ms > self.duration_ms.max(1000) {
            return Err(format!(
                "interval {} ms outside 1..={} ms (at most the test duration)",
                self.interval_ms,
                self.duration_ms.max(1000)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) fn sample() -> TestSpec {
    TestSpec::new(TestKind::TcpStream, Direction::Bidir, 2, 1000)
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
    fn check_names_the_field() {
        let mut spec = sample();
        spec.streams = 500;
        assert!(spec
            .check(&SpecLimits::default())
            .unwrap_err()
            .contains("streams 500"));
        spec.streams = 1;
        spec.duration_ms = 0;
        assert!(spec
            .check(&SpecLimits::default())
            .unwrap_err()
            .contains("duration"));
    }

    #[test]
    fn server_rate_limit() {
        let limits = SpecLimits {
            max_udp_rate_bps: Some(100_000_000),
            ..SpecLimits::default()
        };
        let mut spec = TestSpec::new(TestKind::UdpStream, Direction::Send, 1, 1000);
        spec.write_len_bytes = 1472;
        spec.rate_bps = Some(50_000_000);
        assert!(spec.check(&limits).is_ok());
        spec.rate_bps = Some(200_000_000);
        assert!(spec
            .check(&limits)
            .unwrap_err()
            .contains("above this server's limit"));
        spec.rate_bps = None;
        assert!(spec.check(&limits).unwrap_err().contains("UDP rate max"));
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
