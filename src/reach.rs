//! Where a client command's tests go: a server at HOST or on a Unix socket, with the key to
//! prove to it, or an in-process server started for the run.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use engine::{Listener, Signal};
use session::auth::ClientKey;
use session::client::ClientConfig;
use session::relay::RelayTo;
use session::server::{self, listen_tcp, ServerConfig, ServerThread};
use session::target::{resolve, Target, DEFAULT_PORT};
use wire::TestSpec;

use crate::connection_args::{ConnectionArgs, Route};
use crate::sweep::ClientRunner;

/// A client command's server: where, how it is labelled in records, the key to prove to it,
/// and the in-process server (if one was started), which lives as long as this value.
pub struct Reached {
    /// Where the server is.
    pub target: Target,
    /// How records name it.
    pub label: String,
    /// `--auth-key` or `LINERATE_AUTH_KEY` (never for an in-process server).
    pub key: Option<ClientKey>,
    /// `--from`: `target` is the relay, which runs the tests towards this server.
    pub relay: Option<RelayTo>,
    _server: Option<ServerThread>,
}

impl Reached {
    /// A test of `spec` against this server.
    pub fn config(&self, spec: TestSpec, interrupt: Signal) -> ClientConfig {
        ClientConfig {
            key: self.key.clone(),
            relay: self.relay.clone(),
            ..ClientConfig::new(self.target.clone(), self.label.clone(), spec, interrupt)
        }
    }

    /// A sweep's, repeat's or rfc2544's runner against this server; `events`: each point's
    /// test writes its `--json-stream` events.
    pub fn runner(
        &self,
        interrupt: Signal,
        store: Option<crate::store_args::RunStore>,
        events: bool,
    ) -> ClientRunner {
        ClientRunner::new(self.target.clone(), self.label.clone(), interrupt, store)
            .with_key(self.key.clone())
            .with_relay(self.relay.clone())
            .with_events(events)
    }

    /// The tags a relayed run is stored with: `from` (the relay) and `to` (the far server),
    /// as the command line named them; none for a run from this host.
    pub fn relay_tags(&self) -> Vec<(String, String)> {
        RelayTo::tags(self.relay.as_ref(), &self.label)
    }
}

/// The in-process server of a run without a host: it logs only what went wrong.
pub fn in_process(listener: Listener) -> Result<ServerThread> {
    let log: server::Log = Arc::new(|line: String| {
        if line.contains("refused") || line.contains("early") || line.contains("dropped") {
            eprintln!("linerate (in-process server): {line}");
        }
    });
    let config = iperf3::Dialect::default().plug_into(ServerConfig::in_process());
    ServerThread::start(listener, config, log).context("cannot start the in-process server")
}

fn unix_target(path: &Path) -> Result<(Target, Option<ServerThread>, String)> {
    let target = Target::Unix {
        path: path.to_path_buf(),
    };
    if path.exists() {
        UnixStream::connect(path).with_context(|| {
            format!("--unix {}: the path exists but nothing accepts connections there; remove it or choose another path", path.display())
        })?;
        return Ok((target, None, format!("unix:{}", path.display())));
    }
    let listener = UnixListener::bind(path)
        .with_context(|| format!("--unix {}: cannot create a socket there", path.display()))?;
    let server = in_process(Listener::Unix(listener, path.to_path_buf()))?;
    Ok((
        target,
        Some(server),
        format!("unix:{} (in-process server)", path.display()),
    ))
}

/// `--from RELAY`: the relay to connect to and where it runs the test; refused with what
/// cannot go with it.
fn relayed(
    route: Route,
    conn: &ConnectionArgs,
    unix: Option<&Path>,
    from: &str,
) -> Result<Reached> {
    let Some(host) = &conn.host else {
        bail!("--from {from}: name HOST, the server the test goes to from {from}");
    };
    if unix.is_some() {
        bail!("--from with --unix: a relayed test goes over TCP to HOST; omit one of them");
    }
    if route.iperf3 {
        bail!("--from with --iperf3: a relay runs linerate tests only; omit one of them");
    }
    if route.bind.is_some() {
        bail!("--from with --bind: the test leaves from the relay's own address; omit --bind");
    }
    let addr =
        resolve(from, DEFAULT_PORT, route.family).with_context(|| format!("--from {from}"))?;
    Ok(Reached {
        target: Target::Tcp { addr, bind: None },
        label: from.to_string(),
        key: conn.key()?,
        relay: Some(RelayTo {
            host: host.clone(),
            port: conn.port(false),
            family: route.family,
        }),
        _server: None,
    })
}

/// Where a client test goes: HOST, a Unix socket, or a new in-process server (kept alive by
/// the returned value), with the key for a server of one's own choosing; with `--from`, the
/// relay that runs it.
pub fn target_for(route: Route, conn: &ConnectionArgs, unix: Option<&Path>) -> Result<Reached> {
    if let Some(from) = &conn.from {
        return relayed(route, conn, unix, from);
    }
    let (target, server, label) = match (unix, &conn.host) {
        (Some(_), Some(host)) => bail!("--unix and HOST '{host}' both given; use one"),
        (Some(path), None) => unix_target(path)?,
        (None, Some(host)) => {
            let addr = resolve(host, conn.port(route.iperf3), route.family)?;
            (
                Target::Tcp {
                    addr,
                    bind: route.bind,
                },
                None,
                addr.to_string(),
            )
        }
        (None, None) => {
            let loopback = match route.family {
                session::target::Family::V6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
                _ => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            };
            let listener = listen_tcp(Some(SocketAddr::new(loopback, 0)), 0)
                .context("cannot open a loopback listener for the in-process server")?;
            let addr = listener
                .tcp_addr()
                .context("in-process listener has no address")?;
            let server = in_process(listener)?;
            (
                Target::Tcp {
                    addr,
                    bind: route.bind,
                },
                Some(server),
                format!("{addr} (in-process server)"),
            )
        }
    };
    // The in-process server asks for no key: one from the environment is not for it.
    let key = match &server {
        Some(_) => None,
        None => conn.key()?,
    };
    Ok(Reached {
        target,
        label,
        key,
        relay: None,
        _server: server,
    })
}
