//! `linerate mesh A B C …`: the test after `--` over every ordered pair of hosts, each run by
//! its `from` host (a relay, `serve --relay`) towards its `to` host; the matrix printed as a
//! table or JSON, drawn with `--chart`, every cell a stored run tagged `mesh_id`, `from`, `to`.
//! Its progress is `--json-stream`'s events, or the sweeps' bar on stderr (cells done, time
//! left; a plain line per cell when stderr is not a terminal).

pub use MeshArgs as Flags;

use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Args;
use engine::Signal;
use events::{JsonLines, Observer};
use record::{RunRecord, Tags};
use report::{MeshCell, MeshMatrix};
use session::target::resolve;
use sweep::mesh::{run_mesh, Cell, CellOutcome, MeshPlan, PairError, RelayPairs};

use crate::commands::{Measure, RunOutcome};
use crate::store_args::{RunStore, StoreArgs};
use crate::sweep::args::{parse_test, BaseTest};
use report::live_bar::StderrBar;

/// `linerate mesh`.
#[derive(Debug, Args)]
pub struct MeshArgs {
    /// The hosts, each a linerate server started with `serve --relay` (name or address); every
    /// ordered pair runs the test, the first host of the pair as the client.
    #[arg(value_name = "HOST", required_unless_present = "dns")]
    pub hosts: Vec<String>,
    /// Every address the name NAME resolves to is a host (a headless Service's DNS name, or a
    /// hosts-file entry with several addresses), after any HOST given.
    #[arg(long, value_name = "NAME")]
    pub dns: Option<String>,
    /// The test each pair runs.
    #[arg(long, value_name = "KIND", default_value = "tcp", value_parser = crate::measuring::test_names())]
    pub test: String,
    /// Test duration of each pair.
    #[arg(
        long = "time",
        short = 't',
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        default_value_t = 10.0
    )]
    pub time: f64,
    /// Pairs run at once; never two on one host (unless --share-hosts), so with N hosts at
    /// most N/2 run together.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub concurrency: usize,
    /// Let pairs that share a host run at the same time (they disturb each other).
    #[arg(long)]
    pub share_hosts: bool,
    /// Print the matrix as one JSON document: {"kind":"mesh","cells":[{"from","to",…,"run"}]}.
    #[arg(long)]
    pub json: bool,
    /// Print JSON events as pairs finish, one per line, the last one the --json document.
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,
    /// Also draw the matrix as a heatmap, .svg or .png by the extension.
    #[arg(long, value_name = "PATH")]
    pub chart: Option<PathBuf>,
    /// Where the runs are stored.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The test's own flags, as `linerate tcp` (or udp, rr, crr) takes them: `-- -P 2 -R`;
    /// -p, -4/-6 and --auth-key there apply to every host.
    #[arg(last = true, value_name = "TEST FLAGS")]
    pub test_flags: Vec<String>,
}

/// Stores each cell as it ends, tells the user, and fills the matrix.
struct Cells {
    matrix: MeshMatrix,
    store: Option<RunStore>,
    tags: Tags,
    /// A cell that ran but could not be stored: the first such error ends the command.
    store_error: Option<anyhow::Error>,
}

impl Cells {
    /// Keeps `cell`: its run stored, the cell in the matrix; `progress` (`--json-stream`, or
    /// the bar on stderr) hears `stored` per run and `point` per cell.
    fn keep(&mut self, cell: Cell<'_, RunRecord, PairError>, progress: &mut dyn Observer) {
        let (from, to, label) = (cell.from, cell.to, cell.label());
        let kept = match cell.outcome {
            CellOutcome::Ran(record) => {
                let mut tags = self.tags.clone();
                for (k, v) in [("from", from), ("to", to)] {
                    let _ = tags.insert(record::Tag {
                        key: k.into(),
                        value: v.into(),
                    });
                }
                let id = match self.store.as_mut().map(|s| s.save_with(&record, &tags)) {
                    Some(Ok(id)) => Some(id),
                    Some(Err(e)) => {
                        self.store_error.get_or_insert(e.into());
                        None
                    }
                    None => None,
                };
                MeshCell::of_run(from, to, &record, id)
            }
            CellOutcome::Failed(why) => MeshCell::failed(from, to, why.to_string()),
            CellOutcome::NotRun => MeshCell::failed(from, to, "not run".into()),
        };
        if let Some(id) = kept.run {
            progress.stored(id.0);
        }
        progress.point(cell.done - 1, &label, &kept);
        self.matrix.cells.push(kept);
    }
}

impl Measure for MeshArgs {
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        mesh(self, interrupt)
    }

    fn check(&self) -> Result<()> {
        check(self).map(drop)
    }
}

/// The mesh and its test, validated (nothing resolved or run): what `mesh` runs and `plan
/// --check` checks.
fn check(args: &MeshArgs) -> Result<(MeshPlan, BaseTest)> {
    let mut hosts = args.hosts.clone();
    if let Some(name) = &args.dns {
        let found = session::target::resolve_all(name).with_context(|| format!("--dns {name}"))?;
        hosts.extend(found.iter().map(|ip| ip.to_string()));
    }
    let plan = MeshPlan::new(hosts, args.concurrency, args.share_hosts)?.timed(args.time);
    if !args.time.is_finite() || args.time <= 0.0 {
        bail!("--time {}: must be above 0 seconds", args.time);
    }
    let mut words = vec![args.test.clone(), "-t".into(), args.time.to_string()];
    words.extend(args.test_flags.iter().cloned());
    let context = format!("-- {}", args.test_flags.join(" "));
    let base = parse_test(&words, Some(&context))?;
    let conn = &base.common.conn;
    if let Some(host) = &conn.host {
        bail!("{context}: HOST '{host}' after --; a mesh's hosts are given before --");
    }
    if conn.from.is_some() || base.unix.is_some() || base.probe.is_some() || conn.bind.is_some() {
        bail!("{context}: --from, --unix, --latency and --bind do not apply to a mesh (each pair runs from its own host)");
    }
    if let Some(path) = &args.chart {
        crate::commands::chart_format(path)?;
    }
    Ok((plan, base))
}

/// `linerate mesh`.
fn mesh(args: &MeshArgs, interrupt: Signal) -> Result<RunOutcome> {
    let (plan, base) = check(args)?;
    let conn = &base.common.conn;
    let port = conn.port(false);
    for h in plan.hosts() {
        resolve(h, port, base.plan.family).with_context(|| format!("host {h}"))?;
    }
    let store = args.store.open()?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mesh_id = format!("mesh-{started}");
    let mut tags = Tags::new();
    tags.insert(record::Tag {
        key: report::mesh::MESH_ID_TAG.into(),
        value: mesh_id.clone(),
    })?;
    let runner = RelayPairs {
        spec: base.plan.spec.clone(),
        port,
        family: base.plan.family,
        key: conn.key()?,
        interrupt: interrupt.clone(),
    };
    let mut cells = Cells {
        matrix: MeshMatrix::new(mesh_id, base.plan.spec.kind(), plan.hosts().to_vec()),
        store,
        tags,
        store_error: None,
    };
    let (mut events, mut bar) = (
        args.json_stream.then(|| JsonLines::new(std::io::stdout())),
        StderrBar::new(),
    );
    let progress: &mut dyn Observer = match events.as_mut() {
        Some(e) => e,
        None => &mut bar,
    };
    let flag = interrupt.flag();
    run_mesh(&plan, &runner, &flag, progress, &mut |c, p| {
        cells.keep(c, p)
    });
    if let Some(e) = cells.store_error {
        return Err(e);
    }
    if let Some(e) = events {
        e.finish(&cells.matrix)?;
    }
    finish(args, &cells.matrix, interrupt.is_raised())
}

/// Prints (and draws) the matrix; the outcome says whether every pair ran.
fn finish(args: &MeshArgs, m: &MeshMatrix, interrupted: bool) -> Result<RunOutcome> {
    let mut out = crate::output::stdout(!args.json);
    if args.json {
        serde_json::to_writer_pretty(&mut out, m)?;
        writeln!(out)?;
    } else if !args.json_stream {
        write!(out, "{}", m.text())?;
    }
    out.flush()?;
    if let Some(path) = &args.chart {
        crate::commands::write_chart(path, report::chart::mesh_chart(m)?)?;
    }
    let failed = m.failed();
    if failed > 0 {
        eprintln!(
            "linerate: mesh: {failed} of {} pairs failed (their cells say why)",
            m.cells.len()
        );
    }
    Ok(RunOutcome {
        interrupted,
        incomplete: failed > 0,
        ..RunOutcome::default()
    })
}
