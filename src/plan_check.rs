//! `plan --check-against TAGS`: once a plan's steps have run, each step's runs of this
//! execution are checked against the baseline's runs of the same step, as `linerate check`
//! checks two groups: one check per step, kind and mesh cell (`from`, `to`), so a side is
//! always one test. Too few runs to decide is exit 2 (unless `--allow-undecided`), as there.

use anyhow::{anyhow, bail, Result};
use pgstore::Access;
use plan::Plan;
use record::{StoredRun, Tag, Tags};
use report::check::{check, CheckOptions, Decision};
use report::trend::{by_test, test_of};
use results::store::{Item, Selection, StoreLocation};

use crate::report_cmd::select::{labeled, noted};

/// The baseline's tags, checked before any step runs: a tag set, not a run.
pub fn baseline_tags(against: &str) -> Result<Tags> {
    match Item::parse(against).map_err(|e| anyhow!("--check-against {e}"))? {
        Item::Tags(tags) => Ok(tags),
        Item::Run(_) => bail!(
            "--check-against {against}: give the baseline's tags (commit=abc), not a run: each \
             step is checked against the baseline's runs of that step"
        ),
    }
}

/// Checks every step's runs started since `since_ms` against `baseline`'s runs of the step;
/// prints each check; whether one regressed, else an error if one could not decide.
pub fn check_steps(
    plan: &Plan,
    db: &StoreLocation,
    baseline: &Tags,
    since_ms: u64,
    allow_undecided: bool,
) -> Result<bool> {
    let mut store = pgstore::open(db, Access::Read).map_err(|e| anyhow!("{e}"))?;
    let (mut regressed, mut undecided) = (false, None);
    for step in &plan.steps {
        let step_tags =
            Tags::parse([format!("plan={}", plan.name), format!("step={}", step.name)])?;
        let ours: Vec<StoredRun> = (noted(store.find(&step_tags)?).into_iter())
            .filter(|r| r.record.started_at_unix_ms >= since_ms)
            .collect();
        let mut theirs_tags = step_tags;
        for (key, value) in baseline.iter() {
            theirs_tags.insert(tag(key, value))?;
        }
        let theirs = noted(store.find(&theirs_tags)?);
        for (test, candidate) in by_test(ours) {
            let baseline_runs = (theirs.iter())
                .filter(|r| test_of(r) == test && !candidate.iter().any(|c| c.id == r.id))
                .cloned()
                .collect();
            let side = |label: String, runs| {
                let selection = Selection {
                    label,
                    tags: Tags::new(),
                    runs,
                    skipped: vec![],
                };
                labeled(&selection).leave_out_unfinished()
            };
            let b = side(format!("{theirs_tags}"), baseline_runs);
            let c = side(format!("this plan's {}", step.name), candidate);
            let opts = CheckOptions {
                metrics: &[],
                threshold: None,
                level: 0.95,
            };
            let result = check(&b, &c, &opts)?;
            regressed |= result.decision == Decision::Regressed;
            let why = result
                .undecided()
                .map(|why| format!("step {} ({test}): {why}", step.name));
            undecided = undecided.or(why);
            println!("step {} ({test}):", step.name);
            print!("{}", report::check_text::check_text(&result));
        }
    }
    match undecided {
        Some(why) if !regressed && !allow_undecided => bail!("{why}"),
        _ => Ok(regressed),
    }
}

fn tag(key: &str, value: &str) -> Tag {
    Tag {
        key: key.into(),
        value: value.into(),
    }
}
