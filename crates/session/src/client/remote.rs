//! The far end of a running test as the measuring loop sees it: a linerate server over
//! linerate's control protocol (`LinerateServer`), or a stock iperf3 server over iperf3's
//! (the `iperf3` crate's client). The loop starts, polls and stops the test through this trait only;
//! it is public for a far end another crate speaks to ([`measure_streams`](super::measure::measure_streams)
//! runs a test against any [`Remote`]).

use std::time::Duration;

use engine::Conn;
use measure::cpu::{CpuSoFar, CpuTime};
use wire::msg::{ServerResults, StreamCounts};
use wire::spec::Flow;
use wire::{ClientMsg, ServerMsg};

use super::{protocol, unexpected, ClientError};
use crate::control::{recv, send, HANDSHAKE_TIMEOUT};

/// The far end's figures in answer to a poll.
pub struct FarCounts {
    /// Its counters, one per stream.
    pub counts: Vec<StreamCounts>,
    /// Its CPU so far, from a far end that reports it (a linerate server of this build).
    pub cpu: Option<CpuSoFar>,
    /// The far end reports nothing while the test runs, and these are this end's counts
    /// standing in for it (a stock iperf3 server): no figure of the far end's own.
    pub stand_in: bool,
}

/// What the far end of a test does for the measuring loop.
pub trait Remote {
    /// The local address of the control connection (which interface the test uses).
    fn local_addr(&self) -> Option<std::net::SocketAddr>;
    /// The data plane this end runs against this far end: the kind's own engine, unless the
    /// far end frames its data differently (a stock iperf3's UDP datagrams). This end's
    /// senders carry the client → server flow.
    fn engine(&self, spec: &wire::TestSpec) -> Box<dyn engine::StreamEngine> {
        engine::engine_for(spec, wire::spec::Flow::ClientToServer)
    }
    /// The test begins: called just before this end's workers start.
    fn begin(&mut self) -> Result<(), ClientError>;
    /// Waits until the far end has begun: called once the workers run.
    fn begun(&mut self) -> Result<(), ClientError>;
    /// The far end's counters now, one per stream (`local`: this end's), and its CPU so far
    /// if it reports it. `Ok(Err(why))` when the far end went away: the test ends with
    /// this end's figures (an error is a protocol failure that ends it with none).
    fn counts(
        &mut self,
        seq: u64,
        local: &[StreamCounts],
    ) -> Result<Result<FarCounts, FarEndLost>, ClientError>;
    /// A test by amount: whether it has all moved, by this end's `workers`. A linerate server
    /// ends its streams once the amount has arrived each way (a TCP sender returns once its
    /// receiver has read everything and closed; a receiver once its stream ended), so this
    /// end's workers having all ended says so.
    fn amount_moved(&self, _spec: &wire::TestSpec, workers: &engine::Workers) -> bool {
        workers.all_ended()
    }
    /// Ends the test and returns the far end's figures (`Ok(Err(why))`: it went away).
    /// `local_at_stop` and `cpu` are this end's counters and process CPU at the stop, over
    /// `wall`.
    fn results(
        &mut self,
        local_at_stop: &[StreamCounts],
        cpu: CpuTime,
        wall: Duration,
    ) -> Result<Result<ServerResults, FarEndLost>, ClientError>;
}

/// Why the far end's figures are missing mid-test: its control connection failed. The run
/// still ends with a record (this end's figures, the far end's up to its last answer), and
/// the message is the record's `incomplete` note.
#[derive(Debug, thiserror::Error)]
pub enum FarEndLost {
    /// A linerate server's control connection failed while `doing` (polling it, stopping the
    /// test, waiting for its results).
    #[error("the server went away mid-test ({doing}: {error})")]
    Linerate {
        /// What this end was doing.
        doing: &'static str,
        /// How the connection failed.
        error: wire::WireError,
    },
    /// Another protocol's server (a stock iperf3's, named `server`: "iperf3 server") failed
    /// its control connection as the test ended.
    #[error("the {server} went away mid-test ({error})")]
    Foreign {
        /// What the far end is, as the message names it.
        server: &'static str,
        /// How the connection failed.
        error: std::io::Error,
    },
}

/// Whether this end's counts `local` (one per stream of `spec`) hold the amount each way it
/// flows, in the senders' unit: what a far end that ends its streams only at the test's end (a
/// stock iperf3 server) leaves this end to judge by, as iperf3's client does (everything
/// written, or everything received).
pub fn amount_counted(spec: &wire::TestSpec, local: &[StreamCounts]) -> bool {
    let (Some(units), Some(unit)) = (spec.amount_units(), spec.amount_unit()) else {
        return false;
    };
    let count = |c: &StreamCounts| match unit {
        wire::spec::AmountUnit::Bytes => c.bytes,
        wire::spec::AmountUnit::Datagrams => c.packets,
    };
    let flows = spec.flows();
    [Flow::ClientToServer, Flow::ServerToClient]
        .into_iter()
        .all(|way| {
            let of_way = flows.iter().zip(local).filter(|((_, f), _)| *f == way);
            let mut of_way = of_way.peekable();
            of_way.peek().is_none() || of_way.map(|(_, c)| count(c)).sum::<u64>() >= units
        })
}

/// The control connection to a linerate server failed while `doing`.
fn lost(doing: &'static str, error: wire::WireError) -> FarEndLost {
    FarEndLost::Linerate { doing, error }
}

fn server_ended(message: &str) -> ClientError {
    ClientError::Protocol(format!("server ended the test: {message}"))
}

/// A linerate server: `Begin`/`Begun`, a `Poll` per interval, `Stop` and its `Results`.
pub(super) struct LinerateServer<'a> {
    pub ctrl: &'a mut Conn,
    /// How long the server may take to drain before its results are due.
    pub drain_timeout: Duration,
}

impl Remote for LinerateServer<'_> {
    fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.ctrl.local_addr()
    }

    fn begin(&mut self) -> Result<(), ClientError> {
        send(self.ctrl, &ClientMsg::Begin).map_err(protocol("starting the test"))
    }

    fn begun(&mut self) -> Result<(), ClientError> {
        match recv::<ServerMsg>(self.ctrl, HANDSHAKE_TIMEOUT)
            .map_err(protocol("starting the test"))?
        {
            ServerMsg::Begun => Ok(()),
            ServerMsg::Error { message } => Err(ClientError::Refused(message)),
            other => Err(unexpected(&other)),
        }
    }

    fn counts(
        &mut self,
        seq: u64,
        _local: &[StreamCounts],
    ) -> Result<Result<FarCounts, FarEndLost>, ClientError> {
        let reply = send(self.ctrl, &ClientMsg::Poll { seq })
            .and_then(|()| recv::<ServerMsg>(self.ctrl, HANDSHAKE_TIMEOUT));
        match reply {
            Err(e) => Ok(Err(lost("polling it", e))),
            Ok(ServerMsg::Counters { counts, cpu, .. }) => Ok(Ok(FarCounts {
                counts,
                cpu,
                stand_in: false,
            })),
            Ok(ServerMsg::Error { message }) => Err(server_ended(&message)),
            Ok(other) => Err(unexpected(&other)),
        }
    }

    fn results(
        &mut self,
        _local_at_stop: &[StreamCounts],
        _cpu: CpuTime,
        _wall: Duration,
    ) -> Result<Result<ServerResults, FarEndLost>, ClientError> {
        if let Err(e) = send(self.ctrl, &ClientMsg::Stop) {
            return Ok(Err(lost("stopping the test", e)));
        }
        let results_wait = self.drain_timeout + HANDSHAKE_TIMEOUT;
        match recv::<ServerMsg>(self.ctrl, results_wait) {
            Ok(ServerMsg::Results(r)) => Ok(Ok(r)),
            Ok(ServerMsg::Error { message }) => Err(server_ended(&message)),
            Ok(other) => Err(unexpected(&other)),
            Err(e) => Ok(Err(lost("waiting for its results", e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_far_end_gone_mid_test_says_what_this_end_was_doing_in_the_records_words() {
        let frame = wire::WireError::FrameTooLarge { len: 9, max: 8 };
        let lost = lost("polling it", frame);
        assert!(matches!(
            lost,
            FarEndLost::Linerate {
                doing: "polling it",
                ..
            }
        ));
        assert_eq!(
            lost.to_string(),
            "the server went away mid-test (polling it: control frame of 9 bytes exceeds the \
             8-byte limit)"
        );
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(
            FarEndLost::Foreign {
                server: "iperf3 server",
                error: reset
            }
            .to_string(),
            "the iperf3 server went away mid-test (connection reset)"
        );
    }
}
