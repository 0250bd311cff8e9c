//! Who may use the UI, checked before every request.
//!
//! - With a key (`--ui-key`, needed to listen beyond loopback): every request carries it, as
//!   `?key=KEY` (which also sets a cookie, so the page's own requests carry it after the first),
//!   the cookie, or `Authorization: Bearer KEY`. Keys are compared in constant time.
//! - Without one (loopback only): the `Host` must be a loopback name or address, so a web page
//!   elsewhere cannot reach the UI by pointing its own name at 127.0.0.1 (DNS rebinding).
//! - Always: a request that changes something (`POST`) or starts work (every `/api/` route:
//!   a comparison, trend or report runs a child, a run is read from the store, an event stream
//!   holds a connection) from a page of another origin is refused: its `Origin` must be this
//!   UI's own or, without one, its `Sec-Fetch-Site` `same-origin` (or `none`). A client that is
//!   no browser sends neither and passes; the page itself (`/`, its scripts) stays open to a
//!   link from anywhere. No answer of the API is readable by another site anyway (no CORS), so
//!   the rule costs the API nothing.
//! - Every refusal closes its connection, so a refused client holds no connection.

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The cookie that carries the key.
pub const COOKIE: &str = "linerate_ui_key";

/// The access rule of one UI.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// The key every request must carry; `None` on loopback without `--ui-key`.
    pub key: Option<String>,
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// Whether `authority` (a `Host` header: name or address, and maybe a port) is loopback.
pub fn is_loopback_host(authority: &str) -> bool {
    let host = host_of(authority);
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn header(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The key a request carries: in the query, the cookie, or the Authorization header; and
/// whether it came in the query (then the answer sets the cookie).
fn carried(request: &Request) -> (Option<String>, bool) {
    let query = Query::<Vec<(String, String)>>::try_from_uri(request.uri())
        .map(|q| q.0)
        .unwrap_or_default();
    if let Some((_, key)) = query.into_iter().find(|(k, _)| k == "key") {
        return (Some(key), true);
    }
    let headers = request.headers();
    let cookie = header(headers, header::COOKIE).and_then(|c| {
        c.split(';')
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == COOKIE)
            .map(|(_, v)| v.to_string())
    });
    let bearer = header(headers, header::AUTHORIZATION)
        .and_then(|a| a.strip_prefix("Bearer "))
        .map(|k| k.trim().to_string());
    (cookie.or(bearer), false)
}

/// Whether `request` changes something or starts work: what another site may not ask for.
/// Every `/api/` route, so one added later is covered the day it is added.
fn starts_work(request: &Request) -> bool {
    let reads = request.method() == Method::GET || request.method() == Method::HEAD;
    !reads || request.uri().path().starts_with("/api/")
}

/// Refuses what [`Guard`] does not allow; otherwise passes the request on.
fn refusal(guard: &Guard, request: &Request) -> Result<bool, ApiError> {
    let headers = request.headers();
    let host = header(headers, header::HOST);
    if guard.key.is_none() {
        match host {
            Some(host) if is_loopback_host(host) => {}
            Some(host) => {
                return Err(ApiError::Forbidden(format!(
                    "Host {host}: this UI answers only to its loopback address (open http://127.0.0.1:PORT/)"
                )))
            }
            None => {
                return Err(ApiError::Forbidden(
                    "a request without a Host header: send Host: 127.0.0.1:PORT".into(),
                ))
            }
        }
    }
    if starts_work(request) {
        if let Some(origin) = header(headers, header::ORIGIN) {
            let from = origin.split_once("://").map_or(origin, |(_, a)| a);
            if host != Some(from) {
                return Err(ApiError::Forbidden(format!(
                    "a request from {origin}, another site, is refused"
                )));
            }
        } else if header(headers, header::HeaderName::from_static("sec-fetch-site"))
            .is_some_and(|site| site != "same-origin" && site != "none")
        {
            // A browser that sent no Origin still says where the request came from.
            return Err(ApiError::Forbidden(
                "a request from another site is refused (Sec-Fetch-Site)".into(),
            ));
        }
    }
    let Some(key) = &guard.key else {
        return Ok(false);
    };
    match carried(request) {
        (Some(given), in_query) if same(given.as_bytes(), key.as_bytes()) => Ok(in_query),
        _ => Err(ApiError::Unauthorized),
    }
}

/// The middleware: [`refusal`], and the cookie when the key came in the URL.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let mut response = answer(&guard, request, next).await;
    // No other site may frame the page (its buttons start and stop tests).
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("frame-ancestors 'none'"),
    );
    response
}

async fn answer(guard: &Guard, request: Request, next: Next) -> Response {
    match refusal(guard, &request) {
        Err(e) => {
            let mut response = e.into_response();
            let close = HeaderValue::from_static("close");
            response.headers_mut().insert(header::CONNECTION, close);
            response
        }
        Ok(set_cookie) => {
            let mut response = next.run(request).await;
            if let (true, Some(key)) = (set_cookie, &guard.key) {
                let cookie = format!("{COOKIE}={key}; Path=/; HttpOnly; SameSite=Strict");
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "127.0.0.1:8080",
            "localhost:1",
            "LOCALHOST",
            "[::1]:80",
            "127.9.0.1",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.example:8080",
            "10.0.0.1:80",
            "[2001:db8::1]:80",
            "localhost.evil",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn keys_compare_whole() {
        assert!(same(b"abcdef", b"abcdef"));
        assert!(!same(b"abcdef", b"abcdeg"));
        assert!(!same(b"abc", b"abcdef"));
    }
}
