//! Stored runs through the command line's own commands, run as children of the UI:
//! `GET /api/compare?runs=…` answers `linerate compare --format json`'s document,
//! `GET /api/trend?runs=…` `linerate trend --format json`'s, and `GET /api/report?runs=…`
//! the HTML file `linerate report` writes, as a download.
//!
//! Invariants: every run token is checked here (a run id, `12` or `#12`, or a tag set
//! `key=value[,key=value]`) and passed after `--`, so none is read as an option; every other
//! parameter is checked against what it may be (a metric's name, a tag key, a kind) and passed
//! as one `--flag=value` word; the words are built here, so no request names a file, a
//! database or a chart to write. A command runs at most [`TIMEOUT`] and its output is capped;
//! at most [`MAX_AT_ONCE`] run at once.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::api::{blocking, Shared};
use crate::child::{self, Captured};
use crate::error::ApiError;

/// How long `compare` or `report` may run.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Commands of these endpoints running at once; one more is refused.
pub const MAX_AT_ONCE: usize = 4;

/// The largest comparison answered.
const COMPARE_BYTES: usize = 16 << 20;

/// The largest report answered.
const REPORT_BYTES: usize = 64 << 20;

/// The run tokens of `runs=` (repeatable): each value split at commas, where consecutive
/// `key=value` pieces make one tag set and each run id is an item of its own (`12,13` is two
/// items, `driver=a,mtu=9000` one; two tag sets take two `runs=`).
pub fn items(params: &[(String, String)]) -> Result<Vec<String>, ApiError> {
    let items = run_items(params, "give runs=12,13 (run ids, or tag sets KEY=VALUE)")?;
    if items.is_empty() {
        return Err(ApiError::Query(
            "runs: name the runs, e.g. runs=12,13 (run ids, or tag sets KEY=VALUE)".into(),
        ));
    }
    Ok(items)
}

/// The run tokens of `runs=`, none if it is not given; any other parameter but `key` (the
/// UI's own) is refused with `hint`.
fn run_items(params: &[(String, String)], hint: &str) -> Result<Vec<String>, ApiError> {
    let mut items = Vec::new();
    for (name, value) in params {
        match name.as_str() {
            "runs" => split(value, &mut items)?,
            "key" => {}
            other => {
                return Err(ApiError::Query(format!(
                    "{other}: unknown parameter; {hint}"
                )))
            }
        }
    }
    Ok(items)
}

fn split(value: &str, items: &mut Vec<String>) -> Result<(), ApiError> {
    let mut tags: Vec<&str> = Vec::new();
    for piece in value.split(',').map(str::trim) {
        if is_run(piece) {
            if !tags.is_empty() {
                items.push(tags.join(","));
                tags.clear();
            }
            items.push(piece.to_string());
        } else if is_tag(piece) {
            tags.push(piece);
        } else {
            return Err(ApiError::Query(format!(
                "runs={value}: {piece:?} is neither a run id (12, or %2312 for #12) nor a tag \
                 KEY=VALUE"
            )));
        }
    }
    if !tags.is_empty() {
        items.push(tags.join(","));
    }
    Ok(())
}

fn is_run(piece: &str) -> bool {
    let digits = piece.strip_prefix('#').unwrap_or(piece);
    (1..=19).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
}

fn is_tag(piece: &str) -> bool {
    let Some((key, value)) = piece.split_once('=') else {
        return false;
    };
    is_key(key) && !value.is_empty() && !value.chars().any(char::is_control)
}

/// A tag's key: a letter or digit first (so never an option), then letters, digits, `_-.`.
pub(crate) fn is_key(key: &str) -> bool {
    key.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Runs `linerate words…` on the UI's database; its stdout, or its error (`404` for a run or
/// tag set that is not stored).
async fn run(shared: &Shared, words: Vec<String>, cap: usize) -> Result<Captured, ApiError> {
    let permit = Arc::clone(&shared.tools)
        .try_acquire_owned()
        .map_err(|_| ApiError::Crowded(MAX_AT_ONCE))?;
    let (exe, db) = (shared.exe.clone(), shared.db.as_arg());
    let captured = blocking(move || {
        let _permit = permit;
        child::capture(&exe, &words, &db, TIMEOUT, cap)
    })
    .await?;
    if captured.status.success() {
        return Ok(captured);
    }
    let message = child::error_message(&captured.stderr, Some(captured.status));
    if message.contains("no such run") || message.contains("no stored run carries") {
        Err(ApiError::NotFound(message))
    } else {
        Err(ApiError::Command(message))
    }
}

/// `GET /api/compare?runs=12,13`: `linerate compare --format json 12 13`.
pub async fn compare(
    State(shared): State<Arc<Shared>>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let mut words = vec!["compare".to_string(), "--format=json".into(), "--".into()];
    words.extend(items(&params)?);
    let out = run(&shared, words, COMPARE_BYTES).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], out.stdout).into_response())
}

/// `linerate trend`'s words for `?runs=…&metric=…&by=…&kind=…`: each of `metric`, `by` and
/// `kind` at most once, checked (a metric `compare` names, a tag key, a kind; empty is not
/// given) and passed as one `--flag=value` word; the run tokens after `--`, none for every
/// stored run, a series per kind and target.
/// `kinds` are the record kinds `--kind` takes (the binary's, in [`crate::Accepts::kinds`]).
pub fn trend_words(params: &[(String, String)], kinds: &[String]) -> Result<Vec<String>, ApiError> {
    let mut words = vec!["trend".to_string(), "--format=json".into()];
    let mut rest = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in params {
        let check: &dyn Fn(&str) -> Result<(), TrendParamError> = match name.as_str() {
            "metric" => &trend_metric,
            "by" => &trend_by,
            "kind" => &|v: &str| trend_kind(v, kinds),
            _ => {
                rest.push((name.clone(), value.clone()));
                continue;
            }
        };
        if seen.contains(&name.as_str()) {
            return Err(ApiError::Query(format!("{name}: give it once")));
        }
        seen.push(name);
        if value.is_empty() {
            continue;
        }
        check(value).map_err(|why| ApiError::Query(format!("{name}={value:?}: {why}")))?;
        words.push(format!("--{name}={value}"));
    }
    words.push("--".into());
    words.extend(run_items(
        &rest,
        "give runs=… (run ids or tag sets KEY=VALUE), metric=NAME, by=TAG, kind=KIND",
    )?);
    Ok(words)
}

/// Why a `trend` query's `metric`, `by` or `kind` is refused (after `NAME="VALUE": `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum TrendParamError {
    /// `metric` is no row `compare` shows.
    #[error(
        "no such metric; one of: {} (as compare names its rows)",
        report::check::metric_names().join(", ")
    )]
    NoSuchMetric,
    /// `by` is not a tag key.
    #[error(
        "not a tag key; give the tag to order the runs by, e.g. by=kernel (letters, digits, \
         _-., a letter or digit first, at most 64)"
    )]
    NotTagKey,
    /// `kind` is none of the record kinds (listed).
    #[error("not a kind; one of {0}")]
    NotKind(String),
}

fn trend_metric(value: &str) -> Result<(), TrendParamError> {
    report::check::metric_names()
        .contains(&value)
        .then_some(())
        .ok_or(TrendParamError::NoSuchMetric)
}

fn trend_by(value: &str) -> Result<(), TrendParamError> {
    (is_key(value) && value.len() <= 64)
        .then_some(())
        .ok_or(TrendParamError::NotTagKey)
}

fn trend_kind(value: &str, kinds: &[String]) -> Result<(), TrendParamError> {
    match kinds.iter().any(|k| k == value) {
        true => Ok(()),
        false => Err(TrendParamError::NotKind(kinds.join(", "))),
    }
}

/// `GET /api/trend?runs=series=s&metric=throughput&by=commit&kind=tcp_stream`: `linerate
/// trend --format json` of the runs (every stored run, per target, without `runs`).
pub async fn trend(
    State(shared): State<Arc<Shared>>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let words = trend_words(&params, &shared.accepts.kind_names())?;
    let out = run(&shared, words, COMPARE_BYTES).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], out.stdout).into_response())
}

/// `GET /api/report?runs=12,13`: the HTML of `linerate report 12 13`, as a download.
pub async fn report(
    State(shared): State<Arc<Shared>>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let items = items(&params)?;
    let internal =
        |what: &str, e: &dyn std::fmt::Display| ApiError::Internal(format!("{what}: {e}"));
    // A directory of its own (mode 700), removed when dropped: no one else's file is written.
    let dir = tempfile::tempdir().map_err(|e| internal("a temporary directory", &e))?;
    let path = dir.path().join("report.html");
    let mut words = vec!["report".to_string(), format!("--out={}", path.display())];
    words.push("--".into());
    words.extend(items);
    run(&shared, words, 1 << 20).await?;
    let html = blocking(move || {
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if size > REPORT_BYTES as u64 {
            return Err(ApiError::Internal(format!(
                "the report is larger than {} MiB",
                REPORT_BYTES >> 20
            )));
        }
        let html = std::fs::read(&path).map_err(|e| internal("reading the report", &e));
        drop(dir);
        html
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"linerate-report.html\"",
            ),
        ],
        html,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[&str]) -> Result<Vec<String>, String> {
        let params: Vec<(String, String)> = values
            .iter()
            .map(|v| ("runs".to_string(), v.to_string()))
            .collect();
        items(&params).map_err(|e| e.to_string())
    }

    #[test]
    fn run_tokens_are_ids_or_tag_sets() {
        assert_eq!(of(&["12,#13"]).unwrap(), ["12", "#13"]);
        assert_eq!(
            of(&["driver=a, mtu=9000", "12,x=1,y=2,13"]).unwrap(),
            ["driver=a,mtu=9000", "12", "x=1,y=2", "13"]
        );
        for bad in [
            "--db=/x",
            "12;rm",
            "",
            "=v",
            "k=",
            "#",
            "-1",
            "12345678901234567890",
        ] {
            let err = of(&[bad]).unwrap_err();
            assert!(err.contains("neither a run id"), "{bad}: {err}");
        }
        assert!(of(&[]).unwrap_err().starts_with("runs: name the runs"));
        let other = items(&[("format".into(), "csv".into())]).unwrap_err();
        assert!(other.to_string().starts_with("format: unknown parameter"));
    }

    fn kinds() -> Vec<String> {
        vec!["tcp_stream".into(), "tcp_rr".into()]
    }

    fn trend_of(pairs: &[(&str, &str)]) -> Result<Vec<String>, String> {
        let params: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        trend_words(&params, &kinds()).map_err(|e| e.to_string())
    }

    #[test]
    fn each_refused_trend_parameter_is_its_own_error() {
        assert_eq!(trend_metric("speed"), Err(TrendParamError::NoSuchMetric));
        assert_eq!(trend_by("a b"), Err(TrendParamError::NotTagKey));
        let not = TrendParamError::NotKind(kinds().join(", "));
        assert_eq!(trend_kind("tcp", &kinds()), Err(not.clone()));
        assert_eq!(trend_kind("tcp_rr", &kinds()), Ok(()));
        assert_eq!(not.to_string(), "not a kind; one of tcp_stream, tcp_rr");
    }

    #[test]
    fn trend_parameters_are_one_checked_word_each_and_never_an_option() {
        assert_eq!(
            trend_of(&[]).unwrap(),
            ["trend", "--format=json", "--"],
            "no runs: every run, per target"
        );
        assert_eq!(
            trend_of(&[
                ("runs", "series=s"),
                ("metric", "throughput c->s"),
                ("by", "commit"),
                ("kind", "tcp_stream"),
                ("runs", "12"),
            ])
            .unwrap(),
            [
                "trend",
                "--format=json",
                "--metric=throughput c->s",
                "--by=commit",
                "--kind=tcp_stream",
                "--",
                "series=s",
                "12"
            ]
        );
        assert_eq!(
            trend_of(&[("metric", ""), ("by", ""), ("kind", "")]).unwrap(),
            ["trend", "--format=json", "--"]
        );
        for (name, bad, says) in [
            ("by", "--db", "not a tag key"),
            ("by", "-x", "not a tag key"),
            ("by", "a b", "not a tag key"),
            ("metric", "--chart=/tmp/x.svg", "no such metric"),
            ("metric", "speed", "no such metric"),
            ("kind", "tcp", "not a kind"),
            ("kind", "--db=/x", "not a kind"),
        ] {
            let err = trend_of(&[(name, bad)]).unwrap_err();
            assert!(err.starts_with(&format!("{name}=")), "{bad}: {err}");
            assert!(err.contains(says), "{bad}: {err}");
        }
        let twice = trend_of(&[("by", "a"), ("by", "b")]).unwrap_err();
        assert_eq!(twice, "by: give it once");
        let runs = trend_of(&[("runs", "--db=/x")]).unwrap_err();
        assert!(runs.contains("neither a run id"), "{runs}");
        let other = trend_of(&[("db", "/x")]).unwrap_err();
        assert!(other.starts_with("db: unknown parameter"), "{other}");
    }
}
