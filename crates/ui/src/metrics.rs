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

use std::collections::VecDeque;
use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use events::Signal;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// Most connections open at once.
pub const MAX_SCRAPES: usize = 64;
/// A connection's whole life, request and answer, from its accept.
pub const DEADLINE: Duration = Duration::from_secs(5);
/// Most bytes read from one connection; a longer request is closed unanswered.
pub const MAX_REQUEST: usize = 8192;
/// How often the shutdown signal is looked at, and the pause after a failed accept (out of
/// descriptors, say) before the next.
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
    // A deep accept queue: a burst of connections waits there for the slots' rule (the
    // oldest trickler gives way) rather than overflowing into the kernel's retransmissions,
    // which would hold a client seconds past any deadline of ours.
    // SAFETY: listen on our own listening socket only changes its backlog.
    if unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), BACKLOG) } != 0 {
        return Err(io::Error::last_os_error());
    }
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

/// Connections the kernel holds for us before they are accepted.
const BACKLOG: libc::c_int = 1024;

/// Serves until `shutdown`; returning drops the listener, and the runtime's end (the thread's)
/// drops every open connection.
async fn serve(listener: TcpListener, page: Arc<Page>, shutdown: Signal) {
    let app = Router::new().fallback(answer).with_state(page);
    let serving = axum::serve(Bounded::new(listener), app).into_future();
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

/// The listening socket with its slots: [`Listener::accept`](axum::serve::Listener::accept)
/// hands on a connection only with a slot, a free one or the one it takes from the oldest
/// connection still sending its request.
struct Bounded {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    sending: Arc<Mutex<Sending>>,
}

/// The connections still sending their request, oldest first, each with the sender that
/// closes it; a connection leaves when it starts its answer or closes.
#[derive(Default)]
struct Sending {
    next: u64,
    queue: VecDeque<(u64, oneshot::Sender<()>)>,
}

impl Sending {
    /// Enters a connection; its number and what tells it to close.
    fn enter(this: &Mutex<Sending>) -> (u64, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let mut s = this.lock().unwrap_or_else(|p| p.into_inner());
        let id = s.next;
        s.next += 1;
        s.queue.push_back((id, tx));
        (id, rx)
    }

    /// Takes connection `id` out (it answers now, or it closed).
    fn leave(this: &Mutex<Sending>, id: u64) {
        let mut s = this.lock().unwrap_or_else(|p| p.into_inner());
        s.queue.retain(|(i, _)| *i != id);
    }

    /// Tells the oldest connection still sending its request to close; false if there is none.
    fn evict_oldest(this: &Mutex<Sending>) -> bool {
        let oldest = this
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .queue
            .pop_front();
        oldest.is_some_and(|(_, tx)| {
            let _ = tx.send(());
            true
        })
    }
}

impl Bounded {
    fn new(listener: TcpListener) -> Bounded {
        Bounded {
            listener,
            slots: Arc::new(Semaphore::new(MAX_SCRAPES)),
            sending: Arc::default(),
        }
    }

    /// A slot for a connection just accepted: a free one, or the oldest sender's (waiting
    /// for it to close); with every slot answering, the first to end (within [`DEADLINE`]).
    async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() {
            return Some(slot);
        }
        Sending::evict_oldest(&self.sending);
        Arc::clone(&self.slots).acquire_owned().await.ok()
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Scrape;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Scrape, SocketAddr) {
        loop {
            let (conn, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(_) => {
                    tokio::time::sleep(TICK).await;
                    continue;
                }
            };
            let Some(slot) = self.slot().await else {
                continue;
            };
            let (id, evicted) = Sending::enter(&self.sending);
            let scrape = Scrape {
                conn,
                deadline: Box::pin(tokio::time::sleep(DEADLINE)),
                evicted: Some(evicted),
                id,
                read: 0,
                sending: Arc::clone(&self.sending),
                _slot: slot,
            };
            return (scrape, peer);
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// One connection with its deadline and its slot: every read and write fails once the
/// deadline has passed or the connection was told to make room, which ends its serving.
struct Scrape {
    conn: TcpStream,
    deadline: Pin<Box<Sleep>>,
    /// Fires when a newer connection takes this slot; `None` once the answer has begun.
    evicted: Option<oneshot::Receiver<()>>,
    id: u64,
    /// Bytes read so far.
    read: usize,
    sending: Arc<Mutex<Sending>>,
    _slot: OwnedSemaphorePermit,
}

impl Scrape {
    /// Why this connection must end now, if it must (registering to be woken when it must).
    fn cut(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Some(io::Error::new(io::ErrorKind::TimedOut, "past its deadline"));
        }
        let evicted = self
            .evicted
            .as_mut()
            .is_some_and(|rx| Pin::new(rx).poll(cx).is_ready());
        evicted.then(|| io::Error::other("closed to make room for a newer connection"))
    }
}

impl Drop for Scrape {
    fn drop(&mut self) {
        if self.evicted.is_some() {
            Sending::leave(&self.sending, self.id);
        }
    }
}

impl AsyncRead for Scrape {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.cut(cx) {
            return Poll::Ready(Err(e));
        }
        let room = (MAX_REQUEST - this.read).min(buf.remaining());
        if room == 0 && buf.remaining() > 0 {
            let e = io::Error::new(io::ErrorKind::InvalidData, "request too long");
            return Poll::Ready(Err(e));
        }
        let mut chunk = [0u8; 2048];
        let mut part = ReadBuf::new(&mut chunk[..room.min(2048)]);
        let polled = Pin::new(&mut this.conn).poll_read(cx, &mut part);
        if let Poll::Ready(Ok(())) = polled {
            this.read += part.filled().len();
            buf.put_slice(part.filled());
        }
        polled
    }
}

impl AsyncWrite for Scrape {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(e) = this.cut(cx) {
            return Poll::Ready(Err(e));
        }
        // The answer has begun: no newer connection takes this slot now.
        if this.evicted.take().is_some() {
            Sending::leave(&this.sending, this.id);
        }
        Pin::new(&mut this.conn).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.cut(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.conn).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().conn).poll_shutdown(cx)
    }
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
