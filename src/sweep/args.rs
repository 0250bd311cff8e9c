//! The command line of `linerate sweep …` and the `--repeat/--until-ci` flags (clap derive;
//! the doc comments are the help), and their validation into plans; `linerate rfc2544`'s is
//! in `rfc2544_args.rs`.
//!
//! The test a parameter sweep runs is given after `--` in the test commands' own syntax
//! (`-- tcp HOST -P 2 -l 64K`) and parsed with their clap definitions, so every flag means
//! what it means there. `sweep size` and `rfc2544` build their tests the same way, from
//! argument lists, so they reuse the test commands' validation without copying it.
//! Everything is checked here, before anything runs: a plan that exists is runnable.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};
use report::Format;
use sweep::knob::KnobPlan;
use sweep::ladder::sweep_sizes;
use sweep::param::{ParamError, Parameter};
use sweep::plan::{PlannedPoint, SweepPlan};
use sweep::result::SweepKind;
use sweep::values::{parse_values, SweepValue, ValueUnit};
use sweep::{LoadPlan, ProbePlan};

use crate::connection_args::ConnectionArgs;
use crate::measuring::{MeasuringArgs, MeasuringCli};
use crate::output::TableFormat;
use crate::repeat_args::RepeatArgs;
use crate::store_args::StoreArgs;
use crate::test_args::{CommonArgs, RrArgs, RunPlan, SendModeArg, TcpArgs, UdpArgs};
use plan::Measuring;

/// How results are printed.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TableFormat::Table)]
    pub format: TableFormat,
    /// Print one JSON document instead of the table: the same as --format json.
    #[arg(long, conflicts_with_all = ["csv", "format"])]
    pub json: bool,
    /// Print JSON events as points finish, one per line, the last one the --json document.
    #[arg(long, conflicts_with_all = ["csv", "json", "format"])]
    pub json_stream: bool,
    /// Print CSV (a header line, then one line per point) instead of the table: the same as
    /// --format csv.
    #[arg(long, conflicts_with = "format")]
    pub csv: bool,
    /// Also draw the result as a chart: throughput against message size (log x axis) for
    /// `sweep size`, against the swept value for the others; .svg or .png by the extension.
    #[arg(long, value_name = "PATH")]
    pub chart: Option<PathBuf>,
}

impl OutputArgs {
    /// The format the flags ask for.
    pub fn format(&self) -> Format {
        self.format.with(self.json, self.csv)
    }
}

/// What every sweep takes of its points: how often each runs, how the result is printed, and
/// where every run is stored.
#[derive(Debug, Args)]
pub struct PointArgs {
    /// Repetitions of each point.
    #[command(flatten)]
    pub repeat: RepeatArgs,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Results database.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `linerate sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// What to sweep.
    #[command(subcommand)]
    pub what: SweepCommand,
}

/// What a sweep varies.
#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Message sizes, NetPIPE-style: a short stream test and a request/response test per
    /// size, from --min to --max on a geometric ladder (±3-byte perturbations with --full); reports
    /// peak throughput, n½ (the smallest size reaching half of it) and small-message latency.
    Size(SizeArgs),
    /// Parallel streams (-P) of the test after --, e.g. --values 1,2,4,8 -- tcp HOST.
    Streams(ParamArgs),
    /// Socket buffer size (-w) of the test after --, e.g. --values 64K,256K,1M.
    Window(ParamArgs),
    /// TCP maximum segment size (-M) of the test after --, e.g. --values 536,1460,8960.
    Mss(ParamArgs),
    /// UDP rate per stream (-b, bits/s) of the `udp` test after --, e.g. --values 100M,1G.
    Rate(ParamArgs),
    /// Bytes per write (-l; for rr the request and response size) of the test after --.
    Payload(ParamArgs),
    /// A setting changed by your own command before each point: --pre 'CMD … {value}'
    /// runs (without a shell) with each value in place of {value}.
    Knob(KnobArgs),
    /// Round trips against offered load: the test after -- (tcp, udp, rr or crr) runs
    /// unpaced for its capacity, then paced at each share of it, e.g. --values
    /// 10%,50%,90%,120%; stream tests carry --latency probes (udp unless given), rr and crr
    /// time their own transactions. The knee is marked.
    Load(LoadArgs),
}

/// `linerate sweep load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Server to test against (or give it in the test after --).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// The loads, shares of the capacity in increasing order: 10%,25%,50%,75%,100% (at most
    /// 400%).
    #[arg(long, value_name = "P1%,P2%,...")]
    pub values: String,
    /// The capacity, instead of measuring it: bits/s for tcp and udp (K, M, G), transactions/s
    /// over all streams for rr and crr.
    #[arg(long, value_name = "RATE")]
    pub capacity: Option<String>,
    /// Repetitions of each point, the output, the results database.
    #[command(flatten)]
    pub points: PointArgs,
    /// The load, as its own command: `-- udp HOST -l 1200` (default: tcp). Its rate is the
    /// sweep's to set.
    #[arg(last = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// Transport of a size sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Proto {
    /// tcp_stream and tcp_rr.
    Tcp,
    /// udp_stream (at max rate) and udp_rr.
    Udp,
}

/// `linerate sweep size`.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// Where to connect.
    #[command(flatten)]
    pub conn: ConnectionArgs,
    /// Smallest message (K, M: binary multiples; default 1, or 16 for UDP).
    #[arg(long, value_name = "BYTES")]
    pub min: Option<String>,
    /// Largest message (default 8M, or 65507 for UDP, less where the path's MTU is smaller).
    #[arg(long, value_name = "BYTES")]
    pub max: Option<String>,
    /// Transport.
    #[arg(long, value_enum, default_value_t = Proto::Tcp)]
    pub proto: Proto,
    /// Also measure each size this many bytes below and above, as NetPIPE does (default 0,
    /// or 3 with --full).
    #[arg(long, value_name = "BYTES")]
    pub perturbation: Option<u32>,
    /// NetPIPE's whole ladder, ±3 bytes around every power of two (66 sizes to 8M, about 4.5
    /// min), instead of the powers of two alone (24, about a minute).
    #[arg(long)]
    pub full: bool,
    /// Duration of each test (each size runs a stream test and a request/response test).
    #[arg(
        long = "time",
        short = 't',
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        default_value_t = 1.0
    )]
    pub time: f64,
    /// Throughput only: skip the request/response test at each size.
    #[arg(long)]
    pub no_latency: bool,
    /// Repetitions of each point, the output, the results database.
    #[command(flatten)]
    pub points: PointArgs,
}

/// `linerate sweep streams|window|mss|rate|payload`.
#[derive(Debug, Args)]
pub struct ParamArgs {
    /// Server to test against (or give it in the test after --).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// The values, in increasing order, comma-separated (bytes: K, M binary; rates: K, M, G
    /// bits/s).
    #[arg(long, value_name = "V1,V2,...", allow_hyphen_values = true)]
    pub values: String,
    /// Repetitions of each point, the output, the results database.
    #[command(flatten)]
    pub points: PointArgs,
    /// The test to run at each point, as its own command: `-- tcp HOST -t 5` (default: tcp).
    #[arg(last = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// `linerate sweep knob`.
#[derive(Debug, Args)]
pub struct KnobArgs {
    /// Server to test against (or give it in the test after --).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// The values, comma-separated: numbers in increasing order, or words (run in the order
    /// given, each once).
    #[arg(long, value_name = "V1,V2,...", allow_hyphen_values = true)]
    pub values: String,
    /// Command run before each point, with {value} replaced by the point's value, e.g.
    /// 'ethtool -C eth0 rx-usecs {value}'. No shell: quote with ' or "; for pipes, write a
    /// script (the value is also in $LINERATE_VALUE). A failure stops the sweep.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true, value_hint = ValueHint::CommandString)]
    pub pre: String,
    /// Command run after each point (e.g. to restore a setting); {value} works here too.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true, value_hint = ValueHint::CommandString)]
    pub post: Option<String>,
    /// How long --pre or --post may run before it is killed, with all it started in its
    /// process group, and the sweep stops: 120s, 500ms, 30 (seconds).
    #[arg(long, value_name = "DURATION", default_value = "120s")]
    pub knob_timeout: String,
    /// Repetitions of each point, the output, the results database.
    #[command(flatten)]
    pub points: PointArgs,
    /// The test to run at each point, as its own command: `-- tcp HOST` (default: tcp).
    #[arg(last = true, value_name = "TEST")]
    pub test: Vec<String>,
}

/// The test a sweep runs, parsed with the test commands' definitions: what the caller needs
/// to resolve the target (`common`, `unix`) and the plan whose spec each point varies.
#[derive(Debug, Clone)]
pub struct BaseTest {
    /// The shared flags (HOST, port, family, bind).
    pub common: CommonArgs,
    /// The validated test.
    pub plan: RunPlan,
    /// `tcp --unix PATH`.
    pub unix: Option<PathBuf>,
    /// `--latency`.
    pub probe: Option<ProbePlan>,
}

/// Parses `test` (the words after `--`; empty means `tcp`) as a linerate test command, with
/// `host` (given before `--`) as its HOST.
pub fn parse_base_test(host: Option<&str>, test: &[String]) -> Result<BaseTest> {
    let words = if test.is_empty() {
        vec!["tcp".to_string()]
    } else {
        test.to_vec()
    };
    let mut base = parse_test(&words, Some(&format!("-- {}", words.join(" "))))?;
    match (host, &base.common.conn.host) {
        (Some(a), Some(b)) => {
            bail!("HOST given twice ('{a}' before -- and '{b}' after it); give it once")
        }
        (Some(a), None) => base.common.conn.host = Some(a.to_string()),
        _ => {}
    }
    Ok(base)
}

/// Parses `words` (a test command and its flags) with the test commands' clap definitions and
/// validates them; a usage error is prefixed with `context` (what the user typed), if any.
pub(crate) fn parse_test(words: &[String], context: Option<&str>) -> Result<BaseTest> {
    let argv = std::iter::once("linerate".to_string()).chain(words.iter().cloned());
    let first = words.first().map_or("", String::as_str);
    if !first.parse::<Measuring>().is_ok_and(Measuring::is_test) {
        bail!(
            "-- {first}: a sweep runs one test per point: {}",
            Measuring::list(Measuring::tests())
        );
    }
    let cli = MeasuringCli::try_parse_from(argv).map_err(|e| {
        let first = crate::cli::usage_error_line(&e);
        match context {
            Some(c) => anyhow!("{c}: {first}"),
            None => anyhow!("{first}"),
        }
    })?;
    let Some((common, repeat)) = cli.command.command().test_flags() else {
        bail!("-- {first}: not one test");
    };
    // Repetition, output and storage belong to the sweep (or mesh), which repeats every point,
    // prints one document for all of them and stores every run itself: the same flags after
    // `--` would be silently ignored.
    let every_point = "it applies to every run of the sweep or mesh";
    let printed = "the sweep or mesh prints and stores all its runs";
    let misplaced = [
        (repeat.repeat.is_some(), "--repeat", every_point),
        (repeat.until_ci.is_some(), "--until-ci", every_point),
        (common.json, "--json", printed),
        (common.json_stream, "--json-stream", printed),
        (common.store.db.is_some(), "--db", printed),
        (common.store.no_store, "--no-store", printed),
        (!common.store.tag.is_empty(), "--tag", printed),
    ];
    if let Some((_, flag, why)) = misplaced.iter().find(|(given, ..)| *given) {
        bail!("{flag} after --: give it before -- ({why})");
    }
    base_of(cli.command)
}

/// A test command validated into the test a sweep runs.
pub(super) fn base_of(command: MeasuringArgs) -> Result<BaseTest> {
    let base = command.base_test()?;
    if base.common.time == Some(0.0) {
        bail!("--time 0: a sweep's tests need an end; give --time DURATION");
    }
    Ok(base)
}

/// `T`'s flags at their defaults (as if the command were typed without flags), for the tests
/// `sweep size` and `rfc2544` build from their own typed flags.
pub(super) fn defaults<T: clap::Args + clap::FromArgMatches>() -> Result<T> {
    let matches =
        T::augment_args(clap::Command::new("linerate")).try_get_matches_from(["linerate"])?;
    Ok(T::from_arg_matches(&matches)?)
}

impl CommonArgs {
    /// What a generated test shares with the sweep that runs it: the connection, `seconds`
    /// per test, no live rows.
    pub(super) fn share(&mut self, conn: &ConnectionArgs, seconds: f64) {
        self.conn = conn.clone();
        self.time = Some(seconds);
        self.interval = 0.0;
    }
}

/// A validated sweep and the test it is built on (for resolving the target).
#[derive(Debug, Clone)]
pub struct PreparedSweep {
    /// The points.
    pub plan: SweepPlan,
    /// The test, as parsed.
    pub base: BaseTest,
    /// `sweep load`: run through `sweep::run_load` (`plan` then holds its points at the given
    /// capacity, or at none until one is measured).
    pub load: Option<LoadPlan>,
}

impl SweepArgs {
    /// Validates everything: values, commands, the test after `--`.
    pub fn plan(&self) -> Result<PreparedSweep> {
        match &self.what {
            SweepCommand::Size(a) => a.plan(),
            SweepCommand::Streams(a) => a.plan(Parameter::Streams),
            SweepCommand::Window(a) => a.plan(Parameter::Window),
            SweepCommand::Mss(a) => a.plan(Parameter::Mss),
            SweepCommand::Rate(a) => a.plan(Parameter::Rate),
            SweepCommand::Payload(a) => a.plan(Parameter::Payload),
            SweepCommand::Knob(a) => a.plan(),
            SweepCommand::Load(a) => a.plan(),
        }
    }

    /// The repetition, output and results-database flags.
    pub fn points(&self) -> &PointArgs {
        match &self.what {
            SweepCommand::Size(a) => &a.points,
            SweepCommand::Knob(a) => &a.points,
            SweepCommand::Load(a) => &a.points,
            SweepCommand::Streams(a)
            | SweepCommand::Window(a)
            | SweepCommand::Mss(a)
            | SweepCommand::Rate(a)
            | SweepCommand::Payload(a) => &a.points,
        }
    }
}

impl SizeArgs {
    /// The ladder, and a stream and a request/response spec per size.
    pub fn plan(&self) -> Result<PreparedSweep> {
        let udp = self.proto == Proto::Udp;
        let bounds = (self.min.as_deref(), self.max.as_deref());
        let sizes = sweep_sizes(udp, bounds, self.perturbation, self.full)?;
        let stream = if udp {
            let mut a: UdpArgs = defaults()?;
            a.common.share(&self.conn, self.time);
            a.rate = Some("max".into());
            base_of(MeasuringArgs::Udp(a))?
        } else {
            let mut a: TcpArgs = defaults()?;
            a.common.share(&self.conn, self.time);
            a.send_mode = SendModeArg::Write;
            base_of(MeasuringArgs::Tcp(a))?
        };
        let rr = if self.no_latency {
            None
        } else {
            let mut a: RrArgs = defaults()?;
            a.common.share(&self.conn, self.time);
            a.udp = udp;
            Some(base_of(MeasuringArgs::Rr(a))?.plan.spec)
        };
        let points = sizes
            .iter()
            .map(|&size| {
                let mut specs = vec![stream.plan.spec.with_message_len_bytes(size)];
                specs.extend(rr.as_ref().map(|rr| rr.with_message_len_bytes(size)));
                PlannedPoint {
                    value: SweepValue::number(u64::from(size)),
                    specs,
                }
            })
            .collect();
        Ok(PreparedSweep {
            plan: SweepPlan {
                kind: SweepKind::Size,
                points,
                repeat: self.points.repeat.plan()?,
                knob: None,
                probe: None,
            },
            base: stream,
            load: None,
        })
    }
}

impl ParamArgs {
    /// The test after `--` with each value of `parameter` applied.
    pub fn plan(&self, parameter: Parameter) -> Result<PreparedSweep> {
        let values = parse_values(&self.values, parameter.unit())?;
        let base = parse_base_test(self.host.as_deref(), &self.test)?;
        parameter.check_kind(base.plan.spec.kind())?;
        let points = values
            .into_iter()
            .map(|value| {
                Ok(PlannedPoint {
                    specs: vec![parameter.apply(&base.plan.spec, &value)?],
                    value,
                })
            })
            .collect::<Result<Vec<_>, ParamError>>()?;
        Ok(PreparedSweep {
            plan: SweepPlan {
                kind: SweepKind::from(parameter),
                points,
                repeat: self.points.repeat.plan()?,
                knob: None,
                probe: base.probe,
            },
            base,
            load: None,
        })
    }
}

impl KnobArgs {
    /// The test after `--` once per value, with the commands checked.
    pub fn plan(&self) -> Result<PreparedSweep> {
        let values = parse_values(&self.values, ValueUnit::Text)?;
        let labels: Vec<String> = values.iter().map(|v| v.label.clone()).collect();
        let timeout = parse_duration("--knob-timeout", &self.knob_timeout)?;
        let knob = KnobPlan::new(&self.pre, self.post.as_deref(), &labels, timeout)?;
        let base = parse_base_test(self.host.as_deref(), &self.test)?;
        let points = values
            .into_iter()
            .map(|value| PlannedPoint {
                value,
                specs: vec![base.plan.spec.clone()],
            })
            .collect();
        Ok(PreparedSweep {
            plan: SweepPlan {
                kind: SweepKind::Knob,
                points,
                repeat: self.points.repeat.plan()?,
                knob: Some(knob),
                probe: base.probe,
            },
            base,
            load: None,
        })
    }
}

impl LoadArgs {
    /// The shares, the capacity if given, and the test after `--` with its probes.
    pub fn plan(&self) -> Result<PreparedSweep> {
        let values = parse_values(&self.values, ValueUnit::Percent)?;
        let mut base = parse_base_test(self.host.as_deref(), &self.test)?;
        let kind = base.plan.spec.kind();
        if base.probe.is_none() && kind.row().family != wire::spec::FamilyId::Transaction {
            let mut probes: crate::latency_args::LatencyArgs = defaults()?;
            probes.latency = Some("udp".into());
            base.probe = probes.plan()?;
        }
        let capacity = match &self.capacity {
            None => None,
            Some(text) => Some(
                measure::units::parse_bits_per_sec(text)
                    .map_err(|e| anyhow!("--capacity {text}: {e}"))? as f64,
            ),
        };
        let load = LoadPlan::new(
            base.plan.spec.clone(),
            values,
            capacity,
            self.points.repeat.plan()?,
            base.probe,
        )?;
        Ok(PreparedSweep {
            plan: load.points_at(capacity.unwrap_or(0.0)),
            base,
            load: Some(load),
        })
    }
}

/// Parses a duration of 0.1 s to a day: `10s`, `500ms`, `1.5s`, `30` (seconds).
pub fn parse_duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let d = measure::units::parse_duration(text).map_err(|e| anyhow!("{flag} {text}: {e}"))?;
    let within = measure::units::seconds_within(d.as_secs_f64(), 0.1, 86_400.0);
    within.map_err(|e| anyhow!("{flag} {text}: {e}"))
}
