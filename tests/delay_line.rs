//! A delay line between two namespaces, where this kernel has no netem: every Ethernet frame
//! that reaches one port of the middle namespace leaves by the other a fixed delay after the
//! kernel took it in. One real-time thread enters the middle namespace (`setns` affects only
//! the calling thread), reads both ports' frames with `AF_PACKET` sockets, with the kernel's
//! arrival time, and writes each out once due, polling for the last stretch before it: so a
//! frame leaves on time however long the host's cores take to wake or however busy they are.
//! The ports have no addresses and no bridge, so the kernel there forwards nothing itself.
//!
//! Checksums and segmentation are done in software on the end hosts (`ethtool -K … tx off tso
//! off gso off`), so every frame on the line is complete and at most one MTU.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::{sh, VethPair};

/// A running delay line; stops when dropped.
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Holds the host's CPUs awake while the line runs; closing it lets them sleep again.
    _awake: std::fs::File,
}

impl VethPair {
    /// `a` (198.18.0.1, `va`) and `b` (198.18.0.2, `vb`) joined by a [`DelayLine`] in a third
    /// namespace between ports `ma` and `mb`, `one_way` each way.
    pub fn delayed(tag: &str, one_way: Duration) -> (Self, DelayLine) {
        let pair = Self::through_middle(tag);
        let (a, b, m) = (&pair.a, &pair.b, pair.mid.as_deref().unwrap_or_default());
        sh(&format!(
            "ip netns exec {m} sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && \
             ip netns exec {a} ethtool -K va tx off tso off gso off && \
             ip netns exec {b} ethtool -K vb tx off tso off gso off"
        ));
        let line = DelayLine::start(m, "ma", "mb", one_way);
        (pair, line)
    }
}

/// An `AF_PACKET` socket bound to interface `dev` (in the calling thread's namespace): of
/// every protocol to read frames (`ETH_P_ALL`), or of none (0) to only send them.
fn packet_socket(dev: &str, protocol: u16) -> (OwnedFd, i32) {
    let proto = protocol.to_be();
    // SAFETY: plain socket(2); the result is checked before it is owned.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
    assert!(
        fd >= 0,
        "AF_PACKET socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: fd is a new, valid descriptor owned from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let name = std::ffi::CString::new(dev).unwrap();
    // SAFETY: name is a valid C string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
    assert!(index > 0, "no interface {dev}");
    // SAFETY: an all-zero sockaddr_ll is valid; the fields set are its family, protocol, index.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto;
    addr.sll_ifindex = index;
    // SAFETY: addr is a sockaddr_ll of the length given.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(rc, 0, "bind to {dev}: {}", std::io::Error::last_os_error());
    (fd, index)
}

/// Enters network namespace `ns` (this thread only).
fn enter(ns: &str) {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}")).unwrap();
    // SAFETY: f is an open namespace file; setns changes only this thread's namespace.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

/// How long before a frame is due the line stops sleeping and polls, to cover the time its
/// thread takes to wake. A line that slept until each frame was due added that to its delay:
/// round trips across a 5 ms line came out 10.5-12.9 ms on this VM, and rpm's idle probes,
/// after the path had been idle, longer still (a bare `nanosleep` of 5 ms overshot by 74 µs
/// at the median, 0.45 ms at p90, 2 ms at p99 here; after 50 ms asleep, 1.4 ms at p90).
const POLL_BEFORE_DUE: Duration = Duration::from_micros(2_500);

/// One direction of the line: frames read at `rx` leave by `tx` once due.
struct Way {
    rx: OwnedFd,
    tx: OwnedFd,
    due: VecDeque<(Instant, Vec<u8>)>,
}

impl Way {
    /// Frames arriving at port `from` leave by port `to`; each frame read carries the time the
    /// kernel took it in (`SO_TIMESTAMPNS`).
    fn open(from: &str, to: &str) -> Self {
        let (rx, _) = packet_socket(from, libc::ETH_P_ALL as u16);
        let (tx, _) = packet_socket(to, 0);
        socket_option(&rx, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS");
        // A wire drops nothing it was given. With the default receive buffer (212,992 bytes,
        // charged at each frame's truesize, about 4.3 KB for a 1,514-byte frame off a veth)
        // the line held 49 frames between its wake-ups and dropped the rest of a burst: a
        // cubic sender's window of 77 KB lost 4-6 % of its segments on an otherwise idle
        // line. 16 MiB holds 0.13 s of a 1 Gbit/s line.
        socket_option(&rx, libc::SO_RCVBUFFORCE, 16 << 20, "SO_RCVBUFFORCE");
        Self {
            rx,
            tx,
            due: VecDeque::new(),
        }
    }

    /// Takes every frame waiting at its port, each due `delay` after the kernel took it in:
    /// however late this thread woke to read it.
    fn receive(&mut self, buf: &mut [u8], delay: Duration) {
        loop {
            // SAFETY: all-zero sockaddr_ll and msghdr are valid for recvmsg to fill.
            let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut control = [0u64; 8];
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: as above.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = (&mut addr as *mut libc::sockaddr_ll).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control);
            // SAFETY: msg points at buffers valid for the lengths it gives.
            let n = unsafe { libc::recvmsg(self.rx.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if n <= 0 {
                return;
            }
            // Frames this port sends (the other direction's) show up as outgoing: not ours.
            if addr.sll_pkttype != libc::PACKET_OUTGOING {
                let arrived = arrival(&msg).unwrap_or_else(Instant::now);
                let frame = buf[..n as usize].to_vec();
                self.due.push_back((arrived + delay, frame));
            }
        }
    }

    /// Sends every frame whose time has come.
    fn send_due(&mut self) {
        let now = Instant::now();
        while self.due.front().is_some_and(|(t, _)| *t <= now) {
            let (_, frame) = self.due.pop_front().unwrap();
            // SAFETY: frame is a valid buffer of its length; tx is bound to its port.
            unsafe { libc::send(self.tx.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        }
    }
}

/// Sets the `SOL_SOCKET` option `name` (called `what` in a failure) of `socket` to `value`;
/// panics if the kernel refuses (these tests run as root).
fn socket_option(socket: &OwnedFd, name: libc::c_int, value: libc::c_int, what: &str) {
    // SAFETY: socket is a valid socket; the option's value is an int of the length given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    assert_eq!(rc, 0, "{what}: {}", std::io::Error::last_os_error());
}

/// When the kernel took in the frame `msg` was read into (its `SCM_TIMESTAMPNS`, on the
/// real-time clock), on the monotonic clock.
fn arrival(msg: &libc::msghdr) -> Option<Instant> {
    // SAFETY: recvmsg filled msg; CMSG_FIRSTHDR/NXTHDR stay within its control buffer.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !c.is_null() {
        // SAFETY: c points at a whole cmsghdr within the buffer.
        let h = unsafe { &*c };
        if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
            // SAFETY: an SCM_TIMESTAMPNS message carries one timespec, maybe unaligned.
            let ts: libc::timespec = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c).cast()) };
            let stamp = Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            return Instant::now().checked_sub(now.saturating_sub(stamp));
        }
        // SAFETY: as above.
        c = unsafe { libc::CMSG_NXTHDR(msg, c) };
    }
    None
}

/// Sleeps until a frame arrives at either way's port or `wait` passed.
fn sleep_on(ways: &[Way; 2], wait: Duration) {
    let mut p = ways.each_ref().map(|w| libc::pollfd {
        fd: w.rx.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    });
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    // SAFETY: two valid pollfds, a valid timespec, no signal mask.
    unsafe { libc::ppoll(p.as_mut_ptr(), 2, &ts, std::ptr::null()) };
}

/// Asks the kernel's power management for no CPU wake-up latency (`/dev/cpu_dma_latency` at 0,
/// as cyclictest does) for as long as the returned file stays open: this VM's idle CPUs halt
/// (cpuidle `haltpoll`), and waking a halted one goes through the hypervisor: a thread
/// sleeping until shortly before each frame was due still sent 10 % of them more than 0.6 ms
/// late, 1 % 3-6 ms, against 0.1 ms at p99 with CPUs that poll when idle. Panics if the host
/// refuses (these tests run as root).
fn keep_cpus_awake() -> std::fs::File {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .expect("/dev/cpu_dma_latency");
    f.write_all(&0i32.to_ne_bytes())
        .expect("a wake-up latency of 0 in /dev/cpu_dma_latency");
    f
}

/// Makes the calling thread real-time (`SCHED_FIFO`): a wire does not wait for a CPU. Beside a
/// spinning process a line thread of the normal class sent 1 % of its frames 0.15-2.5 ms late
/// (4 ms at most), against 0.08 ms at p99 in the real-time class. Panics if the host refuses (these tests run as root).
fn real_time() {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: 0 is the calling thread; param is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    let err = std::io::Error::last_os_error();
    assert_eq!(rc, 0, "SCHED_FIFO for the delay line: {err}");
}

/// Forwards frames between ports `a` and `b` after `delay` each way, until `stop`; says on
/// `ready` once its sockets are bound. A frame is due `delay` after the kernel took it in; the
/// thread sleeps until [`POLL_BEFORE_DUE`] (at most half the delay) before the next frame is
/// due, or until one arrives, and polls from there, so it sleeps through most of an idle or
/// lightly used line and stays within the real-time class's budget (95 % of a CPU).
fn forward(
    ns: String,
    (a, b): (String, String),
    delay: Duration,
    stop: Arc<AtomicBool>,
    ready: std::sync::mpsc::Sender<()>,
) {
    enter(&ns);
    real_time();
    let mut ways = [Way::open(&a, &b), Way::open(&b, &a)];
    let _ = ready.send(());
    let mut buf = vec![0u8; 65_536];
    let poll_before = POLL_BEFORE_DUE.min(delay / 2);
    while !stop.load(Ordering::Acquire) {
        for way in &mut ways {
            way.receive(&mut buf, delay);
            way.send_due();
        }
        let next = ways.iter().filter_map(|w| w.due.front().map(|d| d.0)).min();
        let until = next.map_or(Duration::from_millis(20), |t| {
            t.saturating_duration_since(Instant::now())
        });
        if until > poll_before {
            sleep_on(&ways, until - poll_before);
        } else {
            std::hint::spin_loop();
        }
    }
}

impl DelayLine {
    /// Forwards between `a` and `b` in namespace `ns`, `delay` each way; returns once its
    /// thread is ready.
    pub fn start(ns: &str, a: &str, b: &str, delay: Duration) -> Self {
        let _awake = keep_cpus_awake();
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (ns, ports, flag) = (ns.to_string(), (a.into(), b.into()), stop.clone());
        let thread = std::thread::spawn(move || forward(ns, ports, delay, flag, ready_tx));
        let line = Self {
            stop,
            thread: Some(thread),
            _awake,
        };
        // A thread that failed to enter the namespace or bind dropped its sender.
        ready
            .recv_timeout(Duration::from_secs(5))
            .expect("the delay line's thread did not start");
        line
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            // The forwarder's panic (setns, bind) is the test's failure, unless one is under way.
            if let Err(e) = t.join() {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(e);
                }
            }
        }
    }
}

/// Timing-sensitive, run alone by scripts/test.sh: the line keeps its time beside a spinning
/// process (rr 10.07-10.19 ms, idle RPM within 1.5 % of its figure in 6 runs), but rr's and
/// rpm's own ends share the host's two cores with whatever else runs.
mod quiet {
    use super::*;

    /// The line adds its delay and nothing else: a request/response round trip across it is twice
    /// the one-way delay, plus the path's own tens of microseconds. And the ground truth of
    /// `linerate rpm`'s idle figure: an idle-only run gives an RPM within 10 % of 60000 / the
    /// round trip `linerate rr` measures on the same path.
    #[test]
    fn idle_rpm_is_60000_over_the_round_trip_of_rr() {
        if !crate::util::can_use_netns() {
            return;
        }
        let (pair, _line) = VethPair::delayed("dl", Duration::from_millis(5));
        let _server = pair.serve();
        let v = pair.client_json(&["rr", "-t", "1"]);
        let rtt_ms = crate::util::num(&v["summary"]["latency_us"]["p50"]) / 1000.0;
        assert!((10.0..11.5).contains(&rtt_ms), "{rtt_ms} ms against 10 ms");
        let v = pair.client_json(&["rpm", "--direction", "idle"]);
        let idle = crate::util::num(&v["idle"]["rpm"]);
        let expected = 60_000.0 / rtt_ms;
        eprintln!("idle RPM {idle:.0} against 60000 / {rtt_ms:.3} ms = {expected:.0}");
        assert!(
            (idle / expected - 1.0).abs() <= 0.10,
            "idle RPM {idle} against {expected}: {v}"
        );
        assert!(v["directions"].as_array().unwrap().is_empty(), "{v}");
    }
}
