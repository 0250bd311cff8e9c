//! [`TestSpec::check`]: what the spec's types cannot say — ranges, and the limits a server sets
//! on a peer's spec. The first failed check is the error, naming the field and what is allowed;
//! the order is the one docs/PROTOCOL.md section 6 lists.

use super::{Params, RrParams, SpecLimits, TestSpec, UdpParams, UdpRate};

/// The largest UDP payload over IPv4: 65535 − 20 (IP) − 8 (UDP).
const MAX_UDP_PAYLOAD: u32 = 65_507;
/// The smallest `udp_rr` datagram: the linerate header.
const MIN_UDP_RR_LEN: u32 = 16;
/// Most source or destination ports per UDP stream.
const MAX_UDP_FLOWS: u32 = 10_000;
/// Highest transaction rate per stream.
const MAX_TRANSACTIONS_PER_SEC: u64 = 10_000_000;

impl TestSpec {
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
        let len = self.message_len_bytes();
        if len == 0 || len > limits.max_write_len_bytes {
            return Err(format!(
                "write length {len} bytes outside 1..={} (server limit)",
                limits.max_write_len_bytes
            ));
        }
        match &self.params {
            Params::TcpStream { .. } => {}
            Params::UdpStream { udp } => check_udp(udp, limits)?,
            Params::UdpRr { rr } => {
                for (what, len) in [
                    ("request", rr.request_len_bytes),
                    ("response", rr.response_len_bytes),
                ] {
                    if !(MIN_UDP_RR_LEN..=MAX_UDP_PAYLOAD).contains(&len) {
                        return Err(format!("UDP {what} {len} bytes outside 16..=65507"));
                    }
                }
                check_rr(rr, self.duration_ms, limits)?;
            }
            Params::TcpRr { rr, .. } | Params::TcpCrr { rr, .. } => {
                check_rr(rr, self.duration_ms, limits)?
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

/// `udp_stream`: payload, flows, the server's rate limit, non-zero rate and batch.
fn check_udp(udp: &UdpParams, limits: &SpecLimits) -> Result<(), String> {
    if udp.payload_len_bytes > MAX_UDP_PAYLOAD {
        return Err(format!(
            "UDP payload {} bytes above the 65507-byte limit",
            udp.payload_len_bytes
        ));
    }
    if udp.flows == 0 || udp.flows > MAX_UDP_FLOWS {
        return Err(format!("UDP flows {} outside 1..=10000", udp.flows));
    }
    if udp.flows_dst == 0 || udp.flows_dst > MAX_UDP_FLOWS {
        return Err(format!(
            "UDP destination flows {} outside 1..=10000",
            udp.flows_dst
        ));
    }
    if let Some(limit) = limits.max_udp_rate_bps {
        let asked = udp
            .target_pps()
            .map(|pps| pps * f64::from(udp.payload_len_bytes) * 8.0);
        if asked.is_none_or(|bps| bps > limit as f64) {
            return Err(format!(
                "UDP rate {} per stream above this server's limit of {limit} bit/s (serve --max-rate)",
                asked.map_or("max".to_string(), |b| format!("{b:.0} bit/s"))
            ));
        }
    }
    let zero_rate = matches!(udp.rate, UdpRate::BitsPerSec(0) | UdpRate::PacketsPerSec(0));
    if zero_rate || udp.batch_packets == 0 {
        return Err("UDP rate, packet rate and batch must be above 0".into());
    }
    Ok(())
}

/// The request/response kinds: warm-up, transaction rate, response length. (A request/response
/// test keeps one transaction in flight per stream, so it limits its own rate: the server's
/// UDP rate limit does not apply.)
fn check_rr(rr: &RrParams, duration_ms: u64, limits: &SpecLimits) -> Result<(), String> {
    if rr.omit_ms >= duration_ms {
        return Err(format!(
            "warm-up of {} ms leaves nothing of a {duration_ms} ms test",
            rr.omit_ms
        ));
    }
    if let Some(rate) = rr
        .transactions_per_sec
        .filter(|r| !(1..=MAX_TRANSACTIONS_PER_SEC).contains(r))
    {
        return Err(format!(
            "request rate {rate} per second outside 1..=10000000"
        ));
    }
    if rr.response_len_bytes == 0 || rr.response_len_bytes > limits.max_write_len_bytes {
        return Err(format!(
            "response length {} bytes outside 1..={} (server limit)",
            rr.response_len_bytes, limits.max_write_len_bytes
        ));
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
            .contains("streams 500"));
        spec.streams = 1;
        spec.duration_ms = 0;
        assert!(spec
            .check(&SpecLimits::default())
            .unwrap_err()
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
            max_udp_rate_bps: Some(100_000_000),
            ..SpecLimits::default()
        };
        assert!(udp_spec(UdpRate::BitsPerSec(50_000_000))
            .check(&limits)
            .is_ok());
        assert!(udp_spec(UdpRate::BitsPerSec(200_000_000))
            .check(&limits)
            .unwrap_err()
            .contains("above this server's limit"));
        assert!(udp_spec(UdpRate::Max)
            .check(&limits)
            .unwrap_err()
            .contains("UDP rate max"));
        // 10,000 datagrams of 1472 bytes: 117.76 Mbit/s.
        assert!(udp_spec(UdpRate::PacketsPerSec(10_000))
            .check(&limits)
            .unwrap_err()
            .contains("117760000 bit/s"));
    }

    #[test]
    fn ranges_the_types_cannot_hold() {
        let limits = SpecLimits::default();
        let err = |spec: &TestSpec| spec.check(&limits).unwrap_err();
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
