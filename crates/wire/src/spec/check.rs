//! [`TestSpec::check`]: what the spec's types cannot say — ranges, and the limits a server sets
//! on a peer's spec. The first failed check is the error ([`SpecError`]), naming the field and
//! what is allowed; the order is the one docs/PROTOCOL.md section 6 lists.

use super::check_rr::{check_rr, rr_max_rate, rr_rate_words};
use super::{
    Direction, Flow, Shape, SpecLimits, StreamParams, TcpOptions, TestSpec, Transport, UdpParams,
    UdpRate,
};

/// The largest UDP payload over IPv4: 65535 − 20 (IP) − 8 (UDP).
const MAX_UDP_PAYLOAD: u32 = 65_507;
/// The smallest `udp_rr` datagram: the linerate header.
const MIN_UDP_RR_LEN: u32 = 16;
/// Most source or destination ports per UDP stream.
pub(crate) const MAX_UDP_FLOWS: u32 = 10_000;

/// A spec outside the protocol's ranges or a server's limits. The server sends its text to
/// the client, so each names the field, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// Streams per direction.
    #[error("streams {streams} outside 1..={max} (server limit)")]
    Streams {
        /// Asked.
        streams: u16,
        /// The server's limit.
        max: u16,
    },
    /// Test duration.
    #[error("duration {duration_ms} ms outside 1..={max_ms} ms (server limit)")]
    Duration {
        /// Asked.
        duration_ms: u64,
        /// The server's limit.
        max_ms: u64,
    },
    /// Bytes per send call.
    #[error("write length {len_bytes} bytes outside 1..={max_bytes} (this server's limit: serve --max-length)")]
    WriteLength {
        /// Asked.
        len_bytes: u32,
        /// The server's limit.
        max_bytes: u32,
    },
    /// A receive mode other than copy where it cannot run.
    #[error("receive mode {mode} (--rx-mode): {why}")]
    RxMode {
        /// Asked.
        mode: &'static str,
        /// Where it runs.
        why: &'static str,
    },
    /// In-band self probes at a rate the server does not run, or where they cannot run.
    #[error("self probes: {0}")]
    SelfProbes(String),
    /// A `udp_rr` request or response that is not a datagram with linerate's header.
    #[error("UDP {which} {len_bytes} bytes outside 16..=65507")]
    UdpRrLength {
        /// `request` or `response`.
        which: &'static str,
        /// Asked.
        len_bytes: u32,
    },
    /// Live interval ([`super::bounds::check_interval`]).
    #[error("interval {interval_ms} ms outside {}..={max_ms} ms (--interval: at least 0.05 s, at most the test duration)", super::bounds::MIN_INTERVAL_MS)]
    Interval {
        /// Asked.
        interval_ms: u64,
        /// The test duration, at least 1 s.
        max_ms: u64,
    },
    /// `SO_BUSY_POLL` time ([`super::bounds::check_busy_poll`]).
    #[error("busy-poll {us} µs (--busy-poll) outside 1..={max_us} µs{}", super::bounds::busy_poll_words(*.max_us))]
    BusyPoll {
        /// Asked.
        us: u32,
        /// The protocol's or this server's limit.
        max_us: u32,
    },
    /// A frame engine's test this server or spec cannot run.
    #[error(transparent)]
    Frames(#[from] super::FramesRefusal),
    /// A UDP payload larger than a datagram.
    #[error("UDP payload {0} bytes above the 65507-byte limit")]
    UdpPayload(u32),
    /// Source ports per stream.
    #[error("UDP flows {0} outside 1..=10000")]
    UdpFlows(u32),
    /// Destination ports per stream.
    #[error("UDP destination flows {0} outside 1..=10000")]
    UdpDestinationFlows(u32),
    /// Destination ports per stream above the server's limit: each is one of its sockets.
    #[error("UDP destination flows {asked} above this server's limit of {limit} per stream (serve --max-flows-dst)")]
    UdpDestinationFlowsLimit {
        /// Asked.
        asked: u32,
        /// `serve --max-flows-dst`.
        limit: u32,
    },
    /// A UDP rate above the server's `--max-rate` (`None`: as fast as possible).
    #[error("UDP rate {} per {}stream above this server's limit of {limit_bps} bit/s (serve --max-rate)", rate_words(*.asked_bps), which_streams(*.reverse))]
    UdpRateLimit {
        /// Asked, bit/s; `None` for `max`.
        asked_bps: Option<f64>,
        /// `serve --max-rate`, bit/s.
        limit_bps: u64,
        /// Whether it is a bidirectional test's reverse (server → client) rate.
        reverse: bool,
    },
    /// A TCP stream test on a server with a rate limit, unpaced or paced above it.
    #[error("TCP {} per {}stream above this server's limit of {limit_bps} bit/s (serve --max-rate): {}", tcp_rate_words(*.asked_bps), which_streams(*.reverse), tcp_ask_words(*.reverse, *.limit_bps))]
    TcpRateLimit {
        /// Asked, bit/s; `None`: unpaced.
        asked_bps: Option<u64>,
        /// The limit, bit/s.
        limit_bps: u64,
        /// Whether it is a bidirectional test's reverse (server → client) pacing.
        reverse: bool,
    },
    /// A reverse (server → client) rate where no server → client stream has a rate of its own.
    #[error("a second rate (server -> client) is for bidirectional stream tests over IP (--bidir), not {0}")]
    ReverseRate(&'static str),
    /// A zero rate or batch.
    #[error("rates (TCP pacing, UDP rate, packet rate) and the UDP batch must be above 0")]
    ZeroRate,
    /// A warm-up as long as the test.
    #[error("warm-up of {omit_ms} ms leaves nothing of a {duration_ms} ms test")]
    WarmUp {
        /// Asked.
        omit_ms: u64,
        /// The test duration.
        duration_ms: u64,
    },
    /// A test by amount its kind cannot run.
    #[error(transparent)]
    Amount(#[from] super::AmountError),
    /// Transactions per second per stream.
    #[error("request rate {0} per second outside 1..=10000000")]
    RequestRate(u64),
    /// Bytes per response.
    #[error("response length {len_bytes} bytes outside 1..={max_bytes} (server limit)")]
    ResponseLength {
        /// Asked.
        len_bytes: u32,
        /// The server's limit.
        max_bytes: u32,
    },
    /// A request/response test on a server with a rate limit, back to back or at a
    /// transaction rate whose larger message, sent that often, is above the limit.
    #[error("request/response of {request_len_bytes}/{response_len_bytes} bytes {} per stream above this server's limit of {limit_bps} bit/s (serve --max-rate): ask for --tps {} or less", rr_rate_words(*.transactions_per_sec), rr_max_rate(*.request_len_bytes, *.response_len_bytes, *.limit_bps))]
    RrRateLimit {
        /// Request bytes.
        request_len_bytes: u32,
        /// Response bytes.
        response_len_bytes: u32,
        /// Asked, transactions/s; `None`: back to back.
        transactions_per_sec: Option<u64>,
        /// The limit, bit/s.
        limit_bps: u64,
    },
}

fn tcp_rate_words(bps: Option<u64>) -> String {
    bps.map_or("unpaced (no --rate)".to_string(), |b| {
        format!("pacing at {b} bit/s")
    })
}

fn rate_words(bps: Option<f64>) -> String {
    bps.map_or("max".to_string(), |b| format!("{b:.0} bit/s"))
}

fn which_streams(reverse: bool) -> &'static str {
    if reverse {
        "server -> client "
    } else {
        ""
    }
}

fn tcp_ask_words(reverse: bool, limit_bps: u64) -> String {
    if reverse {
        format!("ask for a second rate (--rate A,B) of {limit_bps} or less")
    } else {
        format!("ask for --rate {limit_bps} or less")
    }
}

impl TestSpec {
    /// Checks the spec against `limits`; the error says which field and what is allowed.
    pub fn check(&self, limits: &SpecLimits) -> Result<(), SpecError> {
        if self.streams == 0 || self.streams > limits.max_streams {
            return Err(SpecError::Streams {
                streams: self.streams,
                max: limits.max_streams,
            });
        }
        if self.duration_ms == 0 || self.duration_ms > limits.max_duration_ms {
            return Err(SpecError::Duration {
                duration_ms: self.duration_ms,
                max_ms: limits.max_duration_ms,
            });
        }
        if self.omit_ms > 0 && self.omit_ms >= self.duration_ms {
            return Err(SpecError::WarmUp {
                omit_ms: self.omit_ms,
                duration_ms: self.duration_ms,
            });
        }
        self.check_amount()?;
        let len = self.message_len_bytes();
        // A kind whose transaction is the connection (`tcp_cc`) sends nothing: its lengths are 0.
        let data = self.kind().row().carries_data;
        if (data && len == 0) || len > limits.max_write_len_bytes || (!data && len != 0) {
            return Err(SpecError::WriteLength {
                len_bytes: len,
                max_bytes: limits.max_write_len_bytes,
            });
        }
        self.check_reverse_rate()?;
        if let Some(stream) = self.stream() {
            check_self_probes(stream, self.direction())?;
            if let Some(why) = stream.rx_mode_refusal() {
                let mode = stream.rx_mode.name();
                return Err(SpecError::RxMode { mode, why });
            }
        }
        // Each shape's rate under the server's limit, and its own lengths: every kind has a
        // shape, so a new kind is held to `--max-rate` by its shape's arm.
        match self.params.shape() {
            Shape::UdpStream { udp } => check_udp(udp, limits)?,
            // A Unix-domain socket's data never leaves the host: no rate to hold.
            Shape::TcpStream { stream, tcp } => match stream.transport {
                Transport::Tcp => check_pacing(tcp, limits)?,
                Transport::Unix => {}
            },
            Shape::UdpRr { rr } => {
                for (which, len_bytes) in [
                    ("request", rr.request_len_bytes),
                    ("response", rr.response_len_bytes),
                ] {
                    if !(MIN_UDP_RR_LEN..=MAX_UDP_PAYLOAD).contains(&len_bytes) {
                        return Err(SpecError::UdpRrLength { which, len_bytes });
                    }
                }
                check_rr(rr, self.duration_ms, limits, data)?;
            }
            Shape::TcpRr { rr, .. } | Shape::TcpConnect { rr, .. } => {
                check_rr(rr, self.duration_ms, limits, data)?
            }
        }
        super::bounds::check_interval(self.interval_ms, self.duration_ms)
    }
}

impl TestSpec {
    /// A reverse rate only where there are server → client streams with rates of their own:
    /// bidirectional stream tests over IP.
    fn check_reverse_rate(&self) -> Result<(), SpecError> {
        let reverse = match self.params.shape() {
            Shape::TcpStream { stream, tcp } if stream.transport == Transport::Unix => {
                return match tcp.reverse_pacing_bps {
                    Some(_) => Err(SpecError::ReverseRate("Unix-domain sockets")),
                    None => Ok(()),
                }
            }
            Shape::TcpStream { tcp, .. } => tcp.reverse_pacing_bps.is_some(),
            Shape::UdpStream { udp } => udp.reverse_rate.is_some(),
            Shape::TcpRr { tcp, .. } | Shape::TcpConnect { tcp, .. } => {
                return match tcp.reverse_pacing_bps {
                    Some(_) => Err(SpecError::ReverseRate("request/response tests")),
                    None => Ok(()),
                }
            }
            Shape::UdpRr { .. } => false,
        };
        if reverse && self.direction() != Direction::Bidir {
            return Err(SpecError::ReverseRate("one-way tests"));
        }
        Ok(())
    }
}

/// Self probes per stream at most (the draft's cap, 100 a second, is the `rpm` command's, over
/// all its streams; this bounds what one stream may ask of a server).
pub const MAX_SELF_PROBES_PER_S: u32 = 1000;

/// In-band self probes: over TCP, one way, 1..=[`MAX_SELF_PROBES_PER_S`] a second.
fn check_self_probes(stream: &StreamParams, direction: Direction) -> Result<(), SpecError> {
    let Some(per_s) = stream.self_probes_per_s else {
        return Ok(());
    };
    let why = if stream.transport != Transport::Tcp {
        "TCP only".to_string()
    } else if direction == Direction::Bidir {
        "one direction only (a bidirectional stream has no idle reverse path)".to_string()
    } else if !(1..=MAX_SELF_PROBES_PER_S).contains(&per_s) {
        format!("{per_s} a second per stream outside 1..={MAX_SELF_PROBES_PER_S}")
    } else {
        return Ok(());
    };
    Err(SpecError::SelfProbes(why))
}

/// `tcp_stream` over TCP on a server with a rate limit: every stream paced at most at the
/// limit, the server → client ones too.
fn check_pacing(tcp: &TcpOptions, limits: &SpecLimits) -> Result<(), SpecError> {
    if tcp.pacing_bps == Some(0) || tcp.reverse_pacing_bps == Some(0) {
        return Err(SpecError::ZeroRate);
    }
    let Some(limit_bps) = limits.max_rate_bps else {
        return Ok(());
    };
    let reverse = tcp.reverse_pacing_bps.map(|_| Flow::ServerToClient);
    for flow in std::iter::once(Flow::ClientToServer).chain(reverse) {
        let asked_bps = tcp.pacing_of(flow);
        if asked_bps.is_none_or(|bps| bps > limit_bps) {
            return Err(SpecError::TcpRateLimit {
                asked_bps,
                limit_bps,
                reverse: flow == Flow::ServerToClient,
            });
        }
    }
    Ok(())
}

/// `udp_stream`: payload, flows, the server's rate limit, non-zero rate and batch.
fn check_udp(udp: &UdpParams, limits: &SpecLimits) -> Result<(), SpecError> {
    super::check_frames::check_frames(udp, limits)?;
    if udp.payload_len_bytes > MAX_UDP_PAYLOAD {
        return Err(SpecError::UdpPayload(udp.payload_len_bytes));
    }
    if udp.flows == 0 || udp.flows > MAX_UDP_FLOWS {
        return Err(SpecError::UdpFlows(udp.flows));
    }
    if udp.flows_dst == 0 || udp.flows_dst > MAX_UDP_FLOWS {
        return Err(SpecError::UdpDestinationFlows(udp.flows_dst));
    }
    if udp.flows_dst > limits.max_flows_dst {
        return Err(SpecError::UdpDestinationFlowsLimit {
            asked: udp.flows_dst,
            limit: limits.max_flows_dst,
        });
    }
    let rates = std::iter::once((udp.rate, false)).chain(udp.reverse_rate.map(|r| (r, true)));
    for (rate, reverse) in rates.clone() {
        let Some(limit_bps) = limits.max_rate_bps else {
            break;
        };
        let asked_bps = rate.bps(udp.payload_len_bytes);
        if asked_bps.is_none_or(|bps| bps > limit_bps as f64) {
            return Err(SpecError::UdpRateLimit {
                asked_bps,
                limit_bps,
                reverse,
            });
        }
    }
    let zero_rate = rates
        .map(|(rate, _)| rate)
        .any(|rate| matches!(rate, UdpRate::BitsPerSec(0) | UdpRate::PacketsPerSec(0)));
    if zero_rate || udp.batch_packets == 0 {
        return Err(SpecError::ZeroRate);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{sample, Direction, Params, TestKind};
    use super::*;

    #[test]
    fn check_names_the_field() {
        let mut spec = sample();
        spec.streams = 500;
        assert!(spec
            .check(&SpecLimits::default())
            .unwrap_err()
            .to_string()
            .contains("streams 500"));
        spec.streams = 1;
        spec.duration_ms = 0;
        assert!(spec
            .check(&SpecLimits::default())
            .unwrap_err()
            .to_string()
            .contains("duration"));
    }

    fn udp_spec(rate: UdpRate) -> TestSpec {
        let udp = UdpParams {
            payload_len_bytes: 1472,
            rate,
            ..UdpParams::new(Direction::Send)
        };
        TestSpec::new(Params::UdpStream { udp }, 1, 1000)
    }

    #[test]
    fn server_rate_limit() {
        let limits = SpecLimits {
            max_rate_bps: Some(100_000_000),
            ..SpecLimits::default()
        };
        assert!(udp_spec(UdpRate::BitsPerSec(50_000_000))
            .check(&limits)
            .is_ok());
        assert!(udp_spec(UdpRate::BitsPerSec(200_000_000))
            .check(&limits)
            .unwrap_err()
            .to_string()
            .contains("above this server's limit"));
        assert!(udp_spec(UdpRate::Max)
            .check(&limits)
            .unwrap_err()
            .to_string()
            .contains("UDP rate max"));
        // 10,000 datagrams of 1472 bytes: 117.76 Mbit/s.
        assert!(udp_spec(UdpRate::PacketsPerSec(10_000))
            .check(&limits)
            .unwrap_err()
            .to_string()
            .contains("117760000 bit/s"));
    }

    #[test]
    fn server_rate_limit_covers_the_reverse_rate() {
        let limits = SpecLimits {
            max_rate_bps: Some(100_000_000),
            ..SpecLimits::default()
        };
        let mut spec = udp_spec(UdpRate::BitsPerSec(50_000_000));
        spec.udp_mut().unwrap().direction = Direction::Bidir;
        let mut reverse = |rate| {
            spec.udp_mut().unwrap().reverse_rate = Some(rate);
            spec.check(&limits).map_err(|e| e.to_string())
        };
        assert_eq!(reverse(UdpRate::BitsPerSec(80_000_000)), Ok(()));
        assert_eq!(
            reverse(UdpRate::BitsPerSec(200_000_000)).unwrap_err(),
            "UDP rate 200000000 bit/s per server -> client stream above this server's limit \
             of 100000000 bit/s (serve --max-rate)"
        );
        assert!(reverse(UdpRate::Max)
            .unwrap_err()
            .contains("UDP rate max per server -> client stream"));
        let err = reverse(UdpRate::PacketsPerSec(0)).unwrap_err();
        assert_eq!(
            err,
            "rates (TCP pacing, UDP rate, packet rate) and the UDP batch must be above 0"
        );

        let mut tcp = sample();
        let paced = |tcp: &mut TestSpec, forward, reverse| {
            let options = tcp.tcp_mut().unwrap();
            (options.pacing_bps, options.reverse_pacing_bps) = (forward, reverse);
            tcp.check(&limits).map_err(|e| e.to_string())
        };
        assert_eq!(paced(&mut tcp, Some(50_000_000), Some(90_000_000)), Ok(()));
        assert_eq!(
            paced(&mut tcp, Some(50_000_000), Some(200_000_000)).unwrap_err(),
            "TCP pacing at 200000000 bit/s per server -> client stream above this server's \
             limit of 100000000 bit/s (serve --max-rate): ask for a second rate (--rate A,B) \
             of 100000000 or less"
        );
        // The client -> server rate is checked first, and alone names --rate L.
        let err = paced(&mut tcp, Some(200_000_000), Some(50_000_000)).unwrap_err();
        assert!(
            err.starts_with("TCP pacing at 200000000 bit/s per stream above")
                && err.ends_with("ask for --rate 100000000 or less"),
            "{err}"
        );
        let err = paced(&mut tcp, None, Some(50_000_000)).unwrap_err();
        assert!(
            err.starts_with("TCP unpaced (no --rate) per stream"),
            "{err}"
        );
        // A rate of 0 from a peer is refused with or without a server limit.
        let zero = "rates (TCP pacing, UDP rate, packet rate) and the UDP batch must be above 0";
        assert_eq!(paced(&mut tcp, Some(1), Some(0)).unwrap_err(), zero);
        let unlimited = SpecLimits::default();
        tcp.tcp_mut().unwrap().pacing_bps = Some(0);
        assert_eq!(tcp.check(&unlimited).unwrap_err().to_string(), zero);
    }

    #[test]
    fn self_probes_run_one_way_over_tcp_at_a_bounded_rate() {
        let limits = SpecLimits::default();
        let mut tcp = sample();
        assert_eq!(tcp.kind(), TestKind::TcpStream);
        let check = |spec: &TestSpec| spec.check(&limits).map_err(|e| e.to_string());
        tcp.stream_mut().unwrap().direction = Direction::Send;
        tcp.stream_mut().unwrap().self_probes_per_s = Some(100);
        assert_eq!(check(&tcp), Ok(()));
        tcp.stream_mut().unwrap().self_probes_per_s = Some(0);
        assert_eq!(
            check(&tcp).unwrap_err(),
            "self probes: 0 a second per stream outside 1..=1000"
        );
        tcp.stream_mut().unwrap().self_probes_per_s = Some(5000);
        assert!(check(&tcp).unwrap_err().contains("outside 1..=1000"));
        tcp.stream_mut().unwrap().self_probes_per_s = Some(10);
        tcp.stream_mut().unwrap().direction = Direction::Bidir;
        assert!(check(&tcp).unwrap_err().contains("one direction only"));
        tcp.stream_mut().unwrap().direction = Direction::Reverse;
        tcp.stream_mut().unwrap().transport = Transport::Unix;
        assert_eq!(check(&tcp).unwrap_err(), "self probes: TCP only");
    }

    #[test]
    fn a_reverse_rate_needs_a_bidirectional_stream_test_over_ip() {
        let limits = SpecLimits::default();
        let mut udp = udp_spec(UdpRate::BitsPerSec(1_000_000));
        udp.udp_mut().unwrap().reverse_rate = Some(UdpRate::BitsPerSec(2_000_000));
        let not = |what: &str| {
            format!("a second rate (server -> client) is for bidirectional stream tests over IP (--bidir), not {what}")
        };
        assert_eq!(
            udp.check(&limits).unwrap_err().to_string(),
            not("one-way tests")
        );
        udp.udp_mut().unwrap().direction = Direction::Reverse;
        assert_eq!(
            udp.check(&limits).unwrap_err().to_string(),
            not("one-way tests")
        );
        udp.udp_mut().unwrap().direction = Direction::Bidir;
        assert!(udp.check(&limits).is_ok());

        let mut tcp = sample();
        tcp.tcp_mut().unwrap().reverse_pacing_bps = Some(1_000_000);
        assert!(tcp.check(&limits).is_ok());
        tcp.stream_mut().unwrap().transport = Transport::Unix;
        let err = tcp.check(&limits).unwrap_err().to_string();
        assert_eq!(err, not("Unix-domain sockets"));
        let mut rr = TestSpec::new(Params::defaults(TestKind::TcpRr), 1, 1000);
        rr.tcp_mut().unwrap().reverse_pacing_bps = Some(1_000_000);
        let err = rr.check(&limits).unwrap_err().to_string();
        assert_eq!(err, not("request/response tests"));
    }

    #[test]
    fn ranges_the_types_cannot_hold() {
        let limits = SpecLimits::default();
        let err = |spec: &TestSpec| spec.check(&limits).unwrap_err().to_string();
        assert!(err(&udp_spec(UdpRate::PacketsPerSec(0))).contains("must be above 0"));
        let mut spec = udp_spec(UdpRate::Max);
        spec.udp_mut().unwrap().flows_dst = 0;
        assert!(err(&spec).contains("UDP destination flows 0"));
        spec.set_message_len_bytes(70_000);
        assert!(err(&spec).contains("UDP payload 70000 bytes"));

        let mut rr = TestSpec::new(Params::defaults(TestKind::UdpRr), 1, 1000);
        assert!(rr.check(&limits).is_ok());
        rr.set_message_len_bytes(8);
        assert_eq!(err(&rr), "UDP request 8 bytes outside 16..=65507");
        rr.params = Params::defaults(TestKind::TcpRr);
        rr.set_message_len_bytes(8);
        assert!(rr.check(&limits).is_ok(), "TCP requests may be 1 byte");
        let Params::TcpRr { rr: params, .. } = &mut rr.params else {
            unreachable!()
        };
        params.transactions_per_sec = Some(20_000_000);
        assert_eq!(
            err(&rr),
            "request rate 20000000 per second outside 1..=10000000"
        );
        let Params::TcpRr { rr: params, .. } = &mut rr.params else {
            unreachable!()
        };
        params.transactions_per_sec = None;
        params.omit_ms = 1000;
        assert_eq!(
            err(&rr),
            "warm-up of 1000 ms leaves nothing of a 1000 ms test"
        );
    }
}
