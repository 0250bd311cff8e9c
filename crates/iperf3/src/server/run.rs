//! An iperf3 client's test once its streams are connected: `TestStart` to the client's
//! `TestEnd`, then the results, as an iperf3 server runs it; then, when the server keeps runs
//! (`ServerConfig::records`), the run's record (`record.rs`) with interval rows of this end's
//! counts.
//!
//! Senders and receivers stop apart, as iperf3's do: this end's senders stop when the test's
//! time is up by this end's clock (their counts are final once their loops return, one write
//! timeout later at most, so a write in progress is counted); its receivers count until the
//! client's `TestEnd`. Senders and TCP receivers are not joined before the results: they wait
//! for the peer's close, and the iperf3 client closes its data connections only after the
//! results. UDP receivers are: they end once quiet after `TestEnd` (at most a second), so a
//! datagram still queued then counts. With `-O`,
//! what the streams counted in the omitted seconds is taken out of the results, as iperf3
//! resets its counters then.

use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::protocol::{read_json, write_json, Params, Results, State, MAX_RESULTS_LEN};
use engine::{Conn, Role, Workers};
use measure::cpu::{CpuTime, SystemCpuSnapshot};
use measure::drops::DropSnapshot;
use measure::host::HostFacts;
use wire::msg::{ServerResults, StreamCounts, StreamEnd};
use wire::spec::{AmountUnit, Flow, Loss};
use wire::TestSpec;

use super::rows::{Omitted, Rows};
use super::udp::UdpClaim;
use super::{engine_of, gone, output, read_state, record, send_state, Refusal};
use session::server::{
    result_line, stream_end, transport_of, ServedRun, Server, Way, SENDER_GRACE,
};
use session::ReadBy;

/// The test's workers: the streams this end sends on and those it receives on, each set with
/// its own stop.
struct Ends {
    senders: Workers,
    receivers: Workers,
    /// Per stream in connection order: whether this end sends on it, and its index in its set.
    order: Vec<(bool, usize)>,
}

impl Ends {
    fn start(spec: &TestSpec, params: &Params, conns: Vec<Conn>) -> Result<Self, Refusal> {
        let mut ends = Ends {
            senders: Workers::new(engine_of(spec, params)),
            receivers: Workers::new(engine_of(spec, params)),
            order: Vec::new(),
        };
        let (mut sent, mut received) = (0, 0);
        for ((index, flow), conn) in spec.flows().into_iter().zip(conns) {
            let (set, role, slot) = match flow {
                Flow::ServerToClient => (&mut ends.senders, Role::Sender, &mut sent),
                Flow::ClientToServer => (&mut ends.receivers, Role::Receiver, &mut received),
            };
            set.spawn(conn, role, format!("lr-ip3-{index}"))
                .map_err(|e| gone("starting the streams", e))?;
            ends.order.push((role == Role::Sender, *slot));
            *slot += 1;
        }
        Ok(ends)
    }

    /// The hard stops that hold whatever the test's thread is doing: senders stop the grace
    /// after the test's time, everything is aborted a drain after the client's last chance
    /// to end the test.
    fn stop_by(
        &mut self,
        spec: &TestSpec,
        t0: Instant,
        shared: &Server<'_>,
    ) -> Result<(), Refusal> {
        let time_up = t0 + Duration::from_millis(spec.duration_ms);
        let abort_at = time_up + shared.config().handshake_timeout + shared.config().drain_timeout;
        let start = |e| gone("starting the streams' watchdog", e);
        (self.senders.stop_by(time_up + SENDER_GRACE, abort_at)).map_err(start)?;
        let longest = time_up + shared.config().handshake_timeout;
        (self.receivers.stop_by(longest, abort_at)).map_err(start)
    }

    fn snapshot(&self) -> Vec<StreamCounts> {
        merge(
            &self.order,
            &self.senders.snapshot(),
            &self.receivers.snapshot(),
        )
    }
}

/// Every stream's counts in connection order, from the senders' and the receivers' counts.
fn merge(
    order: &[(bool, usize)],
    sent: &[StreamCounts],
    received: &[StreamCounts],
) -> Vec<StreamCounts> {
    order
        .iter()
        .map(|&(sends, i)| {
            let from = if sends { sent } else { received };
            from.get(i).cloned().unwrap_or_default()
        })
        .collect()
}

/// One iperf3 test: what the client asked for, and who it is.
pub(super) struct Test<'a> {
    pub spec: &'a TestSpec,
    pub params: &'a Params,
    /// The client's control connection.
    pub client: Option<SocketAddr>,
    /// This server's host facts, collected before the test when the run is to be kept.
    pub host: Option<HostFacts>,
}

/// The clocks and host counters a test's figures are measured from.
struct Start {
    t0: Instant,
    cpu0: CpuTime,
    sys0: Option<SystemCpuSnapshot>,
    /// UDP tests: the host's drop counters, with the test's interface.
    drops0: Option<(DropSnapshot, Option<String>)>,
    unix_ms: u64,
}

impl Start {
    /// The clocks now; the host's counters too when the run is `kept`.
    fn now(ctrl: &Conn, spec: &TestSpec, kept: bool) -> Self {
        let drops0 = (kept && spec.kind().row().loss == Loss::Datagrams).then(|| {
            let interface = ctrl
                .local_addr()
                .and_then(|a| measure::host::interface_for_ip(a.ip()));
            (DropSnapshot::now(interface.as_deref()), interface)
        });
        Self {
            t0: Instant::now(),
            cpu0: CpuTime::process_now(),
            sys0: kept.then(SystemCpuSnapshot::now).flatten(),
            drops0,
            unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        }
    }

    /// The server's results from `self` to now, for the record: `streams` in connection order,
    /// the receivers' `window`.
    fn results(&self, streams: Vec<StreamEnd>, window: Duration) -> ServerResults {
        let sys = self.sys0.as_ref().zip(SystemCpuSnapshot::now());
        ServerResults {
            streams,
            wall_us: self.t0.elapsed().as_micros() as u64,
            window_us: window.as_micros() as u64,
            process_cpu: CpuTime::process_now().since(self.cpu0),
            system_cpu: sys.as_ref().map(|(a, b)| b.since(a)),
            cores: sys.map(|(a, b)| b.cores_since(a)).unwrap_or_default(),
            drops: self
                .drops0
                .as_ref()
                .map(|(d0, ifc)| Box::new(DropSnapshot::now(ifc.as_deref()).since(d0))),
            cpu_at_stop: None,
            qdiscs: None,
            driver: None,
            link: None,
        }
    }
}

/// How the streams ran: the receivers' counts at the end, and the times that matter.
struct Ran {
    omitted: Option<Omitted>,
    /// The receivers' counts at the end.
    received: Vec<StreamCounts>,
    /// From the start to the end.
    wall: Duration,
    /// From the start to when the senders were told to stop.
    send_wall: Duration,
    /// The interval rows so far (when the run is kept; at most the record's bound).
    rows: Rows,
}

/// When to take the next interval's counts: every `spec.interval_ms` from the start, when the
/// run is kept; a tick within 10 ms of the test's end is left to the last interval, which ends
/// at `TestEnd` (as a linerate client's intervals do).
struct Ticks {
    every: Duration,
    next: Option<Duration>,
    until: Duration,
}

impl Ticks {
    fn new(spec: &TestSpec, kept: bool) -> Self {
        let every = Duration::from_millis(spec.interval_ms.max(1));
        Self {
            every,
            next: kept.then_some(every),
            until: Duration::from_millis(spec.duration_ms)
                .saturating_sub(Duration::from_millis(10)),
        }
    }

    /// The next tick, if one is due before the end.
    fn next(&self) -> Option<Duration> {
        self.next.filter(|&t| t < self.until)
    }

    /// Whether a tick is due at `elapsed`; if so, moves on to the next.
    fn take(&mut self, elapsed: Duration) -> bool {
        match self.next() {
            Some(t) if elapsed >= t => {
                self.next = Some(t + self.every);
                true
            }
            _ => false,
        }
    }
}

/// Runs the streams from `TestStart` to the client's `TestEnd`, then exchanges the results and
/// hands the finished run to the server's record sink, if it has one.
pub(super) fn run_test(
    ctrl: &mut Conn,
    test: &Test<'_>,
    conns: Vec<Conn>,
    udp: Option<UdpClaim<'_>>,
    shared: &Server<'_>,
) -> Result<String, Refusal> {
    let spec = test.spec;
    // The test's time runs from here, before the streams start: the client's clock starts when
    // the states below arrive, so this end's senders stop a one-way delay before the client
    // stops counting, and their last data still counts there.
    let start = Start::now(ctrl, spec, shared.config().records.is_some());
    let ends = begin(ctrl, test, conns, start.t0, shared)?;
    let (end, mut ran) = run_streams(ctrl, &ends, test, start.t0, shared);
    if end.is_ok() && await_amount(&ends.receivers, spec, shared.config().drain_timeout) {
        ran.received = ends.receivers.snapshot();
    }
    let Ends {
        senders,
        receivers,
        order,
    } = ends;
    senders.stop();
    receivers.stop();
    let drain = shared.config().drain_timeout;
    // UDP receivers end once nothing has come for a moment after the client's last datagram,
    // so one still queued at TEST_END counts: their final counts are the figures. A TCP
    // receiver waits for the client to close, which it does only after the results: its
    // figures are its counts at TEST_END.
    let mut receivers = Some(receivers);
    let udp_received = (spec.kind().row().loss == Loss::Datagrams)
        .then(|| receivers.take().map(|r| r.join(drain)))
        .flatten();
    if let Some(outcomes) = &udp_received {
        ran.received = outcomes.iter().map(worker_counts).collect();
    }
    // The test is over for the client, which may start the next one from the same address
    // while this one drains.
    drop(udp);
    let sent = final_counts(&senders, start.t0 + ran.send_wall);
    let counts = merge(&order, &sent, &ran.received);
    let exchanged = end.and_then(|()| {
        let ours = our_results(test, &order, &counts, &ran, start.cpu0, shared);
        exchange_results(ctrl, &ours, shared)
    });
    // The client closes its data connections once done: the senders see their ends, and the
    // receivers drain to theirs.
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    // A sender's counts are the ones the client was told; its report adds its CPU and TCP_INFO.
    let sent: Vec<StreamEnd> = (senders.join(drain).into_iter().zip(&sent))
        .map(|(o, at_stop)| StreamEnd {
            total: *at_stop,
            ..stream_end(0, o, *at_stop)
        })
        .collect();
    let received = udp_received.or_else(|| receivers.map(|r| r.join(drain)));
    let received: Vec<StreamEnd> = (received.unwrap_or_default().into_iter())
        .zip(&ran.received)
        .map(|(o, at_end)| stream_end(0, o, *at_end))
        .collect();
    let theirs = exchanged?;
    let line = done_line(spec, &order, &counts, &ran, &sent);
    let whole = server_streams(&order, sent.clone(), received.clone(), None);
    count_moved(test, &order, &whole, ran.wall, shared);
    if let Some(sink) = &shared.config().records {
        let streams = server_streams(&order, sent, received, ran.omitted.as_ref());
        match keep(test, &start, ran, streams, counts, &theirs, shared) {
            Ok(run) => (sink.0)(run),
            Err(why) => return Ok(format!("{line}; not kept: {why}")),
        }
    }
    Ok(line)
}

/// By amount (`-n`, `-k`), a TCP test's bytes still on their way to this end's receivers at
/// `TEST_END` (iperf3's client ends the test once it has written the amount, not once it has
/// arrived): waits, at most `drain`, until the receivers hold the amount, so that their counts
/// are what arrived, every byte of it. Whether it waited.
fn await_amount(receivers: &Workers, spec: &TestSpec, drain: Duration) -> bool {
    let (Some(units), Some(AmountUnit::Bytes)) = (spec.amount_units(), spec.amount_unit()) else {
        return false;
    };
    let until = Instant::now() + drain;
    while Instant::now() < until {
        // One look at the receivers a turn: none left (all closed), or the amount held.
        let counts = receivers.snapshot();
        if counts.is_empty() || counts.iter().map(|c| c.bytes).sum::<u64>() >= units {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The log's line for the finished test: what each way moved, as a linerate client's test
/// says it, and the byte counts both ways.
fn done_line(
    spec: &TestSpec,
    order: &[(bool, usize)],
    counts: &[StreamCounts],
    ran: &Ran,
    sent: &[StreamEnd],
) -> String {
    let ends: Vec<_> = (order.iter().zip(counts))
        .map(|(&(sends, _), c)| {
            let flow = if sends {
                Flow::ServerToClient
            } else {
                Flow::ClientToServer
            };
            (flow, *c, *c)
        })
        .collect();
    format!(
        "test done: {} (received {} bytes, sent {} bytes in {:.3} s)",
        result_line::line(spec, &ends, ran.wall),
        ran.received.iter().map(|c| c.bytes).sum::<u64>(),
        sent.iter().map(|e| e.total.bytes).sum::<u64>(),
        ran.wall.as_secs_f64()
    )
}

/// Tells the client the test runs and starts the streams, with their hard stops.
fn begin(
    ctrl: &mut Conn,
    test: &Test<'_>,
    conns: Vec<Conn>,
    t0: Instant,
    shared: &Server<'_>,
) -> Result<Ends, Refusal> {
    // Every control write from here waits at most the handshake timeout for a client that
    // does not read (the results, longer, have a deadline of their own).
    (ctrl.set_write_timeout(Some(shared.config().handshake_timeout)))
        .map_err(|e| gone("control connection", e))?;
    // Both states in one segment: a second small write would wait for the client's delayed ACK
    // of the first (40 ms) while the client's clock already runs.
    ctrl.write_all(&[State::TestStart.to_byte(), State::TestRunning.to_byte()])
        .map_err(|e| gone("the client went away", e))?;
    let mut ends = Ends::start(test.spec, test.params, conns)?;
    ends.stop_by(test.spec, t0, shared)?;
    Ok(ends)
}

/// The test's bytes and datagrams into `serve --metrics`: `streams`, this server's ends in
/// connection `order` over the whole test (omitted seconds included), as a linerate test's.
fn count_moved(
    test: &Test<'_>,
    order: &[(bool, usize)],
    streams: &[StreamEnd],
    wall: Duration,
    shared: &Server<'_>,
) {
    let ends: Vec<(Way, StreamCounts)> = (order.iter().zip(streams))
        .map(|(&(sends, _), end)| (if sends { Way::Sent } else { Way::Received }, end.total))
        .collect();
    let client = test.client.map(|a| a.ip().to_canonical());
    let transport = transport_of(test.spec);
    let window_us = wall.as_micros() as u64;
    shared.count(|m| m.moved(transport, &ends, window_us, client));
}

/// A worker's final counts (those it had when it failed or was given up on, otherwise).
fn worker_counts(o: &engine::WorkerOutcome) -> StreamCounts {
    match &o.result {
        Some(Ok(report)) => report.counts,
        _ => o.now,
    }
}

/// The senders' counts once their loops have returned, each TCP sender's with its TCP_INFO: a
/// write returns within one write timeout ([`engine::POLL_INTERVAL`]) of the senders' stop, so
/// a snapshot after that holds every byte they wrote, the last write's too. (Joining them
/// instead would wait for the client to close its connections, which it does only after the
/// results.)
fn final_counts(senders: &Workers, stopped: Instant) -> Vec<StreamCounts> {
    if senders.snapshot().is_empty() {
        return Vec::new();
    }
    let settled = stopped + engine::POLL_INTERVAL + Duration::from_millis(20);
    std::thread::sleep(settled.saturating_duration_since(Instant::now()));
    senders.snapshot()
}

/// This end's results for the client, with its output when the client asked for it.
fn our_results(
    test: &Test<'_>,
    order: &[(bool, usize)],
    counts: &[StreamCounts],
    ran: &Ran,
    cpu0: CpuTime,
    shared: &Server<'_>,
) -> Results {
    let cpu = CpuTime::process_now().since(cpu0);
    let times = (ran.wall, ran.send_wall);
    let mut ours = results(order, counts, ran.omitted.as_ref(), cpu, times);
    if test.params.get_server_output {
        let sends: Vec<bool> = order.iter().map(|&(s, _)| s).collect();
        let udp = test.spec.kind().row().loss == Loss::Datagrams;
        let text = output::text(&shared.info().version, &ours, &sends, udp);
        ours.server_output_text = Some(text);
    }
    ours
}

/// The finished run as a record: this server's `streams` and the interval rows up to
/// `last` (every stream's counts at `TestEnd`), all from the end of the omitted seconds.
fn keep(
    test: &Test<'_>,
    start: &Start,
    ran: Ran,
    streams: Vec<StreamEnd>,
    last: Vec<StreamCounts>,
    theirs: &Results,
    shared: &Server<'_>,
) -> Result<ServedRun, record::NotKept> {
    let omitted = ran.omitted.as_ref();
    let omit_at = omitted.map_or(Duration::ZERO, |o| o.at);
    let intervals = ran.rows.finish(ran.wall, &last, omitted);
    let about = record::About {
        spec: test.spec,
        client_version: test.params.client_version.as_deref(),
        client: test.client,
        started_at_unix_ms: start.unix_ms,
        server: shared.info(),
        host: test.host.clone().unwrap_or_default(),
    };
    let window = ran.wall.saturating_sub(omit_at);
    record::build(about, start.results(streams, window), intervals, theirs)
}

/// Runs the streams until the client's `TestEnd` (`Err`: why none came): the senders stop when
/// the test's time is up by this end's clock; with `-O`, the counts at the end of the omitted
/// seconds are kept.
fn run_streams(
    ctrl: &mut Conn,
    ends: &Ends,
    test: &Test<'_>,
    t0: Instant,
    shared: &Server<'_>,
) -> (Result<(), Refusal>, Ran) {
    let omit = Duration::from_secs(test.params.omit);
    let time_up = t0 + Duration::from_millis(test.spec.duration_ms);
    // The client ends the test; a server never runs past the spec by more than the grace.
    let longest = time_up + shared.config().handshake_timeout;
    let (mut omitted, mut senders_done) = (None, None);
    let mut ticks = Ticks::new(test.spec, shared.config().records.is_some());
    let mut rows = Rows::new(test.spec, !omit.is_zero(), Default::default());
    let end = loop {
        let now = Instant::now();
        if ticks.take(now - t0) {
            rows.tick(now - t0, &ends.snapshot(), omitted.as_ref());
        }
        if omitted.is_none() && !omit.is_zero() && now >= t0 + omit {
            omitted = Some(Omitted {
                at: now - t0,
                counts: ends.snapshot(),
            });
        }
        if senders_done.is_none() && now >= time_up {
            ends.senders.stop();
            senders_done = Some(now - t0);
        }
        let next = [Some(longest), senders_done.is_none().then_some(time_up)]
            .into_iter()
            .flatten()
            .chain((omitted.is_none() && !omit.is_zero()).then_some(t0 + omit))
            .chain(ticks.next().map(|t| t0 + t))
            .min()
            .unwrap_or(longest);
        if now >= longest {
            break Err(gone("the client", "sent no TEST_END"));
        }
        // poll(2) keeps time to the millisecond; a socket's receive timeout runs in jiffies
        // (20 ms late was seen), which would stretch the senders' time.
        let wait = next
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        if !engine::sys_io::poll_readable(&[ctrl.as_raw_fd()], wait)[0] {
            continue;
        }
        match read_state(ctrl, shared.config().handshake_timeout) {
            Ok(Some(State::TestEnd)) => break Ok(()),
            Ok(Some(State::ClientTerminate)) => break Err(gone("the client", "terminated")),
            Ok(_) => {}
            Err(r) => break Err(r),
        }
    };
    let received = ends.receivers.snapshot();
    let wall = t0.elapsed();
    let ran = Ran {
        omitted,
        received,
        wall,
        send_wall: senders_done.unwrap_or(wall),
        rows,
    };
    (end, ran)
}

/// This server's ends of the streams in connection order, numbered, their bytes less what
/// they counted in the omitted seconds (as the results the client got leave them out).
fn server_streams(
    order: &[(bool, usize)],
    sent: Vec<StreamEnd>,
    received: Vec<StreamEnd>,
    omitted: Option<&Omitted>,
) -> Vec<StreamEnd> {
    let (mut sent, mut received) = (sent.into_iter(), received.into_iter());
    order
        .iter()
        .enumerate()
        .map(|(i, &(sends, _))| {
            let mut end = if sends { sent.next() } else { received.next() }.unwrap_or_default();
            end.stream = i as u16;
            if let Some(before) = omitted.and_then(|o| o.counts.get(i)) {
                end.at_stop.bytes = end.at_stop.bytes.saturating_sub(before.bytes);
                end.total.bytes = end.total.bytes.saturating_sub(before.bytes);
            }
            end
        })
        .collect()
}

/// This end's results: each stream's counts, its bytes less what it counted in the omitted
/// seconds, its end time (a sender's when the time was up, a receiver's at `TestEnd`) from the end of
/// the omitted seconds, and the process CPU over the whole test.
fn results(
    order: &[(bool, usize)],
    counts: &[StreamCounts],
    omitted: Option<&Omitted>,
    cpu: CpuTime,
    (wall, send_wall): (Duration, Duration),
) -> Results {
    let sends = order.iter().any(|&(s, _)| s);
    let mut r = Results::of_end(counts, cpu, wall, sends);
    let omit_at = omitted.map_or(Duration::ZERO, |o| o.at);
    for (i, s) in r.streams.iter_mut().enumerate() {
        let end = if order[i].0 { send_wall } else { wall };
        s.end_time = end.saturating_sub(omit_at).as_secs_f64();
        if let Some(o) = omitted.and_then(|o| o.counts.get(i)) {
            let before = crate::protocol::StreamResults::of_counts(s.id, o, Duration::ZERO);
            // As iperf3 (3.14 and later) reports them: bytes and retransmits after the omitted
            // seconds (iperf3 resets both then), datagram counts in total beside their counts in
            // the omitted seconds (3.12 and 3.13 take their own).
            s.bytes = s.bytes.saturating_sub(before.bytes);
            if s.retransmits >= 0 && before.retransmits >= 0 {
                s.retransmits = (s.retransmits - before.retransmits).max(0);
            }
            s.omitted_packets = Some(before.packets);
            s.omitted_errors = Some(before.errors);
        }
    }
    r
}

/// `ExchangeResults`: the client's results in, this end's out; then `DisplayResults` and the
/// client's `IperfDone`. Returns the client's results.
fn exchange_results(
    ctrl: &mut Conn,
    ours: &Results,
    shared: &Server<'_>,
) -> Result<Results, Refusal> {
    send_state(ctrl, State::ExchangeResults)?;
    // One deadline for the whole of the client's results, however slowly its bytes trickle,
    // and one for ours, however slowly it reads them.
    let within = shared.config().handshake_timeout;
    let until = Instant::now() + within;
    let theirs: Results = read_json(&mut ReadBy { conn: ctrl, until }, MAX_RESULTS_LEN)
        .map_err(|e| gone("the client's results", e))?;
    let until = Instant::now() + within;
    write_json(&mut ReadBy { conn: ctrl, until }, ours)
        .map_err(|e| gone("sending the results", e))?;
    send_state(ctrl, State::DisplayResults)?;
    // The client's last word; a client that closes instead is done too.
    let _ = read_state(ctrl, shared.config().handshake_timeout);
    Ok(theirs)
}
