//! UDP request/response: the requester (client) sends a request datagram, waits for the
//! response carrying the same sequence number, records the round trip, and repeats; the
//! responder (server) answers each request with a datagram of the response size.
//!
//! A request not answered within [`LOST_AFTER`] is a lost transaction: counted, not timed,
//! and the requester moves on (a late answer to it is recognised by its sequence and ignored).
//!
//! Paced (a request rate, as latency probes use): requests go out on schedule whether or not
//! earlier ones were answered, so a queue longer than the gap does not hold the probes back;
//! answers are matched to their request by sequence number, and a request unanswered after
//! [`LOST_AFTER`] (or at the end, after waiting at most that long) is lost.
//! After `stop` the requester sends FIN datagrams; the responder ends on a FIN, or 500 ms after
//! its own `stop` with nothing arriving.

use std::collections::VecDeque;
use std::io::{self, ErrorKind};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use measure::clock::now_ns;
use measure::cpu::CpuTime;
use wire::datagram::{write_header, DatagramRepr, FLAG_FIN, HEADER_LEN};

use crate::answer_rate::AnswerRate;
use crate::pace::Pace;
use crate::round_trips::{RoundTrips, RrShape, Transactions};
use crate::sys_io;
use crate::{
    Conn, Endpoint, EngineError, Role, StreamControl, StreamEngine, StreamReport, POLL_INTERVAL,
};

/// A request unanswered this long is lost.
pub const LOST_AFTER: Duration = Duration::from_secs(1);
/// How long the responder waits after its `stop` with nothing arriving.
const QUIET_AFTER_STOP: Duration = Duration::from_millis(500);

/// The `udp_rr` engine.
#[derive(Debug, Clone)]
pub struct UdpRr {
    shape: RrShape,
    busy_poll_us: Option<u32>,
}

impl UdpRr {
    /// Repeats `shape`'s transaction as request and response datagrams (each at least the
    /// 16-byte header).
    pub fn new(shape: RrShape) -> Self {
        Self {
            shape: RrShape {
                request: shape.request.max(HEADER_LEN),
                response: shape.response.max(HEADER_LEN),
                ..shape
            },
            busy_poll_us: None,
        }
    }

    /// Busy-polls each socket's receive path for `us` µs (SO_BUSY_POLL).
    pub fn with_busy_poll(mut self, us: Option<u32>) -> Self {
        self.busy_poll_us = us;
        self
    }
}

/// Whether `sock` has a datagram within `timeout` (nanosecond timer, unlike SO_RCVTIMEO).
fn readable(sock: &UdpSocket, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    match unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) } {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// Tells the responder the requests are over: three FINs, 1 ms apart, in case one is lost.
fn send_fins(sock: &UdpSocket, stream: u16, seq: u64) {
    let mut fin = [0u8; HEADER_LEN];
    write_header(&mut fin, stream, FLAG_FIN, seq, now_ns());
    for _ in 0..3 {
        let _ = sock.send(&fin);
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

impl StreamEngine for UdpRr {
    fn name(&self) -> &'static str {
        "udp_rr"
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let Conn::Udp(sock) = end.into_socket(self.name())? else {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                "udp_rr needs a connected UDP socket",
            )
            .into());
        };
        sock.set_read_timeout(Some(POLL_INTERVAL))?;
        sock.set_write_timeout(Some(POLL_INTERVAL))?;
        if let Some(us) = self.busy_poll_us {
            crate::sockopt::setsockopt_int(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_BUSY_POLL,
                us as i32,
            )?;
        }
        let cpu_start = CpuTime::thread_now();
        let mut report = match role {
            Role::Sender if self.shape.gap.is_some() => self.paced_loop(&sock, &ctl)?,
            Role::Sender => self.request_loop(&sock, &ctl)?,
            Role::Receiver => self.respond_loop(&sock, &ctl)?,
        };
        report.cpu = CpuTime::thread_now().since(cpu_start);
        Ok(report)
    }
}

impl UdpRr {
    fn request_loop(
        &self,
        sock: &UdpSocket,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let fd = sock.as_raw_fd();
        let mut request: Vec<u8> = crate::pattern(self.shape.request);
        let mut answer = vec![0u8; self.shape.response.max(self.shape.request) + 1];
        let mut trips = RoundTrips::new(self.shape.omit, self.shape.bytes_per_transaction());
        let (mut seq, mut lost) = (0u64, 0u64);
        let mut pace = Pace::new(self.shape.gap, ctl.origin);
        // One clock reading at the start and one at the answer per transaction, as sockperf
        // takes: the header's send time (CLOCK_MONOTONIC ns) is derived from the start.
        let (t0, t0_ns) = (Instant::now(), now_ns());
        while !ctl.stop.is_raised() && pace.wait(ctl) {
            let start = Instant::now();
            let sent_ns = t0_ns + start.duration_since(t0).as_nanos() as u64;
            write_header(&mut request, ctl.stream, 0, seq, sent_ns);
            match sys_io::send(fd, &request) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e.into()),
            }
            let answered = loop {
                match sys_io::recv(fd, &mut answer) {
                    Ok(n) => {
                        let h = DatagramRepr::parse(&answer[..n]);
                        if h.is_some_and(|h| h.seq == seq && !h.is_probe() && !h.is_fin()) {
                            break true;
                        }
                    }
                    Err(e) if is_timeout(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(e.into()),
                }
                // Not (yet) the answer: a late answer to an earlier request, or a timeout.
                if ctl.abort.is_raised() || start.elapsed() >= LOST_AFTER {
                    break false;
                }
            };
            seq += 1;
            if !answered {
                lost += 1;
                continue;
            }
            trips.record(start, ctl);
        }
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        send_fins(sock, ctl.stream, seq);
        Ok(trips.finish(ctl, lost, pace.missed_by_stop(ctl)))
    }

    /// Requests on schedule, several in flight; see the module docs.
    fn paced_loop(
        &self,
        sock: &UdpSocket,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let fd = sock.as_raw_fd();
        let mut request: Vec<u8> = crate::pattern(self.shape.request);
        let mut answer = vec![0u8; self.shape.response.max(self.shape.request) + 1];
        let mut trips = RoundTrips::new(self.shape.omit, self.shape.bytes_per_transaction());
        // Requests not yet answered or given up on, oldest first: (seq, sent at).
        let mut waiting: VecDeque<(u64, Instant)> = VecDeque::new();
        let (mut seq, mut lost) = (0u64, 0u64);
        let mut pace = Pace::new(self.shape.gap, ctl.origin);
        let mut stopped_at: Option<Instant> = None;
        loop {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            let now = Instant::now();
            while waiting
                .front()
                .is_some_and(|&(_, at)| now.duration_since(at) >= LOST_AFTER)
            {
                waiting.pop_front();
                lost += 1;
            }
            if ctl.stop.is_raised() {
                let since = *stopped_at.get_or_insert(now);
                if waiting.is_empty() || since.elapsed() >= LOST_AFTER {
                    lost += waiting.len() as u64;
                    break;
                }
            } else if pace.due(now) {
                write_header(&mut request, ctl.stream, 0, seq, now_ns());
                let sent_at = Instant::now();
                match sys_io::send(fd, &request) {
                    Ok(_) => {}
                    Err(e) if is_timeout(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
                    Err(e) => return Err(e.into()),
                }
                waiting.push_back((seq, sent_at));
                seq += 1;
            }
            // Socket timeouts tick in jiffies (up to 10 ms): wait with ppoll's finer timer.
            let wait = if stopped_at.is_some() {
                Duration::from_millis(10)
            } else {
                pace.next()
                    .saturating_duration_since(Instant::now())
                    .min(POLL_INTERVAL)
            };
            if !readable(sock, wait)? {
                continue;
            }
            match sys_io::recv(fd, &mut answer) {
                Ok(n) => {
                    let Some(h) = DatagramRepr::parse(&answer[..n]) else {
                        continue;
                    };
                    if h.is_probe() || h.is_fin() {
                        continue;
                    }
                    // Answers arrive in (about) request order: search the sorted queue.
                    if let Ok(i) = waiting.binary_search_by_key(&h.seq, |&(s, _)| s) {
                        if let Some((_, sent_at)) = waiting.remove(i) {
                            trips.record(sent_at, ctl);
                        }
                    }
                }
                Err(e) if is_timeout(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e.into()),
            }
        }
        send_fins(sock, ctl.stream, seq);
        Ok(trips.finish(ctl, lost, pace.missed_by_stop(ctl)))
    }

    fn respond_loop(
        &self,
        sock: &UdpSocket,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let fd = sock.as_raw_fd();
        let mut request = vec![0u8; self.shape.request.max(self.shape.response) + 1];
        let mut response: Vec<u8> = crate::pattern(self.shape.response);
        let mut answered = Transactions::new(self.shape.bytes_per_transaction());
        let mut stop_seen: Option<Instant> = None;
        let mut last_arrival = Instant::now();
        let mut rate = AnswerRate::new(self.shape.gap);
        loop {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            if ctl.stop.is_raised() {
                let since = *stop_seen.get_or_insert_with(Instant::now);
                if since.elapsed() >= QUIET_AFTER_STOP && last_arrival.elapsed() >= QUIET_AFTER_STOP
                {
                    break;
                }
            }
            let n = match sys_io::recv(fd, &mut request) {
                Ok(n) => n,
                Err(e) if is_timeout(&e) || e.kind() == ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e.into()),
            };
            last_arrival = Instant::now();
            let Some(h) = DatagramRepr::parse(&request[..n]) else {
                continue;
            };
            if h.stream != ctl.stream || h.is_probe() {
                continue;
            }
            if h.is_fin() {
                break;
            }
            if !rate.wait(ctl) {
                return Err(EngineError::Aborted);
            }
            // The answer carries the request's header back, so the requester can match it.
            response[..HEADER_LEN].copy_from_slice(&request[..HEADER_LEN]);
            match sys_io::send(fd, &response) {
                Ok(_) => {
                    answered.count(ctl);
                }
                Err(e) if is_timeout(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(answered.report())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `per_second` paced transactions for `ms` milliseconds.
    fn paced_run(per_second: u64, ms: u64) -> (StreamReport, StreamReport, Duration) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let engine = UdpRr::new(
            RrShape::new(64, 64, Duration::ZERO).with_gap(crate::pace::gap_for(Some(per_second))),
        );
        let run = crate::testing::run_pair(
            &engine,
            Conn::Udp(a),
            Conn::Udp(b),
            Duration::from_millis(ms),
        );
        (run.sender, run.receiver, run.ran_for)
    }

    #[test]
    fn paced_requests_never_exceed_the_rate() {
        // 1000 per second: never more than one per ms the run lasted (+2 for the slots at both
        // ends), however busy the machine; how close it gets is the quiet test's question.
        let (r, p, ran_for) = paced_run(1000, 300);
        let most = ran_for.as_millis() as u64 + 2;
        assert!(
            (1..=most).contains(&r.counts.packets),
            "{} transactions in {ran_for:?}",
            r.counts.packets
        );
        assert_eq!(r.lost_transactions, 0);
        assert_eq!(r.counts.packets, p.counts.packets);
        assert_eq!(r.latency.unwrap().len(), r.counts.packets);
    }

    /// Timing: runs alone (scripts/test.sh runs `quiet::` tests one at a time after the rest).
    mod quiet {
        /// 5 ms apart: a sleep that wakes late by less than a gap keeps the schedule, and this
        /// VM's timer wake-ups are late by up to ~8 ms now and then (p99 3.2 ms measured), which
        /// at 1 ms gaps cost a run up to a third of its slots (`Pace` skips missed slots rather
        /// than bursting; pace.rs tests that logic exactly). At least 93.5 % of the slots.
        #[test]
        fn paced_requests_keep_their_schedule() {
            let (r, _, ran_for) = super::paced_run(200, 1000);
            let most = ran_for.as_millis() as u64 / 5 + 2;
            assert!(
                (187..=most).contains(&r.counts.packets),
                "{} transactions in {ran_for:?}",
                r.counts.packets
            );
        }
    }

    #[test]
    fn every_answered_request_is_timed() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let engine = UdpRr::new(RrShape::new(64, 200, Duration::ZERO));
        let run = crate::testing::run_pair(
            &engine,
            Conn::Udp(a),
            Conn::Udp(b),
            Duration::from_millis(100),
        );
        let (r, p) = (run.sender, run.receiver);
        assert!(r.counts.packets > 0, "{r:?}");
        assert_eq!(r.lost_transactions, 0);
        assert_eq!(r.counts.packets, p.counts.packets);
        assert_eq!(r.latency.unwrap().len(), r.counts.packets);
    }
}
