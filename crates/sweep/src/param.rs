//! The parameters a sweep can vary in a test's [`TestSpec`] (`streams`, `window`, `mss`,
//! `rate`, `payload`), each value checked against the same limits the test commands apply, so
//! a bad value is refused before the first point runs.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use wire::datagram::HEADER_LEN;
use wire::spec::{DataPath, FamilyId, TestKind, UdpRate};
use wire::TestSpec;

use crate::values::{SweepValue, ValueUnit};

/// A parameter that does not fit the test, or a value out of its range.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ParamError {
    /// `sweep mss` of a UDP test.
    #[error("sweep mss: the MSS is a TCP setting; the test after -- is {} (use tcp or rr)", .kind.as_str())]
    MssOverUdp {
        /// The test after `--`.
        kind: TestKind,
    },
    /// `sweep rate` of a test other than `udp`.
    #[error("sweep rate: sweeps the UDP send rate; the test after -- is {} (use udp)", .kind.as_str())]
    RateNotUdp {
        /// The test after `--`.
        kind: TestKind,
    },
    /// A value outside the limits the test commands apply.
    #[error("--values {label}: {what} must be between {lo} and {hi}")]
    OutOfRange {
        /// The value as given.
        label: String,
        /// What it is, with its unit (`a window (bytes)`).
        what: &'static str,
        /// Smallest allowed.
        lo: f64,
        /// Largest allowed.
        hi: f64,
    },
}

/// A swept test parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parameter {
    /// Parallel streams per direction (`-P`).
    Streams,
    /// Socket buffer size on both ends (`-w`), bytes.
    Window,
    /// TCP maximum segment size (`-M`), bytes.
    Mss,
    /// UDP send rate per stream (`-b`), bits/s.
    Rate,
    /// Bytes per write (`-l`): the UDP payload, the TCP write length, or the request and
    /// response size of a request/response test.
    Payload,
}

impl Parameter {
    /// How `--values` items are read.
    pub fn unit(self) -> ValueUnit {
        match self {
            Parameter::Streams | Parameter::Mss => ValueUnit::Count,
            Parameter::Window | Parameter::Payload => ValueUnit::Bytes,
            Parameter::Rate => ValueUnit::BitsPerSec,
        }
    }

    /// Whether the parameter means anything for a `kind` test; the error says what to run.
    pub fn check_kind(self, kind: TestKind) -> Result<(), ParamError> {
        match self {
            Parameter::Mss if kind.row().path == DataPath::Udp => {
                Err(ParamError::MssOverUdp { kind })
            }
            Parameter::Rate if kind.row().family != FamilyId::Datagram => {
                Err(ParamError::RateNotUdp { kind })
            }
            _ => Ok(()),
        }
    }

    /// `spec` with `value` applied; the error names the value and the limit.
    pub fn apply(self, spec: &TestSpec, value: &SweepValue) -> Result<TestSpec, ParamError> {
        let v = value.number.unwrap_or(f64::NAN);
        let label = &value.label;
        let within = |lo: f64, hi: f64, what: &'static str| -> Result<u64, ParamError> {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(v as u64)
            } else {
                Err(ParamError::OutOfRange {
                    label: label.clone(),
                    what,
                    lo,
                    hi,
                })
            }
        };
        let mut s = spec.clone();
        match self {
            Parameter::Streams => s.streams = within(1.0, 128.0, "streams")? as u16,
            Parameter::Window => {
                s.window_bytes =
                    Some(within(2048.0, f64::from(1u32 << 30), "a window (bytes)")? as u32)
            }
            // `check_kind` refused the kinds without TCP options or a UDP rate.
            Parameter::Mss => {
                let mss = Some(within(88.0, 65535.0, "an MSS (bytes)")? as u32);
                if let Some(tcp) = s.tcp_mut() {
                    tcp.mss_bytes = mss;
                }
            }
            Parameter::Rate => {
                let rate = UdpRate::BitsPerSec(within(1.0, 1e15, "a rate (bits/s)")?);
                // The swept rate is every stream's, both ways: a base's second rate
                // (`--bidir -b A,B`) would otherwise stay fixed under the swept label.
                if let Some(udp) = s.udp_mut() {
                    udp.rate = rate;
                    udp.reverse_rate = None;
                }
            }
            Parameter::Payload => {
                let row = s.kind().row();
                let (lo, hi) = if row.path == DataPath::Udp {
                    (HEADER_LEN as f64, 65_507.0)
                } else {
                    (1.0, f64::from(64u32 << 20))
                };
                let what = match row.family {
                    FamilyId::Datagram => "a UDP payload (bytes)",
                    FamilyId::Transaction => "a request (bytes)",
                    FamilyId::Stream => "a write length (bytes)",
                };
                s.set_message_len_bytes(within(lo, hi, what)? as u32);
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::Params;

    fn spec(kind: TestKind) -> TestSpec {
        TestSpec::new(Params::defaults(kind), 1, 1000)
    }

    #[test]
    fn values_land_in_the_spec() {
        let tcp = spec(TestKind::TcpStream);
        let s = Parameter::Streams
            .apply(&tcp, &SweepValue::number(8))
            .unwrap();
        assert_eq!(s.streams, 8);
        let s = Parameter::Window
            .apply(&tcp, &SweepValue::number(1 << 20))
            .unwrap();
        assert_eq!(s.window_bytes, Some(1 << 20));
        let s = Parameter::Mss
            .apply(&tcp, &SweepValue::number(1400))
            .unwrap();
        assert_eq!(s.tcp().unwrap().mss_bytes, Some(1400));
        let s = Parameter::Payload
            .apply(&tcp, &SweepValue::number(4096))
            .unwrap();
        assert_eq!(s.message_len_bytes(), 4096);
        let mut udp = spec(TestKind::UdpStream);
        udp.udp_mut().unwrap().rate = UdpRate::PacketsPerSec(10);
        udp.udp_mut().unwrap().reverse_rate = Some(UdpRate::BitsPerSec(5));
        let s = Parameter::Rate
            .apply(&udp, &SweepValue::number(1_000_000_000))
            .unwrap();
        assert_eq!(s.udp().unwrap().rate, UdpRate::BitsPerSec(1_000_000_000));
        assert_eq!(
            s.udp().unwrap().reverse_rate,
            None,
            "the swept rate is both ways'"
        );
        let s = Parameter::Payload
            .apply(&spec(TestKind::TcpRr), &SweepValue::number(100))
            .unwrap();
        let rr = s.rr().unwrap();
        assert_eq!((rr.request_len_bytes, rr.response_len_bytes), (100, 100));
    }

    #[test]
    fn out_of_range_values_name_the_value() {
        let tcp = spec(TestKind::TcpStream);
        let err = Parameter::Streams
            .apply(&tcp, &SweepValue::number(200))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--values 200: streams must be between 1 and 128"
        );
        let err = Parameter::Payload
            .apply(&spec(TestKind::UdpStream), &SweepValue::number(8))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a UDP payload (bytes) must be between 16"),
            "{err}"
        );
        assert!(Parameter::Window
            .apply(&tcp, &SweepValue::number(100))
            .is_err());
    }

    #[test]
    fn parameters_that_do_not_apply_are_refused() {
        assert!(Parameter::Mss
            .check_kind(TestKind::UdpStream)
            .unwrap_err()
            .to_string()
            .contains("use tcp or rr"));
        assert!(Parameter::Rate
            .check_kind(TestKind::TcpStream)
            .unwrap_err()
            .to_string()
            .contains("use udp"));
        assert!(Parameter::Streams.check_kind(TestKind::TcpRr).is_ok());
    }
}
