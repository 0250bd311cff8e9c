//! The registry of sessions: each session's cookie and key, so data connections find it (and
//! only connections proving the same key do), and the counts of running tests by server, key
//! and source address that the session limits check.
//!
//! It also holds what running tests drew from the server's budget of sockets and buffer
//! memory (`budget.rs`).
//!
//! Invariants: a session's entry, counts and share of the budget are removed however it ends
//! ([`SessionGuard`]'s drop); cookies are 64 random bits from the operating system; handing a data connection to
//! its session never blocks the gate.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Mutex;

use engine::Conn;
use wire::auth::{Mac, UserName};

use super::admit::Admission;
use super::budget::Needs;
use super::{tell, SessionError, Shared};

/// A data connection on its way from the gate to its session.
pub(super) struct Attaching {
    pub stream: u16,
    pub conn: Conn,
    /// The server's proof, for the `Attached` answer.
    pub answer: Option<Mac>,
}

/// A session waiting for its data connections.
struct Waiting {
    /// Only connections proving the same key attach.
    user: Option<UserName>,
    tx: SyncSender<Attaching>,
}

/// Whose running tests a limit counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Owner {
    User(UserName),
    Address(IpAddr),
}

/// Sessions waiting for data connections, by cookie, and the running tests' counts.
#[derive(Default)]
pub(super) struct Sessions {
    waiting: Mutex<HashMap<u64, Waiting>>,
    running: AtomicUsize,
    by_owner: Mutex<HashMap<Owner, usize>>,
    /// What running tests drew from the server's budget.
    drawn: Mutex<Needs>,
}

impl Sessions {
    /// Whether no test is running (each of them ended, however).
    pub(super) fn idle(&self) -> bool {
        self.running.load(Ordering::SeqCst) == 0
    }
}

/// Who a new session belongs to, and the key's own session limit.
pub(super) struct Claim {
    pub user: Option<UserName>,
    pub key_max_sessions: Option<usize>,
    pub address: Option<IpAddr>,
}

pub(super) fn attach(
    mut conn: Conn,
    session: u64,
    stream: u16,
    admission: Admission,
    shared: &Shared,
    log: &mut dyn FnMut(String),
) {
    let mut refuse = |conn: &mut Conn, message: String| {
        log(message.clone());
        tell(conn, message);
    };
    let waiting = shared.sessions.waiting.lock().ok().and_then(|m| {
        m.get(&session)
            .map(|w| (w.user == admission.user, w.tx.clone()))
    });
    let tx = match waiting {
        Some((true, tx)) => tx,
        Some((false, _)) => {
            return refuse(
                &mut conn,
                format!("session {session:x} belongs to another key"),
            )
        }
        None => return refuse(&mut conn, format!("unknown session {session:x}")),
    };
    let attaching = Attaching {
        stream,
        conn,
        answer: admission.answer,
    };
    // Never waits: the gate's thread must not block on one session.
    match tx.try_send(attaching) {
        Ok(()) => {}
        Err(TrySendError::Full(mut a)) => refuse(
            &mut a.conn,
            format!("session {session:x} has more data connections than it asked for"),
        ),
        Err(TrySendError::Disconnected(_)) => log(format!(
            "session {session:x} ended before stream {stream} attached"
        )),
    }
}

/// A session's entry in the registry and the running count, removed however the session ends.
pub(super) struct SessionGuard<'a> {
    shared: &'a Shared,
    pub cookie: u64,
    /// The counts this session holds.
    owners: Vec<Owner>,
    /// Whether the test was accepted (only those count for `--one-off`).
    ran: bool,
    /// What it drew from the server's budget.
    needs: Needs,
}

impl<'a> SessionGuard<'a> {
    /// Counts the session as running and registers a fresh cookie for its data connections;
    /// refuses it if that makes more than `max_sessions`, more than its key's `max-sessions`
    /// or more than `max_sessions_per_address` from its address.
    pub(super) fn register(
        shared: &'a Shared,
        claim: Claim,
        attach: SyncSender<Attaching>,
    ) -> Result<Self, SessionError> {
        let running = shared.sessions.running.fetch_add(1, Ordering::SeqCst) + 1;
        let cookie = crate::auth::random_u64().map_err(|e| SessionError::Random(e.to_string()))?;
        if let Ok(mut m) = shared.sessions.waiting.lock() {
            m.insert(
                cookie,
                Waiting {
                    user: claim.user.clone(),
                    tx: attach,
                },
            );
        }
        let mut guard = SessionGuard {
            shared,
            cookie,
            owners: Vec::new(),
            ran: false,
            needs: Needs::default(),
        };
        let limit = shared.config.max_sessions;
        if running > limit {
            return Err(SessionError::Busy {
                running: running - 1,
                limit,
            });
        }
        if let (Some(user), Some(limit)) = (&claim.user, claim.key_max_sessions) {
            guard.hold(Owner::User(user.clone()), limit, |running| {
                SessionError::KeyBusy {
                    user: user.clone(),
                    running,
                    limit,
                }
            })?;
        }
        if let (Some(address), Some(limit)) =
            (claim.address, shared.config.max_sessions_per_address)
        {
            guard.hold(Owner::Address(address), limit, |running| {
                SessionError::AddressBusy {
                    address,
                    running,
                    limit,
                }
            })?;
        }
        guard.ran = true;
        Ok(guard)
    }

    /// Counts one more test of `owner`, or refuses if that makes more than `limit`.
    fn hold(
        &mut self,
        owner: Owner,
        limit: usize,
        refusal: impl FnOnce(usize) -> SessionError,
    ) -> Result<(), SessionError> {
        let mut counts = self
            .shared
            .sessions
            .by_owner
            .lock()
            .map_err(|_| SessionError::Closed)?;
        let count = counts.entry(owner.clone()).or_insert(0);
        if *count >= limit {
            return Err(refusal(*count));
        }
        *count += 1;
        self.owners.push(owner);
        Ok(())
    }

    /// Draws `needs` from the server's budget, or refuses the test (naming the limit it would
    /// pass) if that makes more than either total; nothing is drawn then.
    pub(super) fn hold_budget(mut self, needs: Needs) -> Result<Self, SessionError> {
        let budget = self.shared.config.budget;
        let mut drawn = self
            .shared
            .sessions
            .drawn
            .lock()
            .map_err(|_| SessionError::Closed)?;
        let over = |what, asked: u64, in_use: u64, limit: u64, flag| {
            (asked.saturating_add(in_use) > limit).then_some(SessionError::Budget {
                what,
                asked,
                in_use,
                limit,
                flag,
            })
        };
        let refusal = over(
            "sockets",
            needs.sockets as u64,
            drawn.sockets as u64,
            budget.max_sockets as u64,
            "serve --max-sockets",
        )
        .or_else(|| {
            over(
                "bytes of buffers",
                needs.buffer_bytes,
                drawn.buffer_bytes,
                budget.max_buffer_bytes,
                "serve --max-buffer-memory",
            )
        });
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        drawn.sockets += needs.sockets;
        drawn.buffer_bytes += needs.buffer_bytes;
        drop(drawn);
        self.needs = needs;
        Ok(self)
    }

    /// Takes no more data connections (every stream has arrived).
    pub(super) fn close_registration(&self) {
        if let Ok(mut m) = self.shared.sessions.waiting.lock() {
            m.remove(&self.cookie);
        }
    }
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        self.close_registration();
        self.shared.sessions.running.fetch_sub(1, Ordering::SeqCst);
        if let Ok(mut counts) = self.shared.sessions.by_owner.lock() {
            for owner in &self.owners {
                if let Some(count) = counts.get_mut(owner) {
                    *count -= 1;
                    if *count == 0 {
                        counts.remove(owner);
                    }
                }
            }
        }
        if let Ok(mut drawn) = self.shared.sessions.drawn.lock() {
            drawn.sockets -= self.needs.sockets;
            drawn.buffer_bytes -= self.needs.buffer_bytes;
        }
        if self.ran {
            self.shared.finished.raise();
        }
    }
}
