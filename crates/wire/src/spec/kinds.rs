//! The kind table: everything about a test kind that does not depend on one test's parameters,
//! one row per kind ([`KINDS`]), read through [`TestKind::row`]. Code that treats the kinds
//! differently reads the fact it needs from the row (`row.loss`, `row.headline`), so a new kind
//! says each fact once, here, and the test at the foot of this file holds every row to its
//! kind. What a kind's parameters are is [`super::kind::Params`]; what its test is made of, for
//! the engines, is [`super::kind::Shape`].

use super::kind::TestKind;

/// Which family of figures a kind's runs have (the stored summary's `family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyId {
    /// Bytes moved: goodput, TCP's retransmits and round trip.
    Stream,
    /// Datagrams counted by the receiver: goodput, loss, reordering, duplicates, jitter.
    Datagram,
    /// Transactions: their rate and round-trip latency percentiles.
    Transaction,
}

impl FamilyId {
    /// The family's name, as messages and the web UI say it: `stream`, `datagram`,
    /// `transaction`.
    pub fn as_str(self) -> &'static str {
        match self {
            FamilyId::Stream => "stream",
            FamilyId::Datagram => "datagram",
            FamilyId::Transaction => "transaction",
        }
    }
}

/// What carries the test's data (a `tcp_stream` over a Unix-domain socket is a stream option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataPath {
    /// TCP connections (or a Unix-domain stream socket).
    Tcp,
    /// UDP datagrams.
    Udp,
}

/// What the receiving end counts as lost, when the path may lose data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Nothing: TCP delivers all or fails.
    None,
    /// Datagrams, by sequence number, with the host's drop counters read beside them and the
    /// interface's frames where the server can see them.
    Datagrams,
    /// Requests that got no response before the next.
    Transactions,
}

/// The figure that leads a kind's summary, and what it counts per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headline {
    /// Goodput, in bit/s.
    Throughput,
    /// Transactions per second.
    Transactions,
    /// New connections per second (each transaction is a connection).
    Connections,
}

impl Headline {
    /// The unit the headline is said in: `bit/s`, `transactions/s`, `connections/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Headline::Throughput => "bit/s",
            Headline::Transactions => "transactions/s",
            Headline::Connections => "connections/s",
        }
    }
}

/// Which ways a kind's data may flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Directions {
    /// `-R`: the server sends.
    pub reverse: bool,
    /// `--bidir`: both send at once, each direction its own flows.
    pub bidir: bool,
}

/// One kind's row: see the module's doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindRow {
    /// The kind the row is for (its index in [`KINDS`] is the kind's).
    pub kind: TestKind,
    /// The name in the CLI's `--kind`, JSON and storage: `tcp_stream`.
    pub name: &'static str,
    /// The command a user types for it: `tcp`, `rr --udp`, `cc`.
    pub command: &'static str,
    /// The family of figures its runs have.
    pub family: FamilyId,
    /// What carries its data.
    pub path: DataPath,
    /// Whether the test moves data: a kind without (`tcp_cc`, whose transaction is the
    /// connection) has request and response lengths of 0.
    pub carries_data: bool,
    /// Whether every transaction is a new connection (`tcp_crr`, `tcp_cc`): the server keeps
    /// a listener for the test, and what the test rates is connections.
    pub connects: bool,
    /// What the receiver counts as lost.
    pub loss: Loss,
    /// The figure that leads its summary.
    pub headline: Headline,
    /// Which ways its data may flow (request/response kinds: requests from the client only).
    pub directions: Directions,
}

const BOTH_WAYS: Directions = Directions {
    reverse: true,
    bidir: true,
};
const CLIENT_ASKS: Directions = Directions {
    reverse: false,
    bidir: false,
};

/// Every kind's row, in [`TestKind::ALL`]'s order.
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
    use crate::spec::kind::Params;

    #[test]
    fn every_row_is_its_kinds_and_names_it_as_serde_does() {
        for (i, kind) in TestKind::ALL.into_iter().enumerate() {
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
