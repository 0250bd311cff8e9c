//! The data plane: one [`StreamEngine`] per test kind, each driving one data connection per
//! thread on blocking sockets.
//!
//! Invariants: the data loops allocate once, never log or format, and publish progress only
//! through [`StreamCounters`] (relaxed stores, once per syscall or batch). A worker stops sending when its
//! `stop` [`Signal`] is raised and gives up on anything when its [`Abort`] is raised; both are
//! polled at least every [`POLL_INTERVAL`], which bounds how long any call can block, except
//! where an engine blocks without a timeout on a socket it registered with the [`Abort`], which
//! shuts that socket down when raised.

pub mod abort;
pub mod affinity;
mod answer_rate;
pub mod budget;
mod congestion;
pub mod conn;
pub mod counters;
pub mod error;
mod fd_table;
pub mod frame_rx;
pub mod mock;
pub mod pace;
pub mod round_trips;
pub mod self_probe;
pub mod sockopt;
mod splice_source;
pub mod stream_engine;
pub mod sys_io;
pub mod tcp_crr;
mod tcp_receive;
pub mod tcp_rr;
pub mod tcp_stream;
#[cfg(test)]
mod testing;
pub mod udp_frames;
pub mod udp_rr;
pub mod udp_socket;
pub mod udp_stream;
pub mod watchdog;
pub mod workers;

pub use abort::Abort;
pub use conn::{Conn, CrrListener, CrrTarget, Endpoint, Listener, UdpMulti};
pub use counters::{StreamCounters, ThreadCpu, ThreadCpuGuard};
pub use error::EngineError;
pub use measure::signal::Signal;
pub use stream_engine::{engine_for, Role, StreamControl, StreamEngine, StreamReport};
pub use watchdog::Watchdog;
pub use workers::{WorkerError, WorkerOutcome, Workers};

/// The payload every engine sends: non-zero and non-constant, so nothing along the path can
/// compress it away.
pub(crate) fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 13) as u8).collect()
}

/// Longest a data-path call blocks before the worker looks at its signals again.
pub const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether a stream socket call that failed with `kind` should simply be tried again: its
/// [`POLL_INTERVAL`] timeout ran out (`WouldBlock`/`TimedOut`) or a signal interrupted it.
pub(crate) fn is_retry(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind;
    matches!(
        kind,
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}
