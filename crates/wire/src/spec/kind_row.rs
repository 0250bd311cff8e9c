//! What a row of the kind table says: the vocabulary of [`KindRow`], the facts about a test
//! kind that do not depend on one test's parameters. The rows themselves, one per kind, are
//! [`super::kind::KINDS`], beside the kinds; code that treats the kinds differently reads the
//! fact it needs from the row (`row.loss`, `row.headline`).

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
    /// The kind the row is for (its index in [`super::kind::KINDS`] is the kind's).
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

pub(super) const BOTH_WAYS: Directions = Directions {
    reverse: true,
    bidir: true,
};
pub(super) const CLIENT_ASKS: Directions = Directions {
    reverse: false,
    bidir: false,
};
