//! The controller's side of a third-party test (`--from`): asks the relay to run the test and
//! turns its messages back into what a local run gives the caller (progress, then the record).
//!
//! Invariants: the controller never measures anything itself (every figure is the relay's or
//! the far server's, each on its own clock); Ctrl-C here becomes a `stop` to the relay, whose
//! partial record comes back like a local interrupted run's; a relay that goes silent past the
//! test's time and a margin is an error, never a hang; the record keeps at most
//! `record::bounds::MAX_INTERVALS` of the relay's intervals, as a local run's does.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use analysis::BoundedIntervals;
use engine::sockopt::SocketOptions;
use engine::sys_io::poll_readable;
use engine::Conn;
use record::RunRecord;
use wire::{ClientMsg, WireError};

use super::handshake::connect;
use super::{ClientConfig, ClientError, Observer};
use crate::control::{recv, send, HANDSHAKE_TIMEOUT};
use crate::relay::{RelayMsg, RelayTo};

/// Longest wait for the relay beyond the test's own time: its connections to the far
/// server, the far server's drain and the record's way back.
const MARGIN: Duration = Duration::from_secs(30);
/// How often the wait looks at the interrupt.
const TICK: Duration = Duration::from_millis(100);

/// Runs `config.spec` from the relay at `config.target` towards `to`.
pub(super) fn run(
    config: &ClientConfig,
    to: &RelayTo,
    progress: &mut dyn Observer,
) -> Result<RunRecord, ClientError> {
    let relay = config.target.describe();
    let mut on_silence = |after| progress.note(&super::silence_note(config, after));
    let (mut ctrl, auth) = connect(config, &SocketOptions::default(), &mut on_silence)?;
    let ask = ClientMsg::Relay {
        to: to.host.clone(),
        port: to.port,
        family: to.family,
        spec: config.spec.clone(),
        auth: auth.proof().cloned(),
    };
    send(&mut ctrl, &ask).map_err(|e| ClientError::Protocol(format!("{relay}: {e}")))?;
    match recv::<RelayMsg>(&mut ctrl, HANDSHAKE_TIMEOUT).map_err(lost(&relay))? {
        RelayMsg::Relaying { auth: answer, .. } => auth.check_answer(answer.as_ref())?,
        RelayMsg::Error { message } => {
            return Err(ClientError::Relay(format!("{relay}: {message}")))
        }
        other => return Err(unexpected(&relay, &other)),
    }
    let spec = &config.spec;
    let test_time = Duration::from_millis(spec.duration_ms);
    let deadline =
        Instant::now() + test_time + config.connect_timeout + config.drain_timeout + MARGIN;
    let mut waiting = Waiting {
        ctrl: &mut ctrl,
        relay: &relay,
        deadline,
        stopped: false,
    };
    let mut record = loop {
        match waiting.next(config)? {
            RelayMsg::Started { server } => progress.started(&server, spec),
            RelayMsg::Interval { sample } => progress.interval(&sample),
            RelayMsg::Record { record } => break *record,
            RelayMsg::Error { message } => {
                return Err(ClientError::Relay(format!("{relay}: {message}")))
            }
            other => return Err(unexpected(&relay, &other)),
        }
    };
    // The relay's intervals, kept as a local run keeps its own: at most the record's bound,
    // however many it sends.
    let mut kept = BoundedIntervals::default();
    std::mem::take(&mut record.intervals)
        .into_iter()
        .for_each(|s| kept.push(s));
    loop {
        match waiting.next(config)? {
            RelayMsg::Intervals { samples } => samples.into_iter().for_each(|s| kept.push(s)),
            RelayMsg::Done => break,
            other => return Err(unexpected(&relay, &other)),
        }
    }
    record.intervals = kept.into_vec();
    record.target = format!("{} from {relay}", record.target);
    Ok(record)
}

/// The controller's wait for the relay's next message.
struct Waiting<'a> {
    ctrl: &'a mut Conn,
    relay: &'a str,
    deadline: Instant,
    /// `stop` went out (Ctrl-C).
    stopped: bool,
}

impl Waiting<'_> {
    /// The next message, passing Ctrl-C on as `stop` while waiting.
    fn next(&mut self, config: &ClientConfig) -> Result<RelayMsg, ClientError> {
        loop {
            if !self.stopped && config.interrupt.is_raised() {
                self.stopped = true;
                send(self.ctrl, &ClientMsg::Stop).map_err(lost(self.relay))?;
            }
            let now = Instant::now();
            if now >= self.deadline {
                return Err(ClientError::Protocol(format!(
                    "{}: the relay sent nothing past the test's time and {} s more; is it overloaded?",
                    self.relay,
                    MARGIN.as_secs()
                )));
            }
            if poll_readable(&[self.ctrl.as_raw_fd()], TICK.min(self.deadline - now))[0] {
                return recv::<RelayMsg>(self.ctrl, HANDSHAKE_TIMEOUT).map_err(lost(self.relay));
            }
        }
    }
}

fn lost(relay: &str) -> impl Fn(WireError) -> ClientError + '_ {
    move |e| ClientError::Protocol(format!("{relay} (the relay): {e}"))
}

fn unexpected(relay: &str, msg: &RelayMsg) -> ClientError {
    ClientError::Protocol(format!("{relay} (the relay): unexpected message {msg:?}"))
}
