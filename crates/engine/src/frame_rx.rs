//! A frame test's receiver on AF_XDP sockets: at a server whose XDP counter redirects the
//! test's frames (`udp --engine xdp`), one socket per receive queue of the interface hands
//! them to user space without an skb or a trip up the stack, and the same sequence accounting
//! as a socket receiver's ([`SeqTracker`]: loss, reordering, duplicates, latency, jitter) reads
//! each frame's datagram header.
//!
//! A test's streams share the sockets (every stream's frames arrive on the same queues), so the
//! first of its receiving workers to start reads them all and sorts the frames by the header's
//! stream field, publishing each stream's accounting in its slot; every other receiving worker
//! publishes its own stream's slot as its counters until the reader is done, then reports it.
//! Frames carry no FIN (the client's frame senders send none): the reader ends once the test's
//! `stop` is raised and nothing has come for `QUIET_AFTER_STOP` (100 ms), or `MOST_AFTER_STOP`
//! (1 s) after it whatever still comes.
//!
//! Invariants: one thread reads the sockets (the others never touch them); every wait is
//! bounded (one poll over every socket of `WAIT_MS`, 2 ms, the stop and abort checked between);
//! a follower ends when its reader does, however that ends (said by a guard, also when
//! unwinding), or at its own abort.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use frames::af_xdp::{Granted, XskRx, XskStats};
use frames::frame::udp_payload;
use measure::clock::now_ns;
use measure::udp_stats::{SeqTracker, UdpCounts};
use wire::datagram::DatagramRepr;

use crate::{EngineError, StreamControl, StreamReport};

/// How long the reader waits after `stop` with no frame arriving before it ends.
const QUIET_AFTER_STOP: Duration = Duration::from_millis(100);
/// The longest the reader goes on after `stop` while frames keep coming.
const MOST_AFTER_STOP: Duration = Duration::from_secs(1);
/// A ring poll's wait when no frame is there, ms.
const WAIT_MS: i32 = 2;
/// The reader's state, as its followers see it: reading, done, failed (or panicked).
const READING: u8 = 0;
const READ: u8 = 1;
const FAILED: u8 = 2;
/// How often the reader copies its accounting into the streams' slots.
const PUBLISH_EVERY: Duration = Duration::from_millis(5);

/// The AF_XDP sockets of one test and its streams' accounting.
pub struct FrameRx {
    socks: Mutex<Vec<XskRx>>,
    granted: Option<Granted>,
    queues: u32,
    reading: AtomicBool,
    /// [`READING`], then [`READ`] or [`FAILED`].
    done: AtomicU8,
    slots: Vec<Mutex<UdpCounts>>,
    payload: usize,
}

impl std::fmt::Debug for FrameRx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameRx")
            .field("queues", &self.queues)
            .field("granted", &self.granted)
            .finish_non_exhaustive()
    }
}

impl FrameRx {
    /// A receiver over `socks` (one per receive queue) for a test of `streams` streams whose
    /// datagrams carry `payload` bytes.
    pub fn new(socks: Vec<XskRx>, streams: usize, payload: usize) -> Self {
        Self {
            granted: socks.first().map(XskRx::granted),
            queues: socks.len() as u32,
            socks: Mutex::new(socks),
            reading: AtomicBool::new(false),
            done: AtomicU8::new(READING),
            slots: (0..streams).map(|_| Mutex::default()).collect(),
            payload,
        }
    }

    /// The data path the kernel granted the sockets (copy or zero-copy).
    pub fn granted(&self) -> Option<Granted> {
        self.granted
    }

    /// Receive queues with a socket (queues 0 up to this).
    pub fn queues(&self) -> u32 {
        self.queues
    }

    /// The sockets' own counters summed: the test's frames the kernel had for them and could
    /// not deliver. Read once the reader is done (it holds the sockets while it reads).
    pub fn stats(&self) -> XskStats {
        let socks = self.socks.lock().unwrap_or_else(|e| e.into_inner());
        (socks.iter())
            .filter_map(|s| s.stats().ok())
            .fold(XskStats::default(), |a, b| a + b)
    }

    fn slot(&self, stream: u16) -> UdpCounts {
        (self.slots.get(usize::from(stream)))
            .map(|s| *s.lock().unwrap_or_else(|e| e.into_inner()))
            .unwrap_or_default()
    }

    fn publish(&self, trackers: &[SeqTracker]) {
        for (slot, t) in self.slots.iter().zip(trackers) {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = t.snapshot();
        }
    }
}

/// Receives `ctl.stream`'s frames: as the reader of every stream's, or from the reader's slot.
pub(crate) fn receive(rx: &FrameRx, ctl: StreamControl<'_>) -> Result<StreamReport, EngineError> {
    let counts = if rx.reading.swap(true, Ordering::AcqRel) {
        follow(rx, &ctl)?
    } else {
        // Said done however the reader ends, also unwinding: its followers never wait it out.
        let mut said = Said { rx, ok: false };
        let read = read(rx, &ctl);
        said.ok = read.is_ok();
        drop(said);
        read?
    };
    ctl.counter.publish_rx(counts);
    Ok(crate::udp_stream::receiver_report(counts))
}

/// The reader's end, told its followers when dropped.
struct Said<'a> {
    rx: &'a FrameRx,
    ok: bool,
}

impl Drop for Said<'_> {
    fn drop(&mut self) {
        let end = if self.ok { READ } else { FAILED };
        self.rx.done.store(end, Ordering::Release);
    }
}

/// Reads every socket until the stream is over; `ctl.stream`'s final accounting.
fn read(rx: &FrameRx, ctl: &StreamControl<'_>) -> Result<UdpCounts, EngineError> {
    let mut socks = rx.socks.lock().unwrap_or_else(|e| e.into_inner());
    let mut trackers: Vec<SeqTracker> = rx.slots.iter().map(|_| SeqTracker::new()).collect();
    let (mut stop_seen_at, mut last_arrival) = (None::<Instant>, Instant::now());
    let mut published = Instant::now();
    let mut polls: Vec<libc::pollfd> = (socks.iter())
        .map(|s| libc::pollfd {
            fd: s.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        if ctl.stop.is_raised() {
            let since = stop_seen_at.get_or_insert_with(Instant::now).elapsed();
            let quiet = since >= QUIET_AFTER_STOP && last_arrival.elapsed() >= QUIET_AFTER_STOP;
            if quiet || since >= MOST_AFTER_STOP {
                break;
            }
        }
        let mut got = 0;
        for sock in socks.iter_mut() {
            // Read when the pass finds frames (after any wait), once per pass.
            let mut now = None;
            got += sock.recv(0, |frame| {
                let at = *now.get_or_insert_with(now_ns);
                account(&mut trackers, frame, at, rx.payload)
            });
        }
        if got > 0 {
            last_arrival = Instant::now();
        } else {
            // Every socket at once: a frame on any queue ends the wait.
            // SAFETY: `polls` holds one valid pollfd per open socket, for the call.
            unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, WAIT_MS) };
        }
        if published.elapsed() >= PUBLISH_EVERY {
            rx.publish(&trackers);
            if let Some(t) = trackers.get(usize::from(ctl.stream)) {
                ctl.counter.publish_rx(t.snapshot());
            }
            published = Instant::now();
        }
    }
    rx.publish(&trackers);
    Ok(rx.slot(ctl.stream))
}

/// One frame into its stream's accounting: a data datagram of a stream of the test, its
/// payload counted up to the test's payload size; anything else is not the test's data.
#[inline]
fn account(trackers: &mut [SeqTracker], frame: &[u8], now: u64, payload: usize) {
    let Some(datagram) = udp_payload(frame) else {
        return;
    };
    match DatagramRepr::parse(datagram) {
        Some(h) if !h.is_probe() && !h.is_fin() => {
            if let Some(t) = trackers.get_mut(usize::from(h.stream)) {
                t.record(h.seq, h.sent_ns, now, datagram.len().min(payload));
            }
        }
        _ => {}
    }
}

/// Publishes the reader's accounting of `ctl.stream` until the reader is done.
fn follow(rx: &FrameRx, ctl: &StreamControl<'_>) -> Result<UdpCounts, EngineError> {
    loop {
        match rx.done.load(Ordering::Acquire) {
            READ => return Ok(rx.slot(ctl.stream)),
            FAILED => {
                return Err(EngineError::Io(std::io::Error::other(
                    "the reader of this test's AF_XDP sockets failed",
                )))
            }
            _ if ctl.abort.is_raised() => return Err(EngineError::Aborted),
            _ => {}
        }
        ctl.counter.publish_rx(rx.slot(ctl.stream));
        std::thread::sleep(PUBLISH_EVERY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frames::{Endpoints, FlowPattern, FrameSpec, Frames};
    use wire::datagram::{write_header, FLAG_FIN};

    fn frames_of(stream: u16) -> Frames {
        let spec = FrameSpec {
            endpoints: Endpoints {
                src_mac: [2, 0, 0, 0, 0, 1],
                dst_mac: [2, 0, 0, 0, 0, 2],
                src: [198, 18, 0, 1].into(),
                dst: [198, 18, 0, 2].into(),
                src_port: 40000,
                dst_port: 9000,
            },
            frame_size: 64,
            mtu: 1500,
            flows: FlowPattern::SourcePorts,
        };
        Frames::new(&spec).unwrap().of_stream(stream)
    }

    #[test]
    fn each_frame_is_accounted_to_the_stream_its_header_names_and_nothing_else_counts() {
        let mut trackers = vec![SeqTracker::new(), SeqTracker::new()];
        let mut buf = [0u8; 60];
        for (stream, seqs) in [(0u16, &[0u64, 1, 2, 4][..]), (1, &[0, 2, 1][..])] {
            let f = frames_of(stream);
            for &seq in seqs {
                f.write(&mut buf, seq as usize, seq, 1_000 + seq);
                account(&mut trackers, &buf, 5_000, 18);
            }
        }
        // A FIN, a stream the test does not have, and a frame that is not UDP: none counts.
        let f = frames_of(0);
        f.write(&mut buf, 0, 9, 1);
        let udp = f.udp_at() + 8;
        let mut fin = buf;
        write_header(&mut fin[udp..], 0, FLAG_FIN, 9, 1);
        let mut stranger = buf;
        write_header(&mut stranger[udp..], 7, 0, 9, 1);
        let mut arp = buf;
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        for other in [fin, stranger, arp] {
            account(&mut trackers, &other, 5_000, 18);
        }
        let (a, b) = (trackers[0].snapshot(), trackers[1].snapshot());
        assert_eq!((a.packets, a.lost(5)), (4, 1), "{a:?}");
        assert_eq!((b.packets, b.lost(3)), (3, 0), "{b:?}");
        assert_eq!(a.bytes, 4 * 18, "payload counted up to the test's payload");
    }

    /// A reader that ends in error (here its abort) tells its followers, which end with an
    /// error of their own at once rather than at theirs; one that ends well hands each its slot.
    #[test]
    fn followers_end_with_their_reader_however_it_ends() {
        use crate::{Abort, Signal, StreamCounters};
        let (counter, stop) = (StreamCounters::default(), Signal::default());
        let (aborted, calm) = (Abort::default(), Abort::default());
        aborted.raise();
        let ctl = |stream, abort| StreamControl {
            stream,
            counter: &counter,
            stop: &stop,
            abort,
            origin: std::time::Instant::now(),
            budget: None,
        };
        let rx = FrameRx::new(Vec::new(), 2, 18);
        assert!(matches!(
            receive(&rx, ctl(0, &aborted)),
            Err(EngineError::Aborted)
        ));
        let err = receive(&rx, ctl(1, &calm)).unwrap_err();
        assert!(err.to_string().contains("AF_XDP sockets failed"), "{err}");
        let rx = FrameRx::new(Vec::new(), 2, 18);
        stop.raise();
        let read = receive(&rx, ctl(0, &calm)).unwrap();
        let followed = receive(&rx, ctl(1, &calm)).unwrap();
        assert_eq!((read.counts.packets, followed.counts.packets), (0, 0));
    }
}
