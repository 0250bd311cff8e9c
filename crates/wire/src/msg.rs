//! Typed control messages. Each connection, after the hello, sends exactly one of
//! [`ClientMsg::Start`] (it is a control connection) or [`ClientMsg::Attach`] (a data connection).
//!
//! Exchange on the control connection (client → server / server → client):
//! `Start` / `Accepted` · (data connections attach) · `Begin` / `Begun` ·
//! `Poll` / `Counters` each interval · `Stop` / `Results`. Either side may send `Error` and close.
//! With authentication, `Start` and `Attach` carry the client's proof and `Accepted` and
//! `Attached` the server's ([`crate::auth`]).

use measure::{
    cpu::CoreCpu, cpu::CpuSoFar, cpu::CpuTime, cpu::SystemCpu, drops::HostDrops, host::HostFacts,
    link_counts::LinkCounts, qdisc::Qdisc, tcp_info::TcpInfo, udp_stats::UdpCounts,
};
use serde::{Deserialize, Serialize};

use crate::auth::{ClientProof, Mac};
pub use crate::driver::{DriverCounts, FlowSpread};
use crate::spec::{RxMode, SendMode, TestSpec};

/// Address family restriction from `-4` / `-6`.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Whatever the name resolves to first.
    #[default]
    Any,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

/// Messages from client to server.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    /// Opens a test session on this (control) connection.
    Start {
        /// The test to run.
        spec: TestSpec,
        /// Proof of a key, for a server that asks for one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ClientProof>,
    },
    /// Asks this server to run a test as a client towards another linerate server (`--from`;
    /// the server needs `serve --relay`, and with keys a key marked `relay`). Answered with
    /// the session crate's relay messages: the far server's facts, each interval, the record.
    Relay {
        /// The server to test towards, as this server names it: a name or an address.
        to: String,
        /// Its port.
        port: u16,
        /// The address family `to` resolves in.
        #[serde(default)]
        family: Family,
        /// The test to run.
        spec: TestSpec,
        /// Proof of a key, for a server that asks for one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ClientProof>,
    },
    /// Joins this (data) connection to a session as stream `stream`.
    Attach {
        /// Session cookie from `Accepted`.
        session: u64,
        /// Stream index, as in `TestSpec::flows`.
        stream: u16,
        /// Proof of the session's key, for a server that asks for one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ClientProof>,
    },
    /// A foreign probe (responsiveness, `linerate rpm`): a fresh connection's first message,
    /// answered with `Probed` at once, then closed. No session, no test.
    Probe {
        /// Proof of a key, for a server that asks for one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<ClientProof>,
    },
    /// UDP tests with `flows_dst` > 1, before `Begin`: the client's further receiving ports
    /// per stream (empty for streams the client sends).
    UdpPorts {
        /// Ports by stream index.
        extra: Vec<Vec<u16>>,
    },
    /// All streams attached: start measuring now.
    Begin,
    /// Asks for the server's byte counters.
    Poll {
        /// Echoed in the reply.
        seq: u64,
    },
    /// The test time is over (or the user interrupted): stop sending, drain, report.
    Stop,
    /// The client gives up with a reason.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Messages from server to client.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// The session exists; open the data connections.
    Accepted {
        /// Cookie the data connections present.
        session: u64,
        /// Facts about the server host.
        server: ServerInfo,
        /// UDP tests: the server's port for each stream, in stream-index order.
        #[serde(default)]
        udp_ports: Vec<u16>,
        /// UDP tests with `flows_dst` > 1: the server's further receiving ports per stream
        /// (empty for streams the server sends).
        #[serde(default)]
        udp_extra_ports: Vec<Vec<u16>>,
        /// `tcp_crr` tests: the port of the session's own listener, which every transaction
        /// connects to afresh.
        #[serde(default)]
        crr_port: Option<u16>,
        /// The server's proof of the key, answering the client's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<Mac>,
    },
    /// A data connection joined.
    Attached {
        /// Its stream index.
        stream: u16,
        /// The server's proof of the key, answering the client's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<Mac>,
    },
    /// The answer to a `Probe`.
    Probed {
        /// The server's proof of the key, answering the client's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<Mac>,
    },
    /// Measurement started on the server.
    Begun,
    /// Counters of the server's end, by stream index.
    Counters {
        /// Echo of `Poll.seq`.
        seq: u64,
        /// Each stream's counters so far, in stream-index order.
        counts: Vec<StreamCounts>,
        /// The session's CPU so far on the server: its data threads' and its host's, from
        /// `Begin` by its clock (frozen, like `counts`, once its window has closed). Absent
        /// from servers before it was added; their intervals have no remote CPU.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<CpuSoFar>,
    },
    /// Final figures of the server's end.
    Results(ServerResults),
    /// The server refuses or aborts, with a reason.
    Error {
        /// What went wrong, naming the input.
        message: String,
    },
}

/// Facts about the server host, sent once per session.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerInfo {
    /// linerate version string.
    pub version: String,
    /// Host name.
    pub hostname: String,
    /// Online CPU count.
    pub cores: u32,
    /// The server host and the interface of this session's control connection: kernel, CPU,
    /// and the NIC's driver, firmware, speed, offloads, rings, coalescing, queues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Box<HostFacts>>,
}

/// One end's running counters for one stream.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StreamCounts {
    /// Bytes written or read so far (UDP: payload bytes).
    pub bytes: u64,
    /// Datagrams sent or received so far (0 for stream sockets).
    #[serde(default)]
    pub packets: u64,
    /// UDP receivers: sequence accounting so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx: Option<UdpCounts>,
    /// TCP senders: the socket's TCP_INFO now (in `counters`, each interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfo>,
    /// `tcp_stream` receivers, in their final counts: how the bytes left the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<ReceiveCounts>,
    /// `tcp_stream` senders, in their final counts: the send mode that ran (`auto` resolved;
    /// sendfile where splice could not hold the pattern; write on a Unix socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_mode: Option<SendMode>,
    /// `udp_stream` senders, in their final counts: the sends the sending host refused
    /// (`ENOBUFS` with `IP_RECVERR`: a qdisc or the local stack dropped them). Absent where the
    /// socket could not ask for the errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_drops: Option<SendDrops>,
}

/// What a UDP sender's host refused to send: counted by the sender itself, exact, this test's
/// sockets only. The refused datagrams are in `packets` (they had sequence numbers) and lost.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SendDrops {
    /// Datagrams in the refused sends (a GSO message counts each of its datagrams).
    pub datagrams: u64,
    /// Refused send calls' messages: what a qdisc counts, one per (GSO) message it dropped.
    pub sends: u64,
}

/// A `tcp_stream` receiver's account of how its bytes left the kernel (`--rx-mode`): the
/// three byte counts add up to the bytes it received.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ReceiveCounts {
    /// The mode that ran: the spec's, or `copy` where the kernel refused zerocopy.
    pub mode: RxMode,
    /// Bytes copied into user memory (zerocopy: the parts that could not be mapped).
    #[serde(default)]
    pub copied_bytes: u64,
    /// Bytes discarded in the kernel (MSG_TRUNC).
    #[serde(default)]
    pub discarded_bytes: u64,
    /// Bytes whose pages were mapped into the receiver's memory (TCP_ZEROCOPY_RECEIVE).
    #[serde(default)]
    pub mapped_bytes: u64,
    /// Zerocopy asked but refused by the kernel: the call and its errno.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<ZerocopyRefusal>,
    /// The connection's receive MSS at the end (TCP_INFO `tcpi_rcv_mss`), bytes: pages map
    /// only where segments fill whole pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_mss_bytes: Option<u32>,
}

impl ReceiveCounts {
    /// Every byte the receiver took, however it took it.
    pub fn total_bytes(&self) -> u64 {
        self.copied_bytes + self.discarded_bytes + self.mapped_bytes
    }

    /// Sums `other` into `self` (a direction's streams); the first refusal and MSS stay.
    pub fn add(&mut self, other: &ReceiveCounts) {
        self.copied_bytes += other.copied_bytes;
        self.discarded_bytes += other.discarded_bytes;
        self.mapped_bytes += other.mapped_bytes;
        self.refused = self.refused.or(other.refused);
        self.rcv_mss_bytes = self.rcv_mss_bytes.or(other.rcv_mss_bytes);
    }
}

/// The kernel call that refused TCP_ZEROCOPY_RECEIVE, and its errno.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZerocopyRefusal {
    /// mmap(2) of the socket (e.g. ENODEV where the socket has no mmap).
    Mmap {
        /// The errno.
        errno: i32,
    },
    /// getsockopt(TCP_ZEROCOPY_RECEIVE) on its first call.
    Getsockopt {
        /// The errno.
        errno: i32,
    },
}

/// The server's end of one data connection.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StreamEnd {
    /// Stream index.
    pub stream: u16,
    /// Counters when the server's window closed (see `ServerResults::window_us`).
    pub at_stop: StreamCounts,
    /// Counters when the stream ended (after draining).
    pub total: StreamCounts,
    /// CPU time of the thread that served this stream.
    pub cpu: CpuTime,
    /// TCP_INFO of the connection, when the server was its sender.
    pub tcp_info: Option<TcpInfo>,
    /// Error that ended the stream early, if any.
    pub error: Option<String>,
}

/// The server's figures for a session.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerResults {
    /// One entry per stream, in stream-index order.
    pub streams: Vec<StreamEnd>,
    /// Wall time from `Begin` until the server's last stream ended, µs: the period its CPU
    /// figures cover.
    pub wall_us: u64,
    /// The server's measurement window, µs: from `Begin` to its end-of-window snapshot (the
    /// test duration by the server's clock, or `Stop` if that came first). Receiver rates of
    /// the server's streams divide by this.
    #[serde(default)]
    pub window_us: u64,
    /// CPU time of the whole server process over `wall_us`.
    pub process_cpu: CpuTime,
    /// Machine-wide CPU over `wall_us`, measured on the server.
    pub system_cpu: Option<SystemCpu>,
    /// Each of the server's cores over `wall_us`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<CoreCpu>,
    /// UDP stream tests: what the server's drop counters added over `wall_us` (host-wide).
    /// Boxed: the largest message's size is what every `ServerMsg` takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<Box<HostDrops>>,
    /// The session's CPU on the server when its window closed (as `Counters.cpu`), for the
    /// last interval, which ends there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_at_stop: Option<CpuSoFar>,
    /// The qdiscs on the server's interface for the test (the one holding the control
    /// connection's local address) at its end, with what their counters added over the
    /// session (protocol 15). At most `measure::qdisc::MAX_QDISCS`, strings at most
    /// `MAX_NAME_LEN` bytes: a client cuts a longer list to those bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdiscs: Option<Vec<Qdisc>>,
    /// A frame engine's test (`packet`, `xdp`): what the XDP counter on the server's interface
    /// counted of the test's frames over the session (protocol 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<Box<DriverCounts>>,
    /// UDP stream tests: what the server's interface for the test (the one holding the control
    /// connection's local address) counted over `wall_us`: the frames it received and sent,
    /// every one of them, not only the test's (absent: a server before the field, or an
    /// interface without counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkCounts>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode, encode};

    #[test]
    fn every_message_round_trips() {
        let client = vec![
            ClientMsg::Start {
                spec: crate::spec::sample(),
                auth: None,
            },
            ClientMsg::Start {
                spec: crate::spec::sample(),
                auth: Some(ClientProof {
                    user: crate::auth::UserName::new("alice").unwrap(),
                    nonce: crate::auth::Nonce([1; 32]),
                    server: "198.18.0.1:5301".into(),
                    mac: Mac([2; 32]),
                }),
            },
            ClientMsg::Attach {
                session: 42,
                stream: 3,
                auth: None,
            },
            ClientMsg::UdpPorts {
                extra: vec![vec![1, 2]],
            },
            ClientMsg::Begin,
            ClientMsg::Poll { seq: 1 },
            ClientMsg::Stop,
            ClientMsg::Error {
                message: "x".into(),
            },
        ];
        for msg in client {
            let mut buf = Vec::new();
            encode(&msg, &mut buf).unwrap();
            assert_eq!(decode::<ClientMsg>(&buf).unwrap().unwrap().0, msg);
        }
        let server = vec![
            ServerMsg::Accepted {
                session: 1,
                server: ServerInfo::default(),
                udp_ports: vec![4000],
                udp_extra_ports: vec![vec![4001]],
                crr_port: Some(4002),
                auth: Some(Mac([3; 32])),
            },
            ServerMsg::Attached {
                stream: 0,
                auth: None,
            },
            ServerMsg::Begun,
            ServerMsg::Counters {
                seq: 1,
                counts: vec![StreamCounts {
                    bytes: 1,
                    packets: 2,
                    rx: Some(UdpCounts::default()),
                    tcp_info: Some(TcpInfo {
                        busy_us: Some(5),
                        ..TcpInfo::default()
                    }),
                    receive: Some(ReceiveCounts {
                        mode: RxMode::Zerocopy,
                        copied_bytes: 3,
                        mapped_bytes: 4096,
                        refused: Some(ZerocopyRefusal::Getsockopt { errno: 95 }),
                        rcv_mss_bytes: Some(4096),
                        ..ReceiveCounts::default()
                    }),
                    send_mode: Some(SendMode::Auto),
                    send_drops: Some(SendDrops {
                        datagrams: 128,
                        sends: 3,
                    }),
                }],
                cpu: Some(CpuSoFar {
                    elapsed_us: 1_000_000,
                    threads_us: 400_000,
                    host: None,
                }),
            },
            ServerMsg::Results(ServerResults {
                streams: vec![StreamEnd::default()],
                cpu_at_stop: Some(CpuSoFar::START),
                ..Default::default()
            }),
            ServerMsg::Error {
                message: "no".into(),
            },
        ];
        for msg in server {
            let mut buf = Vec::new();
            encode(&msg, &mut buf).unwrap();
            assert_eq!(decode::<ServerMsg>(&buf).unwrap().unwrap().0, msg);
        }
    }

    /// A server that does not send its CPU (an older build of this protocol version) is read
    /// as having none, and one that does is read by a client that ignores it (an older build).
    #[test]
    fn counters_cpu_is_optional_both_ways() {
        let old = r#"{"type":"counters","seq":1,"counts":[{"bytes":5,"packets":0}]}"#;
        let msg: ServerMsg = serde_json::from_str(old).unwrap();
        assert!(
            matches!(msg, ServerMsg::Counters { cpu: None, .. }),
            "{msg:?}"
        );
        let new = ServerMsg::Counters {
            seq: 1,
            counts: vec![],
            cpu: Some(CpuSoFar::START),
        };
        let text = serde_json::to_string(&new).unwrap();
        assert_eq!(
            text,
            r#"{"type":"counters","seq":1,"counts":[],"cpu":{"elapsed_us":0,"threads_us":0,"host":{"busy":0,"total":0}}}"#
        );
        /// The message as a build without the field declares it.
        #[derive(Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum OldServerMsg {
            Counters { seq: u64, counts: Vec<StreamCounts> },
        }
        let OldServerMsg::Counters { seq, counts } = serde_json::from_str(&text).unwrap();
        assert_eq!((seq, counts.len()), (1, 0));
    }

    /// Protocol 15: the server's qdiscs with their counters over the test travel in its
    /// results; their cumulative counters stay home.
    #[test]
    fn results_carry_the_servers_qdiscs() {
        let tbf = Qdisc {
            kind: "tbf".into(),
            handle: "1:".into(),
            parent: "root".into(),
            rate_bps: Some(100_000_000),
            during_test: Some(measure::qdisc::QdiscCounts {
                drops: 7,
                ..Default::default()
            }),
            counts: Some(Default::default()),
            ..Qdisc::default()
        };
        let msg = ServerMsg::Results(ServerResults {
            qdiscs: Some(vec![tbf.clone()]),
            ..Default::default()
        });
        let mut buf = Vec::new();
        encode(&msg, &mut buf).unwrap();
        let ServerMsg::Results(back) = decode::<ServerMsg>(&buf).unwrap().unwrap().0 else {
            panic!("not results");
        };
        let sent = Qdisc {
            counts: None,
            ..tbf
        };
        assert_eq!(back.qdiscs, Some(vec![sent]));
        let old = r#"{"type":"results","streams":[],"wall_us":1,"process_cpu":{"user_us":0,"sys_us":0},"system_cpu":null}"#;
        let ServerMsg::Results(r) = serde_json::from_str::<ServerMsg>(old).unwrap() else {
            panic!("not results");
        };
        assert_eq!(r.qdiscs, None);
    }

    #[test]
    fn wire_names_are_stable() {
        let text = serde_json::to_string(&ClientMsg::Poll { seq: 5 }).unwrap();
        assert_eq!(text, r#"{"type":"poll","seq":5}"#);
    }
}
