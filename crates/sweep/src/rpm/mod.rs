//! `linerate rpm`: responsiveness under working conditions (issue 20; the IETF draft in
//! `analysis::rpm`), over linerate's own sockets, all times on the client's clock.
//!
//! First the idle path: [`IDLE_PROBES`] foreign probes. Then, per direction: one
//! load-generating connection (a one-stream `tcp_stream` session with in-band self probes) is
//! added every interval until the goodput's moving average is stable or [`Params::max_connections`]
//! run; foreign probes (a new connection each: its connect, then a request on it) run beside
//! the load the whole time. Once the goodput is stable, the responsiveness over the last MAD
//! intervals is tracked until it is stable too, or the direction's share of the time limit
//! passes. The arithmetic is `analysis::rpm_window::DirectionTracker`'s; this module runs the
//! connections and the clock, `collect` gathers their reports on the direction's one grid of
//! intervals (each interval's goodput is the bytes read in it), `probes` runs the foreign
//! probes.
//!
//! The time limit is the whole run's ([`RpmSetup::time_limit`], from [`RpmSetup::began`]): each
//! direction gets an equal share of what is left when it starts (a direction that stabilises
//! early leaves the rest to the next), and ends at the last whole interval that fits in its
//! share less [`TEARDOWN`] (at least one interval runs). Foreign probes still in flight when it
//! ends wait no longer than [`TEARDOWN`] for their answers.
//!
//! Each load connection is a session of its own, so the server must allow as many at once
//! (`serve --max-sessions`, 16 by default); one it refuses ends the ramp there, with a note.
//! Each one's `RunRecord` is kept ([`RpmRun::records_by_direction`]): the binary stores each
//! direction as one run built from them (`analysis::rpm_record`).

mod collect;
mod probes;

use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use analysis::rpm::{self, Params};
use analysis::rpm_window::DirectionTracker;
use events::{Observer, Signal};
use record::rpm::{IdleBaseline, RpmDirection, RpmDocument, RpmEnd, RpmParams, RpmResult, RpmWay};
use record::RunRecord;
use session::auth::ClientKey;
use session::client::{foreign_probe, ClientConfig, ClientError};
use session::target::Target;
use wire::spec::{Direction, Params as SpecParams, StreamParams, TcpOptions};
use wire::TestSpec;

use collect::{collect, load_connection, Grid, Ramp};
use probes::{foreign_loop, ProbeRate};

/// Foreign probes measuring the idle path.
pub const IDLE_PROBES: usize = 20;
/// How long a foreign probe may wait for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Kept back from each direction's share of the time limit for its end: the load connections'
/// sessions ending and the last foreign probes' answers.
pub const TEARDOWN: Duration = Duration::from_millis(250);

/// What to measure, and where.
#[derive(Debug, Clone)]
pub struct RpmSetup {
    /// The server.
    pub target: Target,
    /// How records name it.
    pub label: String,
    /// The key to prove.
    pub key: Option<ClientKey>,
    /// The draft's parameters (MPS, `max_probes_per_s`, is both kinds' cap together).
    pub params: Params,
    /// Probes asked for a second, of each kind (`--probes`): the foreign probes' rate, and
    /// the self probes' over the most connections.
    pub probes_per_s: f64,
    /// The whole run's time limit (`-t`): the idle path and every direction together.
    pub time_limit: Duration,
    /// When the run began (the command's start), what the time limit counts from.
    pub began: Instant,
    /// The load connections' congestion control (both ends), where not the hosts' default.
    pub congestion: Option<String>,
    /// The load connections' TCP_NOTSENT_LOWAT, bytes.
    pub notsent_lowat_bytes: Option<u32>,
    /// Raised to stop (Ctrl-C): what was measured is kept.
    pub interrupt: Signal,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl RpmSetup {
    fn config(&self, spec: TestSpec, interrupt: Signal) -> ClientConfig {
        ClientConfig {
            key: self.key.clone(),
            ..ClientConfig::new(self.target.clone(), self.label.clone(), spec, interrupt)
        }
    }

    /// A load connection's test: one stream `way`, self probes at `per_s`, intervals of the
    /// draft's ID, long enough to outlast the direction (it is stopped).
    fn load_spec(&self, way: RpmWay, per_s: u32) -> TestSpec {
        let direction = match way {
            RpmWay::Up => Direction::Send,
            RpmWay::Down => Direction::Reverse,
        };
        let stream = StreamParams {
            self_probes_per_s: Some(per_s),
            ..StreamParams::new(direction)
        };
        let params = SpecParams::TcpStream {
            stream,
            tcp: TcpOptions {
                congestion: self.congestion.clone(),
                notsent_lowat_bytes: self.notsent_lowat_bytes,
                ..TcpOptions::default()
            },
        };
        let duration_ms = (self.time_limit + Duration::from_secs(10)).as_millis() as u64;
        TestSpec {
            interval_ms: self.interval().as_millis() as u64,
            ..TestSpec::new(params, 1, duration_ms)
        }
    }

    /// The draft's ID, whole milliseconds (at least one): the load connections' interval and
    /// the direction's grid.
    fn interval(&self) -> Duration {
        Duration::from_millis((self.params.interval_s * 1000.0).round().max(1.0) as u64)
    }

    /// The foreign probes' connection settings (the server and its key; the spec is unused:
    /// a probe runs no test).
    fn probe_config(&self) -> ClientConfig {
        self.config(self.load_spec(RpmWay::Up, 1), Signal::new())
    }

    /// Self probes per second on each load connection started while probe pairs run at
    /// `pairs_per_s`: spread over the most connections, rounded down so that all of them
    /// together stay within it, at least one.
    fn self_probes_per_connection(&self, pairs_per_s: f64) -> u32 {
        let per = pairs_per_s / f64::from(self.params.max_connections);
        per.floor().max(1.0) as u32
    }

    /// Foreign probes per second to begin with: the rate asked for, less what the most
    /// connections' self probes take beyond MPS (one a second each, when MNP is larger than
    /// the rate), so the two kinds together stay within MPS.
    fn foreign_probes_per_s(&self) -> f64 {
        let asked = self.probes_per_s;
        let selfs = self.self_probes_per_connection(asked) * u32::from(self.params.max_connections);
        asked
            .min(self.params.max_probes_per_s - f64::from(selfs))
            .max(1.0)
    }
}

/// A finished `linerate rpm`: its document, and each direction's load connections' records
/// (what `analysis::rpm_record` builds the direction's stored run from).
#[derive(Debug, Clone)]
pub struct RpmRun {
    /// The document as printed.
    pub result: RpmResult,
    /// Per direction, in `result.directions` order: the records of the load connections that
    /// finished, in the order they were added.
    pub records_by_direction: Vec<Vec<RunRecord>>,
}

/// Measures the idle path, then each of `ways` in turn.
pub fn run(
    setup: &RpmSetup,
    ways: &[RpmWay],
    progress: &mut dyn Observer,
) -> Result<RpmRun, ClientError> {
    let started_at_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let idle = idle_baseline(setup)?;
    let mut directions = Vec::new();
    let mut records_by_direction = Vec::new();
    let deadline = setup.began + setup.time_limit;
    for (i, &way) in ways.iter().enumerate() {
        if setup.interrupt.is_raised() {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let share = left / (ways.len() - i) as u32;
        let (direction, records) = run_direction(setup, way, share, &idle, progress);
        directions.push(direction);
        records_by_direction.push(records);
    }
    let p = &setup.params;
    let result = RpmResult {
        kind: RpmDocument::Rpm,
        draft: rpm::DRAFT.to_string(),
        target: setup.label.clone(),
        started_at_unix_ms,
        params: RpmParams {
            moving_average_intervals: p.moving_average_intervals,
            interval_s: p.interval_s,
            trimmed_keep: p.trimmed_keep,
            stability_tolerance: p.stability_tolerance,
            max_connections: p.max_connections,
            probes_per_s: setup.foreign_probes_per_s(),
            self_probes_per_connection: setup
                .self_probes_per_connection(setup.foreign_probes_per_s()),
        },
        time_limit_s: setup.time_limit.as_secs_f64(),
        duration_s: setup.began.elapsed().as_secs_f64(),
        idle,
        overall: rpm::overall(&directions),
        directions,
        interrupted: setup.interrupt.is_raised(),
        run_ids: Vec::new(),
    };
    Ok(RpmRun {
        result,
        records_by_direction,
    })
}

/// The idle path: foreign probes one after another, 10 ms apart, [`IDLE_PROBES`] of them or
/// as many as a tenth of the time limit allows (at least one).
fn idle_baseline(setup: &RpmSetup) -> Result<IdleBaseline, ClientError> {
    let config = setup.probe_config();
    let (mut connect, mut rr) = (Vec::new(), Vec::new());
    let until = setup.began + setup.time_limit / 10;
    for i in 0..IDLE_PROBES {
        if setup.interrupt.is_raised() || (i > 0 && Instant::now() >= until) {
            break;
        }
        let p = foreign_probe(&config, PROBE_TIMEOUT)?;
        connect.push(ms(p.connect));
        rr.push(ms(p.request));
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(IdleBaseline {
        connect_ms: rpm::spread(&connect),
        rr_ms: rpm::spread(&rr),
        rpm: rpm::trimmed_mean(&rr, setup.params.trimmed_keep).and_then(rpm::per_minute),
    })
}

/// One direction: the ramp, the probes, the intervals, until stable or its `share` of the time
/// limit is out (the last whole interval that fits in it less [`TEARDOWN`], at least one);
/// with the records of its load connections that finished.
fn run_direction(
    setup: &RpmSetup,
    way: RpmWay,
    share: Duration,
    idle: &IdleBaseline,
    progress: &mut dyn Observer,
) -> (RpmDirection, Vec<RunRecord>) {
    let stop = Signal::new();
    let (tx, rx) = mpsc::channel();
    let mut tracker = DirectionTracker::new(setup.params);
    let mut notes = Vec::new();
    let rate = ProbeRate::new(setup.foreign_probes_per_s());
    let first_self = setup.self_probes_per_connection(rate.per_s());
    let (mut lowered_to, mut self_lowered_to) = (None, None);
    let records = std::thread::scope(|s| {
        let mut loads = Vec::new();
        let foreign_tx = tx.clone();
        let (stop_ref, rate_ref) = (&stop, &rate);
        let t0 = Instant::now();
        let end_by = t0 + share;
        s.spawn(move || foreign_loop(setup, rate_ref, stop_ref, end_by, foreign_tx));
        let mut ramp = Ramp::default();
        let grid = Grid {
            t0,
            every: setup.interval(),
        };
        for n in 1u32.. {
            if ramp.adding && ramp.running < setup.params.max_connections {
                // A connection added after the 5 % cap lowered the probes carries fewer.
                let per = setup.self_probes_per_connection(rate.per_s());
                if per < first_self {
                    self_lowered_to = Some(self_lowered_to.map_or(per, |p: u32| p.min(per)));
                }
                let spec = setup.load_spec(way, per);
                let config = ClientConfig {
                    interval_grid: Some(t0),
                    ..setup.config(spec, stop.clone())
                };
                let (conn, tx) = (n as u16, tx.clone());
                loads.push(s.spawn(move || load_connection(conn, &config, tx)));
                ramp.running += 1;
            }
            collect(&rx, grid, &mut tracker, &mut ramp, &mut notes);
            let outcome = tracker.tick(ramp.running);
            ramp.adding &= !outcome.goodput_stable;
            if let Some(tick) = tracker.last_tick() {
                progress.tick(way, tick);
                // The lowest the probes went, even if the goodput later lifted the cap.
                if let Some(r) = rate.cap(&setup.params, tick.moving_average_bps) {
                    lowered_to = Some(lowered_to.map_or(r, |l: f64| l.min(r)));
                }
            }
            // The next interval would end past the share, less what the end takes.
            let next_end = grid.end_of(tracker.open_interval());
            let out_of_time = next_end > t0 + share.saturating_sub(TEARDOWN);
            if outcome.done || out_of_time || setup.interrupt.is_raised() {
                break;
            }
        }
        stop.raise();
        // Each stopped connection ends its session and hands over its record.
        loads
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .collect::<Vec<RunRecord>>()
    });
    if let Some(r) = lowered_to {
        let selfs = self_lowered_to.map_or(String::new(), |p| {
            format!("; connections added while lowered carried as few as {p} self probes a second each (those before kept {first_self})")
        });
        notes.push(format!(
            "foreign probes were lowered (to {r:.1} a second at the lowest) to stay within 5 % of the capacity{selfs}"
        ));
    }
    let ended = match setup.interrupt.is_raised() {
        true => RpmEnd::Interrupted,
        false => RpmEnd::TimeLimit,
    };
    (tracker.finish(way, idle, ended, notes), records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(max_connections: u16) -> RpmSetup {
        RpmSetup {
            target: Target::Tcp {
                addr: "198.18.0.2:5301".parse().unwrap(),
                bind: None,
            },
            label: String::new(),
            key: None,
            params: Params {
                max_connections,
                ..Params::default()
            },
            probes_per_s: 50.0,
            time_limit: Duration::from_secs(20),
            began: Instant::now(),
            congestion: None,
            notsent_lowat_bytes: None,
            interrupt: Signal::new(),
        }
    }

    #[test]
    fn both_kinds_of_probe_together_stay_within_mps() {
        // 16 connections: 3 self probes a second each (48) and 50 foreign.
        let s = setup(16);
        assert_eq!(s.self_probes_per_connection(50.0), 3);
        assert_eq!(s.foreign_probes_per_s(), 50.0);
        // 64: one each, and the foreign probes make up the rest of the 100.
        let s = setup(64);
        assert_eq!(s.self_probes_per_connection(50.0), 1);
        assert_eq!(s.foreign_probes_per_s(), 36.0);
        // --probes 10 over 16 connections: one self probe each, 10 foreign (26 within 100).
        let s = RpmSetup {
            probes_per_s: 10.0,
            ..setup(16)
        };
        assert_eq!(s.self_probes_per_connection(10.0), 1);
        assert_eq!(s.foreign_probes_per_s(), 10.0);
        // A capped rate of 6.25 pairs a second: one self probe per connection added then.
        assert_eq!(setup(4).self_probes_per_connection(6.25), 1);
        assert_eq!(setup(1).self_probes_per_connection(6.25), 6);
    }
}
