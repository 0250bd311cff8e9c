//! UDP datagrams at a paced rate over a connected UDP socket.
//!
//! The sender stamps every datagram with a [`wire::datagram`] header (stream, sequence, send
//! time: one clock reading per batch) and sends batches with sendmmsg(2), each message carrying
//! up to 64 datagrams that the kernel segments (UDP GSO) where it can; after `stop` it sends
//! FIN datagrams carrying its total. The receiver reads batches with recvmmsg(2), with the
//! kernel coalescing arrivals (UDP GRO, split again here by the reported segment size), and feeds
//! each header to a [`SeqTracker`] (loss, reordering, duplicates, jitter), publishing its counts
//! once per batch. It ends when a FIN has been seen and every datagram it counts has arrived, or
//! 50 ms after the FIN (stragglers), or 500 ms after `stop` without a datagram (every FIN lost);
//! before ending on a timer it reads whatever is already queued, without waiting.

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use measure::clock::now_ns;
use measure::cpu::CpuTime;
use measure::udp_stats::SeqTracker;
use wire::datagram::{write_header, DatagramRepr, FLAG_FIN, HEADER_LEN};
use wire::msg::StreamCounts;
use wire::spec::UdpParams;
use wire::TestKind;

use crate::udp_socket::flow_socket;
use crate::{
    Conn, Endpoint, EngineError, Role, StreamControl, StreamEngine, StreamReport, POLL_INTERVAL,
};

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
    gso: bool,
    gro: bool,
    flows: u32,
}

impl UdpStream {
    /// An engine for `udp`'s payload size, batching and pacing.
    pub fn new(udp: &UdpParams) -> Self {
        Self {
            payload: (udp.payload_len_bytes as usize).max(HEADER_LEN),
            batch: usize::from(udp.batch_packets.max(1)),
            target_pps: udp.target_pps(),
            burst: udp.burst_packets,
            gso: udp.gso,
            gro: udp.gro,
            flows: udp.flows.max(1),
        }
    }
}

impl StreamEngine for UdpStream {
    fn kind(&self) -> TestKind {
        TestKind::UdpStream
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let (sock, only_from, extra_recv, extra_dst) = match end.into_socket(self.kind())? {
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

/// Turns on a UDP offload socket option; false where the kernel does not have it.
fn enable(fd: RawFd, option: libc::c_int, value: libc::c_int) -> bool {
    crate::sockopt::setsockopt_int(fd, libc::SOL_UDP, option, value).is_ok()
}

/// Most datagrams in one GSO send (the kernel's UDP_MAX_SEGMENTS on older kernels).
const GSO_MAX_SEGMENTS: usize = 64;
/// Largest UDP payload in one send, which bounds a GSO message.
const MAX_UDP_PAYLOAD: usize = 65_507;
/// Receive buffer per message with GRO (a coalesced message is at most 64 KiB).
const GRO_MESSAGE: usize = 65_536;
/// Control buffer per received message (room for one UDP_GRO cmsg).
const CONTROL_LEN: usize = 64;

/// Buffers and headers for one sendmmsg/recvmmsg call, allocated once. Each message holds up
/// to `segments` datagrams of `payload` bytes (more than one only with GSO/GRO).
struct Batch {
    buf: Vec<u8>,
    msg_cap: usize,
    payload: usize,
    segments: usize,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    control: Vec<u8>,
    names: Vec<libc::sockaddr_storage>,
}

impl Batch {
    fn new(
        messages: usize,
        segments: usize,
        payload: usize,
        msg_cap: usize,
        with_control: bool,
    ) -> Self {
        let buf = crate::pattern(messages * msg_cap);
        let control = vec![
            0u8;
            if with_control {
                messages * CONTROL_LEN
            } else {
                0
            }
        ];
        let mut batch = Self {
            buf,
            msg_cap,
            payload,
            segments,
            iov: Vec::with_capacity(messages),
            msgs: Vec::with_capacity(messages),
            control,
            names: Vec::new(),
        };
        for i in 0..messages {
            batch.iov.push(libc::iovec {
                // SAFETY: the offset is inside `buf`, whose heap block never moves.
                iov_base: unsafe { batch.buf.as_mut_ptr().add(i * msg_cap) }.cast(),
                iov_len: msg_cap,
            });
        }
        for i in 0..messages {
            // SAFETY: mmsghdr is plain data; zero is a valid empty header.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: the index is inside `iov`, whose heap block never moves.
            m.msg_hdr.msg_iov = unsafe { batch.iov.as_mut_ptr().add(i) };
            m.msg_hdr.msg_iovlen = 1;
            batch.msgs.push(m);
        }
        batch
    }

    /// Datagram `k` of the batch: message `k / segments`, slot `k % segments`.
    fn datagram_mut(&mut self, k: usize) -> &mut [u8] {
        let at = (k / self.segments) * self.msg_cap + (k % self.segments) * self.payload;
        &mut self.buf[at..at + self.payload]
    }

    /// Sets the message lengths for `n` datagrams; returns the number of messages.
    fn prepare_send(&mut self, n: usize) -> usize {
        let messages = n.div_ceil(self.segments);
        for m in 0..messages {
            let count = (n - m * self.segments).min(self.segments);
            self.iov[m].iov_len = count * self.payload;
        }
        messages
    }

    /// Datagrams in the first `messages` messages of a send of `n`.
    fn datagrams_in(&self, messages: usize, n: usize) -> usize {
        (messages * self.segments).min(n)
    }

    /// Asks receives to record each datagram's source address.
    fn want_sources(&mut self) {
        // SAFETY: sockaddr_storage is plain data; zero is valid.
        self.names = vec![unsafe { std::mem::zeroed() }; self.msgs.len()];
    }

    /// The source IP of received message `i`, when sources are recorded.
    fn source(&self, i: usize) -> Option<IpAddr> {
        let name = self.names.get(i)?;
        // SAFETY: the kernel wrote a sockaddr of the family it states into the storage, which
        // is large and aligned enough for any of them.
        unsafe {
            match i32::from(name.ss_family) {
                libc::AF_INET => {
                    let a = &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                    Some(IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let a = &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                    let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
                    Some(ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4))
                }
                _ => None,
            }
        }
    }

    /// Resets lengths and control buffers before a receive.
    fn prepare_receive(&mut self) {
        let with_control = !self.control.is_empty();
        let with_names = !self.names.is_empty();
        for (i, m) in self.msgs.iter_mut().enumerate() {
            m.msg_len = 0;
            if with_names {
                // SAFETY: the index is inside `names`, whose heap block never moves.
                m.msg_hdr.msg_name = unsafe { self.names.as_mut_ptr().add(i) }.cast();
                m.msg_hdr.msg_namelen =
                    std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            }
            if with_control {
                // SAFETY: the offset is inside `control`, whose heap block never moves.
                m.msg_hdr.msg_control =
                    unsafe { self.control.as_mut_ptr().add(i * CONTROL_LEN) }.cast();
                m.msg_hdr.msg_controllen = CONTROL_LEN as _;
            }
        }
    }

    /// Received message `i` and the GRO segment size the kernel reported for it, if any.
    fn received(&self, i: usize) -> (&[u8], Option<usize>) {
        let m = &self.msgs[i];
        let len = (m.msg_len as usize).min(self.msg_cap);
        let mut gro = None;
        if !self.control.is_empty() && m.msg_hdr.msg_controllen > 0 {
            // SAFETY: the kernel filled `msg_control` with `msg_controllen` bytes of cmsgs;
            // the CMSG_* macros walk them within that length.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                        let size =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                        gro = usize::try_from(size).ok().filter(|s| *s > 0);
                    }
                    c = libc::CMSG_NXTHDR(&m.msg_hdr, c);
                }
            }
        }
        (&self.buf[i * self.msg_cap..i * self.msg_cap + len], gro)
    }
}

fn sendmmsg(fd: RawFd, batch: &mut Batch, messages: usize) -> io::Result<usize> {
    // SAFETY: `msgs` holds at least `messages` initialised headers pointing into live buffers.
    let rc = unsafe { libc::sendmmsg(fd, batch.msgs.as_mut_ptr(), messages as libc::c_uint, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

fn send_one(fd: RawFd, datagram: &[u8]) -> io::Result<usize> {
    // SAFETY: a valid buffer and its length.
    let rc = unsafe { libc::send(fd, datagram.as_ptr().cast(), datagram.len(), 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(1)
    }
}

/// Reads up to a batch of messages from `fd`; `flags` is `MSG_WAITFORONE` (block, by the
/// socket's timeout, for the first only) or `MSG_DONTWAIT` (never block).
fn recvmmsg(fd: RawFd, batch: &mut Batch, flags: libc::c_int) -> io::Result<usize> {
    batch.prepare_receive();
    // SAFETY: `msgs` holds initialised headers pointing into live buffers of `msg_cap` bytes
    // and control buffers of CONTROL_LEN bytes.
    let rc = unsafe {
        libc::recvmmsg(
            fd,
            batch.msgs.as_mut_ptr(),
            batch.msgs.len() as libc::c_uint,
            flags,
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
    fn send(
        &self,
        sock: &UdpSocket,
        extra_dst: &[SocketAddr],
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let fd = sock.as_raw_fd();
        let gso_segments = (MAX_UDP_PAYLOAD / self.payload)
            .clamp(1, GSO_MAX_SEGMENTS)
            .min(self.batch);
        let segments = if self.gso
            && gso_segments > 1
            && enable(fd, libc::UDP_SEGMENT, self.payload as libc::c_int)
        {
            gso_segments
        } else {
            1
        };
        let messages = self.batch.div_ceil(segments);
        let mut batch = Batch::new(
            messages,
            segments,
            self.payload,
            segments * self.payload,
            false,
        );
        // More flows: more sockets, same peer, new source ports; the sender moves to the next
        // flow after every batch.
        // More destinations (`--flows-dst`): one more socket per destination at least, socket k
        // sending to destination k mod M.
        let (local, peer) = (sock.local_addr()?, sock.peer_addr()?);
        let dsts: Vec<SocketAddr> = std::iter::once(peer)
            .chain(extra_dst.iter().copied())
            .collect();
        let sockets = (self.flows as usize).max(dsts.len());
        let mut extra = Vec::with_capacity(sockets - 1);
        if sockets > 1 {
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
        }
        let fds: Vec<RawFd> = std::iter::once(fd)
            .chain(extra.iter().map(|s| s.as_raw_fd()))
            .collect();
        let mut flow = 0usize;
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
                write_header(batch.datagram_mut(i), ctl.stream, 0, seq + i as u64, stamp);
            }
            let out = fds[flow];
            flow = (flow + 1) % fds.len();
            let sent = if n == 1 && self.batch == 1 {
                send_one(out, batch.datagram_mut(0))
            } else {
                let m = batch.prepare_send(n);
                sendmmsg(out, &mut batch, m).map(|done| batch.datagrams_in(done, n))
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
            let fin_waited = intake
                .fin
                .as_ref()
                .is_some_and(|f| f.at.elapsed() >= AFTER_FIN);
            let quiet = ctl.stop.is_raised() && {
                let since = *stop_seen_at.get_or_insert_with(Instant::now);
                since.elapsed() >= QUIET_AFTER_STOP && last_arrival.elapsed() >= QUIET_AFTER_STOP
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
        let tracker = intake.tracker;
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

/// The first FIN datagram a receiver saw: when, and the sender's total it carries.
struct Fin {
    at: Instant,
    total: u64,
}

/// Batches a receiver reads without waiting before it ends, at most.
const DRAIN_BATCHES: usize = 1024;

/// A receiver's reading state: its buffers, its accounting and the first FIN it saw.
struct Intake {
    batch: Batch,
    tracker: SeqTracker,
    fin: Option<Fin>,
    /// Datagrams from other sources are ignored.
    only_from: Option<IpAddr>,
    payload: usize,
}

impl Intake {
    /// Whether a FIN came and every datagram it counts has arrived: nothing is on its way.
    fn complete(&self) -> bool {
        self.fin
            .as_ref()
            .is_some_and(|f| self.tracker.snapshot().unique >= f.total)
    }

    /// Reads a batch from `fd` (`flags`: see [`recvmmsg`]) and accounts for it; the number of
    /// messages read.
    fn read(
        &mut self,
        fd: RawFd,
        flags: libc::c_int,
        ctl: &StreamControl<'_>,
    ) -> io::Result<usize> {
        let n = recvmmsg(fd, &mut self.batch, flags)?;
        self.absorb(n, ctl);
        Ok(n)
    }

    /// Feeds the `n` messages just received to the tracker, noting the first FIN.
    fn absorb(&mut self, n: usize, ctl: &StreamControl<'_>) {
        let now = now_ns();
        for i in 0..n {
            if self
                .only_from
                .is_some_and(|ip| self.batch.source(i) != Some(ip))
            {
                continue;
            }
            let (data, segment) = self.batch.received(i);
            for datagram in data.chunks(segment.unwrap_or(data.len()).max(1)) {
                let Some(h) = DatagramRepr::parse(datagram) else {
                    continue;
                };
                if h.stream != ctl.stream || h.is_probe() {
                    continue;
                }
                if h.is_fin() {
                    self.fin.get_or_insert_with(|| Fin {
                        at: Instant::now(),
                        total: h.seq,
                    });
                    continue;
                }
                let len = datagram.len().min(self.payload);
                self.tracker.record(h.seq, h.sent_ns, now, len);
            }
        }
        ctl.counter.publish_rx(self.tracker.snapshot());
    }

    /// Reads what is already queued on every socket without waiting, so that datagrams that
    /// arrived while the receiver was not running (a starved CPU) still count before it ends.
    fn drain(&mut self, fds: &[RawFd], ctl: &StreamControl<'_>) -> Result<(), EngineError> {
        for &fd in fds {
            for _ in 0..DRAIN_BATCHES {
                match self.read(fd, libc::MSG_DONTWAIT, ctl) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if is_retry(&e) => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }
}

/// Which of several sockets have datagrams waiting (epoll), for receivers on many ports.
struct Readiness {
    epoll: std::os::fd::OwnedFd,
    events: Vec<libc::epoll_event>,
    ready: Vec<RawFd>,
}

impl Readiness {
    fn new(fds: &[RawFd]) -> io::Result<Self> {
        // SAFETY: epoll_create1 returns a new descriptor that we own, or -1.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor owned by nothing else.
        let epoll = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        for &fd in fds {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: both descriptors are open; `ev` is a valid event.
            if unsafe { libc::epoll_ctl(raw, libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Self {
            epoll,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 256],
            ready: Vec::with_capacity(256),
        })
    }

    /// The sockets readable now, waiting up to `timeout` for one.
    fn wait(&mut self, timeout: Duration) -> io::Result<&[RawFd]> {
        use std::os::fd::AsRawFd;
        // SAFETY: `events` has room for its length of events.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout.as_millis() as i32,
            )
        };
        self.ready.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == ErrorKind::Interrupted {
                Ok(&self.ready)
            } else {
                Err(e)
            };
        }
        self.ready
            .extend(self.events[..n as usize].iter().map(|e| e.u64 as RawFd));
        Ok(&self.ready)
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
    }
}
