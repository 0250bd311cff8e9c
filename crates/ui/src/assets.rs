//! The page, embedded in the binary (no CDN: it works offline): one HTML file, its script (ES
//! modules) and its style sheet, served as they are.

use std::sync::Arc;

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::api::Shared;
use crate::error::ApiError;

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page: its path, content type and text. The script is ES modules
/// (`app.js` imports the rest), all served from here.
const ASSETS: [(&str, &str, &str); 14] = [
    ("/", HTML, include_str!("assets/index.html")),
    ("/style.css", CSS, include_str!("assets/style.css")),
    ("/app.js", JS, include_str!("assets/app.js")),
    ("/util.js", JS, include_str!("assets/util.js")),
    ("/chart.js", JS, include_str!("assets/chart.js")),
    ("/live.js", JS, include_str!("assets/live.js")),
    ("/series.js", JS, include_str!("assets/series.js")),
    ("/rpm.js", JS, include_str!("assets/rpm.js")),
    ("/summary.js", JS, include_str!("assets/summary.js")),
    ("/run.js", JS, include_str!("assets/run.js")),
    ("/form.js", JS, include_str!("assets/form.js")),
    ("/runs.js", JS, include_str!("assets/runs.js")),
    ("/views.js", JS, include_str!("assets/views.js")),
    ("/trend.js", JS, include_str!("assets/trend.js")),
];

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The page's routes.
pub fn routes() -> Router<Arc<Shared>> {
    ASSETS
        .iter()
        .fold(Router::new(), |router, &(path, content_type, body)| {
            router.route(path, get(move || async move { asset(content_type, body) }))
        })
}

/// Anything else: a JSON error under `/api/`, plain text elsewhere.
pub async fn not_found(uri: Uri) -> Response {
    if uri.path().starts_with("/api/") {
        let e = ApiError::Query(format!(
            "{}: no such endpoint (see docs/API.md)",
            uri.path()
        ));
        (
            StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({"error": e.to_string()})),
        )
            .into_response()
    } else {
        (StatusCode::NOT_FOUND, "not found\n").into_response()
    }
}
