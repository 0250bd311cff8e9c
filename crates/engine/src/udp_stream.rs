//! UDP datagrams at a paced rate over a connected UDP socket.
//!
//! The sender stamps every datagram with a [`wire::datagram`] header (stream, sequence, send
//! time: one clock reading per batch) and sends batches with sendmmsg(2); after `stop` it sends
//! FIN datagrams carrying its total. The receiver reads batches with recvmmsg(2) and feeds
//! each header to a [`SeqTracker`] (loss, reordering, duplicates, jitter), publishing its counts
//! once per batch. It ends when a FIN has been seen and 50 ms have passed (stragglers), or 500 ms
//! after `stop` without a datagram (every FIN lost).

use std::io::{self, ErrorKind};
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use measure::clock::now_ns;
use measure::cpu::CpuTime;
use measure::udp_stats::SeqTracker;
use wire::datagram::{write_header, DatagramRepr, FLAG_FIN, HEADER_LEN};
use wire::msg::StreamCounts;
use wire::{TestKind, TestSpec};

use crate::{Conn, EngineError, Role, StreamControl, StreamEngine, StreamReport, POLL_INTERVAL};

/// How long the receiver keeps reading after a FIN, for datagrams reordered behind it.
const AFTER_FIN: Duration = Duration::from_millis(50);
/// How long the receiver waits after `stop` with nothing arriving before it gives up on FIN.
const QUIET_AFTER_STOP: Duration = Duration::from_millis(500);
/// FIN datagrams sent, 1 ms apart, so that one loss does not cost the receiver its drain.
const FIN_COUNT: usize = 3;

/// The `udp_stream` engine.
#[derive(Debug, Clone)]
pub struct UdpStream {
    payload: usize,
    batch: usize,
    target_pps: Option<f64>,
    burst: u32,
}

impl UdpStream {
    /// An engine for `spec`'s payload size, batching and pacing.
    pub fn new(spec: &TestSpec) -> Self {
        Self {
            payload: (spec.write_len_bytes as usize).max(HEADER_LEN),
            batch: usize::from(spec.batch_packets.max(1)),
            target_pps: spec.target_pps(),
            burst: spec.burst_packets,
        }
    }
}

impl StreamEngine for UdpStream {
    fn kind(&self) -> TestKind {
        TestKind::UdpStream
    }

    fn run(
        &self,
        conn: Conn,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let Conn::Udp(sock) = conn else {
            return Err(EngineError::Io(io::Error::new(
                ErrorKind::InvalidInput,
                "udp_stream needs a UDP socket",
            )));
        };
        sock.set_read_timeout(Some(POLL_INTERVAL))?;
        sock.set_write_timeout(Some(POLL_INTERVAL))?;
        let cpu_start = CpuTime::thread_now();
        let mut report = match role {
            Role::Sender => self.send(&sock, ctl)?,
            Role::Receiver => self.receive(&sock, ctl)?,
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

/// Buffers and headers for one sendmmsg/recvmmsg call, allocated once.
struct Batch {
    buf: Vec<u8>,
    slot: usize,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl Batch {
    fn new(count: usize, slot: usize) -> Self {
        let buf: Vec<u8> = (0..count * slot).map(|i| (i * 7 + 13) as u8).collect();
        let mut batch = Self {
            buf,
            slot,
            iov: Vec::with_capacity(count),
            msgs: Vec::with_capacity(count),
        };
        for i in 0..count {
            batch.iov.push(libc::iovec {
                // SAFETY: the offset is inside `buf`, whose heap block never moves.
                iov_base: unsafe { batch.buf.as_mut_ptr().add(i * slot) }.cast(),
                iov_len: slot,
            });
        }
        for i in 0..count {
            // SAFETY: mmsghdr is plain data; zero is a valid empty header.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: the index is inside `iov`, whose heap block never moves.
            m.msg_hdr.msg_iov = unsafe { batch.iov.as_mut_ptr().add(i) };
            m.msg_hdr.msg_iovlen = 1;
            batch.msgs.push(m);
        }
        batch
    }

    fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.buf[i * self.slot..(i + 1) * self.slot]
    }

    fn received(&self, i: usize) -> &[u8] {
        let len = (self.msgs[i].msg_len as usize).min(self.slot);
        &self.buf[i * self.slot..i * self.slot + len]
    }
}

fn sendmmsg(fd: RawFd, batch: &mut Batch, n: usize) -> io::Result<usize> {
    // SAFETY: `msgs` holds at least `n` initialised headers pointing into live buffers.
    let rc = unsafe { libc::sendmmsg(fd, batch.msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

fn recvmmsg(fd: RawFd, batch: &mut Batch) -> io::Result<usize> {
    for m in &mut batch.msgs {
        m.msg_len = 0;
    }
    // SAFETY: `msgs` holds initialised headers pointing into live buffers of `slot` bytes.
    let rc = unsafe {
        libc::recvmmsg(
            fd,
            batch.msgs.as_mut_ptr(),
            batch.msgs.len() as libc::c_uint,
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock
            | ErrorKind::TimedOut
            | ErrorKind::Interrupted
            | ErrorKind::ConnectionRefused
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

impl UdpStream {
    fn send(&self, sock: &UdpSocket, ctl: StreamControl<'_>) -> Result<StreamReport, EngineError> {
        let fd = sock.as_raw_fd();
        let mut batch = Batch::new(self.batch, self.payload);
        let pacer = self
            .target_pps
            .map(|pps| Pacer::new(pps, self.burst, self.batch));
        let mut seq = 0u64;
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
            let stamp = now_ns();
            for i in 0..n {
                write_header(batch.slot_mut(i), ctl.stream, 0, seq + i as u64, stamp);
            }
            let sent = if n == 1 && self.batch == 1 {
                sock.send(batch.slot_mut(0)).map(|_| 1)
            } else {
                sendmmsg(fd, &mut batch, n)
            };
            match sent {
                Ok(k) => {
                    seq += k as u64;
                    ctl.counter.publish_packets(seq * self.payload as u64, seq);
                }
                Err(e) if is_retry(&e) => {}
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                    return Err(EngineError::Io(io::Error::new(
                        e.kind(),
                        format!(
                            "{}-byte datagrams do not fit the path (EMSGSIZE); use a smaller -l",
                            self.payload
                        ),
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
        let mut fin = [0u8; HEADER_LEN];
        write_header(&mut fin, ctl.stream, FLAG_FIN, seq, now_ns());
        for _ in 0..FIN_COUNT {
            let _ = sock.send(&fin);
            std::thread::sleep(Duration::from_millis(1));
        }
        let counts = StreamCounts {
            bytes: seq * self.payload as u64,
            packets: seq,
            rx: None,
        };
        Ok(StreamReport {
            bytes_total: counts.bytes,
            counts,
            ..Default::default()
        })
    }

    fn receive(
        &self,
        sock: &UdpSocket,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let fd = sock.as_raw_fd();
        // One byte more than the payload, so an oversized datagram shows as truncated.
        let mut batch = Batch::new(self.batch, self.payload + 1);
        let mut tracker = SeqTracker::new();
        let mut fin_at: Option<Instant> = None;
        let mut stop_seen_at: Option<Instant> = None;
        let mut last_arrival = Instant::now();
        loop {
            if ctl.abort.is_raised() {
                return Err(EngineError::Aborted);
            }
            if let Some(t) = fin_at {
                if t.elapsed() >= AFTER_FIN {
                    break;
                }
            }
            if ctl.stop.is_raised() {
                let since = *stop_seen_at.get_or_insert_with(Instant::now);
                if since.elapsed() >= QUIET_AFTER_STOP && last_arrival.elapsed() >= QUIET_AFTER_STOP
                {
                    break;
                }
            }
            let n = match recvmmsg(fd, &mut batch) {
                Ok(n) => n,
                Err(e) if is_retry(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            let now = now_ns();
            last_arrival = Instant::now();
            for i in 0..n {
                let data = batch.received(i);
                let Some(h) = DatagramRepr::parse(data) else {
                    continue;
                };
                if h.stream != ctl.stream || h.is_probe() {
                    continue;
                }
                if h.is_fin() {
                    fin_at.get_or_insert_with(Instant::now);
                    continue;
                }
                tracker.record(h.seq, h.sent_ns, now, data.len().min(self.payload));
            }
            ctl.counter.publish_rx(tracker.snapshot());
        }
        let rx = tracker.snapshot();
        ctl.counter.publish_rx(rx);
        Ok(StreamReport {
            bytes_total: rx.bytes,
            counts: StreamCounts {
                bytes: rx.bytes,
                packets: rx.packets,
                rx: Some(rx),
            },
            ..Default::default()
        })
    }
}
