//! `linerate rpm`: responsiveness under working conditions (`sweep::rpm`), printed as `tcp`
//! prints a run: a line per interval on stdout, then the short summary (`report::rpm_brief`) or
//! with `-v` the full report (`report::rpm_text`), or one JSON document; diagnostics and where
//! the runs were stored on stderr. Each direction is stored as one run (`analysis::rpm_record`)
//! tagged `rpm_id` and `rpm_direction`, and drawn with `--chart` (`report::chart::rpm_chart`).
//! `-t` is the whole run's limit, counted from this command's start.

pub use RpmArgs as Flags;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use engine::Signal;
use events::{JsonLines, Observer};
use record::rpm::{RpmResult, RpmTick, RpmWay};
use record::Tags;
use sweep::rpm::{RpmRun, RpmSetup};

use crate::commands::{Measure, RunOutcome};
use crate::connection_args::ConnectionArgs;
use crate::store_args::{RunStore, StoreArgs};

/// Which way the load goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Way {
    /// Client -> server.
    Up,
    /// Server -> client.
    Down,
    /// Up, then down.
    Both,
    /// No load: the idle path only (its RPM is 60000 / the idle round trip).
    Idle,
}

/// `linerate rpm`.
#[derive(Debug, clap::Args)]
pub struct RpmArgs {
    /// Where the server is, the key, the address family.
    #[command(flatten)]
    pub conn: ConnectionArgs,
    /// Load-generating connections at most (the draft's MNP); each is a session, so the
    /// server must allow as many (serve --max-sessions, 16 by default).
    #[arg(
        long = "parallel",
        short = 'P',
        value_name = "STREAMS",
        default_value_t = 16
    )]
    pub parallel: u16,
    /// Longest the whole run may take, stable or not, seconds: the idle path and every
    /// direction together (each direction an equal share of what is left when it starts),
    /// ending within about 0.5 s after it.
    #[arg(
        long = "time",
        short = 't',
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        default_value_t = 30.0
    )]
    pub time: f64,
    /// Which way the load goes.
    #[arg(long, value_enum, default_value_t = Way::Both)]
    pub direction: Way,
    /// The load connections' TCP congestion control on both ends, e.g. cubic, reno, bbr.
    #[arg(long, short = 'C', value_name = "ALGO")]
    pub congestion: Option<String>,
    /// TCP_NOTSENT_LOWAT on the load connections, bytes (K, M): less waits in the senders'
    /// buffers, which the self probes show.
    #[arg(long, value_name = "BYTES")]
    pub notsent_lowat: Option<String>,
    /// Foreign probes a second, and as many self probes spread over the most connections
    /// (at least one each); the draft's MPS of 100 a second is both kinds together, so at
    /// most 50. Lowered to keep both within 5 % of the capacity.
    #[arg(long, value_name = "PER_SEC", default_value_t = 50)]
    pub probes: u32,
    /// Print one JSON document instead of the text (with the stored runs' ids, `run_ids`).
    #[arg(long)]
    pub json: bool,
    /// Print the full report after the live rows (the overall RPM's terms, the idle path,
    /// each direction's probes and where its delay sat) instead of the short summary.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print JSON events as they happen, one per line (a `tick` per interval of each
    /// direction, `stored`), the last one the --json document (docs/RESULTS.md, "The event
    /// stream").
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,
    /// Also draw each direction's goodput, connections and round trips over time, .svg or
    /// .png by the extension (both directions side by side in one image).
    #[arg(long, value_name = "PATH")]
    pub chart: Option<PathBuf>,
    /// Where the runs are stored (one per direction), and their tags.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where each interval goes: a line on stdout (as `tcp`'s live rows; the first failed write
/// is kept and ends the rows, the run goes on), a `tick` event on stdout, or nowhere (`--json`).
enum Progress {
    Lines(Option<std::io::Error>),
    Events(JsonLines<std::io::Stdout>),
    Silent,
}

impl Observer for Progress {
    fn tick(&mut self, way: RpmWay, tick: &RpmTick) {
        match self {
            Progress::Lines(error @ None) => {
                let line = report::rpm_text::tick_line(way, tick);
                let mut out = crate::output::stdout(true);
                if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                    *error = Some(e);
                }
            }
            Progress::Lines(Some(_)) | Progress::Silent => {}
            Progress::Events(events) => events.tick(way, tick),
        }
    }
}

impl Measure for RpmArgs {
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        rpm(self, interrupt)
    }

    fn check(&self) -> Result<()> {
        check(self)
    }
}

/// Refuses flags out of range or that do not go together, naming the flag.
fn check(args: &RpmArgs) -> Result<()> {
    if !(1..=64).contains(&args.parallel) {
        bail!(
            "-P {}: between 1 and 64 load-generating connections",
            args.parallel
        );
    }
    if !(1..=50).contains(&args.probes) {
        bail!(
            "--probes {}: between 1 and 50 a second (the draft's cap, 100 probes a second, is foreign and self probes together)",
            args.probes
        );
    }
    if !(2.0..=600.0).contains(&args.time) {
        bail!(
            "--time {}: between 2 and 600 seconds for the whole run (the idle path and every direction)",
            args.time
        );
    }
    if let Some(name) = &args.congestion {
        engine::sockopt::check_congestion(name)?;
    }
    if let Some(path) = &args.chart {
        crate::commands::chart_format(path)?;
        if args.direction == Way::Idle {
            bail!(
                "--chart with --direction idle: the chart draws a load's directions; there is none"
            );
        }
    }
    Ok(())
}

/// `linerate rpm`: the idle path, then each direction until stable or out of time.
fn rpm(args: &RpmArgs, interrupt: Signal) -> Result<RunOutcome> {
    let began = Instant::now();
    check(args)?;
    let mut store = args.store.open()?;
    let reached = crate::reach::target_for(args.conn.route()?, &args.conn, None)?;
    let setup = RpmSetup {
        target: reached.target.clone(),
        label: reached.label.clone(),
        key: reached.key.clone(),
        params: analysis::rpm::Params {
            max_connections: args.parallel,
            ..Default::default()
        },
        probes_per_s: f64::from(args.probes),
        time_limit: Duration::from_secs_f64(args.time),
        began,
        congestion: args.congestion.clone(),
        notsent_lowat_bytes: args
            .notsent_lowat
            .as_deref()
            .map(crate::test_args::notsent_lowat)
            .transpose()?,
        interrupt,
    };
    let ways: &[RpmWay] = match args.direction {
        Way::Up => &[RpmWay::Up],
        Way::Down => &[RpmWay::Down],
        Way::Both => &[RpmWay::Up, RpmWay::Down],
        Way::Idle => &[],
    };
    let mut progress = match (args.json_stream, args.json) {
        (true, _) => Progress::Events(JsonLines::new(std::io::stdout())),
        (false, true) => Progress::Silent,
        (false, false) => {
            println!(
                "{}",
                report::rpm_text::live_header(&setup.label, ways, args.time)
            );
            Progress::Lines(None)
        }
    };
    let mut run = sweep::rpm::run(&setup, ways, &mut progress)?;
    // Stored before printing, so the document carries the ids; a failure to store is
    // reported once the result is printed, and where they went after it (as `tcp` does).
    let stored = store.as_mut().map(|s| save(s, &mut run));
    let printed = output(args, progress, &run.result);
    if let Some(where_to) = stored.transpose()?.flatten() {
        eprintln!("{where_to}");
    }
    printed?;
    Ok(RunOutcome {
        interrupted: run.result.interrupted,
        incomplete: false,
        ..RunOutcome::default()
    })
}

/// What follows the intervals: the events' `stored` and `end` (`--json-stream`), or the
/// summary, the full report or the document (`print`); and `--chart`.
fn output(args: &RpmArgs, progress: Progress, result: &RpmResult) -> Result<()> {
    match progress {
        Progress::Events(mut events) => {
            result
                .run_ids
                .iter()
                .flatten()
                .for_each(|id| events.stored(*id as i64));
            let ended = events.finish(result).map_err(Into::into);
            ended.and_then(|()| draw(args, result))
        }
        Progress::Lines(Some(e)) => {
            Err(anyhow::Error::new(e).context("writing the live rows to stdout"))
        }
        Progress::Lines(None) | Progress::Silent => print(args, result),
    }
}

/// The result on stdout (text or `--json`), and `--chart`.
fn print(args: &RpmArgs, result: &RpmResult) -> Result<()> {
    let mut out = crate::output::stdout(!args.json);
    if args.json {
        serde_json::to_writer_pretty(&mut out, result)?;
        writeln!(out)?;
    } else if args.verbose {
        report::rpm_text::write(&mut out, result)?;
    } else {
        let bold = crate::output::bold_on_stdout();
        report::rpm_brief::write_brief(&mut out, result, bold)?;
    }
    out.flush()?;
    draw(args, result)
}

/// `--chart`: the directions that have intervals; a run cut short before any keeps its own
/// outcome.
fn draw(args: &RpmArgs, result: &RpmResult) -> Result<()> {
    let Some(path) = &args.chart else {
        return Ok(());
    };
    let directions: Vec<_> = result
        .directions
        .iter()
        .filter(|d| !d.timeline.is_empty())
        .map(|d| ("", d))
        .collect();
    match report::chart::rpm_chart(&directions) {
        Ok(chart) => crate::commands::write_chart(path, chart)?,
        Err(e) if result.interrupted => eprintln!("linerate: no chart: {e}"),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Stores each direction as one run tagged `rpm_id` (the start, Unix ms) and `rpm_direction`,
/// keeps the ids in the document, and returns the line saying where (printed on stderr after
/// the summary, the last thing on a terminal, as `tcp` does). A direction without a finished load
/// connection has nothing to store: said, not an error. A run the store refuses is kept as a
/// file (`RunStore::save_with` says where); the first such error is returned once every
/// direction was tried, later ones are printed.
fn save(store: &mut RunStore, run: &mut RpmRun) -> Result<Option<String>> {
    let r = &run.result;
    let (mut said, mut ids, mut failed) = (Vec::new(), Vec::new(), None);
    for (d, loads) in r.directions.iter().zip(&run.records_by_direction) {
        let record = match analysis::rpm_record::build(r, d, loads) {
            Ok(record) => record,
            Err(e) => {
                eprintln!("linerate: {e}");
                ids.push(None);
                continue;
            }
        };
        let way = d.direction.as_str();
        let tags = Tags::parse([
            format!("rpm_id={}", r.started_at_unix_ms),
            format!("rpm_direction={way}"),
        ])?;
        match store.save_with(&record, &tags) {
            Ok(id) => {
                ids.push(Some(id.0 as u64));
                said.push(format!("{id} ({way})"));
            }
            Err(e) => {
                ids.push(None);
                match failed {
                    None => failed = Some(e),
                    Some(_) => eprintln!("linerate: {e:#}"),
                }
            }
        }
    }
    if ids.iter().any(Option::is_some) {
        run.result.run_ids = ids;
    }
    let where_to = (!said.is_empty()).then(|| {
        format!(
            "linerate: stored as {} in {}",
            said.join(", "),
            store.location()
        )
    });
    match failed {
        None => Ok(where_to),
        Some(e) => {
            where_to.iter().for_each(|w| eprintln!("{w}"));
            Err(e.into())
        }
    }
}
