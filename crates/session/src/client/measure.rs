//! Measuring a test on the client: start one worker per stream, poll the server each
//! interval for its counters, stop, collect the server's results and both ends' last interval.
//! All timing is on the client's own monotonic clock.

use std::time::{Duration, Instant};

use analysis::{
    BoundedIntervals, IntervalTracker, LastPoll, LocalStream, RawRun, StreamFailure, WindowStart,
    WorkerReport,
};
use engine::{Endpoint, Role, StreamEngine, Workers};
use measure::cpu::{CpuSoFar, CpuTime, SystemCpuSnapshot};
use measure::drops::DropSnapshot;
use measure::link_counts::LinkCounts;
use record::IntervalSample;
use wire::msg::{ServerResults, StreamCounts};
use wire::spec::{Flow, Loss};

use super::remote::{FarEndLost, Remote};
use super::{ClientConfig, ClientError, Observer};

/// How long the polling loop sleeps at `elapsed` (< `duration`): until the next interval tick
/// or the end, at most 50 ms. A tick already due was skipped for being within 10 ms of the end,
/// so then it sleeps toward the end.
fn wait_before_next_look(elapsed: Duration, next_tick: Duration, duration: Duration) -> Duration {
    let until = if next_tick > elapsed {
        next_tick.min(duration)
    } else {
        duration
    };
    until.saturating_sub(elapsed).min(Duration::from_millis(50))
}

/// The least a test's last interval lasts when the user stops it (Ctrl-C, the UI's Stop): an
/// interrupt that comes sooner after the last tick ends the test this long after that tick
/// (or one interval, if shorter). A sliver of an interval is all error: the receiver's count
/// is what its thread had read when the poll and then the Stop reached it, and a reader
/// descheduled for 20 ms that catches up in between put 3 MB into a 1 ms interval: 24 Gbit/s
/// on a 1 Gbit/s test. Over 200 ms the same catch-up is a tenth of the figure, and Ctrl-C is
/// still answered within a quarter second.
const MIN_STOPPED_INTERVAL: Duration = Duration::from_millis(200);

/// When a test interrupted at `elapsed` ends: not before [`MIN_STOPPED_INTERVAL`] (at most
/// one `interval`) after the last interval's end, `last_end`.
fn interrupted_end(elapsed: Duration, last_end: Duration, interval: Duration) -> Duration {
    elapsed.max(last_end + MIN_STOPPED_INTERVAL.min(interval))
}

/// The first interval tick, as time since the test's start `t0`: one interval after it, or
/// with a `grid` the first of its ticks (`grid` + k × `interval`) after it.
fn first_tick(grid: Option<Instant>, t0: Instant, interval: Duration) -> Duration {
    let Some(anchor) = grid.filter(|_| !interval.is_zero()) else {
        return interval;
    };
    // Whole intervals of the grid before the start, then the next tick.
    let before = t0.saturating_duration_since(anchor);
    let k = (before.as_nanos() / interval.as_nanos()) as u32 + 1;
    (anchor + interval * k).saturating_duration_since(t0)
}

/// The intervals and the raw figures of both ends, for the summary.
pub struct Measured {
    /// The intervals as the record keeps them: every one shown as it happened, at most
    /// `record::bounds::MAX_INTERVALS` kept ([`BoundedIntervals`]).
    pub intervals: Vec<IntervalSample>,
    pub raw: RawRun,
}

/// The streams while they run, with the clocks the results are measured from.
struct Running {
    workers: Workers,
    t0: Instant,
    cpu0: CpuTime,
    sys0: Option<SystemCpuSnapshot>,
    /// UDP stream tests: the drop counters at the start, with the test interface.
    drops0: Option<(DropSnapshot, Option<String>)>,
    /// UDP stream tests: the test interface's own frame counts at the start (issue 47).
    link0: Option<LinkCounts>,
}

impl Running {
    /// This end's CPU so far: its workers' threads (each one's CPU clock, read from this
    /// thread) and the host's ticks since the start, by this end's clock.
    fn cpu_so_far(&self) -> CpuSoFar {
        CpuSoFar::now(self.t0, self.workers.cpu_used(), self.sys0.as_ref())
    }
}

/// Runs the test on `conns` against `remote` and returns what both ends measured: each
/// interval goes to `progress` as it happens and into the record's bounded intervals.
pub fn measure_streams(
    config: &ClientConfig,
    remote: &mut dyn Remote,
    conns: Vec<Endpoint>,
    progress: &mut dyn Observer,
) -> Result<Measured, ClientError> {
    measure_keeping(config, remote, conns, progress, BoundedIntervals::default())
}

/// [`measure_streams`], its intervals kept in `intervals` (a smaller bound in tests).
fn measure_keeping(
    config: &ClientConfig,
    remote: &mut dyn Remote,
    conns: Vec<Endpoint>,
    progress: &mut dyn Observer,
    mut intervals: BoundedIntervals,
) -> Result<Measured, ClientError> {
    let running = start(config, remote, conns)?;
    let mut tracker = IntervalTracker::new(&config.spec);
    let mut last_poll = None;
    let mut start = None;
    let end = poll_until_end(
        config,
        remote,
        &running,
        &mut tracker,
        &mut start,
        &mut |sample, poll| {
            progress.interval(&sample);
            intervals.push(sample);
            last_poll = poll;
        },
    )?;
    let end = match end {
        PollEnd::ServerLost(why) => Ended::ServerLost(why, last_poll),
        PollEnd::TimeUp => Ended::Stopped {
            interrupted: false,
            last_poll,
        },
        PollEnd::Interrupted => Ended::Stopped {
            interrupted: true,
            last_poll,
        },
    };
    let (sample, mut raw) = finish(config, remote, running, &mut tracker, end)?;
    raw.window_start = start;
    progress.interval(&sample);
    intervals.push(sample);
    Ok(Measured {
        intervals: intervals.into_vec(),
        raw,
    })
}

/// Starts a worker per stream and the test on both ends (`Begin`, `Begun`).
fn start(
    config: &ClientConfig,
    remote: &mut dyn Remote,
    conns: Vec<Endpoint>,
) -> Result<Running, ClientError> {
    let spec = &config.spec;
    let engine = remote.engine(spec);
    let frames = spec.udp().is_some_and(|u| u.engine.sends_frames());
    // A frame test's senders set up before `Begin` (frames built, ring or program open), so
    // the test's window holds none of it; the server's counter is on since it accepted.
    let conns = match frames {
        true => prepare(engine.as_ref(), spec, conns)?,
        false => conns,
    };
    let mut workers = Workers::new(engine);
    workers.pin_to(spec.client_cpu.map(|c| c as usize));
    workers.share_budget(spec.amount_units());
    let drops0 = (spec.kind().row().loss == Loss::Datagrams).then(|| {
        let interface = remote
            .local_addr()
            .and_then(|a| measure::host::interface_for_ip(a.ip()));
        (DropSnapshot::now(interface.as_deref()), interface)
    });
    // The interface's own frame counts beside the sockets' datagrams (issue 47).
    let link0 = drops0
        .as_ref()
        .and_then(|(_, i)| LinkCounts::now(i.as_deref()?));
    remote.begin()?;
    // A frame test's senders start once the server's window is open (`Begun`): a frame sent
    // before would count at its driver but fall outside its window. Socket tests start at
    // once, as before.
    if frames {
        remote.begun()?;
    }
    // The window opens here: a paced requester's schedule starts at this instant too.
    let t0 = workers.start_clock();
    let cpu0 = CpuTime::process_now();
    let sys0 = SystemCpuSnapshot::now();
    for (&(index, flow), conn) in spec.flows().iter().zip(conns) {
        workers
            .spawn(conn, role(flow), format!("lr-cli-{index}"))
            .map_err(|e| ClientError::Protocol(format!("cannot start stream thread: {e}")))?;
    }
    if !frames {
        remote.begun()?;
    }
    Ok(Running {
        workers,
        t0,
        cpu0,
        sys0,
        link0,
        drops0,
    })
}

/// Each of `conns` set up by `engine` for its stream's role ([`StreamEngine::prepare`]).
fn prepare(
    engine: &dyn StreamEngine,
    spec: &wire::TestSpec,
    conns: Vec<Endpoint>,
) -> Result<Vec<Endpoint>, ClientError> {
    (spec.flows().iter().zip(conns))
        .map(|(&(index, flow), end)| {
            (engine.prepare(end, role(flow), index))
                .map_err(|e| ClientError::Input(format!("stream {index}: {e}")))
        })
        .collect()
}

/// The client's role in a stream flowing `flow`.
fn role(flow: Flow) -> Role {
    match flow {
        Flow::ClientToServer => Role::Sender,
        Flow::ServerToClient => Role::Receiver,
    }
}

/// How often a test by amount looks whether it has all moved (an atomic load, or by a stock
/// iperf3 server one snapshot of this end's counts): a 1 ms share of the time it took.
const AMOUNT_LOOK: Duration = Duration::from_millis(1);

/// How long the client's streams get to end once the server is gone.
const LOST_DRAIN: Duration = Duration::from_secs(2);

/// How the polling loop ended.
enum PollEnd {
    /// The test time is up, or by amount everything has moved.
    TimeUp,
    /// The user interrupted.
    Interrupted,
    /// The control connection failed: the server is gone (killed, or the path went black).
    ServerLost(FarEndLost),
}

/// How the test ended, with the server's last answered poll (its own figures, not stand-ins):
/// what stands in for its results should they not come.
enum Ended {
    /// Time up or interrupted: the server is asked for its results.
    Stopped {
        interrupted: bool,
        last_poll: Option<LastPoll>,
    },
    /// The server went away while polled.
    ServerLost(FarEndLost, Option<LastPoll>),
}

/// Polls the server each interval until the test time is up (by amount: everything has moved,
/// [`Remote::amount_moved`]), the user interrupts or the server is gone, handing every interval
/// sample to `emit` with the poll it came from (when the far end's figures are its own). A tick
/// within 10 ms of the end is left to the last interval, which ends at `Stop`; an interrupt
/// ends the test no sooner than [`interrupted_end`] says. With a warm-up (`-O`) one poll is at
/// its end, whatever the interval: both ends' counts there are `start`, the summary's window's.
fn poll_until_end(
    config: &ClientConfig,
    remote: &mut dyn Remote,
    running: &Running,
    tracker: &mut IntervalTracker,
    start: &mut Option<WindowStart>,
    emit: &mut dyn FnMut(IntervalSample, Option<LastPoll>),
) -> Result<PollEnd, ClientError> {
    let spec = &config.spec;
    let (workers, t0) = (&running.workers, running.t0);
    let duration = Duration::from_millis(spec.duration_ms);
    let interval = Duration::from_millis(spec.interval_ms);
    let omit = Duration::from_millis(spec.omit_ms);
    let mut next_tick = first_tick(config.interval_grid, t0, interval);
    let mut seq = 0u64;
    let (mut last_end, mut stop_at) = (Duration::ZERO, None);
    let by_amount = spec.amount.is_some();
    loop {
        let elapsed = t0.elapsed();
        if config.interrupt.is_raised() && stop_at.is_none() {
            stop_at = Some(interrupted_end(elapsed, last_end, interval));
        }
        let end = stop_at.map_or(duration, |at: Duration| at.min(duration));
        if elapsed >= end || (by_amount && remote.amount_moved(spec, workers)) {
            return Ok(match stop_at {
                Some(_) => PollEnd::Interrupted,
                None => PollEnd::TimeUp,
            });
        }
        let omit_due = !omit.is_zero() && start.is_none() && elapsed >= omit;
        if omit_due || (elapsed >= next_tick && end - elapsed > Duration::from_millis(10)) {
            seq += 1;
            let local = workers.snapshot();
            let local_at = t0.elapsed();
            let local_cpu = running.cpu_so_far();
            let far = match remote.counts(seq, &local)? {
                Ok(far) => far,
                Err(why) => return Ok(PollEnd::ServerLost(why)),
            };
            if omit_due {
                *start = Some(WindowStart {
                    local_at,
                    local: local.clone(),
                    server: far.counts.clone(),
                    server_at_us: far.cpu.map(|c| c.elapsed_us),
                });
            }
            let at = t0.elapsed();
            last_end = at;
            let mut sample = tracker.sample(at, &local, &far.counts);
            tracker.add_cpu(&mut sample, local_cpu, far.cpu);
            analysis::add_latency(&mut sample, workers.take_latency().as_ref());
            let poll = (!far.stand_in).then_some(LastPoll {
                at,
                counts: far.counts,
                cpu: far.cpu,
            });
            emit(sample, poll);
            if elapsed >= next_tick {
                next_tick += interval;
            }
            continue;
        }
        let wake = match start {
            None if !omit.is_zero() => next_tick.min(omit),
            _ => next_tick,
        };
        // By amount, the end is looked for every millisecond: its time is the figure.
        let most = if by_amount {
            AMOUNT_LOOK
        } else {
            Duration::MAX
        };
        std::thread::sleep(wait_before_next_look(elapsed, wake, end).min(most));
    }
}

/// Stops the test on both ends and returns the last interval (which ends at `Stop`) and the
/// raw figures of both ends; with the server gone, the client's own figures and the server's
/// from its last answered poll.
fn finish(
    config: &ClientConfig,
    remote: &mut dyn Remote,
    running: Running,
    tracker: &mut IntervalTracker,
    end: Ended,
) -> Result<(IntervalSample, RawRun), ClientError> {
    running.workers.stop();
    let window = running.t0.elapsed();
    let local_at_stop = running.workers.snapshot();
    let local_cpu = running.cpu_so_far();
    let Running {
        workers,
        t0,
        cpu0,
        sys0,
        drops0,
        link0,
    } = running;
    let interrupted = matches!(
        end,
        Ended::Stopped {
            interrupted: true,
            ..
        }
    );
    let (server, server_lost) = server_results(remote, end, &local_at_stop, cpu0, t0)?;
    // With the server gone, its side of the streams ends at once (reset) or never (a black
    // hole): nothing is left to drain, so the wait is short.
    let drain = match server_lost {
        Some(_) => config.drain_timeout.min(LOST_DRAIN),
        None => config.drain_timeout,
    };
    let outcomes = workers.join(drain);
    let mut workers_latency: Option<measure::latency::Latency> = None;
    for tail in outcomes.iter().filter_map(|o| o.latency_tail.as_ref()) {
        workers_latency
            .get_or_insert_with(Default::default)
            .add(tail);
    }
    let local_wall = t0.elapsed();
    let sys = sys0.zip(SystemCpuSnapshot::now());
    let local_drops = drops0.map(|(d0, ifc)| DropSnapshot::now(ifc.as_deref()).since(&d0));
    let local_link = link0.and_then(|l0| l0.added_until_now());
    let (last_local, last_server) = last_counts(config, &server, &outcomes, &local_at_stop);
    let mut sample = tracker.sample(window, &last_local, &last_server);
    tracker.add_cpu(&mut sample, local_cpu, server.cpu_at_stop);
    analysis::add_latency(&mut sample, workers_latency.as_ref());
    let local_streams = outcomes
        .into_iter()
        .zip(local_at_stop)
        .map(|(o, at_stop)| LocalStream {
            at_stop,
            now: o.now,
            cpu: o.cpu,
            result: o.result.map(|r| {
                r.map(worker_report)
                    .map_err(|e| StreamFailure(e.to_string()))
            }),
        })
        .collect();
    let raw = RawRun {
        spec: config.spec.clone(),
        window,
        interrupted,
        local_wall,
        local_streams,
        local_process_cpu: CpuTime::process_now().since(cpu0),
        local_system_cpu: sys.as_ref().map(|(a, b)| b.since(a)),
        local_cores: sys.map(|(a, b)| b.cores_since(&a)).unwrap_or_default(),
        local_drops,
        local_link,
        server,
        // The record keeps the words: its `incomplete` note.
        server_lost: server_lost.map(|why| why.to_string()),
        window_start: None,
    };
    Ok((sample, raw))
}

/// The server's results once the test has stopped, or, with the server gone (`Some(why)`),
/// those of its last answered poll.
fn server_results(
    remote: &mut dyn Remote,
    end: Ended,
    local_at_stop: &[StreamCounts],
    cpu0: CpuTime,
    t0: Instant,
) -> Result<(ServerResults, Option<FarEndLost>), ClientError> {
    let up_to = |last: Option<LastPoll>| analysis::partial::server_results_up_to(last.as_ref());
    Ok(match end {
        Ended::ServerLost(why, last) => (up_to(last), Some(why)),
        Ended::Stopped { last_poll, .. } => match remote.results(
            local_at_stop,
            CpuTime::process_now().since(cpu0),
            t0.elapsed(),
        )? {
            Ok(results) => (results, None),
            Err(why) => (up_to(last_poll), Some(why)),
        },
    })
}

/// Both ends' counters for the last interval, which ends at `Stop`: receivers count what they
/// had read by then, senders everything they wrote (a write in progress at Stop still
/// completes), so the intervals add up exactly to the summary's totals.
fn last_counts(
    config: &ClientConfig,
    server: &ServerResults,
    outcomes: &[engine::WorkerOutcome],
    local_at_stop: &[StreamCounts],
) -> (Vec<StreamCounts>, Vec<StreamCounts>) {
    let (mut last_local, mut last_server) = (Vec::new(), Vec::new());
    for (i, &(_, flow)) in config.spec.flows().iter().enumerate() {
        let remote = server.streams.get(i);
        // Each sender's TCP state at its end comes from its final report.
        let (local, far) = match flow {
            Flow::ClientToServer => (
                StreamCounts {
                    tcp_info: outcomes[i]
                        .result
                        .as_ref()
                        .and_then(|r| r.as_ref().ok())
                        .and_then(|r| r.tcp_info),
                    ..outcomes[i].now
                },
                remote.map(|r| r.at_stop).unwrap_or_default(),
            ),
            Flow::ServerToClient => (
                local_at_stop[i],
                remote
                    .map(|r| StreamCounts {
                        tcp_info: r.tcp_info,
                        ..r.total
                    })
                    .unwrap_or_default(),
            ),
        };
        last_local.push(local);
        last_server.push(far);
    }
    (last_local, last_server)
}

/// The figures of a worker's report that the summary reads.
fn worker_report(r: engine::StreamReport) -> WorkerReport {
    WorkerReport {
        cpu: r.cpu,
        tcp_info: r.tcp_info,
        // This end's senders have TCP_INFO, whose count the summary reads.
        retransmits: None,
        counts: r.counts,
        latency: r.latency,
        lost_transactions: r.lost_transactions,
        slots_missed: r.slots_missed,
        frame_path: r.frame_path,
        frame_fallback: r.frame_fallback,
    }
}

#[cfg(test)]
mod tests;
