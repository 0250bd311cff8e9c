//! UDP datagrams at a paced rate over a connected UDP socket.
//!
//! The sender stamps every datagram with a [`wire::datagram`] header (stream, sequence, send
//! time: one clock reading per batch) and sends batches with sendmmsg(2), each message carrying
//! up to 128 datagrams that the kernel segments (UDP GSO) where it can; after `stop` it sends
//! FIN datagrams carrying its total. The receiver reads batches with recvmmsg(2), with the
//! kernel coalescing arrivals (UDP GRO, split again here by the reported segment size), and feeds
//! each header to a [`SeqTracker`] (loss, reordering, duplicates, jitter), publishing its counts
//! once per batch. It ends when a FIN has been seen and every datagram it counts has arrived, or
//! 50 ms after the FIN and the last datagram (stragglers; at most 500 ms after the FIN), or
//! 500 ms after `stop` without a datagram (every FIN lost);
//! before ending on a timer it reads whatever is already queued, without waiting.

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use measure::clock::now_ns;
use measure::cpu::CpuTime;
use measure::udp_stats::SeqTracker;
use wire::datagram::{write_header, FLAG_FIN, HEADER_LEN};
use wire::msg::StreamCounts;
use wire::spec::{Flow, UdpParams};

mod batch;
mod framing;
mod intake;
mod refused;

pub use framing::Framing;

use batch::{
    enable, is_retry, send_one, sendmmsg, Batch, GRO_MESSAGE, GSO_MAX_SEGMENTS,
    GSO_OLD_MAX_SEGMENTS, MAX_UDP_PAYLOAD,
};
use intake::{Intake, Readiness};
use refused::Refusals;

use crate::budget::Quota;
use crate::udp_socket::flow_socket;
use crate::{
    Conn, Endpoint, EngineError, Role, StreamControl, StreamEngine, StreamReport, POLL_INTERVAL,
};

/// How long the receiver keeps reading after a FIN, and after the last datagram, for
/// datagrams reordered behind it.
const AFTER_FIN: Duration = Duration::from_millis(50);
/// The longest the receiver goes on after a FIN while datagrams keep coming.
const MOST_AFTER_FIN: Duration = Duration::from_millis(500);
/// How long the receiver waits after `stop` with nothing arriving before it gives up on FIN.
const QUIET_AFTER_STOP: Duration = Duration::from_millis(500);
/// Without FIN datagrams (iperf3's framing), how long the receiver waits after `stop` with
/// nothing arriving: the far end stops sending at the control connection's `TEST_END`, and what
/// it sent before that is on its way for a round trip at most.
const QUIET_WITHOUT_FIN: Duration = Duration::from_millis(100);
/// Without FIN datagrams, the longest a receiver goes on after `stop` while datagrams keep
/// coming (a far end that does not stop sending must not hold it, or stretch its counts).
const MOST_WITHOUT_FIN: Duration = Duration::from_secs(1);
/// FIN datagrams sent, 1 ms apart, so that one loss does not cost the receiver its drain.
const FIN_COUNT: usize = 3;

/// The `udp_stream` engine.
#[derive(Debug, Clone)]
pub struct UdpStream {
    payload: usize,
    batch: usize,
    target_pps: Option<f64>,
    burst: u32,
    gso: bool,
    gro: bool,
    flows: u32,
    framing: Framing,
}

impl UdpStream {
    /// An engine for `udp`'s payload size, batching and pacing, with linerate's header, whose
    /// senders carry `sends` (and keep its rate).
    pub fn new(udp: &UdpParams, sends: Flow) -> Self {
        Self::framed(udp, Framing::Linerate, sends)
    }

    /// An engine whose datagrams open with `framing`'s header (iperf3's, against a stock
    /// iperf3).
    pub fn framed(udp: &UdpParams, framing: Framing, sends: Flow) -> Self {
        Self {
            framing,
            payload: (udp.payload_len_bytes as usize).max(framing.header_len()),
            batch: usize::from(udp.batch_packets.max(1)),
            target_pps: udp.target_pps(sends),
            burst: udp.burst_packets,
            gso: udp.gso,
            gro: udp.gro,
            flows: udp.flows.max(1),
        }
    }
}

impl StreamEngine for UdpStream {
    fn name(&self) -> &'static str {
        "udp_stream"
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        if let (Endpoint::Frames(rx), Role::Receiver) = (&end, role) {
            let cpu_start = CpuTime::thread_now();
            let mut report = crate::frame_rx::receive(rx, ctl)?;
            report.cpu = CpuTime::thread_now().since(cpu_start);
            return Ok(report);
        }
        let (sock, only_from, extra_recv, extra_dst) = match end.into_socket(self.name())? {
            Conn::Udp(sock) => (sock, None, Vec::new(), Vec::new()),
            Conn::UdpFrom(sock, ip) => (sock, Some(ip), Vec::new(), Vec::new()),
            Conn::UdpMulti(m) => (m.sock, m.only_from, m.extra_recv, m.extra_dst),
            _ => {
                return Err(EngineError::Io(io::Error::new(
                    ErrorKind::InvalidInput,
                    "udp_stream needs a UDP socket",
                )))
            }
        };
        sock.set_read_timeout(Some(POLL_INTERVAL))?;
        sock.set_write_timeout(Some(POLL_INTERVAL))?;
        let cpu_start = CpuTime::thread_now();
        let mut report = match role {
            Role::Sender => self.send(&sock, &extra_dst, ctl)?,
            Role::Receiver => {
                let socks: Vec<&UdpSocket> = std::iter::once(&sock).chain(&extra_recv).collect();
                self.receive(&socks, only_from, ctl)?
            }
        };
        report.cpu = CpuTime::thread_now().since(cpu_start);
        Ok(report)
    }
}

/// Releases datagrams on schedule: smoothly (in steps of at least [`Pacer::MIN_STEP`], at most
/// a batch) or in bursts of `burst` back to back.
#[derive(Debug)]
struct Pacer {
    start: Instant,
    ns_per_packet: f64,
    quantum: u64,
}

impl Pacer {
    /// Smooth pacing releases datagrams in steps of at least this long, so that high rates
    /// sleep between steps instead of spinning per datagram.
    const MIN_STEP: Duration = Duration::from_micros(50);

    fn new(pps: f64, burst: u32, batch: usize) -> Self {
        // Sleep precision: the default 50 µs timer slack would make short sleeps overshoot;
        // 1 µs lets the pacer sleep instead of spinning for waits down to a few tens of µs.
        // SAFETY: PR_SET_TIMERSLACK only affects the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
        let ns_per_packet = 1e9 / pps.max(1e-3);
        let step = (Self::MIN_STEP.as_nanos() as f64 / ns_per_packet)
            .ceil()
            .clamp(1.0, batch as f64);
        Self {
            start: Instant::now(),
            ns_per_packet,
            quantum: if burst > 0 {
                u64::from(burst)
            } else {
                step as u64
            },
        }
    }

    /// How many datagrams may go now, given `sent` so far, waiting until at least one may
    /// (or `stop`). At most `max`.
    fn due(&self, sent: u64, max: usize, ctl: &StreamControl<'_>) -> usize {
        loop {
            let elapsed = self.start.elapsed().as_nanos() as f64;
            let released =
                ((elapsed / self.ns_per_packet) as u64 / self.quantum + 1) * self.quantum;
            if released > sent {
                return (released - sent).min(max as u64) as usize;
            }
            if ctl.stop.is_raised() || ctl.abort.is_raised() {
                return 0;
            }
            let next_ns = ((sent / self.quantum) * self.quantum) as f64 * self.ns_per_packet;
            let wait = Duration::from_nanos((next_ns - elapsed).max(0.0) as u64);
            if wait > Duration::from_micros(30) {
                std::thread::sleep((wait - Duration::from_micros(10)).min(POLL_INTERVAL));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl UdpStream {
    fn send(
        &self,
        sock: &UdpSocket,
        extra_dst: &[SocketAddr],
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mut segments = self.gso_segments(sock.as_raw_fd());
        let mut batch = self.send_batch(segments);
        let extra = self.flow_sockets(sock, extra_dst, segments)?;
        let (fds, mut refusals) = senders(sock, &extra);
        let mut flow = 0usize;
        let pacer = self
            .target_pps
            .map(|pps| Pacer::new(pps, self.burst, self.batch));
        let mut seq = 0u64;
        let mut quota = Quota::new(ctl.budget);
        while !ctl.stop.is_raised() {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            let n = match &pacer {
                Some(p) => p.due(seq, self.batch, &ctl),
                None => self.batch,
            };
            if n == 0 {
                continue;
            }
            // By amount: the datagrams this stream still owes or takes, none once all are sent.
            let n = match quota.next(n as u64) as usize {
                0 => break,
                n => n,
            };
            let stamp = self.frame(&mut batch, n, ctl.stream, seq);
            let out = fds[flow];
            flow = (flow + 1) % fds.len();
            let single = n == 1 && self.batch == 1;
            let sent = if single {
                send_one(out, batch.datagram_mut(0))
            } else {
                let m = batch.prepare_send(n);
                sendmmsg(out, &mut batch, m).map(|done| batch.datagrams_in(done, n))
            };
            let advanced = match sent {
                // Stopped short at a refusal whose error sendmmsg dropped (see stopped_short).
                Ok(k) if k < n && !single => k + refusals.stopped_short(&batch, k, n, stamp),
                Ok(k) => k,
                // The host refused the call's first message (a qdisc or the local stack
                // dropped it): its datagrams count as sent, and lost here.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    let k = if single { 1 } else { batch.datagrams_in(1, n) };
                    refusals.add(k);
                    k
                }
                Err(e) if is_retry(&e) || refused::path_reported(out, &e) => 0,
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                    return Err(too_large(self.payload, &e))
                }
                // A kernel older than 6.x takes at most 64 segments per GSO send: resend
                // these datagrams (same sequence numbers) in messages of 64.
                Err(e)
                    if e.raw_os_error() == Some(libc::EINVAL)
                        && segments > GSO_OLD_MAX_SEGMENTS =>
                {
                    segments = GSO_OLD_MAX_SEGMENTS;
                    batch = self.send_batch(segments);
                    0
                }
                Err(e) => return Err(e.into()),
            };
            if advanced > 0 {
                quota.sent(advanced as u64);
                seq += advanced as u64;
                ctl.counter.publish_packets(seq * self.payload as u64, seq);
            }
        }
        if self.framing.has_fin() {
            send_fin(sock, ctl.stream, seq);
        }
        Ok(self.sender_report(seq, refusals))
    }

    /// Frames the batch's first `n` datagrams from sequence number `seq`, stamped now; the stamp.
    fn frame(&self, batch: &mut Batch, n: usize, stream: u16, seq: u64) -> u64 {
        let stamp = now_ns();
        for i in 0..n {
            (self.framing).write(batch.datagram_mut(i), stream, seq + i as u64, stamp);
        }
        stamp
    }

    /// A sender's final report: `seq` datagrams sent (refused ones included).
    fn sender_report(&self, seq: u64, refusals: Refusals) -> StreamReport {
        let counts = StreamCounts {
            bytes: seq * self.payload as u64,
            packets: seq,
            send_drops: refusals.total(),
            ..StreamCounts::default()
        };
        StreamReport {
            bytes_total: counts.bytes,
            counts,
            ..Default::default()
        }
    }

    /// A sender's batch of `segments` datagrams per message, messages enough for a batch.
    fn send_batch(&self, segments: usize) -> Batch {
        let messages = self.batch.div_ceil(segments);
        Batch::new(
            messages,
            segments,
            self.payload,
            segments * self.payload,
            false,
        )
    }

    /// Datagrams per GSO message: as many payloads as fit one UDP datagram (at most 128, at
    /// most a batch), when GSO is wanted and the socket takes it; else 1.
    fn gso_segments(&self, fd: RawFd) -> usize {
        let most = (MAX_UDP_PAYLOAD / self.payload)
            .clamp(1, GSO_MAX_SEGMENTS)
            .min(self.batch);
        if self.gso && most > 1 && enable(fd, libc::UDP_SEGMENT, self.payload as libc::c_int) {
            most
        } else {
            1
        }
    }

    /// The sender's further sockets. More flows: more sockets, same peer, new source ports; the
    /// sender moves to the next flow after every batch. More destinations (`--flows-dst`): one
    /// more socket per destination at least, socket k sending to destination k mod M.
    fn flow_sockets(
        &self,
        sock: &UdpSocket,
        extra_dst: &[SocketAddr],
        segments: usize,
    ) -> Result<Vec<UdpSocket>, EngineError> {
        let (local, peer) = (sock.local_addr()?, sock.peer_addr()?);
        let dsts: Vec<SocketAddr> = std::iter::once(peer)
            .chain(extra_dst.iter().copied())
            .collect();
        let sockets = (self.flows as usize).max(dsts.len());
        let mut extra = Vec::with_capacity(sockets - 1);
        for k in 1..sockets {
            let s = flow_socket(local.ip(), dsts[k % dsts.len()])?;
            if segments > 1 {
                enable(
                    s.as_raw_fd(),
                    libc::UDP_SEGMENT,
                    self.payload as libc::c_int,
                );
            }
            s.set_write_timeout(Some(POLL_INTERVAL))?;
            extra.push(s);
        }
        Ok(extra)
    }

    /// How long a receiver waits after `stop` with nothing arriving before it ends.
    fn quiet_after_stop(&self) -> Duration {
        if self.framing.has_fin() {
            QUIET_AFTER_STOP
        } else {
            QUIET_WITHOUT_FIN
        }
    }

    fn receive(
        &self,
        socks: &[&UdpSocket],
        only_from: Option<IpAddr>,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let fds: Vec<RawFd> = socks.iter().map(|s| s.as_raw_fd()).collect();
        let gro = self.gro && fds.iter().all(|&fd| enable(fd, libc::UDP_GRO, 1));
        let mut batch = if gro {
            Batch::new(self.batch.min(16), 1, GRO_MESSAGE, GRO_MESSAGE, true)
        } else {
            // One byte more than the payload, so an oversized datagram shows as truncated.
            Batch::new(self.batch, 1, self.payload + 1, self.payload + 1, false)
        };
        if only_from.is_some() {
            batch.want_sources();
        }
        // Several destination ports: wait on all of them with epoll, read without blocking.
        let mut ready = match fds.len() {
            1 => None,
            _ => {
                for s in socks {
                    s.set_nonblocking(true)?;
                }
                Some(Readiness::new(&fds)?)
            }
        };
        let mut intake = Intake {
            batch,
            tracker: SeqTracker::new(),
            fin: None,
            only_from,
            payload: self.payload,
            coalesced: false,
            framing: self.framing,
        };
        let mut stop_seen_at: Option<Instant> = None;
        let mut last_arrival = Instant::now();
        loop {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            if intake.complete() {
                break;
            }
            let fin_waited = intake.stragglers_done(last_arrival);
            let quiet = ctl.stop.is_raised() && {
                let since = *stop_seen_at.get_or_insert_with(Instant::now);
                let quiet_for = self.quiet_after_stop();
                (since.elapsed() >= quiet_for && last_arrival.elapsed() >= quiet_for)
                    || (!self.framing.has_fin() && since.elapsed() >= MOST_WITHOUT_FIN)
            };
            if fin_waited || quiet {
                intake.drain(&fds, &ctl)?;
                break;
            }
            let readable: &[RawFd] = match &mut ready {
                None => &fds,
                Some(r) => r.wait(POLL_INTERVAL)?,
            };
            for &fd in readable {
                match intake.read(fd, libc::MSG_WAITFORONE, &ctl) {
                    Ok(_) => last_arrival = Instant::now(),
                    Err(e) if is_retry(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let mut rx = intake.tracker.snapshot();
        rx.socket_drops = fds
            .iter()
            .map(|&fd| crate::udp_socket::socket_drops(fd))
            .sum();
        rx.socket_drops_batched = intake.coalesced;
        rx.sender_total = intake.fin.as_ref().map(|f| f.total);
        ctl.counter.publish_rx(rx);
        Ok(receiver_report(rx))
    }
}

/// The sending sockets' descriptors, the stream's own first, each asked to report its host's
/// drops; the count of refusals holds only if every one took the option.
fn senders(sock: &UdpSocket, extra: &[UdpSocket]) -> (Vec<RawFd>, Refusals) {
    // Every socket is asked (no short circuit).
    let refusing = std::iter::once(sock)
        .chain(extra)
        .filter(|s| !refused::ask_for_errors(s))
        .count();
    let fds = std::iter::once(sock)
        .chain(extra)
        .map(|s| s.as_raw_fd())
        .collect();
    (fds, Refusals::new(refusing == 0))
}

/// A send that failed with EMSGSIZE, in words naming the flag to change.
fn too_large(payload: usize, e: &io::Error) -> EngineError {
    EngineError::Io(io::Error::new(
        e.kind(),
        format!("{payload}-byte datagrams do not fit the path (EMSGSIZE); use a smaller -l"),
    ))
}

/// A receiver's report from its final sequence accounting.
pub(crate) fn receiver_report(rx: measure::udp_stats::UdpCounts) -> StreamReport {
    StreamReport {
        bytes_total: rx.bytes,
        counts: StreamCounts {
            bytes: rx.bytes,
            packets: rx.packets,
            rx: Some(rx),
            ..StreamCounts::default()
        },
        ..Default::default()
    }
}

/// Ends a stream: FIN datagrams carrying the sender's total, 1 ms apart (the receiver needs
/// only one).
fn send_fin(sock: &UdpSocket, stream: u16, total: u64) {
    let mut fin = [0u8; HEADER_LEN];
    write_header(&mut fin, stream, FLAG_FIN, total, now_ns());
    for _ in 0..FIN_COUNT {
        let _ = sock.send(&fin);
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Abort, Signal, StreamCounters};

    /// A receiver on a loopback socket fed, in order, the data sequence numbers in `seqs` and then
    /// (or first, with `fin_first`) a FIN carrying `total`; stop is never raised, so only the
    /// FIN can end it. Returns what it counted.
    fn receive(seqs: &[u64], total: u64, fin_first: bool) -> measure::udp_stats::UdpCounts {
        let engine = UdpStream {
            payload: 64,
            batch: 16,
            target_pps: None,
            burst: 0,
            gso: false,
            gro: false,
            flows: 1,
            framing: Framing::Linerate,
        };
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(POLL_INTERVAL)).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let send = |flags, seq| {
            let mut d = [0u8; 64];
            write_header(&mut d, 0, flags, seq, now_ns());
            tx.send(&d).unwrap();
        };
        if fin_first {
            send(FLAG_FIN, total);
        }
        for &s in seqs {
            send(0, s);
        }
        if !fin_first {
            send(FLAG_FIN, total);
        }
        let (stop, abort, counter) = (Signal::new(), Abort::new(), StreamCounters::default());
        let ctl = StreamControl {
            stream: 0,
            counter: &counter,
            stop: &stop,
            abort: &abort,
            origin: std::time::Instant::now(),
            budget: None,
        };
        let report = engine.receive(&[&rx], None, ctl).unwrap();
        report.counts.rx.unwrap()
    }

    #[test]
    fn a_complete_stream_ends_at_its_fin() {
        let seqs: Vec<u64> = (0..100).collect();
        assert_eq!(receive(&seqs, 100, false).unique, 100);
    }

    /// The FIN overtook the data (another CPU's backlog): the receiver keeps reading until the
    /// count the FIN carries is complete.
    #[test]
    fn datagrams_behind_the_fin_are_counted() {
        let seqs: Vec<u64> = (0..100).collect();
        let got = receive(&seqs, 100, true);
        assert_eq!((got.unique, got.duplicates), (100, 0));
    }

    /// One datagram never comes: the receiver still ends, 50 ms after the FIN, one short.
    #[test]
    fn a_missing_datagram_ends_after_the_straggler_wait() {
        let seqs: Vec<u64> = (0..100).filter(|&s| s != 50).collect();
        let started = Instant::now();
        let got = receive(&seqs, 100, false);
        assert_eq!(got.unique, 99);
        assert!(started.elapsed() >= AFTER_FIN, "{:?}", started.elapsed());
        // The FIN's total gives the receiver the client's loss: 100 sent − 99 unique.
        assert_eq!(got.sender_total.map(|t| got.lost(t)), Some(1));
    }
}
