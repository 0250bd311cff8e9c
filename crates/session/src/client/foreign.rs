//! Foreign probes (responsiveness, issue 20): a fresh connection to the server, timed in two
//! parts as the IETF draft's TCP-only foreign probe is: the connect (`tcp_f`, TCP's handshake),
//! then one request answered on the new connection (`http_f`: the `probe` message and the
//! server's `probed`). The greeting between them (the server's hello and key challenge) is
//! not timed, as the draft leaves TLS out of a TCP-only run. Both times are on this (the
//! client's) clock.

use std::time::{Duration, Instant};

use engine::sockopt::SocketOptions;
use wire::{ClientMsg, ServerMsg};

use super::{handshake, protocol, unexpected, ClientConfig, ClientError};
use crate::control::{recv, send};

/// One foreign probe's two times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignProbe {
    /// The connect: from `connect(2)` to the connection being up (`tcp_f`).
    pub connect: Duration,
    /// The request: from sending `probe` to the whole `probed` read (`http_f`).
    pub request: Duration,
}

/// Runs one foreign probe against `config`'s server (its key proved where the server asks for
/// one), waiting at most `timeout` for the answer.
pub fn foreign_probe(
    config: &ClientConfig,
    timeout: Duration,
) -> Result<ForeignProbe, ClientError> {
    let started = Instant::now();
    let mut conn = handshake::open(config, &SocketOptions::default())?;
    let connect = started.elapsed();
    let proving = handshake::greet(config, &mut conn, &mut |_| {})?;
    let asked = Instant::now();
    send(
        &mut conn,
        &ClientMsg::Probe {
            auth: proving.proof().cloned(),
        },
    )
    .map_err(protocol("sending a probe"))?;
    let reply: ServerMsg =
        recv(&mut conn, timeout).map_err(protocol("reading a probe's answer"))?;
    let request = asked.elapsed();
    match reply {
        ServerMsg::Probed { auth } => proving.check_answer(auth.as_ref())?,
        ServerMsg::Error { message } => return Err(ClientError::Refused(message)),
        other => return Err(unexpected(&other)),
    }
    Ok(ForeignProbe { connect, request })
}
