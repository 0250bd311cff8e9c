//! The connection flags every client command shares (`tcp`, `udp`, `rr`, `crr`, `pps`, the
//! sweeps and `rfc2544`), declared once and flattened into each: where the server is, which
//! address family, the local address, the socket buffers and CPU placement, and the relay a
//! third-party test runs from (`--from`).

use std::path::PathBuf;

use clap::Args;
use session::auth::ClientKey;
use session::target::DEFAULT_PORT;

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

impl ConnectionArgs {
    /// `-p`, or linerate's port (iperf3's for `iperf3`).
    pub fn port(&self, iperf3: bool) -> u16 {
        self.port.unwrap_or(if iperf3 {
            session::iperf3::client::IPERF3_PORT
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
