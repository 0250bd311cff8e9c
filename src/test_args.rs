//! The test commands' flags (`linerate tcp`, `udp`, `rr`, `crr` and the flags they share):
//! clap definitions (their doc comments are the help text) and their validation into typed
//! specs. Every error names the flag and what to do.
//!
//! `measuring::MeasuringCli` parses a test command on its own, as a sweep takes one after `--`;
//! `sweep size` and `rfc2544` build theirs as typed structs (defaults, then their own flags' values), and
//! both reuse this validation. The connection flags are `connection_args`'s; the whole command
//! line, which holds these commands too, is `cli`'s. This module depends on neither.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use measure::units::{parse_bits_per_sec, parse_bytes, seconds_within};
use wire::datagram::HEADER_LEN;
use wire::spec::{
    bounds::{MAX_DURATION_MS, MAX_INTERVAL_MS, MAX_STREAMS, MAX_WRITE_LEN_BYTES, MIN_INTERVAL_MS},
    rates, Direction, Params, RxMode, SendMode, StreamParams, TcpOptions, Transport, UdpEngine,
    UdpParams, UdpRate,
};
use wire::TestSpec;

pub use crate::commands::rr::RrArgs;
use crate::connection_args::ConnectionArgs;
use crate::latency_args::LatencyArgs;
use crate::repeat_args::RepeatArgs;
use crate::store_args::StoreArgs;
use session::target::Family;

/// Flags every client test takes.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Where to connect.
    #[command(flatten)]
    pub conn: ConnectionArgs,
    /// Test duration: seconds, or with a unit (500ms, 2s, 5m); default 10 s; 0 runs until
    /// Ctrl-C (at most 24 h, or the server's --max-time). With -n or -k, the longest the
    /// amount may take (default: until it has moved).
    #[arg(
        long = "time",
        short = 't',
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        allow_negative_numbers = true
    )]
    pub time: Option<f64>,
    /// Warm-up: the first DURATION of --time shown but left out of the summary, as iperf3 -O
    /// (default 0; rr and crr: the first interval of a test over two intervals long).
    #[arg(
        long,
        short = 'O',
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        allow_negative_numbers = true
    )]
    pub omit: Option<f64>,
    /// Parallel streams per direction, each on its own thread.
    #[arg(
        long = "parallel",
        short = 'P',
        value_name = "STREAMS",
        default_value_t = 1
    )]
    pub parallel: u32,
    /// Server sends, client receives.
    #[arg(long, short = 'R', conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Seconds between live rows; 0 prints none.
    #[arg(
        long,
        short = 'i',
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub interval: f64,
    /// Link speed for the Performance Index PI = T/C x T/L (bits/s; K, M, G, T).
    #[arg(long, value_name = "BITS_PER_SEC")]
    pub link_speed: Option<String>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Print JSON events as they happen, one per line (each interval; a sweep's points), the
    /// last one the --json document (docs/RESULTS.md, "The event stream").
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,
    /// Print the full report after the live rows (each end's figures, the verdict's evidence
    /// and advice), as `linerate show` does, instead of the short summary.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Results database, tags, --no-store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `linerate tcp`.
#[derive(Debug, Args)]
pub struct TcpArgs {
    /// Flags every test takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Bytes per write call (K, M: binary multiples); the receiver reads as much, at most
    /// 128 KiB a call.
    #[arg(
        long = "length",
        short = 'l',
        value_name = "BYTES",
        default_value = "512K"
    )]
    pub length: String,
    /// How senders hand data to the kernel: auto (write where the connection's congestion
    /// control paces, as BBR does; splice otherwise), splice or sendfile (no user-space copy,
    /// TCP only) or write.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = SendModeArg::Auto)]
    pub send_mode: SendModeArg,
    /// How receivers take data from the kernel (both ends' receivers, TCP only): copy into user
    /// memory, trunc (discard in the kernel with MSG_TRUNC, as iperf3 --skip-rx-copy), or
    /// zerocopy (map received pages with TCP_ZEROCOPY_RECEIVE; copy what cannot be mapped).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = RxModeArg::Copy)]
    pub rx_mode: RxModeArg,
    /// TCP_NOTSENT_LOWAT on both ends, bytes (K, M): a sender keeps at most this much written
    /// but unsent, so what it writes next waits behind less (see --self-probes).
    #[arg(long, value_name = "BYTES")]
    pub notsent_lowat: Option<String>,
    /// In-band self probes per second on each stream (responsiveness): 1-byte requests answered
    /// inside the loaded direction, behind its queued data; round trips in the intervals.
    #[arg(long, value_name = "PER_SEC")]
    pub self_probes: Option<u32>,
    /// TCP maximum segment size (TCP_MAXSEG), set before connecting.
    #[arg(long, short = 'M', value_name = "BYTES")]
    pub mss: Option<u32>,
    /// Disable Nagle's algorithm (TCP_NODELAY).
    #[arg(long, short = 'N')]
    pub no_delay: bool,
    /// TCP congestion control algorithm on both ends, e.g. cubic, reno, bbr.
    #[arg(long, short = 'C', value_name = "ALGO")]
    pub congestion: Option<String>,
    /// IP TOS / IPv6 traffic class byte (decimal or 0x hex).
    #[arg(long, short = 'S', value_name = "N")]
    pub tos: Option<String>,
    /// Pace each stream's sending at this rate (bits/s; K, M, G), as iperf3 -b does for TCP:
    /// SO_MAX_PACING_RATE on both ends. A server with --max-rate asks for one. With --bidir,
    /// A,B paces client -> server at A and server -> client at B.
    #[arg(long, short = 'b', value_name = "BITS_PER_SEC[,BITS_PER_SEC]")]
    pub rate: Option<String>,
    /// Test over a Unix-domain stream socket: a server listening at PATH, or an in-process one
    /// created there when nothing is.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["bind", "ipv4", "ipv6"])]
    pub unix: Option<PathBuf>,
    /// Test against a stock `iperf3 -s` at HOST (port 5201 unless -p), speaking iperf3's
    /// protocol: linerate's own data plane and figures, the iperf3 server's byte counts.
    #[arg(long, requires = "host", conflicts_with_all = ["unix", "auth_key"])]
    pub iperf3: bool,
    /// A fixed amount.
    #[command(flatten)]
    pub amount: amount::AmountArgs,
    /// Latency under load.
    #[command(flatten)]
    pub latency: LatencyArgs,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: RepeatArgs,
}

/// `linerate udp`.
#[derive(Debug, Args)]
pub struct UdpArgs {
    /// Flags every test takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// UDP payload bytes per datagram (at least 16, the linerate header; at most what the path
    /// carries unfragmented).
    #[arg(
        long = "length",
        short = 'l',
        value_name = "BYTES",
        default_value = "1472"
    )]
    pub length: String,
    /// Target payload rate per stream in bits/s (K, M, G, T), or `max` for as fast as the
    /// sender can. Default 1M, as iperf3: UDP has no congestion control. With --bidir, A,B
    /// sends client -> server at A and server -> client at B.
    #[arg(
        long,
        short = 'b',
        value_name = "BITS_PER_SEC[,BITS_PER_SEC]",
        conflicts_with = "pps"
    )]
    pub rate: Option<String>,
    /// Target datagrams per second per stream (instead of --rate); with --bidir, N,M.
    #[arg(long, value_name = "N[,N]")]
    pub pps: Option<String>,
    /// Send datagrams in bursts of N back to back, instead of evenly spaced.
    #[arg(long, value_name = "N")]
    pub burst: Option<u32>,
    /// Datagrams per sendmmsg/recvmmsg call.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub batch: u16,
    /// One datagram per sendmmsg/recvmmsg call (--batch 1), to compare; GSO needs batches so
    /// it is off too, while GRO still coalesces arrivals unless --no-gro.
    #[arg(long, conflicts_with = "batch")]
    pub no_batch: bool,
    /// Spread each stream's datagrams over N source ports (flows change every batch; with
    /// --batch 1, every datagram), like pkt-gen's multi-flow runs.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub flows: u32,
    /// Spread each stream's datagrams over N destination ports on the receiver too (the
    /// sender uses at least one socket per destination, rotating every batch).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub flows_dst: u32,
    /// How datagrams are sent: `socket` (UDP sockets), or Ethernet frames built by linerate via an
    /// AF_PACKET ring (`packet`) or AF_XDP (`xdp`) past this host's stack, counted at the
    /// server's driver (`serve --frames`; client to server; --flows/--flows-dst 1 or 100).
    #[arg(long, value_name = "ENGINE", default_value = "socket")]
    pub engine: UdpEngine,
    /// Do not let the kernel segment batches of datagrams (UDP GSO), to compare.
    #[arg(long)]
    pub no_gso: bool,
    /// Do not let the kernel coalesce arriving datagrams (UDP GRO), to compare.
    #[arg(long)]
    pub no_gro: bool,
    /// Test against a stock `iperf3 -s` at HOST (port 5201 unless -p), speaking iperf3's
    /// protocol and datagram header: linerate's own data plane and figures, the iperf3
    /// server's datagram counts, loss and jitter.
    #[arg(long, requires = "host", conflicts_with_all = ["auth_key"])]
    pub iperf3: bool,
    /// A fixed amount.
    #[command(flatten)]
    pub amount: amount::AmountArgs,
    /// Latency under load.
    #[command(flatten)]
    pub latency: LatencyArgs,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: RepeatArgs,
}

/// `--send-mode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SendModeArg {
    /// Per connection: write where its congestion control paces every send (BBR), splice
    /// otherwise (each measured the faster there; the summary says which ran).
    Auto,
    /// splice(2) from a pipe holding the pattern's pages, refilled by tee(2) (TCP; Unix sockets
    /// fall back to write; sendfile where a pipe cannot hold -l bytes).
    Splice,
    /// sendfile(2) from an in-memory file (TCP; Unix sockets fall back to write).
    Sendfile,
    /// write(2) from a user buffer.
    Write,
}

/// `--rx-mode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RxModeArg {
    /// read(2) into user memory, as applications do.
    Copy,
    /// recv(2) with MSG_TRUNC: discarded in the kernel, counted, never copied.
    Trunc,
    /// TCP_ZEROCOPY_RECEIVE: whole pages mapped, the rest copied; copy where refused.
    Zerocopy,
}

/// A validated client invocation of any test kind: the spec, and how to reach the server.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The test.
    pub spec: TestSpec,
    /// Family restriction.
    pub family: Family,
    /// Local bind address.
    pub bind: Option<SocketAddr>,
    /// Whether live rows are printed.
    pub live_rows: bool,
    /// Speak iperf3's protocol to a stock iperf3 server (`tcp --iperf3`).
    pub iperf3: bool,
}

impl RunPlan {
    /// How the plan reaches its server.
    pub fn route(&self) -> crate::connection_args::Route {
        crate::connection_args::Route {
            family: self.family,
            bind: self.bind,
            iperf3: self.iperf3,
        }
    }
}

fn parse_tos(s: &str) -> anyhow::Result<u8> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => t.parse::<u8>(),
    };
    parsed.map_err(|_| anyhow::anyhow!("--tos {s}: must be a byte, 0 to 255 (or 0x00 to 0xff)"))
}

/// A byte count of `flag` (`--length`, `--window`): `what` must be `min..=max` bytes.
pub(crate) fn length(v: &str, min: u64, max: u64, flag: &str, what: &str) -> anyhow::Result<u32> {
    let n = parse_bytes(v).map_err(|e| anyhow::anyhow!("{flag} {v}: {e}"))?;
    match (min..=max).contains(&n) {
        true => Ok(n as u32),
        false => anyhow::bail!("{flag} {v}: {what} must be between {min} and {max} bytes"),
    }
}

/// `--notsent-lowat BYTES`: 1 B to 64 MiB.
pub fn notsent_lowat(v: &str) -> anyhow::Result<u32> {
    length(v, 1, 64 << 20, "--notsent-lowat", "a TCP_NOTSENT_LOWAT")
}

impl CommonArgs {
    /// Which way the data flows: `-R`, `--bidir`, or client to server.
    pub fn direction(&self) -> Direction {
        if self.bidir {
            Direction::Bidir
        } else if self.reverse {
            Direction::Reverse
        } else {
            Direction::Send
        }
    }

    /// Validates the shared flags into a plan for a test with `params`.
    pub fn plan(&self, params: Params) -> anyhow::Result<RunPlan> {
        // `-t 0` (iperf3's "until stopped"): as long as a test may last; Ctrl-C ends it.
        let max_s = MAX_DURATION_MS as f64 / 1e3;
        let duration = match self.time.unwrap_or(10.0) {
            0.0 => Duration::from_millis(MAX_DURATION_MS),
            t => seconds_within(t, 0.1, max_s).map_err(|e| anyhow::anyhow!("--time {t}: {e}"))?,
        };
        if self.parallel == 0 || self.parallel > u32::from(MAX_STREAMS) {
            return Err(anyhow::anyhow!(
                "--parallel {}: must be between 1 and {MAX_STREAMS} streams",
                self.parallel
            ));
        }
        let (min_s, max_s) = (MIN_INTERVAL_MS as f64 / 1e3, MAX_INTERVAL_MS as f64 / 1e3);
        let interval = if self.interval == 0.0 {
            duration
        } else {
            let i = self.interval;
            seconds_within(i, min_s, max_s).map_err(|e| anyhow::anyhow!("--interval {i}: {e}"))?
        };
        let window = match &self.conn.window {
            None => None,
            Some(w) => Some(length(w, 2048, 1 << 30, "--window", "a socket buffer")?),
        };
        let link_speed_bps = match &self.link_speed {
            None => None,
            Some(l) => {
                let v =
                    parse_bits_per_sec(l).map_err(|e| anyhow::anyhow!("--link-speed {l}: {e}"))?;
                if v == 0 {
                    return Err(anyhow::anyhow!("--link-speed {l}: must be above 0"));
                }
                Some(v)
            }
        };
        let route = self.conn.route()?;
        let (client_cpu, server_cpu) = match &self.conn.affinity {
            None => (None, None),
            Some(a) => (engine::affinity::parse_placement(a))
                .map_err(|e| anyhow::anyhow!("--affinity {a}: {e}"))?,
        };
        let spec = TestSpec {
            interval_ms: interval.as_millis().max(1) as u64,
            window_bytes: window,
            link_speed_bps,
            server_cpu,
            client_cpu,
            ..TestSpec::new(params, self.parallel as u16, duration.as_millis() as u64)
        };
        Ok(RunPlan {
            spec,
            family: route.family,
            bind: route.bind,
            live_rows: self.interval != 0.0 && !self.json && !self.json_stream,
            iperf3: false,
        })
    }
}

impl TcpArgs {
    /// Validates the flags into a plan.
    pub fn plan(&self) -> anyhow::Result<RunPlan> {
        let max = MAX_WRITE_LEN_BYTES as u64;
        let len = length(&self.length, 1, max, "--length", "the write length")?;
        let stream = StreamParams {
            write_len_bytes: len,
            ..StreamParams::new(self.common.direction())
        };
        let mut plan = self.common.plan(Params::TcpStream {
            stream,
            tcp: TcpOptions::default(),
        })?;
        if let Some(m) = self.mss {
            if !(88..=65535).contains(&m) {
                return Err(anyhow::anyhow!(
                    "--mss {m}: must be between 88 and 65535 bytes"
                ));
            }
        }
        if let Some(c) = &self.congestion {
            if c.is_empty() || c.len() > 15 {
                return Err(anyhow::anyhow!(
                    "--congestion '{c}': not a congestion control name"
                ));
            }
        }
        let stream = StreamParams {
            transport: if self.unix.is_some() {
                Transport::Unix
            } else {
                Transport::Tcp
            },
            send_mode: match (self.send_mode, self.unix.is_some()) {
                (SendModeArg::Auto, false) => SendMode::Auto,
                (SendModeArg::Splice, false) => SendMode::Splice,
                (SendModeArg::Sendfile, false) => SendMode::Sendfile,
                _ => SendMode::Write,
            },
            rx_mode: match self.rx_mode {
                RxModeArg::Copy => RxMode::Copy,
                RxModeArg::Trunc => RxMode::Trunc,
                RxModeArg::Zerocopy => RxMode::Zerocopy,
            },
            self_probes_per_s: self.self_probes,
            ..stream
        };
        if let Some(why) = stream.rx_mode_refusal() {
            let mode = stream.rx_mode.name();
            return Err(anyhow::anyhow!("--rx-mode {mode}: {why}; leave it at copy"));
        }
        let pacing = self.pacing()?;
        let tcp = TcpOptions {
            mss_bytes: self.mss,
            no_delay: self.no_delay,
            congestion: self.congestion.clone(),
            tos: self.tos.as_deref().map(parse_tos).transpose()?,
            pacing_bps: pacing.map(|p| p.rate),
            reverse_pacing_bps: pacing.and_then(|p| p.reverse),
            notsent_lowat_bytes: self
                .notsent_lowat
                .as_deref()
                .map(notsent_lowat)
                .transpose()?,
        };
        plan.spec.params = Params::TcpStream { stream, tcp };
        plan.spec.omit_ms = omit::omit_ms(self.common.omit, &plan.spec, self.iperf3)?;
        let (bytes, blocks) = (self.amount.bytes.as_deref(), self.amount.blocks.as_deref());
        (plan.spec).by_amount(bytes, blocks, self.common.time.is_some())?;
        let probes = self.latency.plan()?.is_some();
        if probes && self.unix.is_some() {
            anyhow::bail!("--latency with --unix: the probes need an IP server; omit one of them");
        }
        plan.iperf3 = one_iperf3_test(self.iperf3, probes, &self.repeat)?;
        Ok(plan)
    }
}

impl TcpArgs {
    /// `--rate`: a pacing rate above 0, over TCP; two with --bidir.
    fn pacing(&self) -> anyhow::Result<Option<rates::Rates<u64>>> {
        let Some(text) = &self.rate else {
            return Ok(None);
        };
        if self.unix.is_some() {
            anyhow::bail!(
                "--rate paces TCP; Unix-domain sockets have no pacing (drop --rate or --unix)"
            );
        }
        Ok(Some(rates::pacing(text, self.common.direction())?))
    }
}

impl UdpArgs {
    /// Validates the flags into a plan.
    pub fn plan(&self) -> anyhow::Result<RunPlan> {
        let len = length(
            &self.length,
            HEADER_LEN as u64,
            65_507,
            "--length",
            "a UDP payload",
        )?;
        let mut udp = UdpParams {
            payload_len_bytes: len,
            ..UdpParams::new(self.common.direction())
        };
        let mut plan = self.common.plan(Params::UdpStream { udp })?;
        let (rate, pps) = (self.rate.as_deref(), self.pps.as_deref());
        let r = rates::udp_rate(rate, pps, self.common.direction())?;
        (udp.rate, udp.reverse_rate) = (r.rate, r.reverse);
        if self.burst == Some(0) {
            return Err(anyhow::anyhow!("--burst 0: must be at least 1 datagram"));
        }
        // A reverse rate is set only where it differs: one of the two then paces.
        if self.burst.is_some() && udp.rate == UdpRate::Max && udp.reverse_rate.is_none() {
            return Err(anyhow::anyhow!(
                "--burst: bursts pace a rate; give --rate BITS_PER_SEC or --pps, not --rate max"
            ));
        }
        udp.burst_packets = self.burst.unwrap_or(0);
        if self.batch == 0 || self.batch > 1024 {
            return Err(anyhow::anyhow!(
                "--batch {}: must be between 1 and 1024 datagrams",
                self.batch
            ));
        }
        udp.batch_packets = if self.no_batch { 1 } else { self.batch };
        udp.gso = !self.no_gso;
        udp.gro = !self.no_gro;
        udp.flows = ports("--flows", self.flows)?;
        udp.flows_dst = ports("--flows-dst", self.flows_dst)?;
        udp.engine = self.engine;
        plan.spec.params = Params::UdpStream { udp };
        plan.spec.omit_ms = omit::omit_ms(self.common.omit, &plan.spec, self.iperf3)?;
        let (bytes, blocks) = (self.amount.bytes.as_deref(), self.amount.blocks.as_deref());
        (plan.spec).by_amount(bytes, blocks, self.common.time.is_some())?;
        let probes = self.latency.plan()?.is_some();
        plan.iperf3 = one_iperf3_test(self.iperf3, probes, &self.repeat)?;
        Ok(plan)
    }
}

/// A port count of `--flows`/`--flows-dst`, when it is one.
pub fn ports(flag: &str, n: u32) -> anyhow::Result<u32> {
    match n {
        1..=10_000 => Ok(n),
        _ => anyhow::bail!("{flag} {n}: must be between 1 and 10000"),
    }
}

/// `--iperf3` as the plan keeps it: one test, so neither probes nor repetitions beside it.
fn one_iperf3_test(iperf3: bool, probes: bool, repeat: &RepeatArgs) -> anyhow::Result<bool> {
    if iperf3 && (probes || repeat.plan()?.repeats()) {
        anyhow::bail!("--iperf3 runs one test: without --latency, --repeat or --until-ci");
    }
    Ok(iperf3)
}

pub(crate) mod amount;
pub(crate) mod omit;
#[cfg(test)]
mod tests;
