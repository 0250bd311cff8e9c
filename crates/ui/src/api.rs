//! The JSON API (docs/API.md): stored runs (`/api/runs`, as `linerate runs --json` and
//! `linerate show --json` give them, and `/api/runs/ID/text`, as `linerate show` prints one),
//! the tests started from the UI (`/api/tests`: start, status, events, stop; `/api/kinds`: the
//! commands it runs and the form's fields each takes), and comparisons,
//! trends and reports of stored runs (`/api/compare`, `/api/trend`, `/api/report`, in
//! `tools`). Store calls block (SQLite, or the PostgreSQL client's own runtime), and so do
//! starting a child and waiting for it, so they run on tokio's blocking threads, never on its
//! workers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use pgstore::Access;
use record::{parse_kind, RunId, RunRow, StoredRun};
use results::store::{Filter, StoreError, StoreLocation};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::registry::{End, Registry, StartError, TestEntry};
use crate::{request, tools};

/// How long `POST /api/tests` waits for the command's first event (it is past its checks) or
/// its end (it refused the test: a `400`).
const FIRST_EVENT: Duration = Duration::from_secs(10);

/// What every handler shares.
pub struct Shared {
    /// The results store the UI reads and its tests are stored in.
    pub db: StoreLocation,
    /// The tests started from the UI.
    pub registry: Registry,
    /// The linerate executable that runs them (and `compare`, `trend`, `report`).
    pub exe: PathBuf,
    /// The commands and flags its tests may use.
    pub accepts: crate::accept::Accepts,
    /// `compare`, `trend` and `report` commands running: at most [`tools::MAX_AT_ONCE`].
    pub tools: Arc<tokio::sync::Semaphore>,
}

type AppState = State<Arc<Shared>>;

/// The API's routes.
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/api/runs", get(list_runs))
        .route("/api/runs/{id}", get(get_run))
        .route("/api/runs/{id}/text", get(get_run_text))
        .route("/api/kinds", get(list_kinds))
        .route("/api/record-kinds", get(list_record_kinds))
        .route("/api/tests", get(list_tests).post(start_test))
        .route("/api/tests/{id}", get(get_test))
        .route("/api/tests/{id}/events", get(test_events))
        .route("/api/tests/{id}/stop", post(stop_test))
        .route("/api/compare", get(tools::compare))
        .route("/api/trend", get(tools::trend))
        .route("/api/report", get(tools::report))
}

/// Runs `f` on a blocking thread.
pub async fn blocking<T, E>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, ApiError>
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
        Ok(mut store) => store.list(&filter).map(|listing| listing.rows),
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

/// `GET /api/runs/ID/text`: one stored run as `linerate show ID` prints it, every line of its
/// summary (what limited it, the congestion control, the streams), as plain text.
async fn get_run_text(
    state: AppState,
    id: Path<String>,
) -> Result<axum::response::Response, ApiError> {
    let Json(run) = get_run(state, id).await?;
    let mut text = Vec::new();
    report::stored::write_stored(&mut text, &run)
        .map_err(|e| ApiError::Internal(format!("writing the run as text: {e}")))?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// `POST /api/tests`: starts the command, and answers its id once it is past its checks (its
/// first event), or its refusal (it ended before one).
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
    let words = request::words(&body, &shared.accepts)?;
    // `words` parsed it already: it is a JSON object.
    let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let shown: Vec<String> = words
        .iter()
        .filter(|w| *w != request::JSON_STREAM)
        .cloned()
        .collect();
    let state = Arc::clone(&shared);
    let entry = blocking(move || {
        let db = state.db.as_arg();
        state
            .registry
            .start(&state.exe, &db, &words, (shown, asked))
            .map_err(|e| match e {
                StartError::Busy(n) => ApiError::Busy(n),
                other => ApiError::Internal(other.to_string()),
            })
    })
    .await?;
    let mut rx = entry.subscribe();
    let first = async {
        loop {
            {
                let log = entry.log();
                if log.evented || log.end.is_some() {
                    return;
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(FIRST_EVENT, first).await;
    let refused = {
        let log = entry.log();
        match (&log.end, log.evented) {
            (Some(End::Failed(message)), false) => Some(message.clone()),
            _ => None,
        }
    };
    if let Some(message) = refused {
        let state = Arc::clone(&shared);
        let id = entry.id;
        blocking(move || {
            state.registry.forget(id);
            Ok::<_, ApiError>(())
        })
        .await?;
        return Err(ApiError::Command(message));
    }
    Ok((StatusCode::CREATED, Json(json!({"id": entry.id}))))
}

/// `GET /api/kinds`: the measuring commands the UI runs, in the registry's order, each with the
/// names a request's `kind` gives it by, what it measures in a few words, whether the options
/// form takes it, and the run form's fields it takes (the page offers these commands, and shows
/// and sends only those fields).
async fn list_kinds(State(shared): AppState) -> Json<Vec<Value>> {
    let kinds = shared.accepts.commands.iter().map(|c| {
        let kind = c.names.first();
        json!({"kind": kind, "names": c.names, "summary": c.summary, "options": c.options, "fields": c.fields})
    });
    Json(kinds.collect())
}

/// `GET /api/record-kinds`: the kinds a stored run may be of, each with its family of figures
/// (which charts and columns it has), for the page's kind filters and charts.
async fn list_record_kinds(State(shared): AppState) -> Json<Vec<Value>> {
    let kinds = (shared.accepts.kinds.iter()).map(|k| json!({"kind": k.name, "family": k.family}));
    Json(kinds.collect())
}

/// A test's state: `starting`, `running`, `stopping`, `finished` or `failed`.
fn status(entry: &TestEntry) -> Value {
    let stopping = entry.stopping();
    let log = entry.log();
    let (state, error) = match &log.end {
        None if stopping => ("stopping", None),
        None if !log.evented => ("starting", None),
        None => ("running", None),
        Some(End::Finished) => ("finished", None),
        Some(End::Failed(e)) => ("failed", Some(e.clone())),
    };
    json!({
        "id": entry.id,
        "command": entry.command,
        "request": entry.request,
        "state": state,
        "intervals": log.intervals,
        "points": log.points,
        "run_id": log.run_ids.last(),
        "run_ids": log.run_ids,
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

/// `POST /api/tests/ID/stop`: stops the test as Ctrl-C would (SIGINT); the command stores
/// what it measured and writes its end.
async fn stop_test(
    State(shared): AppState,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let entry = entry(&shared, &id)?;
    entry.stop();
    Ok((StatusCode::ACCEPTED, Json(status(&entry))))
}
