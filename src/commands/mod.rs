//! One module per measuring command, its flags named `Flags` there, each a [`Measure`] (what it
//! runs, how it checks them, whether it is one test and what a sweep or mesh runs of it);
//! `plan::measuring_commands!` lists the commands once, and declares their modules here. Here
//! also what they share: running a validated test against its target with its progress,
//! storing and printing its run.

use std::io::Write;
use std::path::Path;

use ::sweep::{run_repeated, Point, ProbePlan, Stopped};
use analysis::repeat::RepeatPlan;
use anyhow::{bail, Context, Result};
use engine::Signal;
use record::RunRecord;

use crate::output;
use crate::reach::target_for;
use crate::repeat_args::RepeatArgs;
use crate::sweep::args::BaseTest;
use crate::test_args::{CommonArgs, RunPlan};
use ::sweep::probe;
use events::{JsonLines, Observer};
use report::chart::ImageFormat;
use report::live_bar::StderrBar;
use report::Format;
use session::client::{self, Silent};

/// A module per entry of the list, named as its command (`commands::tcp`): a new command is its
/// entry and its file, with no line here. (rustfmt does not follow a module a macro declares,
/// so .ci/run checks these files' format by name.)
macro_rules! command_modules {
    ($($(#[doc = $doc:literal])* $variant:ident $name:ident { $($facts:tt)* })*) => {
        $(pub mod $name;)*
    };
}
plan::measuring_commands!(command_modules);

/// A measuring command's flags, as its module implements it (which command it is,
/// `plan::Measuring`, is its variant's name in `measuring.rs`).
pub trait Measure {
    /// Runs the command to its end (or Ctrl-C), printing and storing what it measured.
    fn run(&self, interrupt: Signal) -> Result<RunOutcome>;

    /// Checks the flags as the command does before it runs anything (a plan's `--check`).
    fn check(&self) -> Result<()>;

    /// One test's shared and repetition flags; `None` for a command that is not one test.
    fn test_flags(&self) -> Option<(&CommonArgs, &RepeatArgs)> {
        None
    }

    /// The test validated into what a sweep's point or a mesh's pair runs; `None` for a
    /// command that is not one test.
    fn base_test(&self) -> Option<Result<BaseTest>> {
        None
    }
}

/// How a client command ended (for the exit code).
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// Ctrl-C cut it short; what was measured was printed and stored.
    pub interrupted: bool,
    /// The server went away mid-test; the client's own figures were printed and stored.
    pub incomplete: bool,
    /// A check at the end found a metric worse than its baseline (`plan --check-against`).
    pub regressed: bool,
}

impl RunOutcome {
    fn of(record: &RunRecord) -> Self {
        Self {
            interrupted: record.summary.interrupted,
            incomplete: record.summary.incomplete.is_some(),
            ..RunOutcome::default()
        }
    }

    /// A sweep, repeat or rfc2544 ending: a failed point is an error (after the finished
    /// points were printed).
    pub(crate) fn stopped(stopped: Option<Stopped>) -> Result<Self> {
        match stopped {
            None => Ok(Self::default()),
            Some(Stopped::Interrupted) => Ok(Self {
                interrupted: true,
                ..Self::default()
            }),
            Some(Stopped::Failed { message }) => bail!("{message}"),
        }
    }
}

/// Says when this host grants less socket buffer than a test asks for: `--window` (a
/// warning), or with none given linerate's default UDP buffer, which high packet rates need
/// (a note; stock kernels allow 208 KiB).
pub(crate) fn warn_buffer_cap(window: Option<u32>, udp: bool) -> Result<()> {
    let Some(want) = window.or(udp.then_some(engine::udp_socket::DEFAULT_UDP_BUFFER)) else {
        return Ok(());
    };
    let granted = engine::sockopt::granted_window(want)?;
    if let Some(line) = report::buffer_note::line(granted, want, window.is_some()) {
        eprintln!("linerate: {line}");
    }
    Ok(())
}

/// Runs a validated plan against HOST, a Unix socket, or an in-process server, and prints it.
pub(crate) fn run_client(
    plan: &RunPlan,
    common: &CommonArgs,
    unix: Option<&Path>,
    probe: Option<ProbePlan>,
    repeat: &RepeatPlan,
    interrupt: Signal,
) -> Result<RunOutcome> {
    warn_buffer_cap(plan.spec.window_bytes, false)?;
    if probe.is_some() && common.conn.from.is_some() {
        bail!("--latency with --from: the probes go from this host, the load from the relay; omit one of them");
    }
    // Bad tags or an unusable database fail before the test, not after it.
    let store = common.store.open()?;
    let reached = target_for(plan.route(), &common.conn, unix)?;
    if repeat.repeats() {
        let mut runner = reached.runner(interrupt.clone(), store, common.json_stream);
        let point = Point {
            spec: plan.spec.clone(),
            tags: Vec::new(),
            probe,
        };
        let (r, streamed) = with_progress(common.json_stream, |p| {
            run_repeated(&point, repeat, &mut runner, &interrupt.flag(), p)
        })?;
        let mut out = output::stdout(!common.json);
        if !streamed {
            let format = if common.json {
                Format::Json
            } else {
                Format::Table
            };
            report::write(&mut out, &r, format, None)?;
        }
        out.flush()?;
        return RunOutcome::stopped(r.stopped);
    }
    run_once(plan, common, &reached, store, probe, interrupt)
}

/// Runs one test: live rows (or events), then the run stored, printed, and where it went said.
fn run_once(
    plan: &RunPlan,
    common: &CommonArgs,
    reached: &crate::reach::Reached,
    mut store: Option<crate::store_args::RunStore>,
    probe: Option<ProbePlan>,
    interrupt: Signal,
) -> Result<RunOutcome> {
    let config = reached.config(plan.spec.clone(), interrupt);
    let label = reached.label.clone();
    let mut events = common
        .json_stream
        .then(|| JsonLines::new(std::io::stdout()));
    let mut live = plan
        .live_rows
        .then(|| report::live_table::LiveTable::new(output::stdout(true), label));
    let mut silent = Silent;
    let progress: &mut dyn client::Progress = match (events.as_mut(), live.as_mut()) {
        (Some(events), _) => events,
        (None, Some(live)) => live,
        (None, None) => &mut silent,
    };
    let mut record = match &probe {
        None if plan.iperf3 => iperf3::client::run(&config, progress)?,
        None => client::run(&config, progress)?,
        Some(p) => probe::run_with_probes(&config, p, progress)?,
    };
    // `-t 0` runs until Ctrl-C: that stop is its planned end, and its status says `ok`.
    record.summary.until_stopped = common.time == Some(0.0);
    // Stored before its summary is printed, so that `--json` can carry its id; a failed write
    // to stdout fails the command only once the run is stored, and a refused run is printed.
    let live_done = live
        .map_or(Ok(()), report::live_table::LiveTable::finish)
        .context("writing the live rows to stdout");
    let stored = save_run(store.as_mut(), reached, plan.iperf3, &record);
    let id = match &stored {
        Ok(Some((id, _))) => Some(id.0),
        _ => None,
    };
    if let (Some(e), Some(id)) = (events.as_mut(), id) {
        e.stored(id);
    }
    let printed = if events.is_some() {
        Ok(())
    } else {
        live_done.and_then(|()| print_record(&record, common, id))
    };
    // After the summary, the last thing on a terminal: the id `linerate show` takes.
    if let Some((id, location)) = stored? {
        eprintln!("linerate: stored as {id} in {location}");
    }
    if let Some(events) = events {
        events
            .finish(&record)
            .context("writing the events to stdout")?;
    }
    printed?;
    Ok(RunOutcome::of(&record))
}

/// Stores a test's run (where a store is open), tagged with its relay and, against a stock
/// iperf3 server, saying so (`runs --tag server=iperf3`): its id and the store's location.
fn save_run(
    store: Option<&mut crate::store_args::RunStore>,
    reached: &crate::reach::Reached,
    iperf3: bool,
    record: &RunRecord,
) -> Result<Option<(record::RunId, String)>> {
    let Some(store) = store else {
        return Ok(None);
    };
    let mut extra: Vec<String> = reached
        .relay_tags()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if iperf3 {
        extra.push("server=iperf3".into());
    }
    let extra = record::Tags::parse(extra)?;
    Ok(Some((store.save_with(record, &extra)?, store.location())))
}

/// Runs `f` with the progress asked for: `--json-stream`'s events on stdout (ending with the
/// result as `end`: true is returned, the result is printed) or a bar on stderr.
pub(crate) fn with_progress<R: serde::Serialize>(
    stream: bool,
    f: impl FnOnce(&mut dyn ::sweep::SweepProgress) -> R,
) -> Result<(R, bool)> {
    if !stream {
        return Ok((f(&mut StderrBar::new()), false));
    }
    let mut events = JsonLines::new(std::io::stdout());
    let r = f(&mut events);
    events.finish(&r).context("writing the events to stdout")?;
    Ok((r, true))
}

/// Writes a run's summary to stdout: the short one, the full report (`-v`), or the JSON
/// record with the id it was stored under (`--json`).
fn print_record(record: &RunRecord, common: &CommonArgs, stored_run_id: Option<i64>) -> Result<()> {
    let mut out = output::stdout(!common.json);
    if common.json {
        report::write_test_run(&mut out, record, stored_run_id)
    } else if common.verbose {
        report::run_text::write_summary(&mut out, record)
    } else {
        report::brief_text::write_brief(&mut out, record, output::bold_on_stdout())
    }
    .and_then(|()| out.flush())
    .context("writing the summary to stdout")
}

/// The image format `--chart PATH` names by its extension (.svg or .png, either case).
pub fn chart_format(path: &Path) -> Result<ImageFormat> {
    ImageFormat::of(path).map_err(|e| anyhow::anyhow!("--chart {e}"))
}

/// Writes `chart` to `--chart PATH`: PNG (at twice its size) or SVG by the extension.
pub fn write_chart(path: &Path, chart: report::chart::Chart) -> Result<()> {
    crate::output::write_file("--chart", path, &chart.encoded(chart_format(path)?, 2.0)?)
}
