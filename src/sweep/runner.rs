//! The real [`PointRunner`]: `client::run` (with `probe::run_with_probes` for `--latency`)
//! against a resolved target, then the results database, every run tagged as the executor
//! asks. With `--json-stream`, each point's test writes its own `started` and `interval`
//! events to stdout (the sweep's `begin`, `point` and `end` come from its progress).

use engine::Signal;
use record::{Tag, Tags};
use sweep::{Measured, Point, PointRunner, RunError};

use crate::store_args::RunStore;
use session::auth::ClientKey;
use session::client::{self, ClientConfig, Silent};
use session::relay::RelayTo;
use session::target::Target;
use sweep::probe;

/// Runs each point against one target and stores it.
pub struct ClientRunner {
    target: Target,
    label: String,
    interrupt: Signal,
    store: Option<RunStore>,
    key: Option<ClientKey>,
    relay: Option<RelayTo>,
    /// `--json-stream`: each point's test writes its `started` and `interval` events.
    events: bool,
}

impl ClientRunner {
    /// A runner against `target` (labelled `label` in records), storing into `store` (none with
    /// `--no-store`).
    pub fn new(target: Target, label: String, interrupt: Signal, store: Option<RunStore>) -> Self {
        Self {
            target,
            label,
            interrupt,
            store,
            key: None,
            relay: None,
            events: false,
        }
    }

    /// `--json-stream`: each point's `started` and `interval` events on stdout, between the
    /// sweep's own `begin` and the point's `point`.
    pub fn with_events(self, events: bool) -> Self {
        Self { events, ..self }
    }

    /// The key every point proves to the server (`--auth-key`).
    pub fn with_key(self, key: Option<ClientKey>) -> Self {
        Self { key, ..self }
    }

    /// `--from`: every point runs from the relay at the target towards this server.
    pub fn with_relay(self, relay: Option<RelayTo>) -> Self {
        Self { relay, ..self }
    }

    fn run_and_store(&mut self, point: &Point) -> anyhow::Result<Measured> {
        let config = ClientConfig {
            key: self.key.clone(),
            relay: self.relay.clone(),
            ..ClientConfig::new(
                self.target.clone(),
                self.label.clone(),
                point.spec.clone(),
                self.interrupt.clone(),
            )
        };
        let mut stream = self
            .events
            .then(|| events::JsonLines::new(std::io::stdout()));
        let progress: &mut dyn client::Progress = match stream.as_mut() {
            Some(events) => events,
            None => &mut Silent,
        };
        let record = match &point.probe {
            None => client::run(&config, progress)?,
            Some(p) => probe::run_with_probes(&config, p, progress)?,
        };
        let run_id = match &mut self.store {
            None => None,
            Some(store) => {
                let mut tags = Tags::new();
                let relay_tags = RelayTo::tags(self.relay.as_ref(), &self.label);
                for (key, value) in point.tags.iter().chain(&relay_tags) {
                    // Keys are the executors' constants; a repeated one keeps its first value.
                    let _ = tags.insert(Tag {
                        key: key.clone(),
                        value: value.clone(),
                    });
                }
                Some(store.save_with(&record, &tags)?.0)
            }
        };
        // A point whose server went away is kept (stored) but ends the sweep.
        if let Some(why) = &record.summary.incomplete {
            let stored = run_id.map_or(String::new(), |id| format!("; stored as #{id}"));
            anyhow::bail!("{why}{stored}");
        }
        Ok(Measured { record, run_id })
    }
}

impl PointRunner for ClientRunner {
    fn run(&mut self, point: &Point) -> Result<Measured, RunError> {
        // A refusal keeps its type, so an executor tells it from a run that failed.
        self.run_and_store(point)
            .map_err(|e| match e.downcast::<client::ClientError>() {
                Ok(refusal) => Box::new(refusal) as RunError,
                Err(e) => e.into(),
            })
    }

    fn target(&self) -> String {
        self.label.clone()
    }

    fn max_udp_payload(&self) -> Option<u32> {
        match &self.target {
            Target::Tcp { addr, .. } => engine::udp_socket::max_payload_to(*addr)
                .ok()
                .map(|m| m as u32),
            Target::Unix { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddr};
    use sweep::{run_sweep, Quiet};
    use wire::spec::{Params, SendMode, TestKind};
    use wire::TestSpec;

    /// A short stream and request/response test of `len` bytes.
    fn short(kind: TestKind, len: u32) -> TestSpec {
        let mut s = TestSpec::new(Params::defaults(kind), 1, 300);
        s.set_message_len_bytes(len);
        s.interval_ms = 300;
        if let Some(stream) = s.stream_mut() {
            stream.send_mode = SendMode::Write;
        }
        if let Some(tcp) = s.tcp_mut() {
            tcp.no_delay = kind.row().family == wire::spec::FamilyId::Transaction;
        }
        s
    }

    /// The real runner against an in-process server on loopback: a two-size sweep end to end.
    #[test]
    fn client_runner_sweeps_a_loopback_server() {
        let listener =
            session::server::listen_tcp(Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))), 0)
                .unwrap();
        let addr = listener.tcp_addr().unwrap();
        let log: session::server::Log = std::sync::Arc::new(|_: String| {});
        let server = session::server::ServerThread::start(
            listener,
            session::server::ServerConfig::in_process(),
            log,
        )
        .unwrap();
        let plan = sweep::testing::size_plan(&[64, 4096], short);
        let interrupt = Signal::new();
        let mut runner = ClientRunner::new(
            Target::Tcp { addr, bind: None },
            format!("{addr} (test server)"),
            interrupt.clone(),
            None,
        );
        let r = run_sweep(&plan, &mut runner, &interrupt.flag(), &mut Quiet);
        drop(server);
        assert_eq!(r.stopped, None, "{:?}", r.stopped);
        assert_eq!(r.points.len(), 2);
        assert!(r.target.ends_with("(test server)"));
        for p in &r.points {
            assert!(p.throughput_bps.unwrap() > 0.0);
            assert!(p.rtt_p50_us.unwrap() > 0.0);
            assert!(p.run_ids().is_empty(), "not stored without a store");
        }
        assert!(r.summary.peak_throughput_bps.is_some());
        assert!(runner.max_udp_payload().unwrap() >= 1472);
    }
}
