//! [`TestSpec::check`]: what the spec's types cannot say — ranges, and the limits a server sets
//! on a peer's spec. The first failed check is the error ([`SpecError`]), naming the field and
//! what is allowed; the order is the one docs/PROTOCOL.md section 6 lists.

use super::{Params, RrParams, SpecLimits, TestSpec, Transport, UdpParams, UdpRate};

/// The largest UDP payload over IPv4: 65535 − 20 (IP) − 8 (UDP).
const MAX_UDP_PAYLOAD: u32 = 65_507;
/// The smallest `udp_rr` datagram: the linerate header.
const MIN_UDP_RR_LEN: u32 = 16;
/// Most source or destination ports per UDP stream.
const MAX_UDP_FLOWS: u32 = 10_000;
/// Highest transaction rate per stream.
const MAX_TRANSACTIONS_PER_SEC: u64 = 10_000_000;

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
    #[error("write length {len_bytes} bytes outside 1..={max_bytes} (server limit)")]
    WriteLength {
        /// Asked.
        len_bytes: u32,
        /// The server's limit.
        max_bytes: u32,
    },
    /// A `udp_rr` request or response that is not a datagram with linerate's header.
    #[error("UDP {which} {len_bytes} bytes outside 16..=65507")]
    UdpRrLength {
        /// `request` or `response`.
        which: &'static str,
        /// Asked.
        len_bytes: u32,
    },
    /// Live interval.
    #[error("interval {interval_ms} ms outside 1..={max_ms} ms (at most the test duration)")]
    Interval {
        /// Asked.
        interval_ms: u64,
        /// The test duration, at least 1 s.
        max_ms: u64,
    },
    /// A UDP payload larger than a datagram.
    #[error("UDP payload {0} bytes above the 65507-byte limit")]
    UdpPayload(u32),
    /// Source ports per stream.
    #[error("UDP flows {0} outside 1..=10000")]
    UdpFlows(u32),
    /// Destination ports per stream.
    #[error("UDP destination flows {0} outside 1..=10000")]
    UdpDestinationFlows(u32),
    /// A UDP rate above the server's `--max-rate` (`None`: as fast as possible).
    #[error("UDP rate {} per stream above this server's limit of {limit_bps} bit/s (serve --max-rate)", rate_words(*.asked_bps))]
    UdpRateLimit {
        /// Asked, bit/s; `None` for `max`.
        asked_bps: Option<f64>,
        /// `serve --max-rate`, bit/s.
        limit_bps: u64,
    },
    /// A TCP stream test on a server with a rate limit, unpaced or paced above it.
    #[error("TCP {} per stream above this server's limit of {limit_bps} bit/s (serve --max-rate): ask for --rate {limit_bps} or less", tcp_rate_words(*.asked_bps))]
    TcpRateLimit {
        /// Asked, bit/s; `None`: unpaced.
        asked_bps: Option<u64>,
        /// The limit, bit/s.
        limit_bps: u64,
    },
    /// A zero rate or batch.
    #[error("UDP rate, packet rate and batch must be above 0")]
    ZeroRate,
    /// A warm-up as long as the test.
    #[error("warm-up of {omit_ms} ms leaves nothing of a {duration_ms} ms test")]
    WarmUp {
        /// Asked.
        omit_ms: u64,
        /// The test duration.
        duration_ms: u64,
    },
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
}

fn tcp_rate_words(bps: Option<u64>) -> String {
    bps.map_or("unpaced (no --rate)".to_string(), |b| {
        format!("pacing at {b} bit/s")
    })
}

fn rate_words(bps: Option<f64>) -> String {
    bps.map_or("max".to_string(), |b| format!("{b:.0} bit/s"))
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
        let len = self.message_len_bytes();
        if len == 0 || len > limits.max_write_len_bytes {
            return Err(SpecError::WriteLength {
                len_bytes: len,
                max_bytes: limits.max_write_len_bytes,
            });
        }
        match &self.params {
            Params::UdpStream { udp } => check_udp(udp, limits)?,
            Params::TcpStream { stream, tcp } if stream.transport == Transport::Tcp => {
                if let Some(limit_bps) = limits.max_rate_bps {
                    if tcp.pacing_bps.is_none_or(|bps| bps > limit_bps) {
                        return Err(SpecError::TcpRateLimit {
                            asked_bps: tcp.pacing_bps,
                            limit_bps,
                        });
                    }
                }
            }
            Params::UdpRr { rr } => {
                for (which, len_bytes) in [
                    ("request", rr.request_len_bytes),
                    ("response", rr.response_len_bytes),
                ] {
                    if !(MIN_UDP_RR_LEN..=MAX_UDP_PAYLOAD).contains(&len_bytes) {
                        return Err(SpecError::UdpRrLength { which, len_bytes });
                    }
                }
            }
            _ => {}
        }
        // Every request/response kind, whatever its transport.
        if let Some(rr) = self.rr() {
            check_rr(rr, self.duration_ms, limits)?;
        }
        let max_ms = self.duration_ms.max(1000);
        if self.interval_ms == 0 || self.interval_ms > max_ms {
            return Err(SpecError::Interval {
                interval_ms: self.interval_ms,
                max_ms,
            });
        }
        Ok(())
    }
}

/// `udp_stream`: payload, flows, the server's rate limit, non-zero rate and batch.
fn check_udp(udp: &UdpParams, limits: &SpecLimits) -> Result<(), SpecError> {
    if udp.payload_len_bytes > MAX_UDP_PAYLOAD {
        return Err(SpecError::UdpPayload(udp.payload_len_bytes));
    }
    if udp.flows == 0 || udp.flows > MAX_UDP_FLOWS {
        return Err(SpecError::UdpFlows(udp.flows));
    }
    if udp.flows_dst == 0 || udp.flows_dst > MAX_UDP_FLOWS {
        return Err(SpecError::UdpDestinationFlows(udp.flows_dst));
    }
    if let Some(limit_bps) = limits.max_rate_bps {
        let asked_bps = udp
            .target_pps()
            .map(|pps| pps * f64::from(udp.payload_len_bytes) * 8.0);
        if asked_bps.is_none_or(|bps| bps > limit_bps as f64) {
            return Err(SpecError::UdpRateLimit {
                asked_bps,
                limit_bps,
            });
        }
    }
    let zero_rate = matches!(udp.rate, UdpRate::BitsPerSec(0) | UdpRate::PacketsPerSec(0));
    if zero_rate || udp.batch_packets == 0 {
        return Err(SpecError::ZeroRate);
    }
    Ok(())
}

/// The request/response kinds: warm-up, transaction rate, response length. (A request/response
/// test keeps one transaction in flight per stream, so it limits its own rate: the server's
/// UDP rate limit does not apply.)
fn check_rr(rr: &RrParams, duration_ms: u64, limits: &SpecLimits) -> Result<(), SpecError> {
    if rr.omit_ms >= duration_ms {
        return Err(SpecError::WarmUp {
            omit_ms: rr.omit_ms,
            duration_ms,
        });
    }
    if let Some(rate) = rr
        .transactions_per_sec
        .filter(|r| !(1..=MAX_TRANSACTIONS_PER_SEC).contains(r))
    {
        return Err(SpecError::RequestRate(rate));
    }
    if rr.response_len_bytes == 0 || rr.response_len_bytes > limits.max_write_len_bytes {
        return Err(SpecError::ResponseLength {
            len_bytes: rr.response_len_bytes,
            max_bytes: limits.max_write_len_bytes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{sample, Direction, TestKind};
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
