//! An iperf3 client's test once its streams are connected: `TestStart` to the client's
//! `TestEnd`, then the results, as an iperf3 server runs it.
//!
//! Senders and receivers stop apart, as iperf3's do: this end's senders stop when the test's
//! time is up by this end's clock (their counts are final once their loops return, so a write in
//! progress is counted); its receivers count until the client's `TestEnd`. With `-O`, what the
//! streams counted in the omitted seconds is taken out of the results, as iperf3 resets its
//! counters then.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use engine::{Conn, Role, Workers};
use measure::cpu::CpuTime;
use wire::iperf3::{read_json, write_json, Params, Results, State, MAX_RESULTS_LEN};
use wire::msg::StreamCounts;
use wire::spec::Flow;
use wire::{TestKind, TestSpec};

use super::udp::UdpClaim;
use super::{engine_of, gone, read_state, send_state, Refusal};
use crate::server::{wait_readable, Shared};

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

/// What the streams counted by the end of the omitted seconds (`-O`).
struct Omitted {
    at: Duration,
    counts: Vec<StreamCounts>,
}

/// Runs the streams from `TestStart` to the client's `TestEnd`, then exchanges the results.
pub(super) fn run_test(
    ctrl: &mut Conn,
    spec: &TestSpec,
    params: &Params,
    conns: Vec<Conn>,
    udp: Option<UdpClaim<'_>>,
    shared: &Shared,
) -> Result<String, Refusal> {
    // Both states in one segment: a second small write would wait for the client's delayed ACK
    // of the first (40 ms) while the client's clock already runs.
    // The test's time runs from here, before the streams start: the client's clock starts when
    // these arrive, so this end's senders stop a one-way delay before the client stops
    // counting, and their last data still counts there.
    let (t0, cpu0) = (Instant::now(), CpuTime::process_now());
    ctrl.write_all(&[State::TestStart.to_byte(), State::TestRunning.to_byte()])
        .map_err(|e| gone("the client went away", e))?;
    let ends = Ends::start(spec, params, conns)?;
    let run = until_test_end(ctrl, &ends, spec, params, t0, shared);
    let wall = t0.elapsed();
    let Ends {
        senders,
        receivers,
        order,
    } = ends;
    senders.stop();
    // UDP receivers end once nothing has come for a moment after the client's last datagram,
    // so one still queued at TEST_END counts; a TCP receiver would wait for the client to
    // close, which it does only after the results: its count is the one at TEST_END.
    receivers.stop();
    let (received, receivers) = if spec.kind() == TestKind::UdpStream {
        (
            final_counts(receivers.join(shared.config.drain_timeout)),
            None,
        )
    } else {
        (receivers.snapshot(), Some(receivers))
    };
    // The test is over for the client, which may start the next one from the same address
    // while this one drains.
    drop(udp);
    let send_wall = run.senders_done.unwrap_or(wall);
    let sent = final_counts(senders.join(shared.config.drain_timeout));
    let counts = merge(&order, &sent, &received);
    let exchanged = run.end.and_then(|()| {
        let cpu = CpuTime::process_now().since(cpu0);
        let ours = results(&order, &counts, run.omitted, cpu, (wall, send_wall));
        exchange_results(ctrl, &ours, shared)
    });
    // The client closes its data connections once done: the receivers drain to their ends.
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    if let Some(receivers) = receivers {
        receivers.join(shared.config.drain_timeout);
    }
    exchanged?;
    let (received, sent): (u64, u64) = (
        received.iter().map(|c| c.bytes).sum(),
        sent.iter().map(|c| c.bytes).sum(),
    );
    Ok(format!(
        "test done: received {received} bytes, sent {sent} bytes in {:.3} s",
        wall.as_secs_f64()
    ))
}

/// How the running test ended, and what happened on the way.
struct Run {
    /// `Ok` at the client's `TestEnd`.
    end: Result<(), Refusal>,
    /// The counts at the end of the omitted seconds (`-O`).
    omitted: Option<Omitted>,
    /// When this end's senders stopped, from the start.
    senders_done: Option<Duration>,
}

/// Waits for the client's `TestEnd`, stopping this end's senders when the time is up and
/// taking the counts at the end of the omitted seconds on the way.
fn until_test_end(
    ctrl: &mut Conn,
    ends: &Ends,
    spec: &TestSpec,
    params: &Params,
    t0: Instant,
    shared: &Shared,
) -> Run {
    let omit = Duration::from_secs(params.omit);
    let time_up = t0 + Duration::from_millis(spec.duration_ms);
    // The client ends the test; a server never runs past the spec by more than the grace.
    let longest = time_up + shared.config.handshake_timeout;
    let (mut omitted, mut senders_done) = (None, None);
    let end = loop {
        let now = Instant::now();
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
        if now >= longest {
            break Err(gone("the client", "sent no TEST_END"));
        }
        let next = [Some(longest), senders_done.is_none().then_some(time_up)]
            .into_iter()
            .flatten()
            .chain((omitted.is_none() && !omit.is_zero()).then_some(t0 + omit))
            .min()
            .unwrap_or(longest);
        // poll(2) keeps time to the millisecond; a socket's receive timeout runs in jiffies
        // (20 ms late was seen), which would stretch the senders' time.
        let wait = next
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        if !wait_readable(ctrl.as_raw_fd(), wait.as_millis() as i32) {
            continue;
        }
        match read_state(ctrl, shared.config.handshake_timeout) {
            Ok(Some(State::TestEnd)) => break Ok(()),
            Ok(Some(State::ClientTerminate)) => break Err(gone("the client", "terminated")),
            Ok(_) => {}
            Err(r) => break Err(r),
        }
    };
    Run {
        end,
        omitted,
        senders_done,
    }
}

/// Each worker's final counts (those it had when it failed or was given up on, otherwise).
fn final_counts(outcomes: Vec<engine::WorkerOutcome>) -> Vec<StreamCounts> {
    outcomes
        .into_iter()
        .map(|o| o.result.and_then(Result::ok).map_or(o.now, |r| r.counts))
        .collect()
}

/// This end's results: each stream's counts, its bytes less what it counted in the omitted
/// seconds, its end time (a sender's when the time was up, a receiver's at `TestEnd`) from the end of
/// the omitted seconds, and the process CPU over the whole test.
fn results(
    order: &[(bool, usize)],
    counts: &[StreamCounts],
    omitted: Option<Omitted>,
    cpu: CpuTime,
    (wall, send_wall): (Duration, Duration),
) -> Results {
    let sends = order.iter().any(|&(s, _)| s);
    let mut r = Results::of_end(counts, cpu, wall, sends);
    let omit_at = omitted.as_ref().map_or(Duration::ZERO, |o| o.at);
    for (i, s) in r.streams.iter_mut().enumerate() {
        let end = if order[i].0 { send_wall } else { wall };
        s.end_time = end.saturating_sub(omit_at).as_secs_f64();
        if let Some(o) = omitted.as_ref().and_then(|o| o.counts.get(i)) {
            let before = wire::iperf3::StreamResults::of_counts(s.id, o, Duration::ZERO);
            // As iperf3 (3.13 and later) reports them: bytes after the omitted seconds, datagram
            // counts in total beside their counts in the omitted seconds (3.12 takes its own).
            s.bytes = s.bytes.saturating_sub(before.bytes);
            s.omitted_packets = Some(before.packets);
            s.omitted_errors = Some(before.errors);
        }
    }
    r
}

/// `ExchangeResults`: the client's results in, this end's out; then `DisplayResults` and the
/// client's `IperfDone`.
fn exchange_results(ctrl: &mut Conn, ours: &Results, shared: &Shared) -> Result<(), Refusal> {
    send_state(ctrl, State::ExchangeResults)?;
    ctrl.set_read_timeout(Some(shared.config.handshake_timeout))
        .map_err(|e| gone("control connection", e))?;
    let _theirs: Results =
        read_json(ctrl, MAX_RESULTS_LEN).map_err(|e| gone("the client's results", e))?;
    write_json(ctrl, ours).map_err(|e| gone("sending the results", e))?;
    send_state(ctrl, State::DisplayResults)?;
    // The client's last word; a client that closes instead is done too.
    let _ = read_state(ctrl, shared.config.handshake_timeout);
    Ok(())
}
