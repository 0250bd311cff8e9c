//! Bulk transfer over a stream socket (TCP or Unix): the sender writes a fixed buffer until
//! told to stop, then half-closes; the receiver reads until end of stream.
//!
//! [`SendMode::Auto`] (the default) picks per connection, by its congestion control, the
//! flow's stream count and where the peer is (see `auto_mode`). With [`SendMode::Splice`] on
//! TCP the sender splices the pattern's pages from a pipe (see `SpliceSource`); with
//! [`SendMode::Sendfile`] it calls sendfile(2) from an in-memory file (memfd) holding one
//! buffer of the pattern. Either way the kernel references those pages instead of copying
//! from user memory. The receiver copies into user memory, as applications do, unless the
//! spec's receive mode says to discard or map (`tcp_receive`).
//!
//! Memory is bounded whatever the write length: a sender's pattern (buffer, memfd, pipe) is at
//! most [`MAX_SEND_BUF`] bytes, and a longer write length is sent as calls of that many bytes
//! from the same buffer. The bytes on the wire are the same (the pattern repeats every 256
//! bytes, which divides the cap), and a stream socket takes at most its send buffer per call
//! anyway, so only the count of calls differs. A receiver reads at most [`MAX_READ`] a call.
//!
//! The sender waits for the receiver to close after reading everything, so its byte total,
//! the receiver's byte total and the final TCP_INFO (retransmits) all describe the same,
//! fully delivered stream.

use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;

use measure::cpu::CpuTime;
use wire::spec::{RxMode, SendMode};

use crate::budget::Quota;
use crate::splice_source::SpliceSource;
use crate::tcp_receive::receive;
use crate::{
    is_retry, pattern, Conn, Endpoint, EngineError, Role, StreamControl, StreamEngine,
    StreamReport, POLL_INTERVAL,
};

/// The `tcp_stream` engine.
#[derive(Debug, Clone)]
pub struct TcpStream {
    io_len: usize,
    mode: SendMode,
    rx_mode: RxMode,
    /// Streams in this sender's flow (the spec's `streams`), which `auto` weighs.
    streams: u16,
}

/// The most a sender holds of its pattern (and so writes per call), bytes: far above what a
/// socket's send buffer takes in one call (4 MiB is Linux's default `tcp_wmem` maximum), so
/// the rate is unchanged, while 128 streams of 16 sessions stay within 8 GiB even at the
/// protocol's 64 MiB write length.
pub const MAX_SEND_BUF: usize = 4 << 20;

impl TcpStream {
    /// An engine moving `io_len` bytes per call, sending with `mode`, receiving by copy.
    pub fn new(io_len: usize, mode: SendMode) -> Self {
        Self {
            io_len: io_len.max(1),
            mode,
            rx_mode: RxMode::Copy,
            streams: 1,
        }
    }

    /// The same engine for a flow of `streams` streams (what `auto_mode` weighs).
    pub fn with_streams(self, streams: u16) -> Self {
        Self {
            streams: streams.max(1),
            ..self
        }
    }

    /// The same engine receiving in `rx_mode` (see `tcp_receive`).
    pub fn with_rx_mode(self, rx_mode: RxMode) -> Self {
        Self { rx_mode, ..self }
    }
}

impl StreamEngine for TcpStream {
    fn name(&self) -> &'static str {
        "tcp_stream"
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mut conn = end.into_socket(self.name())?;
        conn.set_read_timeout(Some(POLL_INTERVAL))?;
        conn.set_write_timeout(Some(POLL_INTERVAL))?;
        let cpu_start = CpuTime::thread_now();
        let unit = self.io_len.min(MAX_SEND_BUF);
        let mut report = match role {
            Role::Sender => self.send(&mut conn, unit, ctl)?,
            Role::Receiver => receive(&mut conn, self.io_len.min(MAX_READ), self.rx_mode, ctl)?,
        };
        report.cpu = CpuTime::thread_now().since(cpu_start);
        Ok(report)
    }
}

impl TcpStream {
    /// Sends in the mode that suits `conn` (`auto` resolved, write on a Unix socket), and says
    /// in the final counts which mode ran.
    fn send(
        &self,
        conn: &mut Conn,
        unit: usize,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mode = match self.mode {
            _ if !conn.is_tcp() => SendMode::Write,
            SendMode::Auto => auto_mode(conn, self.streams),
            m => m,
        };
        let (mut report, ran) = if mode == SendMode::Write {
            let buf = pattern(unit);
            (
                send(conn, ctl, unit, |c, max| c.write(&buf[..max]))?,
                SendMode::Write,
            )
        } else {
            let source = PatternFile::new(unit)?;
            // A pipe that cannot hold the pattern (above /proc/sys/fs/pipe-max-size without
            // CAP_SYS_RESOURCE) leaves sendfile, which references the same pages.
            let spliced = match mode {
                SendMode::Splice => {
                    SpliceSource::new(&source.file, splice_held_len(unit, self.streams)).ok()
                }
                _ => None,
            };
            match spliced {
                Some(mut pipe) => (
                    send(conn, ctl, unit, |c, max| pipe.send(c.as_raw_fd(), max))?,
                    SendMode::Splice,
                ),
                None => (
                    send(conn, ctl, unit, |c, max| source.send(c, max))?,
                    SendMode::Sendfile,
                ),
            }
        };
        report.counts.send_mode = Some(ran);
        Ok(report)
    }
}

/// The mode [`SendMode::Auto`] sends a TCP connection in: write(2) where its congestion
/// control paces every send (BBR, whose pacing timer releases the queue in bursts) and the
/// flow is one stream or stays on this host, splice otherwise. Why: on this project's 2-core
/// test host, under BBR write moved 1.2-1.5x what splice did on loopback at one to four
/// streams and 1.3x for one stream over a veth pair, but 0.87x for two streams over the veth
/// pair, while under CUBIC splice moved 1.6-1.8x what write did (docs/METHODOLOGY.md section
/// 10c has the tables).
pub(crate) fn auto_mode(conn: &Conn, streams: u16) -> SendMode {
    let paced =
        crate::congestion::congestion_of(conn.as_raw_fd()).is_some_and(|cc| cc.starts_with("bbr"));
    match paced && (streams <= 1 || conn.peer_on_this_host()) {
        true => SendMode::Write,
        false => SendMode::Splice,
    }
}

/// The bytes of the pattern one splice sender of a flow of `streams` holds (and so sends at
/// most per call): its whole write for one stream; for several, a share of 512 KiB (at least
/// 64 KiB, whole pages), so that the flow's pattern pages together stay about as many as one
/// stream's. Why: every byte the receivers copy is read from these pages, and with four
/// streams of 512 KiB each (2 MiB, a core's whole L2 cache here) the receivers' copy cost
/// 1.4x the cycles per byte it did at 128 KiB each; four streams under CUBIC then moved
/// 0.84-0.86x iperf3 3.21 `-Z -P 4` (which sends 128 KiB buffers), and 0.94-1.01x with this
/// share (docs/METHODOLOGY.md section 10b).
pub(crate) fn splice_held_len(unit: usize, streams: u16) -> usize {
    const FLOW_BYTES: usize = 512 << 10;
    const LEAST: usize = 64 << 10;
    if streams <= 1 {
        return unit;
    }
    let share = (FLOW_BYTES / usize::from(streams)).max(LEAST) & !4095;
    unit.min(share)
}

/// An anonymous in-memory file holding the pattern: what sendfile(2) sends from, and what
/// [`SpliceSource`] loads into its pipe.
pub(crate) struct PatternFile {
    pub(crate) file: std::fs::File,
}

impl PatternFile {
    pub(crate) fn new(len: usize) -> std::io::Result<Self> {
        // SAFETY: the name is a valid C string; the returned descriptor is owned by `File`.
        let fd = unsafe { libc::memfd_create(c"linerate-pattern".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and nothing else owns it.
        let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        file.write_all(&pattern(len))?;
        Ok(Self { file })
    }

    /// Sends up to `len` bytes of the file from its start.
    fn send(&self, conn: &Conn, len: usize) -> std::io::Result<usize> {
        let mut offset: libc::off_t = 0;
        // SAFETY: both descriptors are open for the call; `offset` is a valid pointer.
        let n =
            unsafe { libc::sendfile(conn.as_raw_fd(), self.file.as_raw_fd(), &mut offset, len) };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// Calls `put` (one send of at most `max` bytes of the pattern, `max` at most `unit`) until
/// told to stop or, by amount, until its share is sent, counting what the socket took.
fn send(
    conn: &mut Conn,
    ctl: StreamControl<'_>,
    unit: usize,
    mut put: impl FnMut(&mut Conn, usize) -> std::io::Result<usize>,
) -> Result<StreamReport, EngineError> {
    let mut total = 0u64;
    let mut quota = Quota::new(ctl.budget);
    while !ctl.stop.is_raised() {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        let max = quota.next(unit as u64) as usize;
        if max == 0 {
            break;
        }
        match put(conn, max) {
            Ok(n) => {
                total += n as u64;
                quota.sent(n as u64);
                ctl.counter.publish(total);
            }
            Err(e) if is_retry(e.kind()) => {}
            // A reset once the test's time is up is the peer ending the test (an iperf3 server
            // closes with data unread at TEST_END, which can land mid-write), not a failure.
            Err(e)
                if ctl.stop.is_raised()
                    && matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
            {
                break
            }
            Err(e) => return Err(e.into()),
        }
    }
    finish_sending(conn, total, ctl)
}

/// Half-closes the stream and waits for the receiver to read everything and close: then the
/// stream is fully delivered, and the sender's TCP_INFO describes all of it.
pub(crate) fn finish_sending(
    conn: &mut Conn,
    total: u64,
    ctl: StreamControl<'_>,
) -> Result<StreamReport, EngineError> {
    match conn.shutdown(Shutdown::Write) {
        Ok(()) => {}
        // The peer closed first, with data unread (an iperf3 server stops reading at the
        // test's end), so the connection was reset: nothing more will be delivered, and the
        // receiver's count says what arrived.
        Err(e) if e.kind() == ErrorKind::NotConnected => {}
        Err(e) => return Err(e.into()),
    }
    // Wait for the receiver to read everything and close: then the stream is fully delivered.
    let mut scratch = [0u8; 256];
    loop {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        match conn.read(&mut scratch) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if is_retry(e.kind()) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e.into()),
        }
    }
    let tcp_info = match conn {
        Conn::Tcp(_) => measure::tcp_info::read(conn.as_raw_fd()).ok(),
        _ => None,
    };
    Ok(StreamReport {
        bytes_total: total,
        tcp_info,
        counts: wire::msg::StreamCounts {
            bytes: total,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// The most a receiver reads per call, whatever the write length: its buffer stays in the
/// copying core's L2 cache (512 KiB per core here, beside the kernel's own data). A 512 KiB
/// buffer, the default write length, did not: on a 2-core loopback 3 of 4 single-stream runs
/// fell into a state where every copy ran cold, 10.5–11.6 Gbit/s at 7.8–8.3 % receiver CPU
/// per Gbit/s, against 27–43 Gbit/s at 1.7–2.1 % with reads of 128 KiB (4 of 4; alternating
/// runs, the writes 512 KiB in both). iperf3 and nuttcp read 128 KiB by default too.
pub const MAX_READ: usize = 128 << 10;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Signal, StreamCounters};
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    #[test]
    fn sender_and_receiver_totals_reconcile() {
        let (a, b) = UnixStream::pair().unwrap();
        let engine = TcpStream::new(4096, SendMode::Write);
        let run = crate::testing::run_pair(
            &engine,
            Conn::Unix(a),
            Conn::Unix(b),
            Duration::from_millis(50),
        );
        let (tx, rx) = (run.sender, run.receiver);
        assert!(tx.bytes_total > 0);
        assert_eq!(tx.bytes_total, rx.bytes_total);
        assert_eq!(run.sender_published, run.receiver_published);
        assert!(tx.tcp_info.is_none());
    }

    #[test]
    fn by_amount_each_send_mode_sends_exactly_it_and_both_ends_end_on_their_own() {
        for mode in [SendMode::Write, SendMode::Splice, SendMode::Sendfile] {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (b, _) = listener.accept().unwrap();
            // Not a whole number of writes, so the last one is cut to what is left.
            let amount = 3 * 100_000 + 12_345;
            let budget = crate::budget::Budget::new(amount);
            let run = crate::testing::run_pair_by_amount(
                &TcpStream::new(100_000, mode),
                Conn::Tcp(a),
                Conn::Tcp(b),
                &budget,
                Duration::from_secs(20),
            );
            assert!(
                run.ran_for < Duration::from_secs(20),
                "{mode:?} did not end"
            );
            assert_eq!(run.sender.bytes_total, amount, "{mode:?}");
            assert_eq!(run.receiver.bytes_total, amount, "{mode:?}");
            assert_eq!(budget.take(1), 0, "{mode:?}");
        }
    }

    #[test]
    fn a_splice_sender_holds_its_whole_write_alone_and_a_share_of_512_kib_among_several() {
        assert_eq!(splice_held_len(4 << 20, 1), 4 << 20);
        assert_eq!(splice_held_len(100_000, 1), 100_000);
        assert_eq!(splice_held_len(512 << 10, 2), 256 << 10);
        assert_eq!(splice_held_len(512 << 10, 4), 128 << 10);
        assert_eq!(splice_held_len(512 << 10, 64), 64 << 10);
        assert_eq!(splice_held_len(32 << 10, 4), 32 << 10);
        // A share that is no whole number of pages is cut to one (and so of the 256-byte
        // pattern period): 512 KiB / 3 = 174762.67 -> 172032.
        assert_eq!(splice_held_len(512 << 10, 3), 172_032);
        assert_eq!(splice_held_len(512 << 10, 3) % 256, 0);
    }

    #[test]
    fn splice_over_tcp_reconciles() {
        zero_copy_over_tcp_reconciles(SendMode::Splice);
    }

    #[test]
    fn sendfile_over_tcp_reconciles() {
        zero_copy_over_tcp_reconciles(SendMode::Sendfile);
    }

    fn zero_copy_over_tcp_reconciles(mode: SendMode) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        let engine = TcpStream::new(100_000, mode);
        let (stop, abort) = (Signal::new(), crate::Abort::new());
        let (sent, received) = (StreamCounters::default(), StreamCounters::default());
        let mut got = Vec::new();
        std::thread::scope(|s| {
            let tx = s.spawn(|| {
                let ctl = StreamControl {
                    stream: 0,
                    counter: &sent,
                    stop: &stop,
                    abort: &abort,
                    origin: std::time::Instant::now(),
                    budget: None,
                };
                engine.run(Conn::Tcp(a).into(), Role::Sender, ctl)
            });
            // Read the first bytes by hand to check the pattern arrives intact.
            let mut b = b;
            got.resize(1000, 0);
            b.read_exact(&mut got).unwrap();
            let rx = s.spawn(|| {
                let ctl = StreamControl {
                    stream: 0,
                    counter: &received,
                    stop: &stop,
                    abort: &abort,
                    origin: std::time::Instant::now(),
                    budget: None,
                };
                engine.run(Conn::Tcp(b).into(), Role::Receiver, ctl)
            });
            std::thread::sleep(Duration::from_millis(50));
            stop.raise();
            let (tx, rx) = (tx.join().unwrap().unwrap(), rx.join().unwrap().unwrap());
            assert_eq!(tx.bytes_total, rx.bytes_total + 1000);
            assert!(tx.tcp_info.is_some());
        });
        assert_eq!(got, pattern(1000));
    }

    #[test]
    fn abort_ends_a_receiver_with_no_sender() {
        let (a, _keep) = UnixStream::pair().unwrap();
        let engine = TcpStream::new(1024, SendMode::Write);
        let (stop, abort) = (Signal::new(), crate::Abort::new());
        let counter = StreamCounters::default();
        abort.raise();
        let ctl = StreamControl {
            stream: 0,
            counter: &counter,
            stop: &stop,
            abort: &abort,
            origin: std::time::Instant::now(),
            budget: None,
        };
        assert!(matches!(
            engine.run(Conn::Unix(a).into(), Role::Receiver, ctl),
            Err(EngineError::Aborted)
        ));
    }
}
