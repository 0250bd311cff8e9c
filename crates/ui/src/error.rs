//! The UI's errors: [`UiError`] for starting the server, [`ApiError`] for one request, answered
//! as `{"error": "…"}` with the HTTP status that says whose fault it was.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use results::store::StoreError;

use crate::child::CaptureError;
use crate::request::RequestError;

/// Why the UI could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// `--listen` is not an address.
    #[error("--listen {given}: not an address and port, e.g. 127.0.0.1:8080")]
    Listen {
        /// As given.
        given: String,
    },
    /// A non-loopback address without a key.
    #[error("--listen {given}: not a loopback address, so anyone who can reach it could start tests from this host; give --ui-key FILE (a secret the page asks for), or listen on 127.0.0.1")]
    NeedsKey {
        /// As given.
        given: String,
    },
    /// The key file cannot be used.
    #[error("--ui-key {path}: {why}")]
    Key {
        /// The file.
        path: String,
        /// Why not.
        why: String,
    },
    /// Binding or serving failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Why one request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request body is not a test.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The command refused the test, or `compare`/`report` failed: its message.
    #[error("{0}")]
    Command(String),
    /// A stored run or tag set that is not in the database: the command's message.
    #[error("{0}")]
    NotFound(String),
    /// `compare` or `report` gave no answer.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A query parameter is wrong.
    #[error("{0}")]
    Query(String),
    /// `POST /api/tests` without a JSON body type.
    #[error("send the test as JSON, with the header Content-Type: application/json")]
    NotJson,
    /// No such test (never started, or forgotten after it ended).
    #[error("test {0}: no such test here (a finished test is kept for a while; its stored run stays in /api/runs)")]
    NoTest(u64),
    /// A test id that is not a number.
    #[error("test id {0:?}: not a test id (a number, as POST /api/tests answers)")]
    BadTestId(String),
    /// As many tests as allowed are running.
    #[error(
        "{0} tests are running, as many as this UI runs at once; stop one or wait for one to end"
    )]
    Busy(usize),
    /// As many `compare`/`trend`/`report` commands are running as allowed.
    #[error("{0} comparisons, trends or reports are being made, as many as this UI makes at once; try again shortly")]
    Crowded(usize),
    /// The results store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No key, or the wrong one.
    #[error("this UI needs its key: open the URL linerate ui printed (with ?key=…), or send the header Authorization: Bearer KEY")]
    Unauthorized,
    /// A request from another site, or for a host name that is not this UI's.
    #[error("{0}")]
    Forbidden(String),
    /// A bug or a lost worker thread.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Request(_)
            | ApiError::Command(_)
            | ApiError::Query(_)
            | ApiError::BadTestId(_) => StatusCode::BAD_REQUEST,
            ApiError::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NoTest(_) | ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Store(StoreError::UnknownRun { .. }) => StatusCode::NOT_FOUND,
            ApiError::Store(_) | ApiError::Internal(_) | ApiError::Capture(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            ApiError::Busy(_) | ApiError::Crowded(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": self.to_string()});
        (self.status(), axum::Json(body)).into_response()
    }
}
