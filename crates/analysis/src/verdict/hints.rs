//! What a verdict suggests trying (its `try` line), made for the run it judges: the kind's own
//! remedies (`-b max` for UDP, whose default rate is 1 Mbit/s; TCP's buffers, congestion
//! control and zero-copy sends only where the data path is TCP), `-P` only while the run has
//! fewer streams than the host has cores, zero-copy only for a sender that copies, and, for a
//! stock iperf3 client's run (which the server stores), the iperf3 client's flags and nothing
//! of linerate's pacing.
//!
//! Invariant: a hint names only flags and settings that exist for the run's kind and client;
//! `tests/hints.rs` checks every (kind, verdict) pair against that.

use wire::spec::{DataPath, SendMode, Transport};
use wire::TestSpec;

/// Who ran the test's client end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Client {
    /// linerate's own client: its pacing, its flags.
    #[default]
    Linerate,
    /// A stock iperf3 client, whose run a linerate server stored (tagged `client=iperf3`):
    /// its `-b` paced it, and linerate's own flags are not the user's to set.
    Iperf3,
}

/// What a hint may suggest for one run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Advice {
    /// The data path: TCP, UDP or a Unix socket.
    data: Data,
    /// TCP senders that already hand the kernel pages (splice, sendfile).
    zero_copy: bool,
    /// The run's streams, all directions (on one host they share its cores).
    streams: usize,
    /// Both ends on one host (loopback): each stream's sender and receiver share its cores.
    pub(super) one_host: bool,
    /// Who ran the client.
    client: Client,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Data {
    Tcp,
    Udp,
    Unix,
}

impl Advice {
    pub(super) fn of(spec: &TestSpec, client: Client) -> Self {
        let stream = spec.stream();
        let data = match (spec.kind().row().path, stream.map(|s| s.transport)) {
            (DataPath::Udp, _) => Data::Udp,
            (DataPath::Tcp, Some(Transport::Unix)) => Data::Unix,
            (DataPath::Tcp, Some(Transport::Tcp) | None) => Data::Tcp,
        };
        Self {
            data,
            zero_copy: stream.is_some_and(|s| s.send_mode != SendMode::Write),
            streams: spec.flows().len(),
            one_host: false,
            client,
        }
    }

    /// TCP's own remedies (buffers, congestion control, pacing, zero-copy) apply.
    pub(super) fn tcp(&self) -> bool {
        self.data == Data::Tcp
    }

    /// `more streams (-P)` while the run's threads on the host are fewer than its `cores`
    /// (0: not known): a stream's, or on one host its sender's and its receiver's.
    fn more_streams(&self, cores: usize) -> Option<&'static str> {
        let threads = self.streams * if self.one_host { 2 } else { 1 };
        (cores == 0 || threads < cores).then_some("more streams (-P)")
    }
}

/// linerate's pacing (or an iperf3 client's) reached the rate asked for.
pub(super) fn application(a: &Advice) -> String {
    match (a.client, a.data) {
        (Client::Iperf3, Data::Udp) => "the iperf3 client's -b set the rate (its UDP default is 1 Mbit/s): -b 0 sends unpaced, to find what else limits it".into(),
        (Client::Iperf3, _) => "the iperf3 client's -b set the rate: run it without -b to find what else limits it".into(),
        (Client::Linerate, Data::Udp) => "linerate's own pacing set the rate: -b max sends as fast as the sender can, to find what else limits it (UDP's default rate is 1 Mbit/s)".into(),
        (Client::Linerate, _) => "linerate's own pacing set the rate: run without -b to find what else limits it".into(),
    }
}

/// The sending host's CPU: streams, a free core, cheaper sends, a faster CPU.
pub(super) fn sender_cpu(a: &Advice, cores: usize) -> String {
    let mut tries: Vec<&str> = a.more_streams(cores).into_iter().collect();
    tries.push("a free core (-A)");
    match (a.data, a.client) {
        (Data::Udp, _) => tries.push("larger datagrams (-l)"),
        (Data::Tcp, Client::Linerate) if !a.zero_copy => {
            tries.push("zero-copy sends (--send-mode splice)")
        }
        (Data::Tcp, Client::Iperf3) => tries.push("zero-copy sends (-Z)"),
        _ => {}
    }
    format!(
        "the sending host's CPU is the limit: {}, or a faster CPU",
        tries.join(", ")
    )
}

/// The receiving host's CPU: spread its receive work.
pub(super) fn receiver_cpu(a: &Advice, cores: usize) -> String {
    let streams = a
        .more_streams(cores)
        .map_or(String::new(), |p| format!("{p}, "));
    format!("the receiving host's CPU is the limit: spread receive work over cores ({streams}RSS/RPS queues, interrupt coalescing), keep the reader off the interrupt core")
}
