//! The listening socket both of this crate's HTTP servers accept through (the UI's and
//! `serve --metrics`'s): [`Bounded`] hands axum a connection only with one of its
//! [`Policy::slots`], and every connection carries its deadline. One mechanism for both; each
//! server gives its [`Policy`].
//!
//! A connection is either *waiting* for a request (from its accept, and again from the end of
//! each answer: an idle keep-alive connection waits too) or *answering* one (from the moment
//! the handlers have the whole request and made its answer, to the answer's end). [`track`],
//! the router's outermost layer, marks the two through the connection's [`Handle`] (axum's
//! connect info), so a request's head and body are both inside the wait.
//!
//! Invariants: at most `slots` connections are open at once, so a flood cannot exhaust
//! descriptors; a connection past those takes the slot of the oldest one still waiting (a
//! real client's request arrives at once; a trickler's never does), so a flood does not keep a
//! real client waiting. A waiting connection is closed [`Policy::deadline`] after it began
//! waiting, counted from that instant and not per read, however it trickles bytes; with
//! [`Policy::whole_life`] the deadline is counted from the accept and holds through the answer
//! too. An answer (a test's event stream: as long as the test) is not cut by the deadline.
//! Every read and write fails once the connection must end, which ends its serving.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::IncomingStream;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// How one server bounds its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Most connections open at once.
    pub slots: usize,
    /// How long a connection may wait for (and take to send) its request: from its accept,
    /// and from the end of each answer; with `whole_life`, its whole life from its accept.
    pub deadline: Duration,
    /// Whether the deadline holds through the answer too (a server whose answers are short).
    pub whole_life: bool,
    /// Most bytes read from one connection over its life (`None`: HTTP's own limits only); a
    /// longer request is closed unanswered.
    pub max_read: Option<usize>,
}

/// How often a failed accept (out of descriptors, say) is retried.
const RETRY: Duration = Duration::from_millis(100);

/// Connections the kernel holds for us before they are accepted.
const BACKLOG: libc::c_int = 1024;

/// Deepens `listener`'s accept queue to 1,024 connections: a burst of connections waits there for
/// the slots' rule (the oldest waiting connection gives way) rather than overflowing into the
/// kernel's retransmissions, which would hold a client seconds past any deadline of ours.
pub fn deepen_backlog(listener: &std::net::TcpListener) -> io::Result<()> {
    // SAFETY: listen on a listening socket of ours only changes its backlog.
    if unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(listener), BACKLOG) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The listening socket with its slots: [`Listener::accept`](axum::serve::Listener::accept)
/// hands on a connection only with a slot, a free one or the one it takes from the oldest
/// connection still waiting for its request.
pub struct Bounded {
    listener: TcpListener,
    policy: Policy,
    slots: Arc<Semaphore>,
    waiting: Arc<Mutex<Waiting>>,
}

/// The connections waiting for a request, oldest first.
#[derive(Default)]
struct Waiting {
    next: u64,
    queue: VecDeque<(u64, Weak<Shared>)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Bounded {
    /// `listener` under `policy`.
    pub fn new(listener: TcpListener, policy: Policy) -> Bounded {
        Bounded {
            listener,
            policy,
            slots: Arc::new(Semaphore::new(policy.slots)),
            waiting: Arc::default(),
        }
    }

    /// A slot for a connection just accepted: a free one, or the oldest waiting connection's
    /// (waiting for it to close); with every slot answering, the first to end.
    async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() {
            return Some(slot);
        }
        let oldest = lock(&self.waiting).queue.pop_front();
        if let Some(shared) = oldest.and_then(|(_, weak)| weak.upgrade()) {
            let mut state = lock(&shared.state);
            state.evicted = true;
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
        }
        Arc::clone(&self.slots).acquire_owned().await.ok()
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        loop {
            let (conn, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(_) => {
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            let Some(slot) = self.slot().await else {
                continue;
            };
            let id = {
                let mut w = lock(&self.waiting);
                w.next += 1;
                w.next
            };
            let handle = Handle(Arc::new(Shared {
                id,
                waiting: Arc::clone(&self.waiting),
                state: Mutex::new(State::default()),
            }));
            handle.wait();
            let conn = Conn {
                conn,
                policy: self.policy,
                deadline: Box::pin(tokio::time::sleep(self.policy.deadline)),
                armed: None,
                read: 0,
                handle,
                _slot: slot,
            };
            return (conn, peer);
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// One connection's phase, shared by its reads and writes and its requests ([`track`]).
#[derive(Clone)]
pub struct Handle(Arc<Shared>);

struct Shared {
    id: u64,
    waiting: Arc<Mutex<Waiting>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    answering: bool,
    /// When it began waiting.
    since: Option<Instant>,
    /// Counts the phases, so a connection's reads see a new one.
    phase: u64,
    /// A newer connection took its slot.
    evicted: bool,
    /// Its task, woken when it is evicted.
    waker: Option<Waker>,
}

impl Handle {
    /// It waits for a request from now: its deadline restarts, and it may give way.
    fn wait(&self) {
        {
            let mut state = lock(&self.0.state);
            state.answering = false;
            state.since = Some(Instant::now());
            state.phase += 1;
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
        }
        let weak = Arc::downgrade(&self.0);
        lock(&self.0.waiting).queue.push_back((self.0.id, weak));
    }

    /// The phase it is in now.
    fn phase(&self) -> u64 {
        lock(&self.0.state).phase
    }

    /// It answers a request now, if it is still in `phase` (the wait that request came in):
    /// no deadline but `whole_life`'s, and no one takes its slot.
    fn answer(&self, phase: u64) {
        {
            let mut state = lock(&self.0.state);
            if state.phase != phase {
                return;
            }
            state.answering = true;
            state.phase += 1;
        }
        self.leave();
    }

    fn leave(&self) {
        lock(&self.0.waiting)
            .queue
            .retain(|(id, _)| *id != self.0.id);
    }
}

impl Connected<IncomingStream<'_, Bounded>> for Handle {
    fn connect_info(stream: IncomingStream<'_, Bounded>) -> Handle {
        stream.io().handle.clone()
    }
}

/// The routers' outermost layer: a connection answers from the moment its request is in
/// (its body read or dropped by the handlers; else the answer made), to the answer's end (its
/// body's last frame handed on, or the body dropped); then it waits again. So a request's head
/// and body are inside the wait's deadline, and a handler's own time (a report's child) and its
/// answer are not. A request that came some other way than through [`Bounded`] passes
/// untouched.
pub async fn track(request: Request, next: Next) -> Response {
    let Some(handle) = request
        .extensions()
        .get::<ConnectInfo<Handle>>()
        .map(|c| c.0.clone())
    else {
        return next.run(request).await;
    };
    let phase = handle.phase();
    let received = OnDrop(handle.clone(), Some(phase));
    let request = request.map(|body| {
        Body::new(Holding {
            body,
            _held: received,
        })
    });
    let response = next.run(request).await;
    handle.answer(phase);
    let ended = OnDrop(handle, None);
    response.map(|body| Body::new(Holding { body, _held: ended }))
}

/// A body, unchanged (its frames, its size), holding an [`OnDrop`] as long as it lives.
struct Holding {
    body: Body,
    _held: OnDrop,
}

impl HttpBody for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Dropped with a request's body: the connection answers (`Some`: the phase the request came
/// in); with an answer's body (`None`): the connection waits again.
struct OnDrop(Handle, Option<u64>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        match self.1 {
            Some(phase) => self.0.answer(phase),
            None => self.0.wait(),
        }
    }
}

/// One connection with its deadline and its slot.
pub struct Conn {
    conn: TcpStream,
    policy: Policy,
    deadline: Pin<Box<Sleep>>,
    /// The phase the deadline was last set for.
    armed: Option<u64>,
    /// Bytes read so far.
    read: usize,
    handle: Handle,
    _slot: OwnedSemaphorePermit,
}

impl Conn {
    /// Why this connection must end now, if it must (registering to be woken when it must).
    fn cut(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let (timed, phase) = {
            let mut state = lock(&self.handle.0.state);
            if state.evicted {
                return Some(io::Error::other(
                    "closed to make room for a newer connection",
                ));
            }
            if !state
                .waker
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                state.waker = Some(cx.waker().clone());
            }
            let timed = self.policy.whole_life || !state.answering;
            (timed.then_some(state.since).flatten(), state.phase)
        };
        if !self.policy.whole_life && self.armed != Some(phase) {
            self.armed = Some(phase);
            if let Some(since) = timed {
                self.deadline.as_mut().reset(since + self.policy.deadline);
            }
        }
        let past = timed.is_some() && self.deadline.as_mut().poll(cx).is_ready();
        past.then(|| io::Error::new(io::ErrorKind::TimedOut, "past its deadline"))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.handle.leave();
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.cut(cx) {
            return Poll::Ready(Err(e));
        }
        let Some(max) = this.policy.max_read else {
            return Pin::new(&mut this.conn).poll_read(cx, buf);
        };
        let room = (max - this.read).min(buf.remaining());
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

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(e) = this.cut(cx) {
            return Poll::Ready(Err(e));
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

    /// A short deadline, so the tests wait little; the handler's sleep is three of them.
    const POLICY: Policy = Policy {
        slots: 4,
        deadline: Duration::from_millis(300),
        whole_life: false,
        max_read: None,
    };

    /// A server under [`POLICY`] for at most 10 s: `GET /slow` answers after three deadlines,
    /// `POST /echo` answers its body.
    fn server() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("{e}"));
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap_or_else(|e| panic!("{e}"));
                let slow = || async {
                    tokio::time::sleep(3 * POLICY.deadline).await;
                    "done"
                };
                let app = axum::Router::new()
                    .route("/slow", axum::routing::get(slow))
                    .route("/echo", axum::routing::post(|body: String| async { body }))
                    .layer(axum::middleware::from_fn(track))
                    .into_make_service_with_connect_info::<Handle>();
                let serving = std::future::IntoFuture::into_future(axum::serve(
                    Bounded::new(listener, POLICY),
                    app,
                ));
                let _ = tokio::time::timeout(Duration::from_secs(10), serving).await;
            });
        });
        addr
    }

    fn connect(addr: SocketAddr) -> std::net::TcpStream {
        let conn = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        conn.set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap_or_else(|e| panic!("{e}"));
        conn
    }

    #[test]
    fn a_handlers_own_time_is_not_cut_but_a_body_that_trickles_past_the_deadline_is() {
        let addr = server();
        let mut conn = connect(addr);
        let _ = conn.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut text = String::new();
        let _ = conn.read_to_string(&mut text);
        assert!(
            text.starts_with("HTTP/1.1 200") && text.ends_with("done"),
            "{text:?}"
        );

        // The head at once, the body's first byte, then nothing: closed unanswered.
        let mut conn = connect(addr);
        let began = std::time::Instant::now();
        let head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\na";
        let _ = conn.write_all(head.as_bytes());
        let mut text = String::new();
        let _ = conn.read_to_string(&mut text);
        let took = began.elapsed();
        assert!(!text.contains(" 200 "), "{text:?}");
        assert!(
            took >= POLICY.deadline - Duration::from_millis(50) && took < Duration::from_secs(3),
            "closed after {took:?}"
        );

        // A body that comes in time is answered.
        let mut conn = connect(addr);
        let post =
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd";
        let _ = conn.write_all(post.as_bytes());
        let mut text = String::new();
        let _ = conn.read_to_string(&mut text);
        assert!(
            text.starts_with("HTTP/1.1 200") && text.ends_with("abcd"),
            "{text:?}"
        );
    }
}
