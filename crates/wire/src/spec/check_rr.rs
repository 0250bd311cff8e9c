//! The request/response kinds' part of [`TestSpec::check`](super::TestSpec::check): warm-up,
//! transaction rate, busy-poll time, response length, and a server's rate limit, which a
//! request/response test meets by its transaction rate (its larger message, that many times a
//! second).

use super::check::SpecError;
use super::{RrParams, SpecLimits};

/// Highest transaction rate per stream.
const MAX_TRANSACTIONS_PER_SEC: u64 = 10_000_000;

/// The request/response kinds: warm-up, transaction rate, response length, and on a server
/// with a rate limit a transaction rate whose larger message, that many times a second, stays
/// within it per stream (one transaction in flight does not bound the rate: a 16 MiB response
/// to a 1-byte request is a stream test). The responder holds the same rate (the engine's
/// responders answer no faster than the spec's rate), so a client that sends faster gains
/// nothing.
pub(super) fn check_rr(
    rr: &RrParams,
    duration_ms: u64,
    limits: &SpecLimits,
    carries_data: bool,
) -> Result<(), SpecError> {
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
    if let Some(us) = rr.busy_poll_us {
        super::bounds::check_busy_poll(us, limits.max_busy_poll_us)?;
    }
    // A transaction without data (`tcp_cc`) has no response; every other one has one.
    let response_ok = match carries_data {
        true => (1..=limits.max_write_len_bytes).contains(&rr.response_len_bytes),
        false => rr.response_len_bytes == 0,
    };
    if !response_ok {
        return Err(SpecError::ResponseLength {
            len_bytes: rr.response_len_bytes,
            max_bytes: if carries_data {
                limits.max_write_len_bytes
            } else {
                0
            },
        });
    }
    // The limit holds for every kind: a transaction counts as its larger message, at least one
    // byte (as `rr_max_rate` advises), so a connection test without data is bounded too.
    if let Some(limit_bps) = limits.max_rate_bps {
        let bits = u64::from(rr.request_len_bytes.max(rr.response_len_bytes).max(1)) * 8;
        let over = rr
            .transactions_per_sec
            .is_none_or(|r| bits.saturating_mul(r) > limit_bps);
        if over {
            return Err(SpecError::RrRateLimit {
                request_len_bytes: rr.request_len_bytes,
                response_len_bytes: rr.response_len_bytes,
                transactions_per_sec: rr.transactions_per_sec,
                limit_bps,
            });
        }
    }
    Ok(())
}

pub(super) fn rr_rate_words(per_sec: Option<u64>) -> String {
    per_sec.map_or("back to back (no --tps)".to_string(), |r| {
        format!("at {r} transactions/s")
    })
}

/// The highest transaction rate under `limit_bps` for messages of these sizes (at least 1, so
/// the message has something to ask for; a message too large for 1 a second is over anyway).
pub(super) fn rr_max_rate(request_len_bytes: u32, response_len_bytes: u32, limit_bps: u64) -> u64 {
    let bits = u64::from(request_len_bytes.max(response_len_bytes).max(1)) * 8;
    (limit_bps / bits).max(1)
}

#[cfg(test)]
mod tests {
    use super::super::{Params, TestKind, TestSpec};
    use super::*;

    /// `tcp_cc` moves no data, yet a server's --max-rate bounds its connection rate: back to
    /// back is refused, and a --tps of at most the limit over one byte is taken.
    #[test]
    fn a_rate_limit_bounds_connect_and_close_tests_too() {
        let limits = SpecLimits {
            max_rate_bps: Some(8_000),
            ..SpecLimits::default()
        };
        let mut spec = TestSpec::new(Params::defaults(TestKind::TcpCc), 1, 1000);
        let err = spec.check(&limits).unwrap_err().to_string();
        assert!(err.ends_with("ask for --tps 1000 or less"), "{err}");
        spec.params.rr_mut().unwrap().transactions_per_sec = Some(1000);
        assert_eq!(spec.check(&limits), Ok(()));
        spec.params.rr_mut().unwrap().transactions_per_sec = Some(1001);
        assert!(spec.check(&limits).is_err());
        spec.params.rr_mut().unwrap().response_len_bytes = 1;
        spec.params.rr_mut().unwrap().transactions_per_sec = Some(10);
        let err = spec.check(&limits).unwrap_err().to_string();
        assert!(err.starts_with("response length 1 bytes"), "{err}");
        assert!(spec.check(&SpecLimits::default()).is_err());
    }

    #[test]
    fn a_rate_limit_bounds_request_response_kinds_by_their_transaction_rate() {
        let limits = SpecLimits {
            max_rate_bps: Some(10_000_000),
            ..SpecLimits::default()
        };
        for kind in [TestKind::TcpRr, TestKind::TcpCrr, TestKind::UdpRr] {
            let mut spec = TestSpec::new(Params::defaults(kind), 1, 1000);
            let rr = spec.params.rr_mut().unwrap();
            (rr.request_len_bytes, rr.response_len_bytes) = (16, 60_000);
            let err = spec.check(&limits).unwrap_err().to_string();
            assert_eq!(
                err,
                "request/response of 16/60000 bytes back to back (no --tps) per stream above \
                 this server's limit of 10000000 bit/s (serve --max-rate): ask for --tps 20 or less",
                "{kind:?}"
            );
            let rr = spec.params.rr_mut().unwrap();
            (rr.request_len_bytes, rr.response_len_bytes) = (100, 1000);
            rr.transactions_per_sec = Some(1250);
            assert_eq!(spec.check(&limits), Ok(()), "{kind:?}: exactly the limit");
            spec.params.rr_mut().unwrap().transactions_per_sec = Some(1251);
            let err = spec.check(&limits).unwrap_err().to_string();
            assert!(err.contains("at 1251 transactions/s"), "{err}");
            assert!(err.ends_with("ask for --tps 1250 or less"), "{err}");
            assert!(spec.check(&SpecLimits::default()).is_ok(), "no limit");
        }
    }
}
