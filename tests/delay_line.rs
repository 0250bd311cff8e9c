//! A delay line between two namespaces, where this kernel has no netem: every Ethernet frame
//! that reaches one port of the middle namespace leaves by the other after a fixed delay. Two
//! threads (one per direction) enter the middle namespace (`setns` affects only the calling
//! thread), read frames with `AF_PACKET` sockets and write them out once due. The ports have no
//! addresses and no bridge, so the kernel there forwards nothing itself.
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
    threads: Vec<JoinHandle<()>>,
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
    // SAFETY: PR_SET_TIMERSLACK touches only this thread: wake-ups within 1 µs of the due time.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong) };
}

/// Waits until `fd` is readable or `wait` passed.
fn readable(fd: i32, wait: Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) > 0 }
}

/// Forwards frames arriving at `from` out of `to` after `delay`, until `stop`; says on `ready`
/// once its sockets are bound.
fn forward(
    ns: String,
    (from, to): (String, String),
    delay: Duration,
    stop: Arc<AtomicBool>,
    ready: std::sync::mpsc::Sender<()>,
) {
    enter(&ns);
    let (rx, _) = packet_socket(&from, libc::ETH_P_ALL as u16);
    let (tx, _) = packet_socket(&to, 0);
    let _ = ready.send(());
    let mut due: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        while due.front().is_some_and(|(t, _)| *t <= now) {
            let (_, frame) = due.pop_front().unwrap();
            // SAFETY: frame is a valid buffer of its length; tx is bound to `to`.
            unsafe { libc::send(tx.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        }
        let wait = due.front().map_or(Duration::from_millis(20), |(t, _)| {
            t.saturating_duration_since(Instant::now())
        });
        if !readable(rx.as_raw_fd(), wait) {
            continue;
        }
        // SAFETY: an all-zero sockaddr_ll is valid for recvfrom to fill.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
        // SAFETY: buf and addr are valid for the lengths given.
        let n = unsafe {
            libc::recvfrom(
                rx.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                (&mut addr as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        // Frames this port sends (the other direction's) show up as outgoing: not ours.
        if n > 0 && addr.sll_pkttype != libc::PACKET_OUTGOING {
            due.push_back((Instant::now() + delay, buf[..n as usize].to_vec()));
        }
    }
}

impl DelayLine {
    /// Forwards between `a` and `b` in namespace `ns`, `delay` each way; returns once both
    /// directions are ready.
    pub fn start(ns: &str, a: &str, b: &str, delay: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let threads = [(a, b), (b, a)]
            .into_iter()
            .map(|(from, to)| {
                let (ns, ports, stop) = (ns.to_string(), (from.into(), to.into()), stop.clone());
                let ready = ready_tx.clone();
                std::thread::spawn(move || forward(ns, ports, delay, stop, ready))
            })
            .collect();
        let line = Self { stop, threads };
        for _ in 0..2 {
            // A thread that failed to enter the namespace or bind dropped its sender.
            ready
                .recv_timeout(Duration::from_secs(5))
                .expect("the delay line's threads did not start");
        }
        line
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            // A forwarder's panic (setns, bind) is the test's failure, unless one is under way.
            if let Err(e) = t.join() {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(e);
                }
            }
        }
    }
}

/// Timing-sensitive, run alone by scripts/test.sh: the line's threads wake on time only on a
/// quiet host.
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
