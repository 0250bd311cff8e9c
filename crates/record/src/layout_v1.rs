//! Record layout 1 (written by control protocol versions up to 6): its flat `spec`, frozen as it
//! was stored, and the conversion of a layout-1 record to the current layout as it is read.
//!
//! Layout 1 gave every spec every field of every kind — UDP rates in TCP tests, a direction in
//! request/response tests — and reused `pps` as the request/response transaction rate. Layout 2
//! keeps the fields every kind has and moves the rest into the kind's own `params`: the fields a
//! kind used go there (`pps` of a request/response test becomes its `transactions_per_sec`,
//! `rate_bps`/`pps` of a UDP test its `rate`), and the defaults it carried for other kinds are
//! dropped. No value a run used is lost.
//!
//! Invariants: [`SpecV1`] is never edited, since records of this layout stay on users' disks
//! (the tests read `tests/fixtures/records-v1.json`, one run of every kind, and
//! `tests/fixtures/store-v1.sqlite`); the conversion needs nothing but the record itself.

use serde::Deserialize;
use serde_json::Value;
use wire::spec::{
    Direction, Params, RrParams, SendMode, StreamParams, TcpOptions, TestKind, TestSpec, Transport,
    UdpParams, UdpRate,
};

/// The spec as layout 1 stored it, with the defaults it read missing fields with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SpecV1 {
    /// Test kind.
    pub kind: TestKind,
    /// Socket family (`tcp` also for the UDP kinds, meaning IP).
    pub transport: Transport,
    /// Test duration, ms.
    pub duration_ms: u64,
    /// Interval between samples, ms.
    pub interval_ms: u64,
    /// Streams per direction.
    pub streams: u16,
    /// Direction (`send` for request/response).
    pub direction: Direction,
    /// Bytes per write; the UDP payload; the request.
    pub write_len_bytes: u32,
    /// How stream senders wrote; absent before the field existed.
    #[serde(default)]
    pub send_mode: SendMode,
    /// Socket buffer request, bytes.
    pub window_bytes: Option<u32>,
    /// TCP_MAXSEG, bytes.
    pub mss_bytes: Option<u32>,
    /// TCP_NODELAY.
    pub no_delay: bool,
    /// TCP_CONGESTION.
    pub congestion: Option<String>,
    /// IP TOS (TCP only).
    pub tos: Option<u8>,
    /// Link speed, bits/s.
    pub link_speed_bps: Option<u64>,
    /// UDP rate per stream, bits/s.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// UDP datagrams/s, or request/response transactions/s, per stream.
    #[serde(default)]
    pub pps: Option<u64>,
    /// UDP burst, datagrams.
    #[serde(default)]
    pub burst_packets: u32,
    /// UDP datagrams per call.
    #[serde(default = "default_batch")]
    pub batch_packets: u16,
    /// UDP GSO allowed.
    #[serde(default = "default_true")]
    pub gso: bool,
    /// UDP GRO allowed.
    #[serde(default = "default_true")]
    pub gro: bool,
    /// UDP source ports per stream.
    #[serde(default = "default_flows")]
    pub flows: u32,
    /// UDP destination ports per stream.
    #[serde(default = "default_flows")]
    pub flows_dst: u32,
    /// Request/response: response bytes.
    #[serde(default)]
    pub response_len_bytes: u32,
    /// Request/response: warm-up, ms.
    #[serde(default)]
    pub omit_ms: u64,
    /// SO_BUSY_POLL, µs.
    #[serde(default)]
    pub busy_poll_us: Option<u32>,
    /// Server data-thread CPU.
    #[serde(default)]
    pub server_cpu: Option<u32>,
    /// Client data-thread CPU.
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

impl From<SpecV1> for TestSpec {
    fn from(old: SpecV1) -> TestSpec {
        let tcp = TcpOptions {
            mss_bytes: old.mss_bytes,
            no_delay: old.no_delay,
            congestion: old.congestion,
            tos: old.tos,
            pacing_bps: None,
            reverse_pacing_bps: None,
            notsent_lowat_bytes: None,
        };
        let rr = RrParams {
            request_len_bytes: old.write_len_bytes,
            response_len_bytes: old.response_len_bytes,
            omit_ms: old.omit_ms,
            transactions_per_sec: old.pps,
            busy_poll_us: old.busy_poll_us,
        };
        let params = match old.kind {
            TestKind::TcpStream => Params::TcpStream {
                stream: StreamParams {
                    direction: old.direction,
                    transport: old.transport,
                    write_len_bytes: old.write_len_bytes,
                    send_mode: old.send_mode,
                    rx_mode: wire::spec::RxMode::Copy,
                    self_probes_per_s: None,
                },
                tcp,
            },
            TestKind::UdpStream => Params::UdpStream {
                udp: UdpParams {
                    direction: old.direction,
                    payload_len_bytes: old.write_len_bytes,
                    // `pps` took precedence over `rate_bps`, as the sender read them.
                    rate: match (old.pps, old.rate_bps) {
                        (Some(pps), _) => UdpRate::PacketsPerSec(pps),
                        (None, Some(bps)) => UdpRate::BitsPerSec(bps),
                        (None, None) => UdpRate::Max,
                    },
                    reverse_rate: None,
                    burst_packets: old.burst_packets,
                    batch_packets: old.batch_packets,
                    gso: old.gso,
                    gro: old.gro,
                    flows: old.flows,
                    flows_dst: old.flows_dst,
                    engine: wire::spec::UdpEngine::Socket,
                },
            },
            // The request/response kinds: their transaction and TCP options, whichever kind.
            rr_kind => {
                let mut params = Params::defaults(rr_kind);
                if let Some(p) = params.rr_mut() {
                    *p = rr;
                }
                if let Some(t) = params.tcp_mut() {
                    *t = tcp;
                }
                params
            }
        };
        TestSpec {
            duration_ms: old.duration_ms,
            interval_ms: old.interval_ms,
            streams: old.streams,
            window_bytes: old.window_bytes,
            link_speed_bps: old.link_speed_bps,
            server_cpu: old.server_cpu,
            client_cpu: old.client_cpu,
            omit_ms: 0,
            amount: None,
            params,
        }
    }
}

/// A schema version 1 record whose spec does not convert.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    /// The layout-1 spec does not decode; names the field.
    #[error("spec of a schema version 1 record: {0}")]
    Spec(serde_json::Error),
    /// The converted spec does not encode (a bug, not the file's fault).
    #[error("{0}")]
    Encode(serde_json::Error),
}

/// Converts `record`, a run record as JSON, from layout 1 to layout 2 in place: its spec, and
/// its `schema_version`. A record of any other layout is left as it is. The error is a
/// layout-1 spec that does not decode, naming the field.
pub fn upgrade(record: &mut Value) -> Result<(), UpgradeError> {
    if record.get("schema_version").and_then(Value::as_u64) != Some(1) {
        return Ok(());
    }
    if let Some(spec) = record.get_mut("spec") {
        let old = SpecV1::deserialize(spec.take()).map_err(UpgradeError::Spec)?;
        *spec = serde_json::to_value(TestSpec::from(old)).map_err(UpgradeError::Encode)?;
    }
    record["schema_version"] = Value::from(2);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layout-1 spec as the first releases stored it, before `send_mode`, the UDP and
    /// request/response fields and CPU placement existed.
    const OLDEST_TCP: &str = r#"{"kind":"tcp_stream","transport":"tcp","duration_ms":2000,
        "interval_ms":1000,"streams":1,"direction":"reverse","write_len_bytes":131072,
        "window_bytes":null,"mss_bytes":1400,"no_delay":false,"congestion":"reno","tos":16,
        "link_speed_bps":10000000000}"#;

    #[test]
    fn missing_fields_read_with_layout_1s_defaults() {
        let old: SpecV1 = serde_json::from_str(OLDEST_TCP).unwrap();
        let spec = TestSpec::from(old);
        assert_eq!(spec.kind(), TestKind::TcpStream);
        assert_eq!(spec.direction(), Direction::Reverse);
        assert_eq!(
            spec.stream().unwrap(),
            &StreamParams {
                direction: Direction::Reverse,
                transport: Transport::Tcp,
                write_len_bytes: 131_072,
                send_mode: SendMode::Sendfile,
                rx_mode: wire::spec::RxMode::Copy,
                self_probes_per_s: None,
            }
        );
        let tcp = spec.tcp().unwrap();
        assert_eq!(tcp.mss_bytes, Some(1400));
        assert_eq!(tcp.congestion.as_deref(), Some("reno"));
        assert_eq!(tcp.tos, Some(16));
        assert_eq!(spec.link_speed_bps, Some(10_000_000_000));
        assert_eq!((spec.server_cpu, spec.client_cpu), (None, None));
    }

    #[test]
    fn only_layout_1_records_are_converted() {
        let mut record = serde_json::json!({"schema_version": 1, "spec": serde_json::from_str::<Value>(OLDEST_TCP).unwrap()});
        upgrade(&mut record).unwrap();
        assert_eq!(record["schema_version"], 2);
        assert_eq!(record["spec"]["params"]["kind"], "tcp_stream");
        assert_eq!(record["spec"]["params"]["stream"]["send_mode"], "sendfile");
        let converted = record.clone();
        upgrade(&mut record).unwrap();
        assert_eq!(record, converted, "a layout-2 record is left alone");
    }

    #[test]
    fn a_bad_layout_1_spec_names_the_field() {
        let mut record = serde_json::json!({"schema_version": 1, "spec": {"kind": "tcp_stream"}});
        let err = upgrade(&mut record).unwrap_err().to_string();
        assert!(
            err.contains("schema version 1") && err.contains("transport"),
            "{err}"
        );
    }

    #[test]
    fn pps_wins_over_rate_bps_as_the_sender_read_them() {
        let mut old: SpecV1 = serde_json::from_str(OLDEST_TCP).unwrap();
        old.kind = TestKind::UdpStream;
        old.rate_bps = Some(1_000_000);
        old.pps = Some(500);
        let spec = TestSpec::from(old);
        assert_eq!(spec.udp().unwrap().rate, UdpRate::PacketsPerSec(500));
        assert!(spec.tcp().is_none(), "UDP tests have no TCP options");
    }
}
