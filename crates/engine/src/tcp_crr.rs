//! TCP connect/request/response/close: every transaction is a new connection.
//!
//! The requester (client) connects to the session's own listener, sends the request, reads
//! the response, then reads the server's end of stream and closes; the round trip it records
//! runs from the start of `connect` to the last byte of the response. The responder (server)
//! closes first, so TIME_WAIT stays on the server (one listening port) and the client's
//! ephemeral ports are free again at once. A connect that fails for lack of local ports says
//! so. Responders keep serving until no connection has come for 200 ms after their `stop`.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use measure::cpu::CpuTime;

use crate::answer_rate::AnswerRate;
use crate::pace::Pace;
use crate::round_trips::{RoundTrips, RrShape, Transactions};
use crate::sockopt::{connect_tcp_quick, ConnectError};
use crate::tcp_rr::{read_message, write_message};
use crate::{
    is_retry, Conn, CrrListener, CrrTarget, Endpoint, EngineError, Role, StreamControl,
    StreamEngine, StreamReport, POLL_INTERVAL,
};

/// How long responders wait for one more connection after their `stop`.
const QUIET_AFTER_STOP: Duration = Duration::from_millis(200);

/// TCP_DEFER_ACCEPT, seconds: how long the kernel holds a connection without data before
/// handing it to accept anyway (requests are at least one byte, so it is not reached normally).
const DEFER_ACCEPT_S: i32 = 1;

/// How long one connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The engine of a new connection per transaction: `tcp_crr`, and `tcp_cc`, whose empty
/// transaction is connect and close.
#[derive(Debug, Clone)]
pub struct TcpCrr {
    shape: RrShape,
}

impl TcpCrr {
    /// Repeats `shape`'s transaction, each on a new connection.
    pub fn new(shape: RrShape) -> Self {
        Self { shape }
    }
}

impl StreamEngine for TcpCrr {
    fn name(&self) -> &'static str {
        "tcp_crr"
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let cpu_start = CpuTime::thread_now();
        let mut report = match (role, end) {
            (Role::Sender, Endpoint::Connect(target)) => self.request_loop(&target, &ctl)?,
            (Role::Receiver, Endpoint::Socket(Conn::CrrListener(crr))) => {
                self.respond_loop(&crr, &ctl)?
            }
            _ => {
                return Err(std::io::Error::new(
                    ErrorKind::InvalidInput,
                    "tcp_crr needs a connection target (client) or a listener (server)",
                )
                .into())
            }
        };
        report.cpu = CpuTime::thread_now().since(cpu_start);
        Ok(report)
    }
}

impl TcpCrr {
    fn request_loop(
        &self,
        target: &CrrTarget,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let request: Vec<u8> = crate::pattern(self.shape.request);
        let mut response = vec![0u8; self.shape.response];
        let mut trips = RoundTrips::new(self.shape.omit, self.shape.bytes_per_transaction());
        let mut pace = Pace::new(self.shape.gap, ctl.origin);
        while !ctl.stop.is_raised() && pace.wait(ctl) {
            let start = Instant::now();
            let abort = || ctl.abort.is_raised();
            let stream = connect_tcp_quick(
                target.addr,
                &target.options,
                POLL_INTERVAL,
                CONNECT_TIMEOUT,
                abort,
            )
            .map_err(|e| match e {
                ConnectError::Io(io) if io.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
                    EngineError::Io(std::io::Error::new(
                        io.kind(),
                        "no free local port for a new connection (ephemeral ports exhausted); \
                             widen net.ipv4.ip_local_port_range or run fewer streams",
                    ))
                }
                ConnectError::Io(io) => EngineError::Io(io),
                other => EngineError::Io(std::io::Error::other(other.to_string())),
            })?;
            let mut conn = Conn::Tcp(stream);
            // Reads wait without a timeout; the abort shuts the socket down (`crate::abort`).
            let wake = ctl.abort.wake_on_raise(conn.as_raw_fd());
            write_message(&mut conn, &request, ctl)?;
            if !read_message(&mut conn, &mut response, ctl)? {
                return Err(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "responder closed before answering",
                )
                .into());
            }
            let done_at = Instant::now();
            // The server closes first; then we close, leaving no TIME_WAIT on this side.
            let mut rest = [0u8; 16];
            while !ctl.abort.is_raised() {
                match crate::sys_io::recv(conn.as_raw_fd(), &mut rest) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if is_retry(e.kind()) => {}
                    Err(_) => break,
                }
            }
            drop(wake); // unregistered before the descriptor is closed and reused
            drop(conn);
            trips.record_until(start, done_at, ctl);
        }
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        Ok(trips.finish(ctl, 0, pace.missed_by_stop(ctl)))
    }

    fn respond_loop(
        &self,
        crr: &CrrListener,
        ctl: &StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let listener = &crr.listener;
        let mut request = vec![0u8; self.shape.request];
        let response: Vec<u8> = crate::pattern(self.shape.response);
        let mut answered = Transactions::new(self.shape.bytes_per_transaction());
        // Its options were set when it was made (`listen`); the responders only
        // share its one blocking mode.
        listener.set_nonblocking(false)?;
        let mut last_connection = Instant::now();
        let mut rate = AnswerRate::new(self.shape.gap);
        loop {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            if ctl.stop.is_raised() && last_connection.elapsed() >= QUIET_AFTER_STOP {
                break;
            }
            let stream = match listener.accept() {
                Ok((s, from))
                    if crr
                        .only_from
                        .is_none_or(|ip| ip == from.ip().to_canonical()) =>
                {
                    s
                }
                // Someone else: closed before a byte of it is read, and counted.
                Ok(_) => {
                    crr.strangers.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(e) if is_retry(e.kind()) => continue,
                Err(e) => return Err(e.into()),
            };
            last_connection = Instant::now();
            let mut conn = Conn::Tcp(stream);
            match serve_one(&mut conn, &mut request, &response, &mut rate, ctl)? {
                Served::Answered => {}
                Served::Closed => continue,
                Served::Dropped => {
                    crr.dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            // Closing first (the whole request was read, so this sends a FIN, not a reset)
            // leaves TIME_WAIT on this side. The FIN rides on the response's last segment,
            // which MSG_MORE held back: the requester reads the response and the end of stream
            // from one segment instead of waking again for a FIN of its own.
            drop(conn);
            answered.count(ctl);
        }
        Ok(answered.report())
    }
}

/// Makes a bound `tcp_crr` socket listen, its options set so that no connection can come in
/// without them: a connection takes the listener's socket timeouts when the kernel makes it,
/// at the handshake, so they are set before `listen`; a connection made without them would
/// block a responder with no timeout. (`listen` on a socket that already listens only
/// changes its backlog.)
///
/// A blocking accept with the listener's receive timeout wakes at least every POLL_INTERVAL
/// to look at stop and abort. Accepted connections inherit both timeouts and the options the
/// server set on the listener, so each costs accept, read, write and close, no more.
/// TCP_DEFER_ACCEPT hands a connection to accept when its first data (the request) arrives
/// rather than at the handshake's last ACK: one responder wake-up per connection instead of
/// two (accept, then the read that waits for the request). TCP_QUICKACK off (inherited as the
/// delayed-ACK "ping-pong" mode) lets the response carry the request's ACK instead of a bare
/// ACK sent ahead of it; it is set after `listen`, which resets the delayed-ACK state.
pub(crate) fn listen(listener: &TcpListener, backlog: i32) -> std::io::Result<()> {
    let sock = socket2::SockRef::from(listener);
    sock.set_read_timeout(Some(POLL_INTERVAL))?;
    sock.set_write_timeout(Some(POLL_INTERVAL))?;
    sock.listen(backlog)?;
    let fd = listener.as_raw_fd();
    crate::sockopt::setsockopt_int(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_DEFER_ACCEPT,
        DEFER_ACCEPT_S,
    )?;
    crate::sockopt::setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 0)
}

/// How one accepted connection's transaction ended.
enum Served {
    /// The request read whole and the response written.
    Answered,
    /// Closed before sending anything.
    Closed,
    /// Stalled (no byte moved for [`STALL`]), broken off mid-request, or reset.
    Dropped,
}

/// How long a transaction may go without moving a byte before its connection is dropped, so
/// that one stalled connection holds up its responder this long at most, not the whole test.
/// A second is ten times a loopback RTO's floor and far above any healthy path's gap between
/// segments; a transaction on a path that loses a segment twice in a row may be dropped (the
/// requester then reports the stream's error).
pub const STALL: Duration = Duration::from_secs(1);

/// Reads the request and writes the response on one accepted connection. Only an abort is an
/// error: whatever the peer does wrong costs this transaction, never the responder. Every
/// call waits at most [`POLL_INTERVAL`] (the timeouts inherited from the listener), so the
/// calls that brought nothing are counted instead of reading a clock on every call.
fn serve_one(
    conn: &mut Conn,
    request: &mut [u8],
    response: &[u8],
    rate: &mut AnswerRate,
    ctl: &StreamControl<'_>,
) -> Result<Served, EngineError> {
    let patience = (STALL.as_millis() / POLL_INTERVAL.as_millis().max(1)) as u32;
    let mut quiet = 0u32;
    let mut filled = 0;
    while filled < request.len() {
        match crate::sys_io::recv(conn.as_raw_fd(), &mut request[filled..]) {
            Ok(0) | Err(_) if ctl.abort.is_raised() => return Err(EngineError::Aborted),
            Ok(0) if filled == 0 => return Ok(Served::Closed),
            Ok(n) if n > 0 => (filled, quiet) = (filled + n, 0),
            Err(e) if is_retry(e.kind()) && quiet < patience => quiet += 1,
            _ => return Ok(Served::Dropped),
        }
    }
    // The answer waits for its turn under the spec's rate (a server with --max-rate).
    if !rate.wait(ctl) {
        return Err(EngineError::Aborted);
    }
    // MSG_MORE: full segments leave at once, the last partial one waits for the close that
    // follows, which sets FIN on it.
    let (mut sent, mut quiet) = (0, 0u32);
    while sent < response.len() {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        match crate::sys_io::send_with(conn.as_raw_fd(), &response[sent..], libc::MSG_MORE) {
            Err(_) if ctl.abort.is_raised() => return Err(EngineError::Aborted),
            Ok(n) => (sent, quiet) = (sent + n, 0),
            Err(e) if is_retry(e.kind()) && quiet < patience => quiet += 1,
            Err(_) => return Ok(Served::Dropped),
        }
    }
    Ok(Served::Answered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sockopt::SocketOptions;
    use std::sync::Arc;

    fn pair(request: usize, response: usize) -> (StreamReport, StreamReport) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let engine = TcpCrr::new(RrShape::new(request, response, Duration::ZERO));
        let run = crate::testing::run_pair(
            &engine,
            CrrTarget {
                addr,
                options: SocketOptions::default(),
            },
            Conn::CrrListener(Arc::new(CrrListener::new(listener, None, 128).unwrap())),
            Duration::from_millis(200),
        );
        (run.sender, run.receiver)
    }

    #[test]
    fn every_connection_is_answered_once() {
        let (r, p) = pair(64, 64);
        assert!(r.counts.packets > 0, "{r:?}");
        assert_eq!(r.counts.packets, p.counts.packets);
        assert_eq!(r.latency.unwrap().len(), r.counts.packets);
        assert_eq!(r.bytes_total, r.counts.packets * 128);
    }

    #[test]
    fn a_response_of_many_segments_arrives_whole_before_the_fin() {
        // 200 000 bytes: many full segments leave at once, the held last one carries the FIN.
        let (r, p) = pair(10, 200_000);
        assert!(r.counts.packets > 0, "{r:?}");
        assert_eq!(r.counts.packets, p.counts.packets);
        assert_eq!(r.bytes_total, r.counts.packets * 200_010);
    }
}
