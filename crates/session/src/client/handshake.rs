//! A connection's opening: connect, read the server's greeting, and, where the server asks for
//! a key, prove ours (to the address this connection reached, which the proof names) and
//! check that the server proves it too (docs/PROTOCOL.md section 12).
//!
//! Invariants: a client with a key never talks to a server that cannot prove it holds that key
//! (one that asks for none included); a client without one stops at a server that asks, with a
//! line saying how to pass one.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use engine::sockopt::{connect_tcp, ConnectError, SocketOptions};
use engine::Conn;
use wire::auth::{server_identity, ClientProof, Mac, Nonce};

use super::{ClientConfig, ClientError};
use crate::auth::{client_proof, server_proof_holds, ClientKey};
use crate::control::{exchange_hello, HANDSHAKE_TIMEOUT};
use crate::target::Target;

/// Why the client stopped authentication.
#[derive(Debug, thiserror::Error)]
pub enum AuthProblem {
    /// The server asks for a key and none was given.
    #[error("{target} asks for a key: pass --auth-key FILE (or set LINERATE_AUTH_KEY=FILE)")]
    KeyRequired {
        /// The server.
        target: String,
    },
    /// A key was given but the server asks for none.
    #[error("{target} does not ask for a key, so it cannot prove it holds yours; without --auth-key (and LINERATE_AUTH_KEY) the test runs unauthenticated")]
    ServerHasNoKeys {
        /// The server.
        target: String,
    },
    /// The server's answer does not prove the key.
    #[error("{target} did not prove it holds key {user}: it is not the server that key is for, or its keys file has another secret for {user}")]
    ServerUnproven {
        /// The server.
        target: String,
        /// The key's name.
        user: String,
    },
}

/// Where a connection's authentication stands after the greeting.
pub(super) enum Proving {
    /// Neither side uses keys.
    NoKey,
    /// Our proof, sent in the first message, and what the server's answer must match.
    Key {
        key: ClientKey,
        challenge: Nonce,
        /// Boxed: a proof is large beside `NoKey`.
        proof: Box<ClientProof>,
        target: String,
    },
}

impl Proving {
    /// The proof for the first message.
    pub(super) fn proof(&self) -> Option<&ClientProof> {
        match self {
            Self::NoKey => None,
            Self::Key { proof, .. } => Some(proof.as_ref()),
        }
    }

    /// Checks the server's answer (in `Accepted` or `Attached`).
    pub(super) fn check_answer(&self, answer: Option<&Mac>) -> Result<(), ClientError> {
        let Self::Key {
            key,
            challenge,
            proof,
            target,
        } = self
        else {
            return Ok(());
        };
        if answer.is_some_and(|a| server_proof_holds(key, challenge, proof, a)) {
            Ok(())
        } else {
            Err(AuthProblem::ServerUnproven {
                target: target.clone(),
                user: key.name.to_string(),
            }
            .into())
        }
    }
}

/// Opens a connection to the server, reads its greeting and, for a server that asks for a key,
/// prepares this connection's proof.
pub(super) fn connect(
    config: &ClientConfig,
    opts: &SocketOptions,
    on_silence: &mut dyn FnMut(Duration),
) -> Result<(Conn, Proving), ClientError> {
    let mut conn = open(config, opts)?;
    let proving = greet(config, &mut conn, on_silence)?;
    Ok((conn, proving))
}

/// Opens a connection to the server (TCP's handshake, or a Unix socket's connect).
pub(super) fn open(config: &ClientConfig, opts: &SocketOptions) -> Result<Conn, ClientError> {
    let target = config.target.describe();
    let conn = match &config.target {
        Target::Tcp { addr, bind } => connect_tcp(*addr, *bind, opts, config.connect_timeout)
            .map_err(|reason| {
                let hint = match &reason {
                    ConnectError::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        "; is `linerate serve` running there, on that port?"
                    }
                    ConnectError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        "; check the address and any firewall on the way"
                    }
                    _ => "",
                };
                ClientError::Connect {
                    target: target.clone(),
                    reason,
                    hint,
                }
            })?,
        Target::Unix { path } => {
            Conn::Unix(UnixStream::connect(path).map_err(|e| ClientError::Connect {
                target: target.clone(),
                reason: ConnectError::Io(e),
                hint: "; is `linerate serve --unix` listening on that path?",
            })?)
        }
    };
    Ok(conn)
}

/// Reads the server's greeting on a fresh connection (telling `on_silence` of a server that
/// stays silent a while) and, for a server that asks for a key, prepares this connection's
/// proof.
pub(super) fn greet(
    config: &ClientConfig,
    conn: &mut Conn,
    on_silence: &mut dyn FnMut(Duration),
) -> Result<Proving, ClientError> {
    let target = config.target.describe();
    let (hello, challenge) =
        exchange_hello(conn, HANDSHAKE_TIMEOUT, on_silence).map_err(|reason| {
            ClientError::Handshake {
                target: target.clone(),
                reason,
            }
        })?;
    let proving = match (&config.key, hello.requires_key) {
        (None, false) => Proving::NoKey,
        (None, true) => return Err(AuthProblem::KeyRequired { target }.into()),
        (Some(_), false) => return Err(AuthProblem::ServerHasNoKeys { target }.into()),
        (Some(key), true) => Proving::Key {
            key: key.clone(),
            challenge,
            proof: Box::new(
                client_proof(key, &challenge, &server_identity(conn.peer_addr()))
                    .map_err(|e| ClientError::Protocol(format!("no random numbers: {e}")))?,
            ),
            target,
        },
    };
    Ok(proving)
}
