//! `serve --metrics ADDR`: the HTTP endpoint a scraper reads the server's counters from, on the
//! same HTTP stack as the UI (axum on tokio), in one thread of its own (`lr-metrics`, a
//! single-threaded runtime). What it answers comes from the caller ([`start`]'s `page`: the
//! server's counters as text, `session::server::ServerMetrics::page`), so this crate knows
//! nothing of the server.
//!
//! Invariants: `GET /metrics` (any query) is answered with `page`'s text; anything else is a
//! 404; every answer closes its connection. A connection's whole life, request and answer,
//! lasts at most [`DEADLINE`] from its accept, counted from that instant and not per read, so a
//! client that trickles its request or never ends it is closed then, and holds no thread. At
//! most [`MAX_SCRAPES`] connections are open at once, so a flood cannot exhaust descriptors; a
//! connection past those takes the slot of the oldest one still sending its request (a
//! scraper's request arrives in one segment, a trickler's never does), so a flood does not
//! keep a real scrape waiting. A request is read up to [`MAX_REQUEST`] bytes, its body never.
//! The slots and the deadline are `crate::bounded`'s, the UI's own, under this endpoint's
//! [`POLICY`].

use std::future::IntoFuture;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use events::Signal;
use tokio::net::TcpListener;

use crate::bounded::{self, Bounded, Handle, Policy};

/// Most connections open at once.
pub const MAX_SCRAPES: usize = 64;
/// A connection's whole life, request and answer, from its accept.
pub const DEADLINE: Duration = Duration::from_secs(5);
/// Most bytes read from one connection; a longer request is closed unanswered.
pub const MAX_REQUEST: usize = 8192;
/// The endpoint's connections: [`MAX_SCRAPES`], each closed [`DEADLINE`] after its accept
/// whatever it is doing, read up to [`MAX_REQUEST`] bytes.
pub const POLICY: Policy = Policy {
    slots: MAX_SCRAPES,
    deadline: DEADLINE,
    whole_life: true,
    max_read: Some(MAX_REQUEST),
};
/// How often the shutdown signal is looked at.
const TICK: Duration = Duration::from_millis(100);

/// The answer to a scrape, given its `Accept` header (`None`: none): the `Content-Type` and
/// the body.
pub type Page = dyn Fn(Option<&str>) -> (&'static str, String) + Send + Sync;

/// Binds `addr` and serves `page` there on a thread of its own until `shutdown` is raised
/// (then the port closes and open connections are dropped within a tick of its loop, 100 ms);
/// returns the bound address (port 0 picks one).
pub fn start<F>(addr: SocketAddr, page: F, shutdown: Signal) -> io::Result<SocketAddr>
where
    F: Fn(Option<&str>) -> (&'static str, String) + Send + Sync + 'static,
{
    let listener = std::net::TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    bounded::deepen_backlog(&listener)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = {
        let _inside = runtime.enter();
        TcpListener::from_std(listener)?
    };
    let page: Arc<Page> = Arc::new(page);
    std::thread::Builder::new()
        .name("lr-metrics".into())
        .spawn(move || runtime.block_on(serve(listener, page, shutdown)))?;
    Ok(bound)
}

/// Serves until `shutdown`; returning drops the listener, and the runtime's end (the thread's)
/// drops every open connection.
async fn serve(listener: TcpListener, page: Arc<Page>, shutdown: Signal) {
    let app = Router::new()
        .fallback(answer)
        .with_state(page)
        .layer(axum::middleware::from_fn(bounded::track))
        .into_make_service_with_connect_info::<Handle>();
    let serving = axum::serve(Bounded::new(listener, POLICY), app).into_future();
    let stop = async {
        while !shutdown.is_raised() {
            tokio::time::sleep(TICK).await;
        }
    };
    futures_util::future::select(pin!(serving), pin!(stop)).await;
}

/// The metrics for `GET /metrics`, in the format the `Accept` header asks for; 404 otherwise.
async fn answer(
    State(page): State<Arc<Page>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let close = (header::CONNECTION, "close");
    if method != Method::GET || uri.path() != "/metrics" {
        let kind = (header::CONTENT_TYPE, "text/plain");
        return (
            StatusCode::NOT_FOUND,
            [kind, close],
            "only GET /metrics is served here\n",
        )
            .into_response();
    }
    // Several Accept headers read as one list, as HTTP says.
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let accept = (!accept.is_empty()).then(|| accept.join(","));
    let (kind, body) = page(accept.as_deref());
    (StatusCode::OK, [(header::CONTENT_TYPE, kind), close], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;

    /// An endpoint on a free loopback port whose page echoes the Accept header it was given.
    fn endpoint() -> (SocketAddr, Signal) {
        let shutdown = Signal::new();
        let page = |accept: Option<&str>| ("text/x-test", format!("accept={accept:?}\n"));
        let any = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
        let addr = start(any, page, shutdown.clone()).unwrap_or_else(|e| panic!("{e}"));
        (addr, shutdown)
    }

    /// Sends `request` and reads the whole answer (the endpoint closes every connection).
    fn ask(addr: SocketAddr, request: &[u8]) -> String {
        let mut conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("{e}"));
        // A request refused part-way may meet a reset: the answer (none) is what is checked.
        let _ = conn.write_all(request);
        let mut text = String::new();
        let _ = conn.read_to_string(&mut text);
        text
    }

    #[test]
    fn get_metrics_is_answered_with_the_page_and_anything_else_is_a_404() {
        let (addr, shutdown) = endpoint();
        let two = "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nAccept: a/b\r\nAccept: c/d\r\n\r\n";
        let text = ask(addr, two.as_bytes());
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        let lower = text.to_ascii_lowercase();
        assert!(lower.contains("content-type: text/x-test\r\n"), "{text}");
        assert!(lower.contains("connection: close\r\n"), "{text}");
        assert!(text.ends_with("accept=Some(\"a/b,c/d\")\n"), "{text}");
        let none = ask(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(none.ends_with("accept=None\n"), "{none}");
        for other in [
            "GET /other HTTP/1.1",
            "POST /metrics HTTP/1.1",
            "HEAD /metrics HTTP/1.1",
        ] {
            let text = ask(addr, format!("{other}\r\nHost: x\r\n\r\n").as_bytes());
            assert!(text.starts_with("HTTP/1.1 404"), "{other}: {text}");
        }
        shutdown.raise();
    }

    #[test]
    fn a_request_longer_than_the_limit_is_closed_unanswered() {
        let (addr, shutdown) = endpoint();
        let long = format!(
            "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
            "p".repeat(MAX_REQUEST)
        );
        let began = Instant::now();
        let text = ask(addr, long.as_bytes());
        assert!(!text.contains(" 200 "), "{text}");
        assert!(began.elapsed() < DEADLINE, "{:?}", began.elapsed());
        shutdown.raise();
    }

    #[test]
    fn the_port_closes_when_shutdown_is_raised() {
        let (addr, shutdown) = endpoint();
        assert!(ask(addr, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
        shutdown.raise();
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::net::TcpStream::connect(addr).is_ok() {
            assert!(
                Instant::now() < deadline,
                "still listening 2 s after shutdown"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
