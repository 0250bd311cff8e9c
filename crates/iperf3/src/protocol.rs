//! iperf3's control protocol, the subset linerate speaks (docs/PROTOCOL.md section 13): the
//! 37-byte cookie, the one-byte states, the length-prefixed JSON of the parameters and the
//! results. Facts from iperf3's source (`iperf_api.h`, `iperf_api.c`); no code of it.
//!
//! The exchange, client's view: connect, send the cookie; the server sends `ParamExchange`; send
//! the parameters; the server sends `CreateStreams`: open the data connections, each starting
//! with the same cookie; `TestStart`, `TestRunning`: data flows; when the time is up, send
//! `TestEnd`; the server sends `ExchangeResults`: send this end's results, read the server's;
//! the server sends `DisplayResults`; send `IperfDone` and close.

use std::io::{Read, Write};
use std::time::Duration;

use measure::cpu::CpuTime;

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use wire::msg::StreamCounts;
use wire::WireError;

/// The cookie's length: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// The largest parameter JSON an iperf3 server takes.
pub const MAX_PARAMS_LEN: u32 = 8 * 1024;
/// The largest results JSON linerate reads (an iperf3 server may embed its whole output).
pub const MAX_RESULTS_LEN: u32 = 4 << 20;
/// The characters of a cookie.
const COOKIE_CHARS: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Whether `b` can be a cookie's character (what an iperf3 client's first byte is).
pub fn is_cookie_char(b: u8) -> bool {
    COOKIE_CHARS.contains(&b)
}

/// Whether `bytes` is a whole cookie: 36 cookie characters, then a NUL.
pub fn is_cookie(bytes: &[u8]) -> bool {
    bytes.len() == COOKIE_LEN
        && bytes[..COOKIE_LEN - 1].iter().all(|&b| is_cookie_char(b))
        && bytes[COOKIE_LEN - 1] == 0
}

/// iperf3's error number for "an option you are trying to set is not implemented yet"
/// (`IEUNIMP` in `iperf_api.h`).
pub const ERROR_UNIMPLEMENTED: i32 = 13;

/// `ServerError` with iperf3's error number `code` and errno 0, as a server sends it.
pub fn server_error(code: i32) -> [u8; 9] {
    let mut b = [0u8; 9];
    b[0] = State::ServerError.to_byte();
    b[1..5].copy_from_slice(&code.to_be_bytes());
    b
}

/// A test's states, one signed byte each on the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Start the test's timers.
    TestStart,
    /// Data flows.
    TestRunning,
    /// The client's time is up.
    TestEnd,
    /// The client is to send its parameters.
    ParamExchange,
    /// The client is to open its data connections.
    CreateStreams,
    /// The server is shutting down.
    ServerTerminate,
    /// The client is going away.
    ClientTerminate,
    /// Both ends send their results.
    ExchangeResults,
    /// The client is to print its results.
    DisplayResults,
    /// The client is done.
    IperfDone,
    /// The server refuses: it is running another test.
    AccessDenied,
    /// The server failed; two big-endian `i32`s follow (iperf3's error number and errno).
    ServerError,
}

impl State {
    /// The byte on the wire.
    pub fn to_byte(self) -> u8 {
        let v: i8 = match self {
            Self::TestStart => 1,
            Self::TestRunning => 2,
            Self::TestEnd => 4,
            Self::ParamExchange => 9,
            Self::CreateStreams => 10,
            Self::ServerTerminate => 11,
            Self::ClientTerminate => 12,
            Self::ExchangeResults => 13,
            Self::DisplayResults => 14,
            Self::IperfDone => 16,
            Self::AccessDenied => -1,
            Self::ServerError => -2,
        };
        v as u8
    }

    /// The state a byte names; `None` for one linerate does not know (iperf3's unused ones).
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b as i8 {
            1 => Self::TestStart,
            2 => Self::TestRunning,
            4 => Self::TestEnd,
            9 => Self::ParamExchange,
            10 => Self::CreateStreams,
            11 => Self::ServerTerminate,
            12 => Self::ClientTerminate,
            13 => Self::ExchangeResults,
            14 => Self::DisplayResults,
            16 => Self::IperfDone,
            -1 => Self::AccessDenied,
            -2 => Self::ServerError,
            _ => return None,
        })
    }
}

/// A cookie from 36 random bytes: each picks one of 32 characters; then a NUL.
pub fn cookie(random: &[u8; 36]) -> [u8; COOKIE_LEN] {
    let mut c = [0u8; COOKIE_LEN];
    for (slot, r) in c.iter_mut().zip(random) {
        *slot = COOKIE_CHARS[usize::from(r % 32)];
    }
    c
}

/// The test a client asks for, as iperf3 sends it (`send_parameters`). Fields iperf3 sends
/// that linerate does not use are ignored when read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Params {
    /// A TCP test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<bool>,
    /// A UDP test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<bool>,
    /// An SCTP test (linerate refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sctp: Option<bool>,
    /// Seconds left out at the start.
    #[serde(default)]
    pub omit: u64,
    /// Test duration, seconds.
    #[serde(default)]
    pub time: u64,
    /// Bytes to send instead of a duration (0: by time).
    #[serde(default)]
    pub num: u64,
    /// Blocks to send instead of a duration (0: by time).
    #[serde(default)]
    pub blockcount: u64,
    /// TCP maximum segment size.
    #[serde(rename = "MSS", default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// TCP_NODELAY.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    /// Streams per direction.
    #[serde(default = "one")]
    pub parallel: u32,
    /// The server sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
    /// Both send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bidirectional: Option<bool>,
    /// Socket buffer size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Bytes per write (TCP) or per datagram (UDP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u32>,
    /// Target rate per stream, bits/s (0 or absent: unlimited for TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
    /// Fair-queue pacing rate, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqrate: Option<u64>,
    /// The IP TOS byte.
    #[serde(rename = "TOS", default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    /// TCP congestion control algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// 64-bit UDP packet counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_counters_64bit: Option<u32>,
    /// Zero-copy sending (`-Z`: sendfile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<u32>,
    /// Receivers discard in the kernel (`--skip-rx-copy`, iperf3 3.19+: recv with MSG_TRUNC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_rx_copy: Option<u32>,
    /// The client's iperf3 version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// MPTCP (linerate refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<bool>,
    /// An authentication token (iperf3's RSA authentication; linerate refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authtoken: Option<String>,
    /// `--get-server-output`: the client wants the server's output in its results. iperf3
    /// sends the number 1 and a server takes the key's presence, whatever its value, as yes.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        serialize_with = "as_one",
        deserialize_with = "present"
    )]
    pub get_server_output: bool,
}

/// A flag iperf3 sends as the number 1.
fn as_one<S: serde::Serializer>(_: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u8(1)
}

/// A flag iperf3 reads by its key alone: any value (iperf3 sends 1) means set.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

fn one() -> u32 {
    1
}

/// One end's figures after the test (`send_results`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Results {
    /// Process CPU over the test, % of one core (user + system).
    #[serde(default)]
    pub cpu_util_total: f64,
    /// Of which user, %.
    #[serde(default)]
    pub cpu_util_user: f64,
    /// Of which system, %.
    #[serde(default)]
    pub cpu_util_system: f64,
    /// 1 when this end sent and counted retransmits, 0 when it sent without, -1 when it only
    /// received.
    #[serde(default, deserialize_with = "signed")]
    pub sender_has_retransmits: i64,
    /// The congestion control this end used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// Per stream.
    #[serde(default)]
    pub streams: Vec<StreamResults>,
    /// A server's output as text, for a client that asked with `get_server_output` (what
    /// iperf3 prints after "Server output:"). iperf3's server sends this when it runs without
    /// `-J`; with `-J` it sends `server_output_json` instead, whatever the client's own mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
}

impl Results {
    /// One end's results as iperf3 sends them: each stream's figures from its counters (see
    /// [`StreamResults::of_counts`]) in connection order, the process CPU over `wall`, and
    /// whether this end sent on any stream (with retransmit counts when its TCP senders had
    /// TCP_INFO).
    pub fn of_end(counts: &[StreamCounts], cpu: CpuTime, wall: Duration, sends: bool) -> Self {
        let pct = |us: u64| us as f64 / wall.as_micros().max(1) as f64 * 100.0;
        let retransmits = sends && counts.iter().any(|c| c.tcp_info.is_some());
        Self {
            cpu_util_total: pct(cpu.user_us + cpu.sys_us),
            cpu_util_user: pct(cpu.user_us),
            cpu_util_system: pct(cpu.sys_us),
            sender_has_retransmits: match (sends, retransmits) {
                (false, _) => -1,
                (true, has) => i64::from(has),
            },
            congestion_used: None,
            streams: stream_ids(counts.len())
                .zip(counts)
                .map(|(id, c)| StreamResults::of_counts(id, c, wall))
                .collect(),
            server_output_text: None,
        }
    }
}

impl Results {
    /// The window this end's figures cover: its streams' longest `end_time`, at most `most`
    /// (a peer's number; nothing it sends can overflow).
    pub fn window(&self, most: Duration) -> Duration {
        let secs = self
            .streams
            .iter()
            .map(|s| s.end_time)
            .filter(|t| t.is_finite() && *t > 0.0)
            .fold(0.0, f64::max);
        Duration::try_from_secs_f64(secs).map_or(most, |w| w.min(most))
    }

    /// This end's process CPU over `window` (iperf3 reports % of one core), and the equal share
    /// of it each of `streams` streams gets as its thread CPU (iperf3 before 3.16 runs every
    /// stream on one thread).
    pub fn cpu_shares(&self, window: Duration, streams: usize) -> (CpuTime, CpuTime) {
        let share = |pct: f64| (pct.max(0.0) / 100.0 * window.as_micros() as f64) as u64;
        let process = CpuTime {
            user_us: share(self.cpu_util_user),
            sys_us: share(self.cpu_util_system),
        };
        let n = streams.max(1) as u64;
        let each = CpuTime {
            user_us: process.user_us / n,
            sys_us: process.sys_us / n,
        };
        (process, each)
    }
}

impl StreamResults {
    /// A UDP receiver's figures as linerate's counters, the inverse of [`Self::of_counts`]:
    /// iperf3's `packets` is the highest counter seen and `errors` the datagrams missing below
    /// it, so `packets − errors` arrived; `jitter` is RFC 3550 jitter in seconds. Any value a
    /// peer sends maps without overflow (negatives read as 0).
    pub fn udp_receiver_counts(&self) -> StreamCounts {
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        let highest = count(self.packets);
        let lost = count(self.errors).min(highest);
        let received = highest - lost;
        let jitter_ns = if self.jitter.is_finite() {
            (self.jitter.max(0.0) * 1e9).round() as u64
        } else {
            0
        };
        let rx = measure::udp_stats::UdpCounts {
            packets: received,
            bytes: self.bytes,
            unique: received,
            lost_so_far: lost,
            jitter_ns,
            highest_seq: highest.saturating_sub(1),
            has_packets: highest > 0,
            ..Default::default()
        };
        StreamCounts {
            bytes: self.bytes,
            packets: received,
            rx: Some(rx),
            ..Default::default()
        }
    }

    /// A stream's figures as iperf3 reports them from one end's counters: bytes (sent, or
    /// received); a UDP receiver's datagrams as iperf3 counts them (`packets` the highest
    /// counter seen, `errors` the gaps below it not filled later, RFC 3550 jitter in seconds);
    /// a UDP sender's datagrams sent; a TCP sender's retransmits from its TCP_INFO (else -1).
    pub fn of_counts(id: i32, c: &StreamCounts, wall: Duration) -> Self {
        let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let (packets, errors, jitter) = match &c.rx {
            Some(rx) if rx.has_packets => (
                signed(rx.highest_seq.saturating_add(1)),
                signed(rx.lost_so_far),
                rx.jitter_ns as f64 / 1e9,
            ),
            Some(_) => (0, 0, 0.0),
            None => (signed(c.packets), 0, 0.0),
        };
        Self {
            id,
            bytes: c.bytes,
            retransmits: c.tcp_info.as_ref().map_or(-1, |t| i64::from(t.retransmits)),
            jitter,
            errors,
            omitted_errors: Some(0),
            packets,
            omitted_packets: Some(0),
            start_time: 0.0,
            end_time: wall.as_secs_f64(),
        }
    }
}

/// One stream's figures (the sender's bytes sent, or the receiver's bytes received).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamResults {
    /// The stream's id: 1, 3, 4, … in the order the connections were made (iperf3's numbering).
    pub id: i32,
    /// Bytes sent by a sender (after the omitted time), received by a receiver.
    pub bytes: u64,
    /// Retransmitted segments, or -1.
    #[serde(deserialize_with = "signed")]
    pub retransmits: i64,
    /// UDP receiver: RFC 3550 jitter, seconds.
    pub jitter: f64,
    /// UDP receiver: datagrams lost.
    #[serde(deserialize_with = "signed")]
    pub errors: i64,
    /// UDP receiver: datagrams lost in the omitted time.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "signed_opt"
    )]
    pub omitted_errors: Option<i64>,
    /// UDP: datagrams sent or received.
    #[serde(deserialize_with = "signed")]
    pub packets: i64,
    /// UDP: datagrams in the omitted time.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "signed_opt"
    )]
    pub omitted_packets: Option<i64>,
    /// Seconds from the stream's start (0).
    #[serde(default)]
    pub start_time: f64,
    /// Seconds from the stream's start to its end.
    #[serde(default)]
    pub end_time: f64,
}

/// A count iperf3 may print as a signed or an unsigned number: some releases print -1 ("none")
/// as 2^64 − 1; any value above `i64::MAX` reads as -1.
fn signed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let v = serde_json::Number::deserialize(d)?;
    Ok(v.as_i64()
        .or_else(|| v.as_u64().map(|_| -1))
        .unwrap_or_else(|| v.as_f64().map_or(-1, |f| f as i64)))
}

fn signed_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    signed(d).map(Some)
}

/// iperf3's stream ids for `n` streams: 1, then 3, 4, … (its numbering skips 2).
pub fn stream_ids(n: usize) -> impl Iterator<Item = i32> {
    (0..n).map(|i| if i == 0 { 1 } else { i as i32 + 2 })
}

/// Writes `value` as iperf3 frames JSON: a big-endian `u32` length, then the text.
pub fn write_json<T: Serialize>(w: &mut impl Write, value: &T) -> Result<(), WireError> {
    let text = serde_json::to_vec(value)?;
    let len = u32::try_from(text.len()).map_err(|_| WireError::FrameTooLarge {
        len: text.len(),
        max: u32::MAX as usize,
    })?;
    let mut frame = Vec::with_capacity(4 + text.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&text);
    w.write_all(&frame)?;
    Ok(())
}

/// Decodes parameters whose frame (length prefix and text) was read whole elsewhere.
pub fn decode_params(json: &[u8]) -> Result<Params, WireError> {
    Ok(serde_json::from_slice(json)?)
}

/// Reads one length-prefixed JSON value of at most `max` bytes.
pub fn read_json<T: DeserializeOwned>(r: &mut impl Read, max: u32) -> Result<T, WireError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    if len == 0 {
        return Err(WireError::EmptyMessage);
    }
    if len > max {
        return Err(WireError::FrameTooLarge {
            len: len as usize,
            max: max as usize,
        });
    }
    // Grown as the bytes come, not allocated at the length a peer announces.
    let mut text = Vec::with_capacity((len as usize).min(64 << 10));
    r.take(u64::from(len)).read_to_end(&mut text)?;
    if text.len() < len as usize {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(serde_json::from_slice(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_as_signed_bytes() {
        for s in [
            State::TestStart,
            State::TestRunning,
            State::TestEnd,
            State::ParamExchange,
            State::CreateStreams,
            State::ServerTerminate,
            State::ClientTerminate,
            State::ExchangeResults,
            State::DisplayResults,
            State::IperfDone,
            State::AccessDenied,
            State::ServerError,
        ] {
            assert_eq!(State::from_byte(s.to_byte()), Some(s));
        }
        assert_eq!(State::AccessDenied.to_byte(), 0xff);
        assert_eq!(State::from_byte(3), None, "RESULT_REQUEST is unused");
    }

    #[test]
    fn a_cookie_is_36_characters_and_a_nul() {
        let c = cookie(&[255; 36]);
        assert_eq!(c[36], 0);
        assert!(c[..36].iter().all(|b| COOKIE_CHARS.contains(b)));
        assert!(is_cookie(&c));
        assert!(!is_cookie(&c[..36]));
        let mut bad = c;
        bad[3] = b'A';
        assert!(!is_cookie(&bad));
        assert!(!is_cookie_char(b'L'), "linerate's magic starts with L");
        assert_eq!(
            server_error(ERROR_UNIMPLEMENTED),
            [0xfe, 0, 0, 0, 13, 0, 0, 0, 0]
        );
    }

    #[test]
    fn parameters_as_iperf3_3_12_sends_them() {
        let text = r#"{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":2,"reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let p: Params = serde_json::from_str(text).unwrap();
        assert_eq!(
            (p.tcp, p.time, p.parallel, p.reverse),
            (Some(true), 10, 2, Some(true))
        );
        assert_eq!(
            (p.len, p.client_version.as_deref()),
            (Some(131072), Some("3.12"))
        );
        let mut framed = Vec::new();
        write_json(&mut framed, &p).unwrap();
        assert_eq!(&framed[..4], &((framed.len() - 4) as u32).to_be_bytes());
        let back: Params = read_json(&mut framed.as_slice(), MAX_PARAMS_LEN).unwrap();
        assert_eq!(back, p);
        assert!(!p.get_server_output);
    }

    #[test]
    fn get_server_output_is_read_by_its_key_and_sent_as_one() {
        let p: Params = serde_json::from_str(r#"{"tcp":true,"get_server_output":1}"#).unwrap();
        assert!(p.get_server_output);
        let p: Params = serde_json::from_str(r#"{"get_server_output":true}"#).unwrap();
        assert!(p.get_server_output);
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains(r#""get_server_output":1"#), "{text}");
        let none = serde_json::to_string(&Params::default()).unwrap();
        assert!(!none.contains("get_server_output"), "{none}");
        let r = Results {
            server_output_text: Some("line\n".into()),
            ..Results::default()
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""server_output_text":"line\n""#), "{text}");
        let plain = serde_json::to_string(&Results::default()).unwrap();
        assert!(!plain.contains("server_output"), "{plain}");
    }

    #[test]
    fn results_with_and_without_the_omitted_counts() {
        let text = r#"{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1.0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1000,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":10.0}]}"#;
        let r: Results = serde_json::from_str(text).unwrap();
        assert_eq!(r.streams[0].bytes, 1000);
        assert_eq!(r.streams[0].omitted_packets, None);
        let wrapped = text.replace(
            r#""retransmits":-1"#,
            r#""retransmits":18446744073709551615"#,
        );
        let r: Results = serde_json::from_str(&wrapped).unwrap();
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(stream_ids(3).collect::<Vec<_>>(), [1, 3, 4]);
    }

    #[test]
    fn oversized_or_empty_frames_are_errors_not_allocations() {
        let mut huge = (MAX_PARAMS_LEN + 1).to_be_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        assert!(read_json::<Params>(&mut huge.as_slice(), MAX_PARAMS_LEN).is_err());
        let empty = 0u32.to_be_bytes();
        assert!(read_json::<Params>(&mut empty.as_slice(), MAX_PARAMS_LEN).is_err());
        let garbage = [&3u32.to_be_bytes()[..], b"{x}"].concat();
        assert!(read_json::<Params>(&mut garbage.as_slice(), MAX_PARAMS_LEN).is_err());
    }
}
