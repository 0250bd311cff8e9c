//! Errors from the data plane and socket setup.

use thiserror::Error;

/// What can go wrong while setting up or running a data connection.
#[derive(Debug, Error)]
pub enum EngineError {
    /// A socket option could not be set; names the option and the value.
    #[error("{option} {value}: {source}")]
    SocketOption {
        /// The option, as the user spelled it (e.g. `--congestion`).
        option: &'static str,
        /// The value asked for.
        value: String,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// The congestion control algorithm is not available on this host.
    #[error("--congestion {}: not available on this host; available: {available}", wire::escape::escape_controls(.name))]
    UnknownCongestion {
        /// The name asked for.
        name: String,
        /// What the kernel offers.
        available: String,
    },
    /// An option that does not apply to the chosen transport.
    #[error("{0} applies to TCP only, not to Unix-domain sockets")]
    NotForUnix(&'static str),
    /// The data connection failed mid-test.
    #[error("data connection: {0}")]
    Io(#[from] std::io::Error),
    /// The worker was told to give up.
    #[error("aborted")]
    Aborted,
}
