//! The gate's connections in handshake: each one's bytes so far and how far its hello and first
//! message parse ([`Pending`]), and the table of them with its count of talking connections by
//! source ([`Table`]).
//!
//! Invariants:
//! - a connection's buffer holds only what it sent, and never more than the table's bound (a
//!   hello and a first frame of at most [`MAX_FIRST_FRAME`], or a dialect's whole opening,
//!   whichever is longer): a frame announced longer is refused at its length prefix, before
//!   its bytes are read, and a dialect refuses its own the same way;
//! - at most [`MAX_TALKING_PER_SOURCE`] connections from one source (an IPv4 address, or an
//!   IPv6 /64, which one host usually holds whole) hold bytes at once; one more is dropped at
//!   its first bytes. Idle connections hold no buffer and are not counted (the gate's global
//!   cap bounds them), so a flood of idle ones does not keep a real client of the same address
//!   out;
//! - the count of a connection leaves the table with it ([`Table::take`] is the only way out).

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use engine::Conn;
use wire::auth::Nonce;
use wire::{frame, ClientMsg, Greeting, Hello, WireError, HELLO_LEN, MAGIC};

use super::super::dialect::{DialectServer, Opening};

/// Largest first message before a key is proven, bytes: a `start` with its spec, an `attach` or
/// a `relay` is well under 2 KiB. (Later control messages have the codec's own, larger cap.)
pub const MAX_FIRST_FRAME: usize = 8 << 10;
/// The frame length prefix.
const LEN_PREFIX: usize = 4;
/// Most bytes a pending linerate connection buffers: a hello and a first frame.
const LINERATE_MAX: usize = HELLO_LEN + LEN_PREFIX + MAX_FIRST_FRAME;
/// Most connections from one source that hold handshake bytes at once: at most ~2 MiB of
/// buffers per source. A real client holds one per test it starts; the live fuzzers hold 33
/// each, and tests/iperf3.rs opens 200 silent iperf3 clients from one address.
pub const MAX_TALKING_PER_SOURCE: usize = 256;

/// A connection in handshake.
pub(super) struct Pending {
    pub conn: Conn,
    pub peer: String,
    /// Its place in the order of accepts: iperf3 numbers a test's data connections by it.
    pub accepted: u64,
    /// What it sent so far: its hello, then its first frame.
    pub buf: Vec<u8>,
    pub deadline: Instant,
    /// The nonce of our greeting, which its proof must cover.
    pub challenge: Nonce,
    /// Our greeting, sent once the client's first byte shows a linerate hello (an iperf3
    /// client speaks first too, and must not read it).
    pub greeting: Option<Greeting>,
    /// The dialect its first byte showed (an index into the server's dialects), if not
    /// linerate's.
    pub dialect: Option<usize>,
    /// Its dialect's question went out ([`Opening::Ask`]).
    asked: bool,
    /// Where it comes from, for the per-source count; `None` off IP.
    pub source: Option<Source>,
    /// Whether it is counted among its source's talking connections.
    talking: bool,
}

/// The unit of the per-source cap: an IPv4 address, or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Source(u128);

impl Source {
    pub(super) fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self(u128::from(u32::from(v4))),
            // Tagged above any IPv4 value, so the two families never share a count.
            IpAddr::V6(v6) => Self((u128::from(v6) >> 64) | (1 << 64)),
        }
    }
}

/// Where a pending connection's handshake stands after a read.
pub(super) enum Step {
    /// More bytes to come.
    Waiting,
    /// Its first message.
    Done(Box<ClientMsg>),
    /// Closed before sending anything (a port probe).
    Closed,
    /// Closed right after its hello: a client that read our greeting and stopped (it has no
    /// key for a server that asks for one, or a key for one that does not).
    LeftAfterHello,
    /// A dialect's connection of a test already running (`Pending::dialect` says which).
    Joins,
    /// A dialect's whole opening of a new test.
    Opens,
    /// Its first bytes came while its source already had [`MAX_TALKING_PER_SOURCE`]
    /// connections holding bytes.
    SourceBusy,
    /// A broken hello or frame, or a failed read.
    Failed(WireError),
}

impl Pending {
    /// A connection just accepted, to be greeted with `greeting` once it shows it is linerate.
    pub(super) fn new(conn: Conn, accepted: u64, deadline: Instant, greeting: Greeting) -> Self {
        Self {
            peer: conn.peer(),
            source: conn.peer_addr().map(|a| Source::of(a.ip())),
            conn,
            accepted,
            buf: Vec::new(),
            deadline,
            challenge: greeting.nonce,
            greeting: Some(greeting),
            dialect: None,
            asked: false,
            talking: false,
        }
    }

    /// Reads what has arrived (without waiting), at most up to `max` bytes; `Some` when the
    /// connection is done with (closed, failed, or sent more than any first message).
    fn fill(&mut self, max: usize) -> Option<Step> {
        let mut chunk = [0u8; 4096];
        loop {
            // One byte past the bound shows a peer that sent more than any first message.
            let room = (max + 1).saturating_sub(self.buf.len()).min(chunk.len());
            if room == 0 {
                return Some(Step::Failed(WireError::FrameTooLarge {
                    len: self.buf.len(),
                    max,
                }));
            }
            match self.conn.read(&mut chunk[..room]) {
                Ok(0) if self.buf.is_empty() => return Some(Step::Closed),
                Ok(0) if self.buf.len() == HELLO_LEN => {
                    // A bad hello is reported as such (an older client leaves here too).
                    return Some(match self.parse() {
                        Step::Failed(e) => Step::Failed(e),
                        _ => Step::LeftAfterHello,
                    });
                }
                Ok(0) => return Some(Step::Failed(WireError::Closed { mid_frame: true })),
                Ok(n) => {
                    // Grown by what arrived, not doubled: a trickler's buffer is its bytes.
                    self.buf.reserve_exact(n);
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset && self.buf.is_empty() => {
                    return Some(Step::Closed)
                }
                Err(e) => return Some(Step::Failed(e.into())),
            }
        }
    }

    /// Parses what it sent so far.
    fn step(&mut self, dialects: &[Arc<dyn DialectServer>]) -> Step {
        if let Some(step) = self.first_bytes(dialects) {
            return step;
        }
        self.parse()
    }

    /// Tells a linerate client (greeted now) from a dialect's by the first byte; `None` once
    /// greeted, for the hello and first message to be parsed.
    fn first_bytes(&mut self, dialects: &[Arc<dyn DialectServer>]) -> Option<Step> {
        let first = *self.buf.first()?;
        if self.dialect.is_none() && first != MAGIC[0] {
            self.dialect = dialects.iter().position(|d| d.claims(first));
        }
        if let Some(d) = self.dialect.and_then(|i| dialects.get(i)) {
            return Some(self.opening(&**d));
        }
        // A fresh socket's send buffer takes the 40 bytes at once.
        let greeting = self.greeting.take()?;
        if first == MAGIC[0] {
            if let Err(e) = self.conn.write_all(&greeting.emit()) {
                return Some(Step::Failed(e.into()));
            }
        }
        None
    }

    /// A dialect's opening so far; its question goes out here, once (a fresh socket's send
    /// buffer takes a few bytes at once; a failed write shows as the client's silence at the
    /// deadline).
    fn opening(&mut self, dialect: &dyn DialectServer) -> Step {
        for _ in 0..2 {
            match dialect.opening(&self.buf, self.asked) {
                Opening::More => return Step::Waiting,
                Opening::Ask(_) if self.asked => break,
                Opening::Ask(bytes) => {
                    self.asked = true;
                    let _ = self.conn.write_all(&bytes);
                }
                Opening::Joins => return Step::Joins,
                Opening::Opens => return Step::Opens,
                Opening::Failed(e) => return Step::Failed(e),
            }
        }
        Step::Waiting
    }

    fn parse(&self) -> Step {
        let Some(hello) = self.buf.get(..HELLO_LEN) else {
            return Step::Waiting;
        };
        if let Err(e) = Hello::parse(hello).and_then(Hello::check_version) {
            return Step::Failed(e);
        }
        let body = &self.buf[HELLO_LEN..];
        if let Some(prefix) = body.get(..LEN_PREFIX) {
            let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
            if len > MAX_FIRST_FRAME {
                return Step::Failed(WireError::FrameTooLarge {
                    len,
                    max: MAX_FIRST_FRAME,
                });
            }
        }
        match frame::decode::<ClientMsg>(body) {
            Ok(Some((msg, _))) => Step::Done(Box::new(msg)),
            Ok(None) => Step::Waiting,
            Err(e) => Step::Failed(e),
        }
    }
}

/// The connections in handshake, and how many of each source's hold bytes.
pub(super) struct Table {
    pub list: Vec<Pending>,
    talking: HashMap<Source, usize>,
    /// The server's dialects, which first bytes other than linerate's may belong to.
    dialects: Vec<Arc<dyn DialectServer>>,
    /// Most bytes a pending connection buffers: linerate's first message or a dialect's
    /// opening, whichever is longer.
    max_buffered: usize,
}

impl Table {
    /// An empty table for a server with these dialects.
    pub(super) fn new(dialects: Vec<Arc<dyn DialectServer>>) -> Self {
        let max_buffered =
            (dialects.iter().map(|d| d.max_opening())).fold(LINERATE_MAX, usize::max);
        Self {
            list: Vec::new(),
            talking: HashMap::new(),
            dialects,
            max_buffered,
        }
    }

    /// Reads `list[i]`'s new bytes and parses them; its first bytes count it against its
    /// source's cap ([`Step::SourceBusy`] past it).
    pub(super) fn read(&mut self, i: usize) -> Step {
        let p = &mut self.list[i];
        if let Some(step) = p.fill(self.max_buffered) {
            return step;
        }
        if !p.talking && !p.buf.is_empty() {
            if let Some(source) = p.source {
                let count = self.talking.entry(source).or_insert(0);
                if *count >= MAX_TALKING_PER_SOURCE {
                    return Step::SourceBusy;
                }
                *count += 1;
                p.talking = true;
            }
        }
        p.step(&self.dialects)
    }

    /// Takes `list[i]` out (the last one takes its place), uncounting it.
    pub(super) fn take(&mut self, i: usize) -> Pending {
        let p = self.list.swap_remove(i);
        if let (true, Some(source)) = (p.talking, p.source) {
            if let Some(count) = self.talking.get_mut(&source) {
                *count -= 1;
                if *count == 0 {
                    self.talking.remove(&source);
                }
            }
        }
        p
    }

    /// Connections from `source` holding bytes now.
    #[cfg(test)]
    fn talking(&self, source: Source) -> usize {
        self.talking.get(&source).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn an_ipv6_source_is_its_slash_64_and_mapped_ipv4_is_ipv4() {
        let a: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a.into()), Source::of(b.into()));
        assert_ne!(Source::of(a.into()), Source::of(c.into()));
        let v4 = Ipv4Addr::new(127, 0, 0, 1);
        assert_eq!(
            Source::of(v4.to_ipv6_mapped().into()),
            Source::of(v4.into())
        );
        assert_ne!(
            Source::of(v4.into()),
            Source::of(Ipv6Addr::UNSPECIFIED.into())
        );
    }

    #[test]
    fn a_source_past_its_cap_is_busy_and_a_taken_connection_frees_its_count() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut table = Table::new(Vec::new());
        let mut clients = Vec::new();
        for n in 0..=MAX_TALKING_PER_SOURCE {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(&[MAGIC[0]]).unwrap();
            clients.push(c);
            let (s, _) = listener.accept().unwrap();
            s.set_nonblocking(true).unwrap();
            let greeting = Greeting {
                hello: Hello::ours(),
                nonce: Nonce([0; wire::auth::NONCE_LEN]),
            };
            table.list.push(Pending::new(
                Conn::Tcp(s),
                n as u64,
                Instant::now(),
                greeting,
            ));
            let i = table.list.len() - 1;
            let mut step = table.read(i);
            for _ in 0..100 {
                if !table.list[i].buf.is_empty() || matches!(step, Step::SourceBusy) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
                step = table.read(i);
            }
            let busy = matches!(step, Step::SourceBusy);
            assert_eq!(busy, n == MAX_TALKING_PER_SOURCE, "connection {n}");
        }
        let source = Source::of(Ipv4Addr::LOCALHOST.into());
        assert_eq!(table.talking(source), MAX_TALKING_PER_SOURCE);
        drop(table.take(0));
        assert_eq!(table.talking(source), MAX_TALKING_PER_SOURCE - 1);
    }

    /// A dialect whose opening is `!` and three bytes, then (after its question `?`) four more.
    struct Toy;

    impl DialectServer for Toy {
        fn name(&self) -> &'static str {
            "toy"
        }
        fn claims(&self, first: u8) -> bool {
            first == b'!'
        }
        fn max_opening(&self) -> usize {
            LINERATE_MAX + 1
        }
        fn opening(&self, buf: &[u8], asked: bool) -> Opening {
            match (buf.len(), asked) {
                (0..4, _) => Opening::More,
                (_, false) => Opening::Ask(b"?".to_vec()),
                (4..8, true) => Opening::More,
                _ => Opening::Opens,
            }
        }
        fn join(&self, _: &[u8], _: u64, _: Conn) -> Result<(), &'static str> {
            Err("no tests")
        }
        fn keyless_refusal(&self) -> Option<super::super::super::KeylessRefusal> {
            None
        }
        fn run(&self, _: Conn, _: &[u8], _: &super::super::super::Server<'_>, _: &str) {}
    }

    /// Reads `table.list[0]` until its step is not `Waiting` (bounded).
    fn settled(table: &mut Table) -> Step {
        for _ in 0..100 {
            match table.read(0) {
                Step::Waiting => std::thread::sleep(std::time::Duration::from_millis(5)),
                step => return step,
            }
        }
        Step::Waiting
    }

    #[test]
    fn a_dialects_client_is_asked_its_question_once_and_not_greeted() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (s, _) = listener.accept().unwrap();
        s.set_nonblocking(true).unwrap();
        let greeting = Greeting {
            hello: Hello::ours(),
            nonce: Nonce([0; wire::auth::NONCE_LEN]),
        };
        let mut table = Table::new(vec![Arc::new(Toy)]);
        assert_eq!(table.max_buffered, LINERATE_MAX + 1);
        table
            .list
            .push(Pending::new(Conn::Tcp(s), 0, Instant::now(), greeting));
        client.write_all(b"!abc").unwrap();
        assert!(matches!(settled(&mut table), Step::Waiting));
        assert_eq!(table.list[0].dialect, Some(0));
        let mut asked = [0u8; 1];
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        client.read_exact(&mut asked).unwrap();
        assert_eq!(&asked, b"?", "the question, and no greeting before it");
        client.write_all(b"defg").unwrap();
        assert!(matches!(settled(&mut table), Step::Opens));
        client.set_nonblocking(true).unwrap();
        let mut more = [0u8; 64];
        assert!(
            client.read(&mut more).is_err(),
            "nothing but the question was sent"
        );
    }
}
