//! `linerate plan FILE [--check] [--resume] [--report FILE] [--check-against TAGS]`: the steps
//! of a plan file (the `plan` crate reads and checks it; docs/PLANS.md) run in order as the
//! command line would run them, every run stored tagged `plan=NAME`, `step=STEP` and the
//! plan's and step's tags.
//!
//! A failing step (its `pre`, its command, or a run that came back incomplete) does not stop
//! the plan: the others run and the end says which failed. Ctrl-C ends the plan after the
//! running step has printed and stored what it measured; steps not yet run are listed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser};
use engine::Signal;
use pgstore::Access;
use plan::{Plan, Step};
use record::Tags;
use results::store::{ResultStore, StoreLocation};
use sweep::knob::{run_command, Phase, DEFAULT_TIMEOUT};

use crate::cli::{usage_error_line, Cli, Command};
use crate::commands::RunOutcome;
use crate::measuring::MeasuringArgs;
use crate::plan_check::{baseline_tags, check_steps};
use crate::store_args::{open_store, resolve_db};

/// `linerate plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The plan file (TOML; the format is docs/PLANS.md).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Read and check the plan, every step's command included, and run nothing.
    #[arg(long)]
    pub check: bool,
    /// Skip the steps that already have stored runs of this plan (tagged plan=NAME, step=STEP).
    #[arg(long, conflicts_with = "check")]
    pub resume: bool,
    /// At the end, write the HTML report of the plan's runs to this file.
    #[arg(long, value_name = "PATH", conflicts_with = "check")]
    pub report: Option<PathBuf>,
    /// Also tag every run of the plan (repeatable; over a tag of the plan file with the same
    /// key), e.g. --tag commit=$GITHUB_SHA.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// At the end, check each step's runs against the runs of the same step carrying these
    /// tags (e.g. commit=abc), as `linerate check` does; exit 1 when a metric regressed, 2
    /// when a check had too few runs to decide.
    #[arg(long, value_name = "TAGSET", conflicts_with = "check")]
    pub check_against: Option<String>,
    /// With --check-against: a step with too few runs to decide passes instead of failing.
    #[arg(long, requires = "check_against")]
    pub allow_undecided: bool,
    /// Results database every step stores into (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// How one step ended.
enum Ended {
    Ok,
    Skipped,
    Failed(String),
    Interrupted,
    NotRun,
}

/// `linerate plan`.
pub fn plan(args: &PlanArgs, interrupt: Signal) -> Result<RunOutcome> {
    let mut plan = plan::load(&args.file)?;
    for tag in crate::store_args::parse_tags(&args.tags)?.iter() {
        for step in &mut plan.steps {
            step.tags.retain(|(k, _)| k != tag.0);
            step.tags.push((tag.0.into(), tag.1.into()));
        }
    }
    let baseline = args
        .check_against
        .as_deref()
        .map(baseline_tags)
        .transpose()?;
    let db = resolve_db(args.db.as_deref())?;
    let commands = plan
        .steps
        .iter()
        .map(|step| step_command(args, &plan, step, &db))
        .collect::<Result<Vec<_>>>()?;
    if args.check {
        println!(
            "{}: plan {} is valid: {} step{}",
            args.file.display(),
            plan.name,
            plan.steps.len(),
            if plan.steps.len() == 1 { "" } else { "s" }
        );
        print_programs(&plan, &commands);
        return Ok(RunOutcome::default());
    }
    let mut store = open_store(&db, Access::Write)?;
    let started = Instant::now();
    let since_ms = results::store::now_unix_ms();
    let mut ended = Vec::new();
    for (i, (step, command)) in plan.steps.iter().zip(&commands).enumerate() {
        if interrupt.is_raised() {
            ended.push(Ended::NotRun);
            continue;
        }
        if args.resume && has_runs(store.as_mut(), &plan, step)? {
            eprintln!(
                "linerate plan: step {} already has stored runs: skipped (--resume)",
                step.name
            );
            ended.push(Ended::Skipped);
            continue;
        }
        progress_line(i, plan.steps.len(), started, step);
        ended.push(run_step(step, command, &interrupt));
    }
    drop(store);
    summarize(&plan, &ended);
    if let Some(out) = &args.report {
        write_report(&plan, &db, out)?;
    }
    let regressed = match &baseline {
        Some(tags) => check_steps(&plan, &db, tags, since_ms, args.allow_undecided)?,
        None => false,
    };
    let failed = ended
        .iter()
        .filter(|e| matches!(e, Ended::Failed(_)))
        .count();
    Ok(RunOutcome {
        regressed,
        interrupted: ended
            .iter()
            .any(|e| matches!(e, Ended::Interrupted | Ended::NotRun)),
        incomplete: failed > 0,
    })
}

/// Every program the plan would run besides linerate itself, one line per command: each
/// step's `pre` and `post`, and a `sweep knob` step's `--pre` and `--post` (once per value,
/// `{value}` shown as written). A plan file is code: this is what to read before trusting it.
fn print_programs(plan: &Plan, commands: &[Cli]) {
    let mut lines = Vec::new();
    for (step, cli) in plan.steps.iter().zip(commands) {
        let hooks = [("pre", &step.pre), ("post", &step.post)];
        for (hook, words) in hooks {
            if let Some(words) = words {
                lines.push(format!(
                    "step {}: {hook}: {}",
                    step.name,
                    plan::join_words(words)
                ));
            }
        }
        if let Command::Measuring(MeasuringArgs::Sweep(sweep)) = &cli.command {
            if let crate::sweep::args::SweepCommand::Knob(knob) = &sweep.what {
                let knob_hooks = [("--pre", Some(&knob.pre)), ("--post", knob.post.as_ref())];
                for (flag, cmd) in knob_hooks {
                    if let Some(cmd) = cmd {
                        lines.push(format!("step {}: sweep knob {flag}: {cmd}", step.name));
                    }
                }
            }
        }
    }
    if lines.is_empty() {
        println!("it runs no program but linerate (no pre, post or sweep knob commands)");
        return;
    }
    println!("it runs these programs (a plan file is code: trust it as a script):");
    for line in lines {
        println!("  {}", wire::escape::escape_controls(&line));
    }
}

/// The step's command line as the runner gives it (its words, then the plan's database and
/// tags after the command's own words), parsed and checked like the command line's.
fn step_command(args: &PlanArgs, plan: &Plan, step: &Step, db: &StoreLocation) -> Result<Cli> {
    let at = format!(
        "{} line {}: step {}",
        args.file.display(),
        step.line,
        step.name
    );
    let argv = std::iter::once("linerate".to_string()).chain(step.command_line(plan, &db.as_arg()));
    let cli = Cli::try_parse_from(argv).map_err(|e| anyhow!("{at}: {}", usage_error_line(&e)))?;
    let Command::Measuring(command) = &cli.command else {
        bail!("{at}: not a measuring command");
    };
    command.check().map_err(|e| anyhow!("{at}: {e:#}"))?;
    Ok(cli)
}

fn has_runs(store: &mut dyn ResultStore, plan: &Plan, step: &Step) -> Result<bool> {
    let tags = Tags::parse([format!("plan={}", plan.name), format!("step={}", step.name)])?;
    Ok(!store.find(&tags)?.rows.is_empty())
}

/// `[=====>    ] 2/5  3m12s  step NAME: WORDS` on stderr before each step.
fn progress_line(i: usize, n: usize, started: Instant, step: &Step) {
    const WIDTH: usize = 20;
    let filled = WIDTH * i / n;
    let bar: String = (0..WIDTH)
        .map(|j| match j.cmp(&filled) {
            std::cmp::Ordering::Less => '=',
            std::cmp::Ordering::Equal => '>',
            std::cmp::Ordering::Greater => ' ',
        })
        .collect();
    let s = started.elapsed().as_secs();
    eprintln!(
        "linerate plan [{bar}] {}/{n}  {}m{:02}s  step {}: {}",
        i + 1,
        s / 60,
        s % 60,
        step.name,
        step.words.join(" ")
    );
}

/// `pre`, the command, `post`; the first failure is the step's.
fn run_step(step: &Step, cli: &Cli, interrupt: &Signal) -> Ended {
    let mut failure = step
        .pre
        .as_ref()
        .and_then(|pre| run_hook(Phase::Pre, pre, interrupt).err())
        .map(|e| format!("{e:#}"));
    let mut interrupted = false;
    if failure.is_none() {
        let outcome = match &cli.command {
            Command::Measuring(m) => m.command().run(interrupt.clone()),
            _ => Err(anyhow!("not a measuring command")),
        };
        match outcome {
            Ok(o) if o.interrupted => interrupted = true,
            Ok(o) if o.incomplete => failure = Some("incomplete (see above)".into()),
            Ok(_) => {}
            Err(e) => failure = Some(format!("{e:#}")),
        }
    }
    if let Some(post) = &step.post {
        if let Err(e) = run_hook(Phase::Post, post, interrupt) {
            failure.get_or_insert(format!("{e:#}"));
        }
    }
    match (interrupted, failure) {
        (true, _) => Ended::Interrupted,
        (false, Some(why)) => {
            eprintln!("linerate plan: step {} failed: {why}", step.name);
            Ended::Failed(why)
        }
        (false, None) => Ended::Ok,
    }
}

/// Runs `words` as `sweep knob --pre` runs its commands (no shell, its own process group,
/// killed past the knob timeout, and `pre` on Ctrl-C; `post` runs even after Ctrl-C, to put
/// a setting back); a failure names the hook and why.
fn run_hook(phase: Phase, words: &[String], interrupt: &Signal) -> Result<()> {
    let (hook, stop) = match phase {
        Phase::Pre => ("pre", interrupt.flag()),
        Phase::Post => ("post", Signal::new().flag()),
    };
    let run = run_command(phase, words, "", DEFAULT_TIMEOUT, &stop);
    run.why().map_or(Ok(()), |why| Err(anyhow!("{hook} {why}")))
}

/// One line per step at the end, on stderr.
fn summarize(plan: &Plan, ended: &[Ended]) {
    eprintln!("linerate plan {}: done", plan.name);
    for (step, end) in plan.steps.iter().zip(ended) {
        let said = match end {
            Ended::Ok => "ok".to_string(),
            Ended::Skipped => "skipped: already stored (--resume)".into(),
            Ended::Failed(why) => format!("FAILED: {why}"),
            Ended::Interrupted => "interrupted (what it measured is stored)".into(),
            Ended::NotRun => "not run (interrupted before it)".into(),
        };
        eprintln!("  {:<24} {said}", step.name);
    }
    let failed = ended
        .iter()
        .filter(|e| matches!(e, Ended::Failed(_)))
        .count();
    if failed > 0 {
        eprintln!(
            "linerate plan: {failed} of {} steps failed; the others ran",
            ended.len()
        );
    }
}

/// `--report FILE`: `linerate report --tag plan=NAME`.
fn write_report(plan: &Plan, db: &StoreLocation, out: &std::path::Path) -> Result<()> {
    let argv = [
        "linerate".to_string(),
        "report".into(),
        "--tag".into(),
        format!("plan={}", plan.name),
        "--db".into(),
        db.as_arg(),
        "--out".into(),
        out.display().to_string(),
        "--title".into(),
        format!("linerate plan {}", plan.name),
    ];
    match Cli::try_parse_from(argv)?.command {
        Command::Report(a) => crate::report_cmd::report(&a).context("--report"),
        _ => unreachable!("parsed as report"),
    }
}
