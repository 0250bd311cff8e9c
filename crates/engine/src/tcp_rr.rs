//! TCP request/response: the requester (client) writes a request, reads the whole response,
//! records the round trip, and repeats; the responder (server) answers each request.
//!
//! One transaction is in flight per connection, so `mean round trip × transactions/s = 1` per
//! stream (Little's law) up to the time between transactions. The requester publishes its round
//! trips every 10 ms for per-interval percentiles and keeps the whole run's histogram.

use std::io::ErrorKind;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::Instant;

use measure::cpu::CpuTime;

use crate::answer_rate::AnswerRate;
use crate::pace::Pace;
use crate::round_trips::{RoundTrips, RrShape, Transactions};
use crate::{
    is_retry, Conn, Endpoint, EngineError, Role, StreamControl, StreamEngine, StreamReport,
    POLL_INTERVAL,
};

/// The `tcp_rr` engine.
#[derive(Debug, Clone)]
pub struct TcpRr {
    shape: RrShape,
}

impl TcpRr {
    /// Repeats `shape`'s transaction on one connection.
    pub fn new(shape: RrShape) -> Self {
        Self { shape }
    }
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean end of stream before the first byte.
///
/// `abort` is looked at only when a call did not bring data (end of stream, an error, a
/// timeout): an abort shuts a registered socket down (`crate::abort`), which ends a blocked or
/// later call, and a socket with a timeout comes back here. One cache line less per call in
/// the round trip.
pub(crate) fn read_message(
    conn: &mut Conn,
    buf: &mut [u8],
    ctl: &StreamControl<'_>,
) -> Result<bool, EngineError> {
    let mut filled = 0;
    while filled < buf.len() {
        match crate::sys_io::recv(conn.as_raw_fd(), &mut buf[filled..]) {
            // A socket shut down by the abort reads as end of stream.
            Ok(0) | Err(_) if ctl.abort.is_raised() => return Err(EngineError::Aborted),
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => {
                return Err(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "peer closed mid-message",
                )
                .into())
            }
            Ok(n) => filled += n,
            Err(e) if is_retry(e.kind()) => {}
            Err(e) => return Err(e.into()),
        }
        if filled < buf.len() && ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
    }
    Ok(true)
}

pub(crate) fn write_message(
    conn: &mut Conn,
    buf: &[u8],
    ctl: &StreamControl<'_>,
) -> Result<(), EngineError> {
    write_message_with(conn, buf, ctl, |c, rest| {
        crate::sys_io::send(c.as_raw_fd(), rest)
    })
}

/// Writes all of `buf` with `put` (one send call on the rest), retrying timeouts and
/// interruptions, until done or `abort`.
pub(crate) fn write_message_with(
    conn: &mut Conn,
    buf: &[u8],
    ctl: &StreamControl<'_>,
    mut put: impl FnMut(&mut Conn, &[u8]) -> std::io::Result<usize>,
) -> Result<(), EngineError> {
    let mut sent = 0;
    while sent < buf.len() {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        match put(conn, &buf[sent..]) {
            Err(_) if ctl.abort.is_raised() => return Err(EngineError::Aborted),
            Ok(n) => sent += n,
            Err(e) if is_retry(e.kind()) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl StreamEngine for TcpRr {
    fn name(&self) -> &'static str {
        "tcp_rr"
    }

    /// Two socket calls per transaction on each end: see `crate::fd_table`.
    fn private_fd_table(&self) -> bool {
        true
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mut conn = end.into_socket(self.name())?;
        // Reads block without a timeout, which would arm a kernel timer at every wait, twice
        // per transaction (see `crate::abort`); raising abort shuts the socket down instead.
        conn.set_read_timeout(None)?;
        conn.set_write_timeout(Some(POLL_INTERVAL))?;
        let _wake = ctl.abort.wake_on_raise(conn.as_raw_fd());
        let cpu_start = CpuTime::thread_now();
        let mut report = match role {
            Role::Sender => self.request_loop(&mut conn, &ctl)?,
            Role::Receiver => self.respond_loop(&mut conn, &ctl)?,
        };
        report.cpu = CpuTime::thread_now().since(cpu_start);
        Ok(report)
    }
}

impl TcpRr {
    fn request_loop(
        &self,
        conn: &mut Conn,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let request: Vec<u8> = crate::pattern(self.shape.request);
        let mut response = vec![0u8; self.shape.response];
        let mut trips = RoundTrips::new(self.shape.omit, self.shape.bytes_per_transaction());
        let mut pace = Pace::new(self.shape.gap, ctl.origin);
        while !ctl.stop.is_raised() && pace.wait(ctl) {
            let start = Instant::now();
            write_message(conn, &request, ctl)?;
            if !read_message(conn, &mut response, ctl)? {
                return Err(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "responder closed the connection",
                )
                .into());
            }
            trips.record(start, ctl);
        }
        conn.shutdown(Shutdown::Write)?;
        // The responder closes after our end of stream.
        let mut scratch = [0u8; 1];
        while read_message(conn, &mut scratch, ctl)? {}
        Ok(trips.finish(ctl, 0, pace.missed_by_stop(ctl)))
    }

    fn respond_loop(
        &self,
        conn: &mut Conn,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mut request = vec![0u8; self.shape.request];
        let response: Vec<u8> = crate::pattern(self.shape.response);
        let mut answered = Transactions::new(self.shape.bytes_per_transaction());
        let mut rate = AnswerRate::new(self.shape.gap);
        while read_message(conn, &mut request, ctl)? {
            if !rate.wait(ctl) {
                return Err(EngineError::Aborted);
            }
            write_message(conn, &response, ctl)?;
            answered.count(ctl);
        }
        // The requester waits for our end of stream, and closing our copy of the socket does
        // not send it while the shared table's copy is open (`crate::fd_table`). A requester
        // already gone (ENOTCONN) needs none: every request was answered, as before.
        let _ = conn.shutdown(Shutdown::Write);
        Ok(answered.report())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    #[test]
    fn requests_and_responses_pair_up() {
        let (a, b) = UnixStream::pair().unwrap();
        let engine = TcpRr::new(RrShape::new(10, 300, Duration::ZERO));
        let run = crate::testing::run_pair(
            &engine,
            Conn::Unix(a),
            Conn::Unix(b),
            Duration::from_millis(100),
        );
        let (r, p) = (run.sender, run.receiver);
        assert!(r.counts.packets > 0, "{r:?}");
        assert_eq!(r.counts.packets, p.counts.packets, "every request answered");
        assert_eq!(r.latency.as_ref().unwrap().len(), r.counts.packets);
        assert_eq!(r.bytes_total, r.counts.packets * 310);
    }

    /// Both ends block in reads without a timeout; the abort's shutdown ends them, as
    /// `Aborted`, long before any timeout would have (the peers never send or close).
    #[test]
    fn abort_wakes_both_ends_blocked_without_a_timeout() {
        let engine = || Box::new(TcpRr::new(RrShape::new(10, 300, Duration::ZERO)));
        let (requester, silent_responder) = UnixStream::pair().unwrap();
        let (responder, silent_requester) = UnixStream::pair().unwrap();
        let mut tx = crate::Workers::new(engine());
        let mut rx = crate::Workers::new(engine());
        tx.spawn(Conn::Unix(requester), Role::Sender, "q".into())
            .unwrap();
        rx.spawn(Conn::Unix(responder), Role::Receiver, "a".into())
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let start = std::time::Instant::now();
        let (sent, answered) = (tx.join(Duration::ZERO), rx.join(Duration::ZERO));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        for out in [&sent[0], &answered[0]] {
            assert!(
                matches!(
                    out.result,
                    Some(Err(crate::WorkerError::Engine(crate::EngineError::Aborted)))
                ),
                "{out:?}"
            );
        }
        drop((silent_responder, silent_requester));
    }
}
