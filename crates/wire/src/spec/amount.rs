//! A test by amount (`-n BYTES`, `-k BLOCKS`, as ttcp, nuttcp and iperf3 take them): each way
//! the data flows moves this much, over all its streams, and the test ends once it has; the
//! spec's duration is then the longest it may take.
//!
//! The senders of each end share one budget in the unit they count ([`TestSpec::amount_units`]):
//! bytes on a TCP stream (a block is one write of `-l` bytes), datagrams on a UDP stream (bytes
//! are rounded up to whole datagrams of `-l` bytes, as iperf3 sends whole datagrams until its
//! count is reached).

use serde::{Deserialize, Serialize};

use super::{Shape, TestSpec};

/// How much each direction of a test moves: `{"bytes": N}` or `{"blocks": N}`.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// Payload bytes (`-n`).
    Bytes(u64),
    /// Sends of `-l` bytes: TCP writes, UDP datagrams (`-k`).
    Blocks(u64),
}

/// Whether a sender counts its budget in bytes or in datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountUnit {
    /// TCP: payload bytes.
    Bytes,
    /// UDP: datagrams.
    Datagrams,
}

/// An amount the spec's kind cannot move, or none at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Zero bytes or blocks.
    #[error("an amount (-n, -k) of 0: give at least one byte or block")]
    Zero,
    /// A kind that is not a stream of data, or a frame engine.
    #[error("{kind} does not run by amount (-n, -k): only tcp and udp streams over sockets, without self probes, do")]
    Kind {
        /// The kind's name.
        kind: &'static str,
    },
    /// A `-n`/`-k` value that is not a count of bytes or blocks.
    #[error("{flag} {text}: {why}")]
    Value {
        /// `--bytes` or `--blocks`.
        flag: &'static str,
        /// As typed.
        text: String,
        /// What is wrong with it.
        why: measure::units::UnitError,
    },
    /// An amount beside a warm-up, which would leave part of it out of the summary.
    #[error("--omit with -n or -k: the amount is the whole test; drop --omit")]
    WarmUp,
    /// A refused amount, as typed with its flag.
    #[error("{flag} {text}: {why}")]
    Flag {
        /// `--bytes` or `--blocks`.
        flag: &'static str,
        /// As typed.
        text: String,
        /// Why it is refused.
        why: Box<AmountError>,
    },
    /// More than a counter holds once in the sender's unit.
    #[error("an amount of {blocks} blocks of {len} bytes is beyond what a counter holds")]
    TooLarge {
        /// Blocks asked for.
        blocks: u64,
        /// Bytes per block.
        len: u32,
    },
}

impl Amount {
    /// The number given, bytes or blocks.
    pub fn count(self) -> u64 {
        match self {
            Amount::Bytes(n) | Amount::Blocks(n) => n,
        }
    }
}

impl TestSpec {
    /// The unit this spec's senders count an amount in, if its kind runs by amount: stream
    /// kinds over sockets (a frame engine's senders and a stream with self probes are not
    /// budgeted).
    pub fn amount_unit(&self) -> Option<AmountUnit> {
        match self.params.shape() {
            Shape::TcpStream { stream, .. } if stream.self_probes_per_s.is_none() => {
                Some(AmountUnit::Bytes)
            }
            Shape::UdpStream { udp } if !udp.engine.sends_frames() => Some(AmountUnit::Datagrams),
            _ => None,
        }
    }

    /// Each direction's budget in the senders' unit ([`TestSpec::amount_unit`]): bytes of a TCP
    /// stream (blocks × `-l`), datagrams of a UDP stream (bytes rounded up to whole datagrams).
    /// `None` for a test by time.
    pub fn amount_units(&self) -> Option<u64> {
        let amount = self.amount?;
        let len = u64::from(self.message_len_bytes().max(1));
        match (self.amount_unit()?, amount) {
            (AmountUnit::Bytes, Amount::Bytes(n)) => Some(n),
            (AmountUnit::Bytes, Amount::Blocks(n)) => n.checked_mul(len),
            (AmountUnit::Datagrams, Amount::Bytes(n)) => Some(n.div_ceil(len)),
            (AmountUnit::Datagrams, Amount::Blocks(n)) => Some(n),
        }
    }

    /// Makes this a test by amount from `-n BYTES` or `-k BLOCKS` as typed (binary multiples:
    /// `5M`, `1K`), if either is given: without a time (`timed` false) it may take as long as a
    /// test may; with one, that is the longest.
    pub fn by_amount(
        &mut self,
        bytes: Option<&str>,
        blocks: Option<&str>,
        timed: bool,
    ) -> Result<(), AmountError> {
        let (flag, text) = match (bytes, blocks) {
            (Some(n), _) => ("--bytes", n),
            (None, Some(k)) => ("--blocks", k),
            (None, None) => return Ok(()),
        };
        let n = measure::units::parse_bytes(text).map_err(|why| AmountError::Value {
            flag,
            text: text.into(),
            why,
        })?;
        if self.omit_ms > 0 {
            return Err(AmountError::WarmUp);
        }
        self.amount = Some(match bytes {
            Some(_) => Amount::Bytes(n),
            None => Amount::Blocks(n),
        });
        if !timed {
            self.duration_ms = super::bounds::MAX_DURATION_MS;
        }
        self.check_amount().map_err(|why| AmountError::Flag {
            flag,
            text: text.into(),
            why: Box::new(why),
        })
    }

    /// Checks the amount, if any: its kind runs by amount, and it is at least one unit.
    pub fn check_amount(&self) -> Result<(), AmountError> {
        let Some(amount) = self.amount else {
            return Ok(());
        };
        if amount.count() == 0 {
            return Err(AmountError::Zero);
        }
        if self.amount_unit().is_none() {
            return Err(AmountError::Kind {
                kind: self.kind().row().name,
            });
        }
        self.amount_units()
            .map(|_| ())
            .ok_or(AmountError::TooLarge {
                blocks: amount.count(),
                len: self.message_len_bytes(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Params, TestKind};

    /// A spec of the kind named `kind` (`tcp_stream`), by `amount`, with 1000-byte writes.
    fn spec(kind: &str, amount: Amount) -> TestSpec {
        let kind = TestKind::of_name(kind).unwrap();
        let mut spec = TestSpec {
            amount: Some(amount),
            ..TestSpec::new(Params::defaults(kind), 2, 10_000)
        };
        spec.set_message_len_bytes(1000);
        spec
    }

    #[test]
    fn tcp_counts_bytes_and_udp_whole_datagrams() {
        let tcp = |a| spec("tcp_stream", a).amount_units();
        let udp = |a| spec("udp_stream", a).amount_units();
        assert_eq!(tcp(Amount::Bytes(5 << 20)), Some(5 << 20));
        assert_eq!(tcp(Amount::Blocks(3)), Some(3000));
        assert_eq!(udp(Amount::Bytes(2001)), Some(3));
        assert_eq!(udp(Amount::Blocks(1024)), Some(1024));
        let one = spec("tcp_stream", Amount::Bytes(1));
        assert_eq!(one.check_amount(), Ok(()));
    }

    #[test]
    fn what_cannot_run_by_amount_is_refused_by_name() {
        let zero = spec("tcp_stream", Amount::Blocks(0));
        assert_eq!(zero.check_amount(), Err(AmountError::Zero));
        let huge = spec("tcp_stream", Amount::Blocks(u64::MAX)).check_amount();
        assert!(
            matches!(huge, Err(AmountError::TooLarge { .. })),
            "{huge:?}"
        );
        let rr = spec("tcp_rr", Amount::Bytes(1));
        assert_eq!(rr.check_amount(), Err(AmountError::Kind { kind: "tcp_rr" }));
    }

    #[test]
    fn typed_amounts_are_read_as_binary_multiples_and_refusals_name_their_flag() {
        let mut tcp = spec("tcp_stream", Amount::Bytes(1));
        tcp.by_amount(Some("5M"), None, false).unwrap();
        assert_eq!(tcp.amount, Some(Amount::Bytes(5 << 20)));
        assert_eq!(tcp.duration_ms, crate::spec::bounds::MAX_DURATION_MS);
        tcp.duration_ms = 3000;
        tcp.by_amount(None, Some("1K"), true).unwrap();
        assert_eq!(
            (tcp.amount, tcp.duration_ms),
            (Some(Amount::Blocks(1024)), 3000)
        );
        let zero = tcp
            .by_amount(Some("0"), None, true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            zero,
            "--bytes 0: an amount (-n, -k) of 0: give at least one byte or block"
        );
        assert!(tcp
            .by_amount(None, Some("x"), true)
            .unwrap_err()
            .to_string()
            .starts_with("--blocks x: "));
        tcp.omit_ms = 1000;
        assert_eq!(
            tcp.by_amount(Some("1M"), None, true),
            Err(AmountError::WarmUp)
        );
    }

    #[test]
    fn the_wire_form_names_the_unit_and_a_spec_without_one_is_unchanged() {
        let json = serde_json::to_string(&Amount::Blocks(1024)).unwrap();
        assert_eq!(json, r#"{"blocks":1024}"#);
        let spec = TestSpec {
            amount: None,
            ..spec("udp_stream", Amount::Bytes(1))
        };
        assert!(!serde_json::to_string(&spec).unwrap().contains("amount"));
    }
}
