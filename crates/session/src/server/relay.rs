//! A relayed test at the relay (`serve --relay`): a controller asked this server to run a test
//! as a client towards another linerate server. The test runs here exactly as `linerate tcp
//! HOST` would run it from this host; its progress and record go back to the controller
//! (`crate::relay` has the exchange).
//!
//! Invariants: without `--relay` nothing is relayed; on a server with keys, only a key marked
//! `relay` may ask, and its limits (and the server's) bound the test like one it serves; the
//! destination is checked after resolution, on the address the test connects to, before
//! anything is sent to it: with `--relay-to`, one outside those prefixes is refused, and a
//! loopback, link-local, unspecified, multicast or broadcast address, or one of this host's
//! own, is refused unless a `--relay-to` prefix names it (`relay_to.rs`); a failure reaches
//! the controller in generic words only ("unreachable", "not a linerate server": never the
//! far end's bytes, never refused apart from timed out, and "unreachable" never sooner than
//! the connect timeout), while the relay's log says more; a relayed test holds a session slot
//! like any other; a controller that goes away or sends `stop` ends the test early, never
//! leaves it running; the intervals it holds and sends back are the client's, at most
//! `record::bounds::MAX_INTERVALS` however long the test runs (`analysis::BoundedIntervals`).

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use engine::sys_io::poll_readable;
use engine::{Conn, Signal};
use record::{IntervalSample, RunRecord};
use wire::msg::{Family, ServerInfo};
use wire::{ClientMsg, TestSpec, WireError};

use super::admit::Admission;
use super::allow::Prefix;
use super::registry::{Claim, SessionGuard};
use super::relay_to::{self, Denied};
use super::{check_limits, refuse, Shared};
use crate::auth::ClientKey;
use crate::client::{self, AuthProblem, ClientConfig, ClientError, Progress};
use crate::control::{recv, send};
use crate::relay::{RelayMsg, INTERVALS_PER_FRAME};
use crate::target::{resolve, Target};

use super::SessionError;

/// `serve --relay`: this server runs tests towards other servers when a controller asks.
#[derive(Debug, Clone, Default)]
pub struct RelayPolicy {
    /// Where relayed tests may go (`--relay-to`); empty: anywhere.
    pub to: Vec<Prefix>,
    /// The key this server proves to the far server (`--relay-key`), for one with keys.
    pub key: Option<ClientKey>,
}

/// What the controller asked for.
pub(super) struct RelayAsk {
    pub to: String,
    pub port: u16,
    pub family: Family,
    pub spec: TestSpec,
}

/// Runs one relayed test, from the controller's `relay` to the record sent back.
pub(super) fn run_relay(
    mut ctrl: Conn,
    ask: RelayAsk,
    admission: Admission,
    shared: &Shared,
    peer: &str,
) {
    let peer = match &admission.user {
        Some(user) => format!("{peer} ({user})"),
        None => peer.to_string(),
    };
    let peer = peer.as_str();
    let target = match permit(&ask, &admission, shared) {
        Ok(target) => target,
        Err(why) => return refuse(&mut ctrl, shared, peer, why),
    };
    let claim = Claim {
        user: admission.user.clone(),
        key_max_sessions: admission.limits.max_sessions,
        address: ctrl.peer_addr().map(|a| a.ip().to_canonical()),
    };
    let (unused, _) = std::sync::mpsc::sync_channel(0);
    // The relay is the client of its test: the same streams and buffers, from the same budget.
    let guard = match SessionGuard::register(shared, claim, unused)
        .and_then(|guard| guard.hold_budget(super::Needs::of(&ask.spec)))
    {
        Ok(guard) => guard,
        Err(why) => return refuse(&mut ctrl, shared, peer, why),
    };
    guard.close_registration();
    // A controller that stops reading fails each write to it after the handshake timeout
    // (its progress is then dropped), instead of holding this thread and the slot.
    let _ = ctrl.set_write_timeout(Some(shared.config.handshake_timeout));
    let _counted = super::Counted::start(shared, super::Started::Relay);
    let spec = &ask.spec;
    (shared.log)(format!(
        "{peer}: relaying {} {:?} x{} for {} ms towards {}",
        spec.kind().as_str(),
        spec.direction(),
        spec.streams,
        spec.duration_ms,
        target.describe()
    ));
    let relaying = RelayMsg::Relaying {
        relay: shared.info.clone(),
        auth: admission.answer,
    };
    if send(&mut ctrl, &relaying).is_err() {
        return (shared.log)(format!("{peer}: the controller went away before the test"));
    }
    let config = ClientConfig {
        key: shared.config.relay.as_ref().and_then(|r| r.key.clone()),
        ..ClientConfig::new(
            target.clone(),
            target.describe(),
            spec.clone(),
            Signal::new(),
        )
    };
    let began = Instant::now();
    let outcome = run_watched(&mut ctrl, &config, shared);
    let line = match outcome {
        Ok(record) => match send_record(&mut ctrl, record) {
            Ok(()) => "relayed test done".to_string(),
            Err(e) => format!("relayed test done; the controller went away before its record: {e}"),
        },
        Err(e) => {
            let message = for_controller(&e, &ask.to);
            if matches!(e, ClientError::Connect { .. }) {
                // A refused connection answers as late as one that timed out: the controller
                // cannot tell a closed port from a filtered one by the time either.
                let floor = began + config.connect_timeout;
                std::thread::sleep(floor.saturating_duration_since(Instant::now()));
            }
            let _ = send(&mut ctrl, &RelayMsg::Error { message });
            format!("the test towards {} failed: {e}", target.describe())
        }
    };
    (shared.log)(format!("{peer}: {line}"));
}

/// The relay's checks: `--relay`, the key's `relay` mark, the limits, and where the test goes.
fn permit(ask: &RelayAsk, admission: &Admission, shared: &Shared) -> Result<Target, SessionError> {
    let policy = shared.config.relay.as_ref().ok_or(SessionError::RelayOff)?;
    if let Some(user) = &admission.user {
        if !admission.limits.relay {
            return Err(SessionError::RelayKey { user: user.clone() });
        }
    }
    check_limits(&ask.spec, admission, shared)?;
    let addr = resolve(&ask.to, ask.port, ask.family).map_err(|e| SessionError::RelayTarget {
        to: ask.to.clone(),
        why: e.to_string(),
    })?;
    // This host's addresses as they are now: interfaces come and go while a server runs. A
    // host whose addresses cannot be listed relays nowhere rather than maybe to itself.
    let own = measure::host::host_addresses().map_err(|e| SessionError::RelayTarget {
        to: ask.to.clone(),
        why: format!("cannot list this relay's own addresses: {e}"),
    })?;
    match relay_to::check(&policy.to, &own, addr.ip()) {
        Ok(()) => Ok(Target::Tcp { addr, bind: None }),
        Err(Denied::OutsideRelayTo) => Err(SessionError::RelayDenied { addr: addr.ip() }),
        Err(Denied::Special(what)) => Err(SessionError::RelaySpecial {
            addr: addr.ip(),
            what,
        }),
    }
}

/// What the controller hears of a relayed test that failed: generic words for a far end that
/// could not be reached or is not a linerate server, so a relay is no port scanner and no
/// banner grabber; a linerate server's own refusals and errors as they are.
fn for_controller(e: &ClientError, to: &str) -> String {
    match e {
        ClientError::Connect { .. } => format!("{to} is unreachable from this relay"),
        ClientError::Handshake {
            reason: WireError::VersionMismatch { .. },
            ..
        } => format!("the test towards {to} failed: {e}"),
        ClientError::Handshake { .. } => format!("{to} is not a linerate server"),
        ClientError::Auth(AuthProblem::KeyRequired { .. }) => {
            format!("{to} asks for a key and this relay has none to prove (serve --relay-key)")
        }
        ClientError::Auth(AuthProblem::ServerHasNoKeys { .. }) => format!(
            "{to} does not ask for a key, so it cannot prove it holds this relay's --relay-key"
        ),
        _ => format!("the test towards {to} failed: {e}"),
    }
}

/// Runs the test while a second thread watches the controller's connection: `stop`, or the
/// connection closing, raises the test's interrupt.
fn run_watched(
    ctrl: &mut Conn,
    config: &ClientConfig,
    shared: &Shared,
) -> Result<RunRecord, client::ClientError> {
    let reader = ctrl.try_clone();
    let done = Signal::new();
    std::thread::scope(|scope| {
        if let Ok(reader) = reader {
            let (interrupt, done, shutdown) = (&config.interrupt, &done, &shared.shutdown);
            scope.spawn(move || watch(reader, interrupt, done, shutdown));
        } else {
            // Without a reader the test still runs; only `stop` is not heard.
            (shared.log)("relay: cannot watch the controller's connection".into());
        }
        let mut forward = Forward { ctrl, gone: false };
        let outcome = client::run(config, &mut forward);
        done.raise();
        outcome
    })
}

/// Raises `interrupt` when the controller sends `stop` or goes away, or the server shuts
/// down; returns once `done` is raised.
fn watch(mut reader: Conn, interrupt: &Signal, done: &Signal, shutdown: &Signal) {
    let fd = reader.as_raw_fd();
    while !done.is_raised() {
        if shutdown.is_raised() {
            return interrupt.raise();
        }
        if !poll_readable(&[fd], Duration::from_millis(100))[0] {
            continue;
        }
        // `stop`, anything else, or the connection's end: all mean the test ends now.
        let _ = recv::<ClientMsg>(&mut reader, Duration::from_secs(1));
        return interrupt.raise();
    }
}

/// Sends the relayed test's progress to the controller; a controller that went away is
/// heard by the watcher, so a failed send here only stops further sends.
struct Forward<'a> {
    ctrl: &'a mut Conn,
    gone: bool,
}

impl Forward<'_> {
    fn send(&mut self, msg: &RelayMsg) {
        if !self.gone && send(self.ctrl, msg).is_err() {
            self.gone = true;
        }
    }
}

impl Progress for Forward<'_> {
    fn started(&mut self, server: &ServerInfo, _: &TestSpec) {
        self.send(&RelayMsg::Started {
            server: server.clone(),
        });
    }

    fn interval(&mut self, sample: &IntervalSample) {
        self.send(&RelayMsg::Interval {
            sample: Box::new(sample.clone()),
        });
    }
}

/// The record, then its intervals in slices, then `done`.
fn send_record(ctrl: &mut Conn, mut record: RunRecord) -> Result<(), wire::WireError> {
    let intervals = std::mem::take(&mut record.intervals);
    send(
        ctrl,
        &RelayMsg::Record {
            record: Box::new(record),
        },
    )?;
    for slice in intervals.chunks(INTERVALS_PER_FRAME) {
        send(
            ctrl,
            &RelayMsg::Intervals {
                samples: slice.to_vec(),
            },
        )?;
    }
    send(ctrl, &RelayMsg::Done)
}
