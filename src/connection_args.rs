//! The connection flags every client command shares (`tcp`, `udp`, `rr`, `crr`, `pps`, the
//! sweeps and `rfc2544`), declared once and flattened into each: where the server is, which
//! address family, the local address, the socket buffers and CPU placement, and the relay a
//! third-party test runs from (`--from`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use session::auth::ClientKey;
use session::target::{Family, DEFAULT_PORT};

/// Where a client test connects, and its sockets' placement.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// Server to test against (name, address, HOST:PORT); none: an in-process server on loopback.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// Server port [default: 5301; 5201, iperf3's, with --iperf3].
    #[arg(long, short = 'p', value_name = "PORT")]
    pub port: Option<u16>,
    /// Socket buffer size (SO_SNDBUF and SO_RCVBUF) on both ends; default: kernel autotuning
    /// for TCP, 4M for UDP.
    #[arg(long, short = 'w', value_name = "BYTES")]
    pub window: Option<String>,
    /// IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6')]
    pub ipv6: bool,
    /// Local address to connect from.
    #[arg(long, short = 'B', value_name = "ADDR")]
    pub bind: Option<String>,
    /// Pin this end's data threads to CPU CLIENT and the server's to CPU SERVER (as iperf3
    /// -A); the placement is stored with the run.
    #[arg(long, short = 'A', value_name = "CLIENT[,SERVER]")]
    pub affinity: Option<String>,
    /// Run the test from this linerate server (started with `serve --relay`) towards HOST:
    /// a third-party test; the results come back here and are stored here.
    #[arg(long, value_name = "RELAY[:PORT]")]
    pub from: Option<String>,
    /// Key file (one line, NAME SECRET, from `linerate keygen`) proving who runs the test to
    /// a server with --auth-keys; the server proves it holds the key too.
    #[arg(long, value_name = "FILE", env = "LINERATE_AUTH_KEY")]
    pub auth_key: Option<PathBuf>,
}

/// How a client reaches its server, from the connection flags: the address family, the local
/// address, and whether it speaks iperf3's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `-4`, `-6`, or either.
    pub family: Family,
    /// `--bind`.
    pub bind: Option<SocketAddr>,
    /// `--iperf3`: a stock iperf3 server (port 5201 unless -p).
    pub iperf3: bool,
}

impl ConnectionArgs {
    /// The family and local address the flags ask for (a linerate server's route).
    pub fn route(&self) -> anyhow::Result<Route> {
        let family = match (self.ipv4, self.ipv6) {
            (true, _) => Family::V4,
            (false, true) => Family::V6,
            (false, false) => Family::Any,
        };
        let bind = self.bind.as_deref().map(parse_bind).transpose()?;
        Ok(Route {
            family,
            bind,
            iperf3: false,
        })
    }

    /// `-p`, or linerate's port (iperf3's for `iperf3`).
    pub fn port(&self, iperf3: bool) -> u16 {
        self.port.unwrap_or(if iperf3 {
            iperf3::client::IPERF3_PORT
        } else {
            DEFAULT_PORT
        })
    }

    /// The key of `--auth-key` (or `LINERATE_AUTH_KEY`), read and checked.
    pub fn key(&self) -> anyhow::Result<Option<ClientKey>> {
        self.auth_key
            .as_deref()
            .map(ClientKey::load)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--auth-key: {e}"))
    }
}

/// `--bind ADDR[:PORT]`: the local address to connect from.
fn parse_bind(b: &str) -> anyhow::Result<SocketAddr> {
    b.parse::<SocketAddr>()
        .or_else(|_| {
            b.parse::<std::net::IpAddr>()
                .map(|ip| SocketAddr::new(ip, 0))
        })
        .map_err(|_| anyhow::anyhow!("--bind {b}: not an IP address (optionally with :PORT)"))
}
