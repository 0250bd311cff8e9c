//! A `udp_stream` receiver's reading state ([`Intake`]: its batch, its sequence accounting and
//! the first FIN it saw) and, for several destination ports, the epoll set it waits on
//! ([`Readiness`]).

use std::io::{self, ErrorKind};
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use measure::clock::now_ns;
use measure::udp_stats::SeqTracker;

use super::batch::{is_retry, recvmmsg, Batch};
use super::framing::{Arrival, Framing};
use super::{AFTER_FIN, MOST_AFTER_FIN};
use crate::{EngineError, StreamControl};

/// The first FIN datagram a receiver saw: when, and the sender's total it carries.
pub(super) struct Fin {
    pub(super) at: Instant,
    pub(super) total: u64,
}

/// Batches a receiver reads without waiting before it ends, at most.
const DRAIN_BATCHES: usize = 1024;

/// A receiver's reading state: its buffers, its accounting and the first FIN it saw.
pub(super) struct Intake {
    pub(super) batch: Batch,
    pub(super) tracker: SeqTracker,
    pub(super) fin: Option<Fin>,
    /// Datagrams from other sources are ignored.
    pub(super) only_from: Option<IpAddr>,
    pub(super) payload: usize,
    /// Whether a message carried more than one datagram (GRO): the kernel then counts a
    /// dropped batch once in the socket's drop counter.
    pub(super) coalesced: bool,
    /// How the datagrams' headers are laid out.
    pub(super) framing: Framing,
}

impl Intake {
    /// Whether a FIN came and every datagram it counts has arrived: nothing is on its way.
    pub(super) fn complete(&self) -> bool {
        self.fin
            .as_ref()
            .is_some_and(|f| self.tracker.snapshot().unique >= f.total)
    }

    /// Whether the wait for stragglers after a FIN is over: nothing has come for
    /// [`AFTER_FIN`] since the FIN and the last datagram (a busy host's softirq may deliver
    /// what was queued before the FIN after it), or [`MOST_AFTER_FIN`] has passed since the FIN.
    pub(super) fn stragglers_done(&self, last_arrival: Instant) -> bool {
        self.fin.as_ref().is_some_and(|f| {
            let since = f.at.elapsed();
            (since >= AFTER_FIN && last_arrival.elapsed() >= AFTER_FIN) || since >= MOST_AFTER_FIN
        })
    }

    /// Reads a batch from `fd` (`flags`: see [`recvmmsg`]) and accounts for it; the number of
    /// messages read.
    pub(super) fn read(
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
    pub(super) fn absorb(&mut self, n: usize, ctl: &StreamControl<'_>) {
        let now = now_ns();
        for i in 0..n {
            if self
                .only_from
                .is_some_and(|ip| self.batch.source(i) != Some(ip))
            {
                continue;
            }
            let (data, segment) = self.batch.received(i);
            self.coalesced |= segment.is_some_and(|s| data.len() > s);
            for datagram in data.chunks(segment.unwrap_or(data.len()).max(1)) {
                match self.framing.parse(datagram, ctl.stream) {
                    Arrival::Data { seq, sent_ns } => {
                        let len = datagram.len().min(self.payload);
                        self.tracker.record(seq, sent_ns, now, len);
                    }
                    Arrival::Fin { total } => {
                        self.fin.get_or_insert_with(|| Fin {
                            at: Instant::now(),
                            total,
                        });
                    }
                    Arrival::Other => {}
                }
            }
        }
        ctl.counter.publish_rx(self.tracker.snapshot());
    }

    /// Reads what is already queued on every socket without waiting, so that datagrams that
    /// arrived while the receiver was not running (a starved CPU) still count before it ends.
    pub(super) fn drain(
        &mut self,
        fds: &[RawFd],
        ctl: &StreamControl<'_>,
    ) -> Result<(), EngineError> {
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
pub(super) struct Readiness {
    epoll: std::os::fd::OwnedFd,
    events: Vec<libc::epoll_event>,
    ready: Vec<RawFd>,
}

impl Readiness {
    pub(super) fn new(fds: &[RawFd]) -> io::Result<Self> {
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
    pub(super) fn wait(&mut self, timeout: Duration) -> io::Result<&[RawFd]> {
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
