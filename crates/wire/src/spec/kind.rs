//! The test kinds: [`TestKind`], the name every kind goes by, [`Params`], whose variant is the
//! kind and holds its own parameters (the structs of [`super::params`]), and the kind table,
//! [`KINDS`]: everything about a kind that does not depend on one test's parameters, one row
//! per kind (what a row says is [`super::kind_row`]), read through [`TestKind::row`]. What
//! depends on its parameters is a `match` here, so a new kind shaped like an existing one adds
//! its variant to both enums, its arms and its row in this file, and nowhere else in this
//! crate; the tests at its foot hold every row to its kind.

use serde::{Deserialize, Serialize};

use super::kind_row::{DataPath, FamilyId, Headline, KindRow, Loss, BOTH_WAYS, CLIENT_ASKS};
use super::params::{RrParams, StreamParams, TcpOptions, UdpParams};
use super::Direction;

/// Which test runs. Spelled as netperf/neper spell them, in the CLI, JSON and storage alike.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
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
    /// TCP connect and close, repeat, no data: connection rate and connect latency.
    TcpCc,
}

impl TestKind {
    /// Every kind, in the order messages list them: the kind table's.
    pub const ALL: [TestKind; KINDS.len()] = {
        let mut all = [TestKind::TcpStream; KINDS.len()];
        let mut i = 0;
        while i < KINDS.len() {
            all[i] = KINDS[i].kind;
            i += 1;
        }
        all
    };

    /// The shared vocabulary name, e.g. `tcp_stream` (the row's).
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// The command a user types for it: `tcp`, `rr --udp`, `cc` (the row's).
    pub fn command(self) -> &'static str {
        self.row().command
    }
}

/// A test kind's own parameters; the variant is the kind ([`Params::kind`]). On the wire and in
/// stored runs it is an object whose `kind` field names the variant in the shared vocabulary.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Params {
    /// Bulk transfer over TCP or a Unix-domain stream socket.
    TcpStream {
        /// What each stream writes, which way, over what.
        stream: StreamParams,
        /// TCP socket options (refused over a Unix-domain socket when set).
        tcp: TcpOptions,
    },
    /// UDP datagrams at a paced (or unpaced) rate.
    UdpStream {
        /// Payload, rate, batching and flows.
        udp: UdpParams,
    },
    /// TCP request/response on one connection per stream.
    TcpRr {
        /// The transaction.
        rr: RrParams,
        /// TCP socket options.
        tcp: TcpOptions,
    },
    /// UDP request/response: one datagram each way.
    UdpRr {
        /// The transaction.
        rr: RrParams,
    },
    /// TCP connect, request, response, close: a new connection per transaction.
    TcpCrr {
        /// The transaction.
        rr: RrParams,
        /// TCP socket options, set on every connection.
        tcp: TcpOptions,
    },
    /// TCP connect and close: a new connection per transaction, no data.
    TcpCc {
        /// The transaction (no request or response: the connection is the transaction).
        rr: RrParams,
        /// TCP socket options, set on every connection.
        tcp: TcpOptions,
    },
}

/// What a kind's test is made of, for code that treats the kinds of one shape alike: a kind
/// shaped like another (`tcp_cc` like `tcp_crr`) maps to that shape here, and the engines, the
/// checks and the texts that match on the shape need no arm of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape<'a> {
    /// Bulk transfer over TCP or a Unix-domain stream socket.
    TcpStream {
        /// What each stream writes.
        stream: &'a StreamParams,
        /// TCP socket options.
        tcp: &'a TcpOptions,
    },
    /// UDP datagrams.
    UdpStream {
        /// Payload, rate, batching and flows.
        udp: &'a UdpParams,
    },
    /// Request/response on one TCP connection per stream.
    TcpRr {
        /// The transaction.
        rr: &'a RrParams,
        /// TCP socket options.
        tcp: &'a TcpOptions,
    },
    /// One datagram each way.
    UdpRr {
        /// The transaction.
        rr: &'a RrParams,
    },
    /// A new TCP connection per transaction (`tcp_crr`; `tcp_cc`, whose transaction carries no
    /// data: the connection is the transaction).
    TcpConnect {
        /// The transaction.
        rr: &'a RrParams,
        /// TCP socket options, set on every connection.
        tcp: &'a TcpOptions,
    },
}

impl Params {
    /// What the test is made of (see [`Shape`]).
    pub fn shape(&self) -> Shape<'_> {
        match self {
            Params::TcpStream { stream, tcp } => Shape::TcpStream { stream, tcp },
            Params::UdpStream { udp } => Shape::UdpStream { udp },
            Params::TcpRr { rr, tcp } => Shape::TcpRr { rr, tcp },
            Params::UdpRr { rr } => Shape::UdpRr { rr },
            Params::TcpCrr { rr, tcp } | Params::TcpCc { rr, tcp } => Shape::TcpConnect { rr, tcp },
        }
    }

    /// The test kind these parameters are for.
    pub fn kind(&self) -> TestKind {
        match self {
            Params::TcpStream { .. } => TestKind::TcpStream,
            Params::UdpStream { .. } => TestKind::UdpStream,
            Params::TcpRr { .. } => TestKind::TcpRr,
            Params::UdpRr { .. } => TestKind::UdpRr,
            Params::TcpCrr { .. } => TestKind::TcpCrr,
            Params::TcpCc { .. } => TestKind::TcpCc,
        }
    }

    /// linerate's defaults for a `kind` test sending from the client: see
    /// [`StreamParams::new`], [`UdpParams::new`] (as fast as possible), and for the
    /// request/response kinds 64-byte requests and responses back to back with `TCP_NODELAY`
    /// (a request/response test measures the round trip, not Nagle's algorithm).
    pub fn defaults(kind: TestKind) -> Params {
        let rr = RrParams::new(64, 64);
        match kind {
            TestKind::TcpStream => Params::TcpStream {
                stream: StreamParams::new(Direction::Send),
                tcp: TcpOptions::default(),
            },
            TestKind::UdpStream => Params::UdpStream {
                udp: UdpParams::new(Direction::Send),
            },
            TestKind::TcpRr => Params::TcpRr {
                rr,
                tcp: TcpOptions::no_delay(),
            },
            TestKind::UdpRr => Params::UdpRr { rr },
            TestKind::TcpCrr => Params::TcpCrr {
                rr,
                tcp: TcpOptions::no_delay(),
            },
            TestKind::TcpCc => Params::TcpCc {
                rr: RrParams::new(0, 0),
                tcp: TcpOptions::no_delay(),
            },
        }
    }

    /// Which way data flows; request/response tests always send their requests from the client.
    pub fn direction(&self) -> Direction {
        match self {
            Params::TcpStream { stream, .. } => stream.direction,
            Params::UdpStream { udp } => udp.direction,
            Params::TcpRr { .. }
            | Params::UdpRr { .. }
            | Params::TcpCrr { .. }
            | Params::TcpCc { .. } => Direction::Send,
        }
    }

    /// Bytes per send call, what `-l` sets: the TCP write length, the UDP payload, or the
    /// request of a request/response test.
    pub fn message_len_bytes(&self) -> u32 {
        match self {
            Params::TcpStream { stream, .. } => stream.write_len_bytes,
            Params::UdpStream { udp } => udp.payload_len_bytes,
            Params::TcpRr { rr, .. }
            | Params::UdpRr { rr }
            | Params::TcpCrr { rr, .. }
            | Params::TcpCc { rr, .. } => rr.request_len_bytes,
        }
    }

    /// Sets the bytes per send call to `len`: the write length, the UDP payload, or both the
    /// request and the response of a request/response test.
    pub fn set_message_len_bytes(&mut self, len: u32) {
        match self {
            Params::TcpStream { stream, .. } => stream.write_len_bytes = len,
            Params::UdpStream { udp } => udp.payload_len_bytes = len,
            Params::TcpRr { rr, .. }
            | Params::UdpRr { rr }
            | Params::TcpCrr { rr, .. }
            | Params::TcpCc { rr, .. } => {
                rr.request_len_bytes = len;
                rr.response_len_bytes = len;
            }
        }
    }

    /// `tcp_stream`'s parameters.
    pub fn stream(&self) -> Option<&StreamParams> {
        match self {
            Params::TcpStream { stream, .. } => Some(stream),
            _ => None,
        }
    }

    /// `tcp_stream`'s parameters, to change.
    pub fn stream_mut(&mut self) -> Option<&mut StreamParams> {
        match self {
            Params::TcpStream { stream, .. } => Some(stream),
            _ => None,
        }
    }

    /// `udp_stream`'s parameters.
    pub fn udp(&self) -> Option<&UdpParams> {
        match self {
            Params::UdpStream { udp } => Some(udp),
            _ => None,
        }
    }

    /// `udp_stream`'s parameters, to change.
    pub fn udp_mut(&mut self) -> Option<&mut UdpParams> {
        match self {
            Params::UdpStream { udp } => Some(udp),
            _ => None,
        }
    }

    /// The request/response kinds' transaction.
    pub fn rr(&self) -> Option<&RrParams> {
        match self {
            Params::TcpRr { rr, .. }
            | Params::UdpRr { rr }
            | Params::TcpCrr { rr, .. }
            | Params::TcpCc { rr, .. } => Some(rr),
            _ => None,
        }
    }

    /// The request/response kinds' transaction, to change.
    pub fn rr_mut(&mut self) -> Option<&mut RrParams> {
        match self {
            Params::TcpRr { rr, .. }
            | Params::UdpRr { rr }
            | Params::TcpCrr { rr, .. }
            | Params::TcpCc { rr, .. } => Some(rr),
            _ => None,
        }
    }

    /// The TCP kinds' socket options (`tcp_stream` over a Unix socket has them too, unset).
    pub fn tcp(&self) -> Option<&TcpOptions> {
        match self {
            Params::TcpStream { tcp, .. }
            | Params::TcpRr { tcp, .. }
            | Params::TcpCrr { tcp, .. }
            | Params::TcpCc { tcp, .. } => Some(tcp),
            Params::UdpStream { .. } | Params::UdpRr { .. } => None,
        }
    }

    /// The TCP kinds' socket options, to change.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpOptions> {
        match self {
            Params::TcpStream { tcp, .. }
            | Params::TcpRr { tcp, .. }
            | Params::TcpCrr { tcp, .. }
            | Params::TcpCc { tcp, .. } => Some(tcp),
            Params::UdpStream { .. } | Params::UdpRr { .. } => None,
        }
    }
}

/// The kind table: every kind's row, in the order messages list them, each at its kind's
/// index (the tests below hold it).
pub const KINDS: [KindRow; 6] = [
    KindRow {
        kind: TestKind::TcpStream,
        name: "tcp_stream",
        command: "tcp",
        family: FamilyId::Stream,
        path: DataPath::Tcp,
        carries_data: true,
        connects: false,
        loss: Loss::None,
        headline: Headline::Throughput,
        directions: BOTH_WAYS,
    },
    KindRow {
        kind: TestKind::UdpStream,
        name: "udp_stream",
        command: "udp",
        family: FamilyId::Datagram,
        path: DataPath::Udp,
        carries_data: true,
        connects: false,
        loss: Loss::Datagrams,
        headline: Headline::Throughput,
        directions: BOTH_WAYS,
    },
    KindRow {
        kind: TestKind::TcpRr,
        name: "tcp_rr",
        command: "rr",
        family: FamilyId::Transaction,
        path: DataPath::Tcp,
        carries_data: true,
        connects: false,
        loss: Loss::None,
        headline: Headline::Transactions,
        directions: CLIENT_ASKS,
    },
    KindRow {
        kind: TestKind::UdpRr,
        name: "udp_rr",
        command: "rr --udp",
        family: FamilyId::Transaction,
        path: DataPath::Udp,
        carries_data: true,
        connects: false,
        loss: Loss::Transactions,
        headline: Headline::Transactions,
        directions: CLIENT_ASKS,
    },
    KindRow {
        kind: TestKind::TcpCrr,
        name: "tcp_crr",
        command: "crr",
        family: FamilyId::Transaction,
        path: DataPath::Tcp,
        carries_data: true,
        connects: true,
        loss: Loss::None,
        headline: Headline::Connections,
        directions: CLIENT_ASKS,
    },
    KindRow {
        kind: TestKind::TcpCc,
        name: "tcp_cc",
        command: "cc",
        family: FamilyId::Transaction,
        path: DataPath::Tcp,
        carries_data: false,
        connects: true,
        loss: Loss::None,
        headline: Headline::Connections,
        directions: CLIENT_ASKS,
    },
];

impl TestKind {
    /// The kind's row in the kind table.
    pub fn row(self) -> &'static KindRow {
        &KINDS[self as usize]
    }

    /// The kind a stored or typed name (`tcp_stream`) is, if any.
    pub fn of_name(name: &str) -> Option<TestKind> {
        KINDS.iter().find(|r| r.name == name).map(|r| r.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_its_kinds_and_names_it_as_serde_does() {
        for (i, kind) in TestKind::ALL.into_iter().enumerate() {
            assert_eq!(
                kind as usize, i,
                "{kind:?}: the rows are in the variants' order"
            );
            let row = kind.row();
            assert_eq!((row.kind, KINDS[i].kind), (kind, kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", row.name));
            assert_eq!(TestKind::of_name(row.name), Some(kind));
        }
        assert_eq!(TestKind::of_name("udp_pps"), None);
    }

    /// The row agrees with the kind's parameters: a row is data, and these are the facts the
    /// parameters hold too.
    #[test]
    fn every_row_agrees_with_its_kinds_parameters() {
        for kind in TestKind::ALL {
            let row = kind.row();
            let params = Params::defaults(kind);
            assert_eq!(params.kind(), kind);
            assert_eq!(
                row.family == FamilyId::Transaction,
                params.rr().is_some(),
                "{kind:?}"
            );
            assert_eq!(
                row.family == FamilyId::Datagram,
                params.udp().is_some(),
                "{kind:?}"
            );
            assert_eq!(
                row.path == DataPath::Tcp,
                params.tcp().is_some(),
                "{kind:?}"
            );
            assert_eq!(row.carries_data, params.message_len_bytes() > 0, "{kind:?}");
            assert_eq!(
                row.connects,
                row.headline == Headline::Connections,
                "{kind:?}"
            );
            let rr = row.family == FamilyId::Transaction;
            assert_eq!(row.directions == CLIENT_ASKS, rr, "{kind:?}");
            assert_eq!(row.headline == Headline::Throughput, !rr, "{kind:?}");
            let lossy = row.path == DataPath::Udp;
            assert_eq!(row.loss != Loss::None, lossy, "{kind:?}");
            assert_eq!(
                row.command.split(' ').count(),
                1 + usize::from(kind == TestKind::UdpRr)
            );
        }
    }
}
