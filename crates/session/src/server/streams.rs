//! Running a session's data streams on the server: start one worker per stream, answer the
//! client's polls, close the window by the server's own clock, then drain and send the results.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use engine::{engine_for, Conn, CrrListener, Endpoint, Role, WorkerOutcome, Workers};
use measure::cpu::{CpuSoFar, CpuTime, SystemCpuSnapshot};
use measure::drops::DropSnapshot;
use measure::link_counts::LinkCounts;
use measure::qdisc::QdiscWatch;
use wire::msg::{ServerResults, StreamCounts, StreamEnd};
use wire::spec::{Flow, Loss};
use wire::{ClientMsg, ServerMsg, TestSpec};

use super::frames::FrameCounter;
use super::{wait_readable, SessionError, Shared};
use crate::control::recv;

/// How long after its window the server keeps sending while waiting for the client's Stop.
pub const SENDER_GRACE: Duration = Duration::from_secs(2);

/// The streams while they run, with the clocks the results are measured from.
pub(super) struct Running {
    pub workers: Workers,
    pub t0: Instant,
    pub cpu0: CpuTime,
    sys0: Option<SystemCpuSnapshot>,
    /// UDP stream tests: the drop counters at the start, with the test interface.
    drops0: DropsAt,
}

impl Running {
    /// The session's CPU so far: its workers' threads (each one's CPU clock, read from this
    /// thread) and the host's ticks since the start, by the server's clock.
    fn cpu_so_far(&self) -> CpuSoFar {
        CpuSoFar::now(self.t0, self.workers.cpu_used(), self.sys0.as_ref())
    }
}

/// What the server counted when its window closed.
struct Window {
    /// Every stream's counters at the window's end (or at `Stop`, if that came first).
    counts: Vec<StreamCounts>,
    /// The session's CPU at that moment.
    cpu: CpuSoFar,
    /// The window's length by the server's clock.
    length: Duration,
}

/// Runs the data streams: answers polls, stops on `Stop`, drains, reports.
pub(super) fn run_streams(
    ctrl: &mut Conn,
    spec: &TestSpec,
    conns: Vec<Conn>,
    frames: Option<FrameCounter>,
    before: CountersAtSetup,
    shared: &Shared,
    begin_by: Instant,
) -> Result<ServerResults, SessionError> {
    let CountersAtSetup {
        drops0,
        link0,
        qdiscs0,
    } = before;
    let (frames, ends) = frame_ends(ctrl, spec, conns, frames, shared);
    let left = begin_by.saturating_duration_since(Instant::now());
    let begin = recv::<ClientMsg>(ctrl, left.max(Duration::from_millis(1))).map_err(|e| {
        if Instant::now() >= begin_by {
            SessionError::NotBegun(shared.config.setup_timeout)
        } else {
            e.into()
        }
    })?;
    match begin {
        ClientMsg::Begin => {}
        other => {
            return Err(SessionError::Unexpected {
                expected: "begin",
                got: Box::new(other),
            })
        }
    }
    let crr = ends.iter().find_map(|c| match c {
        Endpoint::Socket(Conn::CrrListener(l)) => Some(std::sync::Arc::clone(l)),
        _ => None,
    });
    let mut running = start_workers(spec, ends)?;
    running.drops0 = drops0;
    // The window's hard end, kept by a thread of its own: this thread may be blocked in a
    // control write to a client that stopped reading (for up to the handshake timeout).
    let stop_at = running.t0 + Duration::from_millis(spec.duration_ms) + SENDER_GRACE;
    (running.workers)
        .stop_by(stop_at, stop_at + shared.config.drain_timeout)
        .map_err(SessionError::Thread)?;
    shared.send(ctrl, &ServerMsg::Begun)?;
    let window = serve_polls(ctrl, spec, &mut running, shared)?;
    let workers = running.workers;
    workers.stop();
    let outcomes = workers.join(shared.config.drain_timeout);
    if let Some(crr) = crr {
        log_turned_away(&crr, ctrl, shared);
    }
    let sys = running.sys0.zip(SystemCpuSnapshot::now());
    let results = ServerResults {
        streams: outcomes
            .into_iter()
            .zip(window.counts)
            .enumerate()
            .map(|(i, (w, at_stop))| stream_end(i as u16, w, at_stop))
            .collect(),
        wall_us: running.t0.elapsed().as_micros() as u64,
        window_us: window.length.as_micros() as u64,
        process_cpu: CpuTime::process_now().since(running.cpu0),
        system_cpu: sys.as_ref().map(|(a, b)| b.since(a)),
        cores: sys.map(|(a, b)| b.cores_since(&a)).unwrap_or_default(),
        drops: running
            .drops0
            .map(|(d0, ifc)| Box::new(DropSnapshot::now(ifc.as_deref()).since(&d0))),
        cpu_at_stop: Some(window.cpu),
        qdiscs: qdiscs0.finish(),
        driver: frames.map(|f| f.counts().map(Box::new)).transpose()?,
        link: link0.and_then(|l0| l0.added_until_now()),
    };
    shared.send(ctrl, &ServerMsg::Results(results.clone()))?;
    Ok(results)
}

/// The drop counters at a UDP stream test's start, with the interface they were read on.
type DropsAt = Option<(DropSnapshot, Option<String>)>;

/// The host's counters a test's results report the change of: the drop counters and the
/// interface's own frame counts (issue 47) for a UDP stream test, every test's qdiscs (the
/// record's `hosts.server.qdiscs`).
pub(super) struct CountersAtSetup {
    drops0: DropsAt,
    link0: Option<LinkCounts>,
    qdiscs0: QdiscWatch,
}

impl CountersAtSetup {
    /// Read before the server accepts the test, when the client can have sent nothing yet: it
    /// sends its data as soon as its UDP probes are echoed and it has sent `Begin`, so a read
    /// any later (a busy server once read them 15 ms after `Begin`: 1,059 frames at 71 kpps;
    /// once after the last probe's echo: 918 frames) misses datagrams its sockets count. Their
    /// span holds the whole test, its setup too. The test's interface is its frame counter's
    /// (a frame engine's test), or the one holding the control connection's address.
    pub(super) fn read(ctrl: &Conn, spec: &TestSpec, frames: Option<&FrameCounter>) -> Self {
        let interface = match frames {
            Some(f) => Some(f.interface().to_string()),
            None => (ctrl.local_addr()).and_then(|a| measure::host::interface_for_ip(a.ip())),
        };
        let drops0 = (spec.kind().row().loss == Loss::Datagrams)
            .then(|| (DropSnapshot::now(interface.as_deref()), interface.clone()));
        let link0 = drops0
            .as_ref()
            .and_then(|(_, i)| LinkCounts::now(i.as_deref()?));
        Self {
            drops0,
            link0,
            qdiscs0: QdiscWatch::start(interface),
        }
    }
}

/// The workers' ends and the frame counter. A frame engine's test has its counter on since
/// its ports opened (frames.rs); an `xdp` test's AF_XDP receiver opens now, before `Begin` (the
/// log says why it did not, if not).
fn frame_ends(
    ctrl: &Conn,
    spec: &TestSpec,
    conns: Vec<Conn>,
    frames: Option<FrameCounter>,
    shared: &Shared,
) -> (Option<FrameCounter>, Vec<Endpoint>) {
    let (frames, ends) = FrameCounter::ends(frames, spec, conns);
    if let Some(why) = frames.as_ref().and_then(FrameCounter::rx_fallback) {
        (shared.log)(format!(
            "{}: frame test: its frames go up the stack to its sockets, not to AF_XDP sockets: {why}",
            ctrl.peer()
        ));
    }
    (frames, ends)
}

/// What a connection test's listener turned away, in the log (nothing when it turned away
/// nothing): connections from other addresses, and stalled transactions.
fn log_turned_away(crr: &CrrListener, ctrl: &Conn, shared: &Shared) {
    let strangers = crr.strangers.load(Ordering::Relaxed);
    let dropped = crr.dropped.load(Ordering::Relaxed);
    if strangers + dropped > 0 {
        (shared.log)(format!(
            "{}: connection test: {strangers} connections from other addresses closed \
             unanswered, {dropped} stalled or broken transactions dropped",
            ctrl.peer()
        ));
    }
}

/// One worker per stream, in the role the stream's direction gives the server.
pub(super) fn start_workers(spec: &TestSpec, ends: Vec<Endpoint>) -> Result<Running, SessionError> {
    let mut workers = Workers::new(engine_for(spec, Flow::ServerToClient));
    workers.pin_to(spec.server_cpu.map(|c| c as usize));
    workers.share_budget(spec.amount_units());
    let t0 = Instant::now();
    let cpu0 = CpuTime::process_now();
    let sys0 = SystemCpuSnapshot::now();
    for ((index, flow), end) in spec.flows().into_iter().zip(ends) {
        let role = match flow {
            Flow::ClientToServer => Role::Receiver,
            Flow::ServerToClient => Role::Sender,
        };
        workers
            .spawn(end, role, format!("lr-srv-{index}"))
            .map_err(SessionError::Thread)?;
    }
    Ok(Running {
        workers,
        t0,
        cpu0,
        sys0,
        drops0: None,
    })
}

/// Answers the client's polls until its `Stop`. The server's window closes the test duration
/// after `Begin` arrived, by its own clock, or at `Stop` if that comes first (an interrupted
/// client). `Stop` itself can be late: on a loaded path it queues behind the test's own data,
/// which would stretch the window.
fn serve_polls(
    ctrl: &mut Conn,
    spec: &TestSpec,
    running: &mut Running,
    shared: &Shared,
) -> Result<Window, SessionError> {
    let t0 = running.t0;
    let idle = Duration::from_millis(spec.interval_ms) + shared.config.handshake_timeout;
    let window_end = t0 + Duration::from_millis(spec.duration_ms);
    let mut at_window_end: Option<(Vec<StreamCounts>, CpuSoFar)> = None;
    let mut length = Duration::ZERO;
    let mut last_message = Instant::now();
    loop {
        let now = Instant::now();
        if at_window_end.is_none() && now >= window_end {
            at_window_end = Some((running.workers.snapshot(), running.cpu_so_far()));
            length = now - t0;
        }
        // Never send longer than the spec asked, even if the client's Stop never comes.
        if now >= window_end + SENDER_GRACE {
            running.workers.stop();
        }
        let wait = match at_window_end {
            None => (window_end - now).min(idle),
            Some(_) if now < window_end + SENDER_GRACE => {
                (window_end + SENDER_GRACE - now).min(idle)
            }
            Some(_) => (window_end + SENDER_GRACE + idle).saturating_duration_since(now),
        };
        // A client that keeps polling but never says stop does not keep its slot.
        if now >= window_end + SENDER_GRACE + idle {
            return Err(SessionError::NoStop(SENDER_GRACE + idle));
        }
        if !wait_readable(ctrl.as_raw_fd(), wait.as_millis().max(1) as i32) {
            if last_message.elapsed() >= idle {
                return Err(SessionError::ClientSilent(idle));
            }
            continue;
        }
        last_message = Instant::now();
        match recv::<ClientMsg>(ctrl, idle).map_err(SessionError::ClientGone)? {
            ClientMsg::Poll { seq } => {
                // A poll after the window closed gets the window's end, so the intervals add
                // up to the window.
                let (counts, cpu) = at_window_end
                    .clone()
                    .unwrap_or_else(|| (running.workers.snapshot(), running.cpu_so_far()));
                let cpu = Some(cpu);
                (shared.send(ctrl, &ServerMsg::Counters { seq, counts, cpu }))
                    .map_err(SessionError::ClientGone)?;
            }
            ClientMsg::Stop => {
                let (counts, cpu) = at_window_end.unwrap_or_else(|| {
                    length = t0.elapsed();
                    (running.workers.snapshot(), running.cpu_so_far())
                });
                return Ok(Window {
                    counts,
                    cpu,
                    length,
                });
            }
            ClientMsg::Error { message } => return Err(SessionError::ClientGaveUp(message)),
            other => return Err(SessionError::UnexpectedMidTest(Box::new(other))),
        }
        if shared.shutdown.is_raised() {
            return Err(SessionError::ShuttingDown);
        }
    }
}

/// A stream's end as the client receives it: its counters at `Stop` and at the end, its CPU
/// and TCP_INFO, or why it failed.
pub fn stream_end(stream: u16, w: WorkerOutcome, at_stop: StreamCounts) -> StreamEnd {
    let (total, cpu, tcp_info, error) = match w.result {
        Some(Ok(report)) => (report.counts, report.cpu, report.tcp_info, None),
        Some(Err(e)) => (w.now, Default::default(), None, Some(e.to_string())),
        None => (
            w.now,
            Default::default(),
            None,
            Some("stream did not finish draining in time".into()),
        ),
    };
    StreamEnd {
        stream,
        at_stop,
        total,
        cpu,
        tcp_info,
        error,
    }
}
