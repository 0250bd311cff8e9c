//! The client side of a test session: connects, opens the data connections, runs the workers,
//! polls the server each interval and collects both ends' figures. All timing is on this
//! (the client's) monotonic clock.
//!
//! Measurement only: the caller receives interval samples through an [`Observer`] and the final
//! [`RunRecord`]; nothing here prints.

mod foreign;
mod frames_path;
mod handshake;
pub mod measure;
mod open;
mod relay;
pub mod remote;

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wire::escape::escape_controls;

pub use foreign::{foreign_probe, ForeignProbe};

use ::measure::host::HostFacts;
use ::measure::qdisc::{self, QdiscWatch};
use engine::sockopt::{ConnectError, SocketOptions};
use engine::Signal;
use record::{Hosts, RunRecord};
use wire::msg::ServerInfo;
use wire::{ClientMsg, ServerMsg, TestSpec, WireError};

use crate::auth::ClientKey;
use crate::control::{recv, send, HANDSHAKE_TIMEOUT};
use crate::relay::RelayTo;
use crate::target::Target;
use handshake::connect;
pub use handshake::AuthProblem;

/// What the client runs and where.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Where the server is.
    pub target: Target,
    /// How the target was given, for the record (e.g. `in-process 127.0.0.1:…`).
    pub target_label: String,
    /// The test.
    pub spec: TestSpec,
    /// Raised on Ctrl-C: the run stops early and returns what it measured.
    pub interrupt: Signal,
    /// Longest wait for a connection to open.
    pub connect_timeout: Duration,
    /// Longest wait for streams to drain after the test time.
    pub drain_timeout: Duration,
    /// The key to prove to a server that asks for one (`--auth-key`).
    pub key: Option<ClientKey>,
    /// `--from`: `target` is a relay (`serve --relay`), which runs the test towards this
    /// server as its client; `None`: this host is the client.
    pub relay: Option<RelayTo>,
    /// Where the interval ticks fall: every `spec.interval_ms` from this instant rather than
    /// from the test's own start (`None`), so that several sessions' intervals share one grid
    /// and each interval's bytes add up across them (`linerate rpm`'s load connections, each
    /// started a tick later than the one before). The first interval runs from the start to
    /// the first tick after it.
    pub interval_grid: Option<std::time::Instant>,
}

impl ClientConfig {
    /// A test of `spec` against `target` with the command line's timeouts: 5 s to open a
    /// connection, 10 s for streams to drain after the test time.
    pub fn new(target: Target, target_label: String, spec: TestSpec, interrupt: Signal) -> Self {
        Self {
            target,
            target_label,
            spec,
            interrupt,
            connect_timeout: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(10),
            key: None,
            relay: None,
            interval_grid: None,
        }
    }
}

/// What a test reports as it runs (`started`, then an `interval` per interval) goes to an
/// [`events::Observer`]; `Progress` is its old name here, kept for callers not yet renamed.
pub use events::{Observer, Observer as Progress, Silent};

/// Why a test could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection could not be opened.
    #[error("cannot connect to {target}: {reason}{hint}")]
    Connect {
        /// Where.
        target: String,
        /// Why.
        reason: ConnectError,
        /// What to try.
        hint: &'static str,
    },
    /// The peer is not a (compatible) linerate server.
    #[error("{target}: {reason}{}", silent_hint(.reason))]
    Handshake {
        /// Where.
        target: String,
        /// Why.
        reason: WireError,
    },
    /// The server refused the test. (The text is the server's: it prints escaped, as do
    /// the next two, so a server cannot write raw lines or escape codes to the user's terminal.)
    #[error("server refused the test: {}", escape_controls(.0))]
    Refused(String),
    /// The control conversation failed.
    #[error("{}", escape_controls(.0))]
    Protocol(String),
    /// A relay (`--from`) refused the test, or its test towards the far server failed; the
    /// message names the relay.
    #[error("{}", escape_controls(.0))]
    Relay(String),
    /// The test cannot run as given (found by the client before any data).
    #[error("{0}")]
    Input(String),
    /// Authentication failed on the client's side.
    #[error(transparent)]
    Auth(#[from] AuthProblem),
    /// The user interrupted before the test began.
    #[error("interrupted before the test began")]
    Interrupted,
}

/// What a server that says nothing after the connection opens may be: a linerate server
/// greets at once, and a stock iperf3 server waits for a cookie it is never sent.
fn silent_hint(reason: &WireError) -> &'static str {
    match reason {
        WireError::Silent(_) => {
            ": a linerate server greets at once; an iperf3 server (`iperf3 -s`) waits like this \
             (add --iperf3 to talk to one)"
        }
        _ => "",
    }
}

/// The note for a server silent `after` the connection opened, said while the client waits
/// on: what it may be, a second in, where the handshake's error would come only at its end.
pub(crate) fn silence_note(config: &ClientConfig, after: Duration) -> String {
    format!(
        "linerate: note: {} has sent nothing {} s after the connection opened: a linerate server \
         greets at once; if it is an iperf3 server (iperf3 -s), add --iperf3",
        config.target.describe(),
        after.as_secs_f64()
    )
}

fn protocol(context: &str) -> impl Fn(WireError) -> ClientError + '_ {
    move |e| ClientError::Protocol(format!("{context}: {e}"))
}

/// Runs one test to the end (or to an interrupt) and returns its record; with
/// [`ClientConfig::relay`], the relay runs it and this host only asks and collects.
pub fn run(config: &ClientConfig, progress: &mut dyn Observer) -> Result<RunRecord, ClientError> {
    if let Some(to) = &config.relay {
        return relay::run(config, to, progress);
    }
    let spec = &config.spec;
    let started_at_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut on_silence = |after| progress.note(&silence_note(config, after));
    let (mut ctrl, auth) = connect(config, &SocketOptions::default(), &mut on_silence)?;
    if let Target::Tcp { addr, .. } = &config.target {
        frames_path::check(spec, addr.ip())?;
    }
    let start = ClientMsg::Start {
        spec: spec.clone(),
        auth: auth.proof().cloned(),
    };
    send(&mut ctrl, &start).map_err(protocol("sending the test"))?;
    let (server, offered) = match recv::<ServerMsg>(&mut ctrl, HANDSHAKE_TIMEOUT)
        .map_err(protocol("waiting for the server to accept"))?
    {
        ServerMsg::Accepted {
            session,
            server,
            udp_ports,
            udp_extra_ports,
            crr_port,
            auth: answer,
        } => {
            auth.check_answer(answer.as_ref())?;
            (
                server,
                open::Offered {
                    session,
                    udp_ports,
                    udp_extra_ports,
                    crr_port,
                },
            )
        }
        ServerMsg::Error { message } => return Err(ClientError::Refused(message)),
        other => return Err(unexpected(&other)),
    };
    if config.interrupt.is_raised() {
        return Err(ClientError::Interrupted);
    }
    // Before the test, not in its window: the interface, its driver's facts, the CPU model.
    let client_host = HostFacts::collect(ctrl.local_addr().map(|a| a.ip()));
    let endpoints = open::endpoints(config, &mut ctrl, &offered)?;
    progress.started(&server, spec);
    let mut remote = remote::LinerateServer {
        ctrl: &mut ctrl,
        drain_timeout: config.drain_timeout,
    };
    let qdiscs = QdiscWatch::start(client_host.interface.clone());
    let measured = measure::measure_streams(config, &mut remote, endpoints, progress)?;
    let hosts = hosts_with_qdiscs(client_host, &qdiscs, &server, &measured);
    let summary = analysis::summarize(
        &measured.raw,
        &measured.intervals,
        &hosts,
        analysis::Client::Linerate,
    );
    let target = config.target_label.clone();
    let mut record = RunRecord::new(
        spec.clone(),
        target,
        started_at_unix_ms,
        server,
        Some(hosts),
        summary,
    );
    record.user = config.key.as_ref().map(|k| k.name.to_string());
    record.intervals = measured.intervals;
    Ok(record)
}

/// Both hosts' facts with their qdiscs over the test: the client's read now, the server's
/// from its results (cut to the bounds: a peer's list is not trusted to keep them).
fn hosts_with_qdiscs(
    client: HostFacts,
    qdiscs: &QdiscWatch,
    server: &ServerInfo,
    measured: &measure::Measured,
) -> Hosts {
    Hosts {
        client: HostFacts {
            qdiscs: qdiscs.finish(),
            ..client
        },
        server: server.host.clone().map(|h| HostFacts {
            qdiscs: measured.raw.server.qdiscs.clone().map(qdisc::bounded),
            ..*h
        }),
    }
}

/// A reply that is not the next step of the protocol.
fn unexpected(reply: &ServerMsg) -> ClientError {
    ClientError::Protocol(format!("unexpected reply {reply:?}"))
}
