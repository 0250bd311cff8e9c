//! The JSON API (docs/API.md): stored runs (`/api/runs`, as `linerate runs --json` and
//! `linerate show --json` give them) and the tests started from the UI (`/api/tests`: start,
//! status, events, stop). Store calls block (SQLite, or the PostgreSQL client's own runtime),
//! so they run on tokio's blocking threads, never on its workers.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use pgstore::Access;
use results::store::{parse_kind, Filter, RunId, RunRow, StoreError, StoreLocation, StoredRun};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::launcher::Launcher;
use crate::registry::{Busy, End, Registry, TestEntry};
use crate::request;

/// What every handler shares.
pub struct Shared {
    /// The results store the UI reads and its tests are stored in.
    pub db: StoreLocation,
    /// The tests started from the UI.
    pub registry: Registry,
    /// Checks and runs them.
    pub launcher: Arc<dyn Launcher>,
    /// Tests being checked and prepared (which may open a database, resolve a host and start an
    /// in-process server): no more at once than may run, so a flood of requests is refused
    /// before any of that work.
    pub preparing: Arc<tokio::sync::Semaphore>,
}

type AppState = State<Arc<Shared>>;

/// The API's routes.
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/api/runs", get(list_runs))
        .route("/api/runs/{id}", get(get_run))
        .route("/api/tests", get(list_tests).post(start_test))
        .route("/api/tests/{id}", get(get_test))
        .route("/api/tests/{id}/events", get(test_events))
        .route("/api/tests/{id}/stop", post(stop_test))
}

/// Runs `f` on a blocking thread.
async fn blocking<T, E>(f: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Send + 'static,
    ApiError: From<E>,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("a worker thread failed: {e}")))?
        .map_err(ApiError::from)
}

/// `?tag=K=V&kind=KIND&since=DATE` (tag repeatable), as `linerate runs` takes them; `key` is
/// the UI's own and ignored here.
fn filter(params: &[(String, String)]) -> Result<Filter, ApiError> {
    let mut filter = Filter::default();
    let bad = |what: &str, e: &dyn std::fmt::Display| ApiError::Query(format!("{what} {e}"));
    for (name, value) in params {
        match name.as_str() {
            "tag" => {
                let tag = value.parse().map_err(|e| bad("tag", &e))?;
                filter.tags.insert(tag).map_err(|e| bad("tag", &e))?;
            }
            "kind" => filter.kind = Some(parse_kind(value).map_err(|e| bad("kind", &e))?),
            "since" => {
                let ms = report::local_time::parse_since(value)
                    .map_err(|e| bad(&format!("since {value}:"), &e))?;
                filter.since_unix_ms = Some(ms);
            }
            "key" => {}
            other => {
                return Err(ApiError::Query(format!(
                    "{other}: unknown parameter; filter with tag=KEY=VALUE, kind=KIND, since=DATE"
                )))
            }
        }
    }
    Ok(filter)
}

/// `GET /api/runs`: the stored runs that match, oldest first; none yet is `[]`.
async fn list_runs(
    State(shared): AppState,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Json<Vec<RunRow>>, ApiError> {
    let filter = filter(&params)?;
    let db = shared.db.clone();
    let rows = blocking(move || match pgstore::open(&db, Access::Read) {
        Ok(mut store) => store.list(&filter),
        Err(StoreError::Missing { .. }) => Ok(Vec::new()),
        Err(e) => Err(e),
    })
    .await?;
    Ok(Json(rows))
}

/// `GET /api/runs/ID`: one stored run in full (`12` or `#12`, i.e. `%2312`).
async fn get_run(
    State(shared): AppState,
    Path(id): Path<String>,
) -> Result<Json<StoredRun>, ApiError> {
    let id: RunId = id.parse().map_err(|e| ApiError::Query(format!("{e}")))?;
    let db = shared.db.clone();
    let run = blocking(move || match pgstore::open(&db, Access::Read) {
        Ok(mut store) => store.get(id),
        Err(StoreError::Missing { .. }) => Err(StoreError::UnknownRun {
            id,
            location: db.to_string(),
        }),
        Err(e) => Err(e),
    })
    .await?;
    Ok(Json(run))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// `POST /api/tests`: checks the test as the command line does, starts it, answers its id.
async fn start_test(
    State(shared): AppState,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    // A JSON body type makes a cross-site form post impossible without the browser asking us
    // first (CORS), which this server never allows.
    if !is_json(&headers) {
        return Err(ApiError::NotJson);
    }
    let words = request::words(&body, &shared.db.as_arg())?;
    // Shown without --db, whose URL may carry a password.
    let shown: Vec<String> = words
        .iter()
        .filter(|w| !w.starts_with("--db="))
        .cloned()
        .collect();
    let max = shared.registry.max_running();
    let permit = Arc::clone(&shared.preparing)
        .try_acquire_owned()
        .map_err(|_| ApiError::Busy(max))?;
    let state = Arc::clone(&shared);
    // On a blocking thread, starting included: a test refused as busy is dropped there, and
    // dropping one may join an in-process server's thread or close a database connection.
    let entry = blocking(move || {
        let _preparing = permit;
        let prepared = state.launcher.prepare(&words)?;
        state
            .registry
            .start(shown, prepared)
            .map_err(|Busy(n)| ApiError::Busy(n))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(json!({"id": entry.id}))))
}

/// A test's state: `starting`, `running`, `stopping`, `finished` or `failed`.
fn status(entry: &TestEntry) -> Value {
    let log = entry.log();
    let (state, run_id, error) = match &log.end {
        None if entry.stopping() => ("stopping", None, None),
        None if log.started.is_none() => ("starting", None, None),
        None => ("running", None, None),
        Some(End::Finished(f)) => ("finished", Some(f.run_id), None),
        Some(End::Failed(e)) => ("failed", None, Some(e.clone())),
    };
    json!({
        "id": entry.id,
        "command": entry.command,
        "state": state,
        "intervals": log.dropped + log.intervals.len() as u64,
        "run_id": run_id,
        "error": error,
    })
}

fn entry(shared: &Shared, id: &str) -> Result<Arc<TestEntry>, ApiError> {
    let n: u64 = id
        .parse()
        .map_err(|_| ApiError::BadTestId(id.to_string()))?;
    shared.registry.get(n).ok_or(ApiError::NoTest(n))
}

/// `GET /api/tests`: the tests started here and still kept, oldest first.
async fn list_tests(State(shared): AppState) -> Json<Vec<Value>> {
    Json(shared.registry.all().iter().map(|t| status(t)).collect())
}

/// `GET /api/tests/ID`.
async fn get_test(
    State(shared): AppState,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let entry = entry(&shared, &id)?;
    Ok(Json(status(&entry)))
}

/// `GET /api/tests/ID/events`: Server-Sent Events to the test's end.
async fn test_events(
    State(shared): AppState,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(crate::events::sse(entry(&shared, &id)?))
}

/// `POST /api/tests/ID/stop`: stops the test as Ctrl-C would; what it measured is stored.
async fn stop_test(
    State(shared): AppState,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let entry = entry(&shared, &id)?;
    entry.stop();
    Ok((StatusCode::ACCEPTED, Json(status(&entry))))
}
