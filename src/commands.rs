//! Glue for each subcommand: build listeners and targets from validated flags, run, print.

use std::io::Write;
use std::path::Path;

use analysis::repeat::RepeatPlan;
use anyhow::{bail, Context, Result};
use engine::Signal;
use measure::units::format_bytes;
use record::RunRecord;
use sweep::pps::{run_pps, PpsCellPlan};
use sweep::{run_repeated, run_rfc2544, run_sweep, Point, ProbePlan, Stopped};

use crate::output;
use crate::pps_args::PpsArgs;
use crate::reach::target_for;
use crate::repeat_args::RepeatArgs;
use crate::sweep::progress::StderrBar;
use crate::sweep::{Rfc2544Args, SweepArgs};
use crate::test_args::{CommonArgs, RunPlan, TcpArgs, UdpArgs};
use events::{JsonLines, Observer};
use report::chart::ImageFormat;
use session::client::{self, Silent};
use sweep::output::{self as sweep_output, Format};
use sweep::probe;

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
    fn stopped(stopped: Option<Stopped>) -> Result<Self> {
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

/// `linerate tcp`.
pub fn tcp(args: &TcpArgs, interrupt: Signal) -> Result<RunOutcome> {
    let plan = args.plan()?;
    if let Some(name) = plan.spec.tcp().and_then(|t| t.congestion.as_ref()) {
        engine::sockopt::check_congestion(name)?;
    }
    if args.unix.is_some() {
        engine::sockopt::SocketOptions::from_spec(&plan.spec).check_unix()?;
    }
    let (probe, repeat) = (args.latency.plan()?, args.repeat.plan()?);
    let unix = args.unix.as_deref();
    run_client(&plan, &args.common, unix, probe, &repeat, interrupt)
}

/// A request/response test (`rr`, `crr`, `cc`) of `plan`, with its shared and repetition
/// flags.
pub fn rr(
    plan: RunPlan,
    common: &CommonArgs,
    repeat: &RepeatArgs,
    interrupt: Signal,
) -> Result<RunOutcome> {
    if let Some(us) = plan.spec.rr().and_then(|rr| rr.busy_poll_us) {
        let granted = engine::sockopt::granted_busy_poll(us)?;
        if granted != us {
            eprintln!(
                "linerate: note: --busy-poll {us}: this host keeps {granted} us (0: ignored); \
                 the round trips below are measured without it"
            );
        }
    }
    run_client(&plan, common, None, None, &repeat.plan()?, interrupt)
}

/// `linerate udp`.
pub fn udp(args: &UdpArgs, interrupt: Signal) -> Result<RunOutcome> {
    let plan = args.plan()?;
    let (probe, repeat) = (args.latency.plan()?, args.repeat.plan()?);
    warn_buffer_cap(None, plan.spec.window_bytes.is_none())?;
    run_client(&plan, &args.common, None, probe, &repeat, interrupt)
}

/// Says when this host grants less socket buffer than a test asks for: `--window` (a
/// warning), or with none given linerate's default UDP buffer, which high packet rates need
/// (a note; stock kernels allow 208 KiB).
fn warn_buffer_cap(window: Option<u32>, udp: bool) -> Result<()> {
    let Some(want) = window.or(udp.then_some(engine::udp_socket::DEFAULT_UDP_BUFFER)) else {
        return Ok(());
    };
    let granted = engine::sockopt::granted_window(want)?;
    let (granted_text, want_text) = (
        format_bytes(u64::from(granted)),
        format_bytes(u64::from(want)),
    );
    match (granted < want, window) {
        (false, _) => {}
        (true, Some(_)) => eprintln!(
            "linerate: warning: --window: this host grants {granted_text} of the {want_text} asked \
             for (net.core.rmem_max / wmem_max cap it; raise them with sysctl)"
        ),
        (true, None) => eprintln!(
            "linerate: note: UDP socket buffers are capped at {granted_text} (net.core.rmem_max / \
             wmem_max); at high packet rates datagrams may be dropped at the receiving socket \
             (counted as lost)"
        ),
    }
    Ok(())
}

/// Runs a validated plan against HOST, a Unix socket, or an in-process server, and prints it.
fn run_client(
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
        let mut out = std::io::stdout().lock();
        match (streamed, common.json) {
            (true, _) => {}
            (false, true) => sweep_output::write_json(&mut out, &r)?,
            (false, false) => sweep_output::write_repeat_table(&mut out, &r)?,
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
        .then(|| report::live_table::LiveTable::new(std::io::stdout(), label));
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
    record.summary.until_stopped = common.time == 0.0;
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
fn with_progress<R: serde::Serialize>(
    stream: bool,
    f: impl FnOnce(&mut dyn sweep::SweepProgress) -> R,
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
    let mut out = std::io::stdout().lock();
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

/// `linerate pps`: every (frame, flows) cell in turn (`sweep::pps`), then one table or JSON
/// document of the finished cells, also after Ctrl-C or a failed cell.
pub fn pps(args: &PpsArgs, interrupt: Signal) -> Result<RunOutcome> {
    let plan = args.plan()?;
    let first = &plan.cells.first().context("no cells")?.3;
    let store = args.common.store.open()?;
    let reached = target_for(first.route(), &args.common.conn, None)?;
    let link = first.spec.link_speed_bps;
    let cells: Vec<PpsCellPlan> = (plan.cells.iter())
        .map(|(frame, payload, flows, cell)| PpsCellPlan {
            frame_bytes: *frame,
            payload_bytes: *payload,
            flows: *flows,
            spec: cell.spec.clone(),
        })
        .collect();
    let stream = args.common.json_stream;
    let mut runner = reached.runner(interrupt.clone(), store, stream);
    let (run, streamed) = with_progress(stream, |progress| {
        run_pps(&cells, link, &mut runner, &interrupt.flag(), progress)
    })?;
    let mut out = std::io::stdout().lock();
    match (streamed, args.common.json) {
        (true, _) => {}
        (false, true) => sweep_output::write_json(&mut out, &run)?,
        (false, false) => {
            report::pps_text::write_pps(&mut out, &reached.label, link, &run.matrix.cells)?;
            for r in &run.refused {
                writeln!(
                    out,
                    "refused {:>4} B, {} flows: {}",
                    r.frame_bytes, r.flows, r.reason
                )?;
            }
        }
    }
    out.flush()?;
    let outcome = RunOutcome::stopped(run.stopped)?;
    if let Some(first) = run.refused.first() {
        bail!(
            "{} of {} cells refused, the others ran; the first: {}",
            run.refused.len(),
            cells.len(),
            first.reason
        );
    }
    run.last
        .context("interrupted before the first cell finished")
        .map(|record| RunOutcome {
            incomplete: record.summary.incomplete.is_some(),
            ..outcome
        })
}

/// `linerate sweep …`: every point a stored run; the table (or JSON/CSV) of the finished
/// points, also after Ctrl-C or a failed point.
pub fn sweep(args: &SweepArgs, interrupt: Signal) -> Result<RunOutcome> {
    let p = args.plan()?;
    if let Some(path) = &args.output().chart {
        chart_format(path)?;
    }
    if !p.base.common.store.tag.is_empty()
        || p.base.common.store.db.is_some()
        || p.base.common.store.no_store
    {
        bail!("--tag/--db/--no-store after --: give them before --, to the sweep");
    }
    let store = args.store().open()?;
    let reached = target_for(
        p.base.plan.route(),
        &p.base.common.conn,
        p.base.unix.as_deref(),
    )?;
    let mut runner = reached.runner(interrupt.clone(), store, args.output().json_stream);
    let (r, streamed) = with_progress(args.output().json_stream, |progress| match &p.load {
        Some(load) => sweep::run_load(load, &mut runner, &interrupt.flag(), progress),
        None => run_sweep(&p.plan, &mut runner, &interrupt.flag(), progress),
    })?;
    let mut out = std::io::stdout().lock();
    match args.output().format() {
        _ if streamed => {}
        Format::Table => sweep_output::write_sweep_table(&mut out, &r)?,
        Format::Json => sweep_output::write_json(&mut out, &r)?,
        Format::Csv => sweep_output::write_sweep_csv(&mut out, &r)?,
    }
    out.flush()?;
    if let Some(path) = &args.output().chart {
        // A sweep that stopped early keeps its own outcome; a chart of too little is said.
        match sweep_output::chart(&r)
            .map_err(Into::into)
            .and_then(|c| write_chart(path, c))
        {
            Ok(()) => eprintln!("linerate: chart written to {}", path.display()),
            Err(e) if r.stopped.is_some() => eprintln!("linerate: no chart: {e:#}"),
            Err(e) => return Err(e),
        }
    }
    RunOutcome::stopped(r.stopped)
}

/// Draws a sweep: throughput by message size for `sweep size`, by swept value otherwise.
/// The image format `--chart PATH` names by its extension (.svg or .png, either case).
pub fn chart_format(path: &Path) -> Result<ImageFormat> {
    ImageFormat::of(path).map_err(|e| anyhow::anyhow!("--chart {e}"))
}

/// Writes `chart` to `--chart PATH`: PNG (at twice its size) or SVG by the extension.
pub fn write_chart(path: &Path, chart: report::chart::Chart) -> Result<()> {
    let bytes = match chart_format(path)? {
        ImageFormat::Png => chart.to_png(2.0)?,
        ImageFormat::Svg => chart.svg.into_bytes(),
    };
    std::fs::write(path, bytes).with_context(|| format!("--chart {}", path.display()))
}

/// `linerate rfc2544`: the zero-loss (or allowed-loss) rate per frame size by binary search.
pub fn rfc2544(args: &Rfc2544Args, interrupt: Signal) -> Result<RunOutcome> {
    let p = args.plan()?;
    let store = args.store.open()?;
    warn_buffer_cap(None, p.base.plan.spec.window_bytes.is_none())?;
    let reached = target_for(p.base.plan.route(), &p.base.common.conn, None)?;
    let mut runner = reached.runner(interrupt.clone(), store, args.output.json_stream);
    let (r, streamed) = with_progress(args.output.json_stream, |progress| {
        run_rfc2544(&p.plan, &mut runner, &interrupt.flag(), progress)
    })?;
    let mut out = std::io::stdout().lock();
    match args.output.format() {
        _ if streamed => {}
        Format::Table => sweep_output::write_rfc2544_table(&mut out, &r)?,
        Format::Json => sweep_output::write_json(&mut out, &r)?,
        Format::Csv => sweep_output::write_rfc2544_csv(&mut out, &r)?,
    }
    out.flush()?;
    RunOutcome::stopped(r.stopped)
}
