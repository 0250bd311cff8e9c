//! The command line: clap definitions (their doc comments are the help text) and their
//! validation into typed specs. Every error names the flag and what to do.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use measure::units::{parse_bits_per_sec, parse_bytes};
use wire::datagram::HEADER_LEN;
use wire::spec::{
    Direction, Params, RrParams, SendMode, StreamParams, TcpOptions, Transport, UdpParams, UdpRate,
};
use wire::TestSpec;

use crate::target::{Family, DEFAULT_PORT};

/// linerate: a network performance lab in one binary.
///
/// Run `linerate tcp` with no host to measure loopback against an in-process server.
#[derive(Debug, Parser)]
#[command(name = "linerate", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve tests to linerate clients (TCP port 5301 on all addresses by default).
    Serve(ServeArgs),
    /// Bulk TCP (or Unix-socket) throughput: send, reverse or both ways, N parallel streams.
    Tcp(TcpArgs),
    /// UDP at a target rate: loss, reordering, duplicates and jitter, exactly accounted.
    Udp(UdpArgs),
    /// Packet rate matrix: frame sizes x flow counts at max rate, against the line rate
    /// link_bps / 8 / (frame + 20).
    Pps(PpsArgs),
    /// Request/response over TCP: transactions per second and round-trip latency percentiles.
    Rr(RrArgs),
    /// Connect, request, response, close, repeat: connections per second and connect +
    /// transaction latency percentiles.
    Crr(RrArgs),
    /// Sweep message sizes (NetPIPE-style), a test parameter or your own setting (a command
    /// run before each point); every point a stored run.
    Sweep(crate::sweep::SweepArgs),
    /// RFC 2544 throughput: per frame size, the highest rate with loss within --loss, by
    /// binary search over trials, with latency at that rate and the line rate beside it.
    Rfc2544(crate::sweep::Rfc2544Args),
    /// List stored runs, oldest first: --tag K=V, --kind, --since DATE; --json or --csv.
    Runs(crate::store_cmd::RunsArgs),
    /// Print one stored run in full (12 or #12, as `linerate runs` lists it).
    Show(crate::store_cmd::ShowArgs),
    /// Stored runs side by side, metric by metric, with ratios to the first: runs (12, #12) or
    /// tag sets (driver=a, driver=a,mtu=9000: the median of the runs carrying them).
    Compare(crate::report_cmd::CompareArgs),
    /// One self-contained HTML file (inline charts, no network access) of stored runs.
    Report(crate::report_cmd::ReportArgs),
    /// Chart stored runs as SVG or PNG: throughput over time, throughput and CPU, latency
    /// percentiles, throughput by message size, packet rate by frame size.
    Chart(crate::report_cmd::ChartArgs),
    /// Write stored runs in full as JSON, JSON Lines, per-interval CSV or Markdown.
    Export(crate::report_cmd::ExportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `linerate man > linerate.1`.
    Man,
}

/// `linerate serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default: all IPv6 and IPv4 addresses).
    #[arg(long, short = 'B', value_name = "ADDR")]
    pub bind: Option<String>,
    /// TCP port to listen on.
    #[arg(long, short = 'p', value_name = "PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Listen on a Unix-domain socket at this path instead of TCP.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["bind"])]
    pub unix: Option<PathBuf>,
    /// Exit after serving one test.
    #[arg(long, short = '1')]
    pub one_off: bool,
    /// Tests that may run at the same time.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_sessions: usize,
    /// Longest test a client may ask for.
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400.0)]
    pub max_time: f64,
    /// Highest UDP rate per stream a client may ask for (bits/s; K, M, G, T); default: none,
    /// so clients may ask for `--rate max`.
    #[arg(long, value_name = "BITS_PER_SEC")]
    pub max_rate: Option<String>,
}

/// Flags every client test takes.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Server to test against (name, address, HOST:PORT); none: an in-process server on loopback.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// Server port.
    #[arg(long, short = 'p', value_name = "PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Test duration.
    #[arg(
        long = "time",
        short = 't',
        value_name = "SECONDS",
        default_value_t = 10.0
    )]
    pub time: f64,
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
    #[arg(long, short = 'i', value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,
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
    /// Link speed for the Performance Index PI = T/C x T/L (bits/s; K, M, G, T).
    #[arg(long, value_name = "BITS_PER_SEC")]
    pub link_speed: Option<String>,
    /// Pin this end's data threads to CPU CLIENT and the server's to CPU SERVER (as iperf3
    /// -A); the placement is stored with the run.
    #[arg(long, short = 'A', value_name = "CLIENT[,SERVER]")]
    pub affinity: Option<String>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Results database, tags, --no-store.
    #[command(flatten)]
    pub store: crate::store_cmd::StoreArgs,
}

/// `linerate tcp`.
#[derive(Debug, Args)]
pub struct TcpArgs {
    /// Flags every test takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Bytes per write and read call (K, M: binary multiples).
    #[arg(
        long = "length",
        short = 'l',
        value_name = "BYTES",
        default_value = "512K"
    )]
    pub length: String,
    /// How senders hand data to the kernel: splice or sendfile (no user-space copy, TCP only) or
    /// write.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = SendModeArg::Splice)]
    pub send_mode: SendModeArg,
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
    /// Test over a Unix-domain stream socket: a server listening at PATH, or an in-process one
    /// created there when nothing is.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["bind", "ipv4", "ipv6"])]
    pub unix: Option<PathBuf>,
    /// Latency under load.
    #[command(flatten)]
    pub latency: crate::latency_args::LatencyArgs,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: crate::sweep::RepeatArgs,
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
        value_name = "PAYLOAD_BYTES",
        default_value = "1472"
    )]
    pub length: String,
    /// Target payload rate per stream in bits/s (K, M, G, T), or `max` for as fast as the
    /// sender can. Default 1M, as iperf3: UDP has no congestion control.
    #[arg(long, short = 'b', value_name = "BITS_PER_SEC", conflicts_with = "pps")]
    pub rate: Option<String>,
    /// Target datagrams per second per stream (instead of --rate).
    #[arg(long, value_name = "N")]
    pub pps: Option<String>,
    /// Send datagrams in bursts of N back to back, instead of evenly spaced.
    #[arg(long, value_name = "N")]
    pub burst: Option<u32>,
    /// Datagrams per sendmmsg/recvmmsg call.
    #[arg(long, value_name = "N", default_value_t = 64)]
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
    /// Do not let the kernel segment batches of datagrams (UDP GSO), to compare.
    #[arg(long)]
    pub no_gso: bool,
    /// Do not let the kernel coalesce arriving datagrams (UDP GRO), to compare.
    #[arg(long)]
    pub no_gro: bool,
    /// Latency under load.
    #[command(flatten)]
    pub latency: crate::latency_args::LatencyArgs,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: crate::sweep::RepeatArgs,
}

/// `linerate rr`.
#[derive(Debug, Args)]
pub struct RrArgs {
    /// Flags every test takes (-R and --bidir do not apply: the client always asks).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Request bytes.
    #[arg(
        long = "length",
        short = 'l',
        value_name = "REQUEST_BYTES",
        default_value = "64"
    )]
    pub length: String,
    /// Response bytes (default: the request's size).
    #[arg(long, value_name = "BYTES")]
    pub response: Option<String>,
    /// Warm-up left out of the summary (default: the first interval, when the test lasts more
    /// than two intervals).
    #[arg(long, value_name = "SECONDS")]
    pub omit: Option<f64>,
    /// Request/response over UDP: one datagram each way (at least 16 bytes each); a request
    /// unanswered within 1 s is counted as lost.
    #[arg(long)]
    pub udp: bool,
    /// Busy-poll the receive path (SO_BUSY_POLL) for this many µs instead of sleeping.
    #[arg(long, value_name = "US", num_args = 0..=1, default_missing_value = "50")]
    pub busy_poll: Option<u32>,
    /// Start transactions at this rate per stream (per second; K, M) instead of back to back,
    /// as sockperf --mps; a round trip longer than the gap delays the next, never bunches them.
    #[arg(long, value_name = "PER_SEC", alias = "mps")]
    pub tps: Option<String>,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: crate::sweep::RepeatArgs,
}

impl RrArgs {
    /// Validates the flags into a plan. TCP_NODELAY is always on: a request/response test
    /// measures the round trip, not Nagle's algorithm.
    pub fn plan(&self, crr: bool) -> Result<RunPlan, String> {
        if self.common.reverse || self.common.bidir {
            return Err("--reverse/--bidir: rr sends requests from the client; omit them".into());
        }
        let (min, max) = if self.udp {
            (HEADER_LEN as u64, 65_507)
        } else {
            (1, 64 << 20)
        };
        let request = length(&self.length, min, max, "a request")?;
        let response = match &self.response {
            None => request,
            Some(r) => {
                let v = parse_bytes(r).map_err(|e| format!("--response {r}: {e}"))?;
                if v < min || v > max {
                    return Err(format!(
                        "--response {r}: must be between {min} and {max} bytes"
                    ));
                }
                v as u32
            }
        };
        if crr && self.udp {
            return Err("--udp: crr opens TCP connections; use rr --udp for UDP".into());
        }
        let params = |rr| match (crr, self.udp) {
            (true, _) => Params::TcpCrr {
                rr,
                tcp: TcpOptions::no_delay(),
            },
            (false, true) => Params::UdpRr { rr },
            (false, false) => Params::TcpRr {
                rr,
                tcp: TcpOptions::no_delay(),
            },
        };
        let mut rr = RrParams::new(request, response);
        let mut plan = self.common.plan(params(rr))?;
        let (duration, interval) = (plan.spec.duration_ms, plan.spec.interval_ms);
        rr.omit_ms = match self.omit {
            None if duration > 2 * interval => interval,
            None => 0,
            Some(s) if s.is_finite() && s >= 0.0 && s * 1000.0 < duration as f64 => {
                (s * 1000.0) as u64
            }
            Some(s) => {
                return Err(format!(
                    "--omit {s}: must be at least 0 and shorter than --time"
                ))
            }
        };
        if self.busy_poll == Some(0) {
            return Err("--busy-poll 0: give the busy-poll time in µs, e.g. --busy-poll 50".into());
        }
        rr.busy_poll_us = self.busy_poll;
        rr.transactions_per_sec = match &self.tps {
            None => None,
            Some(t) => {
                let v = parse_bits_per_sec(t).map_err(|e| format!("--tps {t}: {e}"))?;
                if v == 0 || v > 10_000_000 {
                    return Err(format!(
                        "--tps {t}: must be between 1 and 10M transactions per second"
                    ));
                }
                Some(v)
            }
        };
        plan.spec.params = params(rr);
        Ok(plan)
    }
}

/// `linerate pps`.
#[derive(Debug, Args)]
pub struct PpsArgs {
    /// Flags every test takes (-t is per cell).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Ethernet frame sizes in bytes, FCS included (UDP payload = frame - 46 for IPv4).
    #[arg(
        long,
        value_name = "BYTES,...",
        default_value = "64,128,256,512,1024,1280,1518"
    )]
    pub frame: String,
    /// Flow counts (source ports per stream).
    #[arg(long, value_name = "N,...", default_value = "1,100,10000")]
    pub flows: String,
    /// Offered rate per stream in bits/s, or max.
    #[arg(long, short = 'b', value_name = "BITS_PER_SEC", default_value = "max")]
    pub rate: String,
    /// Datagrams per sendmmsg/recvmmsg call.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub batch: u16,
    /// Do not use UDP GSO.
    #[arg(long)]
    pub no_gso: bool,
    /// Do not use UDP GRO.
    #[arg(long)]
    pub no_gro: bool,
}

/// A validated `pps` invocation: one plan per cell, in order.
#[derive(Debug, Clone)]
pub struct PpsPlan {
    /// (frame bytes, payload bytes, flows, plan) per cell.
    pub cells: Vec<(u32, u32, u32, RunPlan)>,
}

fn list(flag: &str, value: &str) -> Result<Vec<u32>, String> {
    let items: Result<Vec<u32>, String> = value
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{flag} {value}: '{}' is not a whole number", v.trim()))
        })
        .collect();
    let items = items?;
    if items.is_empty() {
        return Err(format!("{flag}: give at least one value"));
    }
    Ok(items)
}

impl PpsArgs {
    /// Validates the flags into one plan per (frame, flows) cell.
    pub fn plan(&self) -> Result<PpsPlan, String> {
        let frames = list("--frame", &self.frame)?;
        if let Some(f) = frames.iter().find(|f| **f < 64) {
            return Err(format!(
                "--frame {f}: Ethernet frames are at least 64 bytes"
            ));
        }
        if self.common.bidir {
            return Err(
                "--bidir: the line rate is per direction; run pps in one direction (default or -R)"
                    .into(),
            );
        }
        let flows = list("--flows", &self.flows)?;
        let ipv6 = self.common.ipv6;
        let mut cells = Vec::new();
        for &frame in &frames {
            let payload = measure::line_rate::udp_payload(frame, ipv6)
                .filter(|p| *p as usize >= HEADER_LEN)
                .ok_or_else(|| {
                    let overhead = if ipv6 { 66 } else { 46 };
                    format!(
                        "--frame {frame}: too small; {} headers take {overhead} bytes and linerate's header {HEADER_LEN}, so the minimum is {}",
                        if ipv6 { "IPv6/UDP" } else { "IPv4/UDP" },
                        overhead + HEADER_LEN as u32
                    )
                })?;
            if payload > 65_507 {
                return Err(format!("--frame {frame}: above the largest UDP datagram"));
            }
            for &f in &flows {
                if f == 0 || f > 10_000 {
                    return Err(format!("--flows {f}: must be between 1 and 10000"));
                }
                let udp = UdpArgs {
                    common: CommonArgs {
                        ..self.common.clone()
                    },
                    length: payload.to_string(),
                    rate: Some(self.rate.clone()),
                    pps: None,
                    burst: None,
                    batch: self.batch,
                    no_batch: false,
                    flows: f,
                    flows_dst: 1,
                    no_gso: self.no_gso,
                    no_gro: self.no_gro,
                    latency: crate::latency_args::LatencyArgs {
                        latency: None,
                        latency_rate: 100,
                        latency_idle: 2.0,
                    },
                    repeat: Default::default(),
                };
                cells.push((frame, payload, f, udp.plan()?));
            }
        }
        Ok(PpsPlan { cells })
    }
}

/// `--send-mode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SendModeArg {
    /// splice(2) from a pipe holding the pattern's pages, refilled by tee(2) (TCP; Unix sockets
    /// fall back to write; sendfile where a pipe cannot hold -l bytes).
    Splice,
    /// sendfile(2) from an in-memory file (TCP; Unix sockets fall back to write).
    Sendfile,
    /// write(2) from a user buffer.
    Write,
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
}

fn seconds(flag: &str, value: f64, min: f64, max: f64) -> Result<Duration, String> {
    if !value.is_finite() || value < min || value > max {
        return Err(format!(
            "{flag} {value}: must be between {min} and {max} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(value))
}

fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => t.parse::<u8>(),
    };
    parsed.map_err(|_| format!("--tos {s}: must be a byte, 0 to 255 (or 0x00 to 0xff)"))
}

/// `--affinity CLIENT[,SERVER]`: CPU numbers; the client's is checked against this host.
fn parse_affinity(value: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let cpu = |v: &str| -> Result<Option<u32>, String> {
        let v = v.trim();
        if v.is_empty() {
            return Ok(None);
        }
        v.parse::<u32>().map(Some).map_err(|_| {
            format!("--affinity {value}: '{v}' is not a CPU number; e.g. --affinity 0,1")
        })
    };
    let (client, server) = match value.split_once(',') {
        Some((c, s)) => (cpu(c)?, cpu(s)?),
        None => (cpu(value)?, None),
    };
    if client.is_none() && server.is_none() {
        return Err(format!(
            "--affinity {value}: give a CPU for this end and/or the server, e.g. --affinity 0,1"
        ));
    }
    let cpus = engine::affinity::online_cpus();
    if let Some(c) = client.filter(|&c| c as usize >= cpus) {
        return Err(format!(
            "--affinity {value}: this host has {cpus} CPUs (0 to {}); CPU {c} is not one of them",
            cpus - 1
        ));
    }
    Ok((client, server))
}

fn length(flag_value: &str, min: u64, max: u64, what: &str) -> Result<u32, String> {
    let v = parse_bytes(flag_value).map_err(|e| format!("--length {flag_value}: {e}"))?;
    if v < min || v > max {
        return Err(format!(
            "--length {flag_value}: {what} must be between {min} and {max} bytes"
        ));
    }
    Ok(v as u32)
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
    pub fn plan(&self, params: Params) -> Result<RunPlan, String> {
        let duration = seconds("--time", self.time, 0.1, 86_400.0)?;
        if self.parallel == 0 || self.parallel > 128 {
            return Err(format!(
                "--parallel {}: must be between 1 and 128 streams",
                self.parallel
            ));
        }
        let interval = if self.interval == 0.0 {
            duration
        } else {
            seconds("--interval", self.interval, 0.05, 3600.0)?
        };
        let window = match &self.window {
            None => None,
            Some(w) => {
                let v = parse_bytes(w).map_err(|e| format!("--window {w}: {e}"))?;
                if !(2048..=(1 << 30)).contains(&v) {
                    return Err(format!("--window {w}: must be between 2K and 1G"));
                }
                Some(v as u32)
            }
        };
        let link_speed_bps = match &self.link_speed {
            None => None,
            Some(l) => {
                let v = parse_bits_per_sec(l).map_err(|e| format!("--link-speed {l}: {e}"))?;
                if v == 0 {
                    return Err(format!("--link-speed {l}: must be above 0"));
                }
                Some(v)
            }
        };
        let bind = match &self.bind {
            None => None,
            Some(b) => Some(
                b.parse::<SocketAddr>()
                    .or_else(|_| {
                        b.parse::<std::net::IpAddr>()
                            .map(|ip| SocketAddr::new(ip, 0))
                    })
                    .map_err(|_| {
                        format!("--bind {b}: not an IP address (optionally with :PORT)")
                    })?,
            ),
        };
        let (client_cpu, server_cpu) = match &self.affinity {
            None => (None, None),
            Some(a) => parse_affinity(a)?,
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
            family: if self.ipv4 {
                Family::V4
            } else if self.ipv6 {
                Family::V6
            } else {
                Family::Any
            },
            bind,
            live_rows: self.interval != 0.0 && !self.json,
        })
    }
}

impl TcpArgs {
    /// Validates the flags into a plan.
    pub fn plan(&self) -> Result<RunPlan, String> {
        let len = length(&self.length, 1, 64 << 20, "the write length")?;
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
                return Err(format!("--mss {m}: must be between 88 and 65535 bytes"));
            }
        }
        if let Some(c) = &self.congestion {
            if c.is_empty() || c.len() > 15 {
                return Err(format!("--congestion '{c}': not a congestion control name"));
            }
        }
        let stream = StreamParams {
            transport: if self.unix.is_some() {
                Transport::Unix
            } else {
                Transport::Tcp
            },
            send_mode: match (self.send_mode, self.unix.is_some()) {
                (SendModeArg::Splice, false) => SendMode::Splice,
                (SendModeArg::Sendfile, false) => SendMode::Sendfile,
                _ => SendMode::Write,
            },
            ..stream
        };
        let tcp = TcpOptions {
            mss_bytes: self.mss,
            no_delay: self.no_delay,
            congestion: self.congestion.clone(),
            tos: self.tos.as_deref().map(parse_tos).transpose()?,
        };
        plan.spec.params = Params::TcpStream { stream, tcp };
        Ok(plan)
    }
}

/// The rate iperf3 and linerate use when no UDP rate is given: 1 Mbit/s.
pub const DEFAULT_UDP_RATE_BPS: u64 = 1_000_000;

impl UdpArgs {
    /// Validates the flags into a plan.
    pub fn plan(&self) -> Result<RunPlan, String> {
        let len = length(&self.length, HEADER_LEN as u64, 65_507, "a UDP payload")?;
        let mut udp = UdpParams {
            payload_len_bytes: len,
            ..UdpParams::new(self.common.direction())
        };
        let mut plan = self.common.plan(Params::UdpStream { udp })?;
        udp.rate = match (&self.rate, &self.pps) {
            (Some(r), _) if r.eq_ignore_ascii_case("max") => UdpRate::Max,
            (Some(r), _) => {
                let v = parse_bits_per_sec(r).map_err(|e| format!("--rate {r}: {e}, or max"))?;
                if v == 0 {
                    return Err(format!("--rate {r}: must be above 0 (or max)"));
                }
                UdpRate::BitsPerSec(v)
            }
            (None, Some(p)) => {
                let v = parse_bits_per_sec(p).map_err(|e| format!("--pps {p}: {e}"))?;
                if v == 0 {
                    return Err(format!("--pps {p}: must be at least 1 datagram per second"));
                }
                UdpRate::PacketsPerSec(v)
            }
            (None, None) => UdpRate::BitsPerSec(DEFAULT_UDP_RATE_BPS),
        };
        if self.burst == Some(0) {
            return Err("--burst 0: must be at least 1 datagram".into());
        }
        if self.burst.is_some() && udp.rate == UdpRate::Max {
            return Err(
                "--burst: bursts pace a rate; give --rate BITS_PER_SEC or --pps, not --rate max"
                    .into(),
            );
        }
        udp.burst_packets = self.burst.unwrap_or(0);
        if self.batch == 0 || self.batch > 1024 {
            return Err(format!(
                "--batch {}: must be between 1 and 1024 datagrams",
                self.batch
            ));
        }
        udp.batch_packets = if self.no_batch { 1 } else { self.batch };
        udp.gso = !self.no_gso;
        udp.gro = !self.no_gro;
        if self.flows == 0 || self.flows > 10_000 {
            return Err(format!(
                "--flows {}: must be between 1 and 10000",
                self.flows
            ));
        }
        udp.flows = self.flows;
        if self.flows_dst == 0 || self.flows_dst > 10_000 {
            return Err(format!(
                "--flows-dst {}: must be between 1 and 10000",
                self.flows_dst
            ));
        }
        udp.flows_dst = self.flows_dst;
        plan.spec.params = Params::UdpStream { udp };
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use wire::spec::TestKind;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    fn plan(args: &[&str]) -> Result<RunPlan, String> {
        let cli = Cli::try_parse_from(["linerate", "tcp"].iter().chain(args))
            .map_err(|e| e.to_string())?;
        match cli.command {
            Command::Tcp(t) => t.plan(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.spec.duration_ms, 10_000);
        assert_eq!(p.spec.streams, 1);
        assert_eq!(p.spec.direction(), Direction::Send);
        assert!(p.live_rows);
    }

    #[test]
    fn send_mode_is_splice_on_tcp_and_write_on_unix_sockets() {
        let mode = |p: RunPlan| p.spec.stream().unwrap().send_mode;
        assert_eq!(mode(plan(&[]).unwrap()), SendMode::Splice);
        let sendfile = plan(&["--send-mode", "sendfile"]).unwrap();
        assert_eq!(mode(sendfile), SendMode::Sendfile);
        let unix = plan(&["--unix", "/tmp/x.sock"]).unwrap();
        assert!(unix.spec.is_unix());
        assert_eq!(mode(unix), SendMode::Write);
    }

    #[test]
    fn flags_map_into_the_spec() {
        let p = plan(&[
            "-t",
            "2.5",
            "-P",
            "4",
            "--bidir",
            "-l",
            "64K",
            "-w",
            "1M",
            "-M",
            "1400",
            "-N",
            "--tos",
            "0x10",
            "--link-speed",
            "10G",
        ])
        .unwrap();
        assert_eq!(p.spec.duration_ms, 2500);
        assert_eq!(p.spec.streams, 4);
        assert_eq!(p.spec.direction(), Direction::Bidir);
        assert_eq!(p.spec.stream().unwrap().write_len_bytes, 65536);
        assert_eq!(p.spec.window_bytes, Some(1 << 20));
        let tcp = p.spec.tcp().unwrap();
        assert_eq!(
            (tcp.mss_bytes, tcp.no_delay, tcp.tos),
            (Some(1400), true, Some(16))
        );
        assert_eq!(p.spec.link_speed_bps, Some(10_000_000_000));
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (args, needle) in [
            (&["-t", "0"][..], "--time 0"),
            (&["-P", "0"], "--parallel 0"),
            (&["-l", "10X"], "--length 10X: unknown suffix 'X'"),
            (&["-l", "0"], "--length 0"),
            (&["-w", "1"], "--window 1"),
            (&["-M", "10"], "--mss 10"),
            (&["--tos", "300"], "--tos 300"),
            (&["--link-speed", "10X"], "--link-speed 10X"),
            (&["--bind", "nope"], "--bind nope"),
            (&["--interval=-1"], "--interval -1"),
        ] {
            let err = plan(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    fn udp_plan(args: &[&str]) -> Result<RunPlan, String> {
        let cli = Cli::try_parse_from(["linerate", "udp"].iter().chain(args))
            .map_err(|e| e.to_string())?;
        match cli.command {
            Command::Udp(u) => u.plan(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn udp_flags() {
        let p = udp_plan(&[]).unwrap();
        assert_eq!(p.spec.kind(), TestKind::UdpStream);
        let udp = *p.spec.udp().unwrap();
        assert_eq!(udp.rate, UdpRate::BitsPerSec(1_000_000));
        assert_eq!(udp.payload_len_bytes, 1472);
        let p = udp_plan(&["--rate", "max", "-l", "64", "--no-batch"]).unwrap();
        let udp = *p.spec.udp().unwrap();
        assert_eq!((udp.rate, udp.batch_packets), (UdpRate::Max, 1));
        let p = udp_plan(&["--pps", "100K", "--burst", "10", "-R"]).unwrap();
        let udp = *p.spec.udp().unwrap();
        assert_eq!(
            (udp.rate, udp.burst_packets, udp.direction),
            (UdpRate::PacketsPerSec(100_000), 10, Direction::Reverse)
        );
        for (args, needle) in [
            (&["--pps", "0"][..], "--pps 0"),
            (&["--rate", "10X"], "--rate 10X: unknown suffix 'X'"),
            (&["-l", "8"], "--length 8"),
            (&["-l", "70000"], "--length 70000"),
            (&["--burst", "0"], "--burst 0"),
            (&["--batch", "0"], "--batch 0"),
        ] {
            let err = udp_plan(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    fn rr_plan(args: &[&str]) -> Result<RunPlan, String> {
        let cli =
            Cli::try_parse_from(["linerate"].iter().chain(args)).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Rr(r) => r.plan(false),
            Command::Crr(r) => r.plan(true),
            _ => unreachable!(),
        }
    }

    #[test]
    fn rr_flags_land_in_the_transaction() {
        let p = rr_plan(&[
            "rr",
            "-t",
            "3",
            "--udp",
            "-l",
            "32",
            "--tps",
            "5K",
            "--busy-poll",
        ])
        .unwrap();
        assert_eq!(
            p.spec.params,
            Params::UdpRr {
                rr: RrParams {
                    request_len_bytes: 32,
                    response_len_bytes: 32,
                    omit_ms: 1000,
                    transactions_per_sec: Some(5000),
                    busy_poll_us: Some(50),
                }
            }
        );
        let p = rr_plan(&["crr", "-t", "2", "--response", "1K"]).unwrap();
        assert_eq!(
            p.spec.params,
            Params::TcpCrr {
                rr: RrParams::new(64, 1024),
                tcp: TcpOptions::no_delay(),
            }
        );
        assert_eq!(p.spec.direction(), Direction::Send);
        for (args, needle) in [
            (&["rr", "-R"][..], "--reverse/--bidir"),
            (&["crr", "--udp"], "--udp: crr opens TCP connections"),
            (&["rr", "--tps", "0"], "--tps 0"),
            (&["rr", "--omit", "20"], "--omit 20"),
        ] {
            let err = rr_plan(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    #[test]
    fn pps_matrix_plan() {
        let cli = Cli::try_parse_from([
            "linerate",
            "pps",
            "--frame",
            "64,1518",
            "--flows",
            "1,100",
            "--link-speed",
            "10G",
        ])
        .unwrap();
        let Command::Pps(p) = cli.command else {
            unreachable!()
        };
        let plan = p.plan().unwrap();
        let cells: Vec<_> = plan.cells.iter().map(|(f, p, n, _)| (*f, *p, *n)).collect();
        assert_eq!(
            cells,
            vec![
                (64, 18, 1),
                (64, 18, 100),
                (1518, 1472, 1),
                (1518, 1472, 100)
            ]
        );
        assert_eq!(
            plan.cells[0].3.spec.udp().map(|u| u.rate),
            Some(UdpRate::Max),
            "max rate by default"
        );
        let cli = Cli::try_parse_from(["linerate", "pps", "--frame", "40"]).unwrap();
        let Command::Pps(p) = cli.command else {
            unreachable!()
        };
        assert!(p
            .plan()
            .unwrap_err()
            .contains("--frame 40: Ethernet frames are at least 64 bytes"));
        let cli = Cli::try_parse_from(["linerate", "pps", "--flows", "1,x"]).unwrap();
        let Command::Pps(p) = cli.command else {
            unreachable!()
        };
        assert!(p.plan().unwrap_err().contains("'x' is not a whole number"));
    }

    #[test]
    fn conflicting_flags_are_refused() {
        assert!(plan(&["--reverse", "--bidir"]).is_err());
        assert!(plan(&["-4", "-6"]).is_err());
    }
}
