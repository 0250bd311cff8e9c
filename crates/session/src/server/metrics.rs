//! What a server counts for `serve --metrics`: tests started (by kind) and refused (by
//! reason), tests running, bytes and datagrams by direction and transport, authentication
//! failures, handshake timeouts, and each client's last test's throughput. `metrics_text`
//! renders a [`MetricsSnapshot`] as text; nothing here formats.
//!
//! The labels are typed ([`Started`], [`Way`], [`Transport`], [`Refusal`]), ordered by their
//! label text, so the text lists them as it always has.
//!
//! Invariants: counters only grow while the server runs (never reset); a finished test adds
//! the bytes its server-side streams moved over the whole test (`total` of each stream); the
//! per-client gauge keeps at most [`MAX_CLIENTS`] clients (the least recently updated leaves
//! first), so a server's memory does not grow with the clients it has seen.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Mutex;

use wire::msg::{ServerResults, StreamCounts};
use wire::spec::Flow;
use wire::{TestKind, TestSpec};

/// Most clients the last-throughput gauge keeps.
pub const MAX_CLIENTS: usize = 256;

/// The server's counters, shared between its threads and the metrics endpoint.
#[derive(Debug, Default)]
pub struct ServerMetrics {
    counts: Mutex<Counts>,
}

/// The counters, and how many finished tests have updated them (the age of a client's gauge,
/// for eviction), under one lock.
#[derive(Debug, Default)]
struct Counts {
    now: MetricsSnapshot,
    tick: u64,
}

/// The counters at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// Tests accepted, by kind (`tcp_stream`, …, `relay`; `iperf3` for stock iperf3
    /// clients' tests).
    pub started: BTreeMap<Started, u64>,
    /// Tests refused, by reason.
    pub refused: BTreeMap<Refusal, u64>,
    /// Tests running now.
    pub running: u64,
    /// Bytes moved by finished tests' server-side streams, linerate's and iperf3 clients' (not
    /// relayed tests, whose bytes another server counts), by (direction, transport):
    /// direction `received` or `sent` (as the server sees it; `both` for request/response
    /// streams, whose counts add requests and responses), transport `tcp`, `udp` or `unix`.
    pub bytes: BTreeMap<(Way, Transport), u64>,
    /// Datagrams moved (UDP), by direction.
    pub datagrams: BTreeMap<Way, u64>,
    /// First messages whose key proof failed (or was missing where a key is asked for).
    pub auth_failures: u64,
    /// Connections dropped at their handshake deadline.
    pub handshake_timeouts: u64,
    /// Foreign probes answered (`linerate rpm`).
    pub probes: u64,
    /// Each client's last finished test: its bytes both ways over the server's window,
    /// bits/s, with the update it came in (for eviction).
    pub last_throughput_bps: BTreeMap<IpAddr, (f64, u64)>,
}

impl ServerMetrics {
    fn with(&self, f: impl FnOnce(&mut MetricsSnapshot)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c.now);
        }
    }

    /// Runs `f` on the counters with the next tick (a finished test's update).
    fn with_tick(&self, f: impl FnOnce(&mut MetricsSnapshot, u64)) {
        if let Ok(mut c) = self.counts.lock() {
            c.tick += 1;
            let tick = c.tick;
            f(&mut c.now, tick);
        }
    }

    /// The counters now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.counts
            .lock()
            .map(|c| c.now.clone())
            .unwrap_or_default()
    }

    /// A test of `kind` was accepted and runs.
    pub fn started(&self, kind: Started) {
        self.with(|c| {
            *c.started.entry(kind).or_default() += 1;
            c.running += 1;
        });
    }

    /// A test that [`ServerMetrics::started`] ended, however it ended.
    pub fn ended(&self) {
        self.with(|c| c.running = c.running.saturating_sub(1));
    }

    /// A test was refused for `reason`.
    pub fn refused(&self, reason: Refusal) {
        self.with(|c| *c.refused.entry(reason).or_default() += 1);
    }

    /// A first message failed authentication.
    pub fn auth_failed(&self) {
        self.with(|c| c.auth_failures += 1);
        self.refused(Refusal::Auth);
    }

    /// A foreign probe was answered.
    pub fn probed(&self) {
        self.with(|c| c.probes += 1);
    }

    /// A connection was dropped at its handshake deadline.
    pub fn handshake_timed_out(&self) {
        self.with(|c| c.handshake_timeouts += 1);
    }

    /// A linerate test finished with the server's `results`: its bytes and datagrams by
    /// direction, and its client's throughput.
    pub fn finished(&self, spec: &TestSpec, results: &ServerResults, client: Option<IpAddr>) {
        let flows = spec.flows();
        let ends: Vec<(Way, StreamCounts)> = (results.streams.iter())
            .map(|end| {
                let received = flows
                    .iter()
                    .find(|(i, _)| *i == end.stream)
                    .is_some_and(|(_, f)| *f == Flow::ClientToServer);
                // A request/response stream moves both ways; its count is both.
                let way = match (spec.rr().is_some(), received) {
                    (true, _) => Way::Both,
                    (false, true) => Way::Received,
                    (false, false) => Way::Sent,
                };
                (way, end.total)
            })
            .collect();
        self.moved(transport_of(spec), &ends, results.window_us, client);
    }

    /// A test finished whose server-side streams moved `ends` (each stream's way and its
    /// counts over the whole test) over `transport`, its receivers' window `window_us` long:
    /// an iperf3 client's test counts here, as a linerate test does through
    /// [`ServerMetrics::finished`].
    pub fn moved(
        &self,
        transport: Transport,
        ends: &[(Way, StreamCounts)],
        window_us: u64,
        client: Option<IpAddr>,
    ) {
        self.with_tick(|c, tick| {
            let mut both_ways = 0u64;
            for &(way, total) in ends {
                *c.bytes.entry((way, transport)).or_default() += total.bytes;
                if transport == Transport::Udp {
                    *c.datagrams.entry(way).or_default() += total.packets;
                }
                both_ways += total.bytes;
            }
            if let (Some(ip), true) = (client, window_us > 0) {
                let bps = both_ways as f64 * 8e6 / window_us as f64;
                c.last_throughput_bps.insert(ip, (bps, tick));
                evict(&mut c.last_throughput_bps);
            }
        });
    }
}

/// What an accepted test is counted as (the metrics' `kind` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// A linerate test of this kind (`tcp_stream`, …).
    Test(TestKind),
    /// A test relayed towards another server (`serve --relay`): `relay`.
    Relay,
    /// A test of another protocol's client, by the dialect's name (`iperf3`).
    Dialect(&'static str),
}

impl Started {
    /// The metrics' `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Started::Test(kind) => kind.as_str(),
            Started::Relay => "relay",
            Started::Dialect(name) => name,
        }
    }
}

/// Which way a server-side stream moved its bytes, as the server sees it (the metrics'
/// `direction` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// The client sent, the server received.
    Received,
    /// The server sent.
    Sent,
    /// A request/response stream: requests and responses together.
    Both,
}

impl Way {
    /// The metrics' `direction` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Way::Received => "received",
            Way::Sent => "sent",
            Way::Both => "both",
        }
    }
}

/// Why a test was refused (the metrics' `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server runs its most tests at once (serve --max-sessions).
    Busy,
    /// The client's key runs its most tests at once.
    KeyBusy,
    /// The client's address runs its most tests at once.
    AddressBusy,
    /// A source address has its most connections in the handshake at once.
    SourceBusy,
    /// The server's budget of threads or memory is spent.
    Budget,
    /// The spec is above a limit, or names what this host has not (a CPU, a congestion control).
    Limits,
    /// Authentication failed.
    Auth,
    /// The address is not allowed (serve --allow).
    Allow,
    /// A relayed test this server does not run.
    Relay,
    /// Anything else in setting the test up.
    Setup,
}

impl Refusal {
    /// The metrics' `reason` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Busy => "busy",
            Refusal::KeyBusy => "key_busy",
            Refusal::AddressBusy => "address_busy",
            Refusal::SourceBusy => "source_busy",
            Refusal::Budget => "budget",
            Refusal::Limits => "limits",
            Refusal::Auth => "auth",
            Refusal::Allow => "allow",
            Refusal::Relay => "relay",
            Refusal::Setup => "setup",
        }
    }
}

/// What a test's data connections are (the metrics' `transport` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TCP streams (request/response ones too).
    Tcp,
    /// UDP datagrams: their count is kept too.
    Udp,
    /// Unix-domain stream sockets (`--unix`).
    Unix,
}

impl Transport {
    /// The metrics' `transport` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Unix => "unix",
        }
    }
}

/// Ordered by label, as the text lists the samples (which stays as it was when the labels
/// were strings).
macro_rules! by_label {
    ($t:ty) => {
        impl Ord for $t {
            fn cmp(&self, other: &Self) -> Ordering {
                self.as_str().cmp(other.as_str())
            }
        }
        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }
    };
}
by_label!(Started);
by_label!(Way);
by_label!(Transport);
by_label!(Refusal);

/// The transport of `spec`'s data connections.
pub fn transport_of(spec: &TestSpec) -> Transport {
    if spec.is_unix() {
        Transport::Unix
    } else if spec.udp().is_some() {
        Transport::Udp
    } else {
        Transport::Tcp
    }
}

/// Drops the least recently updated clients past [`MAX_CLIENTS`].
fn evict(gauge: &mut BTreeMap<IpAddr, (f64, u64)>) {
    while gauge.len() > MAX_CLIENTS {
        let oldest = gauge.iter().min_by_key(|(_, (_, t))| *t).map(|(ip, _)| *ip);
        match oldest {
            Some(ip) => gauge.remove(&ip),
            None => break,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labels_sort_as_their_text_and_only_udp_counts_datagrams() {
        let ways = [Way::Received, Way::Sent, Way::Both];
        let mut sorted = ways;
        sorted.sort();
        assert_eq!(sorted.map(Way::as_str), ["both", "received", "sent"]);
        let mut transports = [Transport::Unix, Transport::Udp, Transport::Tcp];
        transports.sort();
        assert_eq!(transports.map(Transport::as_str), ["tcp", "udp", "unix"]);
        use Refusal::*;
        let mut reasons = [
            Setup,
            Relay,
            Allow,
            Auth,
            Limits,
            Budget,
            SourceBusy,
            AddressBusy,
        ];
        reasons.sort();
        let labels = reasons.map(Refusal::as_str);
        let mut by_text = labels;
        by_text.sort();
        assert_eq!(labels, by_text);
        let m = ServerMetrics::default();
        let counts = StreamCounts {
            bytes: 1000,
            packets: 10,
            ..StreamCounts::default()
        };
        m.moved(Transport::Udp, &[(Way::Received, counts)], 0, None);
        m.moved(Transport::Tcp, &[(Way::Sent, counts)], 0, None);
        let now = m.snapshot();
        assert_eq!(now.bytes[&(Way::Received, Transport::Udp)], 1000);
        assert_eq!(now.bytes[&(Way::Sent, Transport::Tcp)], 1000);
        assert_eq!(now.datagrams, BTreeMap::from([(Way::Received, 10)]));
    }

    #[test]
    fn started_tests_count_by_kind_under_their_label_text_in_label_order() {
        let m = ServerMetrics::default();
        for kind in [
            Started::Test(TestKind::UdpStream),
            Started::Dialect("iperf3"),
            Started::Test(TestKind::TcpStream),
            Started::Relay,
            Started::Test(TestKind::TcpStream),
        ] {
            m.started(kind);
        }
        m.ended();
        let now = m.snapshot();
        let labels: Vec<(&str, u64)> = (now.started.iter())
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        assert_eq!(
            labels,
            [
                ("iperf3", 1),
                ("relay", 1),
                ("tcp_stream", 2),
                ("udp_stream", 1)
            ]
        );
        assert_eq!(now.running, 4);
        let all = TestKind::ALL.map(|k| Started::Test(k).as_str());
        assert_eq!(all, TestKind::ALL.map(TestKind::as_str), "the wire's names");
    }

    #[test]
    fn the_client_gauge_keeps_the_latest_clients_only() {
        let mut g = BTreeMap::new();
        for i in 0..(MAX_CLIENTS as u64 + 10) {
            let ip = IpAddr::from([10, 0, (i / 256) as u8, (i % 256) as u8]);
            g.insert(ip, (1.0, i));
            evict(&mut g);
        }
        assert_eq!(g.len(), MAX_CLIENTS);
        assert!(!g.contains_key(&IpAddr::from([10, 0, 0, 0])));
        assert!(g.contains_key(&IpAddr::from([10, 0, 1, 9])));
    }
}
