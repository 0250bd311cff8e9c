//! The whole command line: the `linerate` parser and its subcommands (clap derive; the doc
//! comments are the help text), and the flags of `linerate serve`. Each client command's flags
//! live with their validation (`test_args`, `pps_args`, `sweep::args`, `store_cmd`,
//! `report_cmd`); this module only gathers them, so nothing it names depends on it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use session::target::DEFAULT_PORT;

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

/// Subcommands (parsed once a process, so a large variant costs nothing).
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Serve tests to linerate clients and stock iperf3 clients (TCP port 5301 on all addresses
    /// by default); iperf3 clients' runs are stored in the results database.
    Serve(ServeArgs),
    /// Print a new key, `NAME SECRET` (32 random bytes, base64): save it as the client's
    /// --auth-key file (chmod 600) and add the line to the server's --auth-keys file.
    Keygen {
        /// The key's name (the user), 1 to 64 of A-Z a-z 0-9 . _ @ -.
        name: String,
    },
    /// The commands that measure (tcp, udp, pps, rr, crr, sweep, rfc2544, mesh, rpm): one
    /// per entry of the registry, `plan::Measuring`.
    #[command(flatten)]
    Measuring(crate::measuring::MeasuringArgs),
    /// Run a plan file's steps in order (tests, sweeps, knob sweeps, meshes), every run stored
    /// tagged plan=NAME and step=STEP; --check validates it, --resume skips stored steps.
    Plan(crate::plan_cmd::PlanArgs),
    /// List stored runs, oldest first: --tag K=V, --kind, --since DATE; --json or --csv.
    Runs(crate::store_cmd::RunsArgs),
    /// Print one stored run in full (12 or #12, as `linerate runs` lists it).
    Show(crate::store_cmd::ShowArgs),
    /// Stored runs side by side, metric by metric, with ratios to the first: runs (12, #12) or
    /// tag sets (driver=a, driver=a,mtu=9000: the median of the runs carrying them).
    Compare(crate::report_cmd::CompareArgs),
    /// Is a candidate worse than a baseline? Two groups of stored runs (tag sets, or runs),
    /// metric by metric, with a bootstrap interval of the ratio of medians; exit 1 when a
    /// metric regressed beyond the baseline's noise (a CI gate), 0 otherwise.
    Check(crate::check_cmd::CheckArgs),
    /// A metric's history per series of stored runs (tag sets, or every run to a target) with
    /// its change points (E-divisive means and a permutation test): where it got slower.
    Trend(crate::trend_cmd::TrendArgs),
    /// One self-contained HTML file (inline charts, no network access) of stored runs.
    Report(crate::report_cmd::ReportArgs),
    /// Chart stored runs as SVG or PNG: throughput over time, throughput and CPU, latency
    /// percentiles, throughput by message size, packet rate by frame size.
    Chart(crate::report_cmd::ChartArgs),
    /// Write stored runs in full as JSON, JSON Lines, per-interval CSV or Markdown (or every
    /// stored field, `--format stored`, for `linerate import`).
    Export(crate::report_cmd::ExportArgs),
    /// Store the runs of `linerate export --format stored` files into a database (SQLite to
    /// PostgreSQL, or back), tags, host facts and time of storing kept.
    Import(crate::store_cmd::ImportArgs),
    /// A live web UI: start tests and watch them, browse stored runs (prints its URL; loopback
    /// unless --ui-key).
    Ui(crate::ui_cmd::UiArgs),
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
    #[arg(long, value_name = "DURATION",
        value_parser = measure::units::parse_seconds, default_value_t = 86_400.0)]
    pub max_time: f64,
    /// Highest UDP rate per stream a client may ask for (bits/s; K, M, G, T); default: none,
    /// so clients may ask for `--rate max`.
    #[arg(long, value_name = "BITS_PER_SEC")]
    pub max_rate: Option<String>,
    /// Tests one client address may run at the same time; default: up to --max-sessions.
    #[arg(long, value_name = "N")]
    pub max_sessions_per_address: Option<usize>,
    /// Most parallel streams (per direction) a client may ask for.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_streams: u16,
    /// Largest write length (-l), request and response a client may ask for (K, M: binary
    /// multiples); a sender holds at most 4 MiB of it whatever the length. The default is the
    /// top of a default size sweep.
    #[arg(long, value_name = "BYTES", default_value = "8M")]
    pub max_length: String,
    /// Most UDP destination ports (--flows-dst) per stream a client may ask for: each is one
    /// socket of the server's (100: pkt-gen's 100-destination and 10,000-flow patterns).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_flows_dst: u32,
    /// Count frame engines' frames (`udp --engine packet|xdp`) at this host's driver: an XDP
    /// program on the test's interface for each such test (needs CAP_NET_ADMIN and CAP_BPF).
    #[arg(long)]
    pub frames: bool,
    /// Let clients busy-poll (`rr --busy-poll`) up to 10,000 µs per receive, not 100: each
    /// receive may then spin a core that long.
    #[arg(long)]
    pub allow_busy_poll: bool,
    /// Sockets all running tests may hold at once (data connections, UDP sockets, control
    /// connections); a test beyond it is refused before any is opened. Default: half the
    /// open-files limit, less 64.
    #[arg(long, value_name = "N")]
    pub max_sockets: Option<usize>,
    /// Buffer memory all running tests may hold at once (K, M, G: binary multiples); a test
    /// beyond it is refused before any is allocated.
    #[arg(long, value_name = "BYTES", default_value = "1G")]
    pub max_buffer_memory: String,
    /// Ask every client for a key: lines `NAME SECRET [max-time=S] [max-rate=RATE]
    /// [max-sessions=N] [max-streams=N] [relay]` (make keys with `linerate keygen NAME`). The file must
    /// not be readable by group or others; SIGHUP rereads it.
    #[arg(long, value_name = "FILE")]
    pub auth_keys: Option<PathBuf>,
    /// With --auth-keys: an address clients reach this server at through NAT or a proxy
    /// (e.g. 203.0.113.5:5301); repeat for more. A client's proof names the address it
    /// connected to, and passes only where that is this server's address of the connection
    /// or one given here.
    #[arg(long, value_name = "ADDR:PORT", requires = "auth_keys")]
    pub auth_address: Vec<String>,
    /// Accept clients only from this address prefix (e.g. 198.18.0.0/15, 2001:db8::/32); repeat
    /// for more. A connection from elsewhere is closed before any byte is read. Default: any.
    #[arg(long, value_name = "PREFIX")]
    pub allow: Vec<String>,
    /// With --auth-keys, serve iperf3 clients anyway: iperf3 cannot prove a key, so they run
    /// unauthenticated (still within --allow, the session limits and the server's limits).
    /// Without it, a server with keys refuses every iperf3 client.
    #[arg(long)]
    pub iperf3_open: bool,
    /// Results database for iperf3 clients' runs (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite, i.e. ~/.local/share/linerate/results.sqlite,
    /// as the test commands use; none for a --unix server unless given). Read them with
    /// `linerate runs --tag client=iperf3`.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Do not store iperf3 clients' runs.
    #[arg(long, conflicts_with = "db")]
    pub no_store: bool,
    /// Run tests towards other linerate servers when a controller asks (`linerate tcp B
    /// --from THIS`, `linerate mesh`); with --auth-keys, only keys marked `relay` may ask.
    #[arg(long)]
    pub relay: bool,
    /// With --relay: the prefixes relayed tests may go to (e.g. 198.18.0.0/15); repeat for
    /// more. Default: anywhere.
    #[arg(long, value_name = "PREFIX", requires = "relay")]
    pub relay_to: Vec<String>,
    /// Serve metrics at http://ADDR:PORT/metrics, OpenMetrics to a scraper that asks for it
    /// (Prometheus does) and the classic text format otherwise (tests started, refused by reason,
    /// running; bytes and datagrams by direction; authentication failures; handshake timeouts;
    /// each client's last test's throughput), e.g. 0.0.0.0:9464.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// With --relay: the key file this server proves to a far server with --auth-keys.
    #[arg(long, value_name = "FILE", requires = "relay")]
    pub relay_key: Option<PathBuf>,
}

/// A clap usage error as one line, without clap's `error: ` and usage lines: the message and
/// what it lists (the missing arguments, say), joined, then the command or flag clap finds
/// nearest a misspelt one (`--paralel`: did you mean --parallel?).
pub fn usage_error_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind as K, ContextValue as V};
    let rendered = e.render().to_string();
    let words: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    let line = words.join(" ");
    let line = match line.strip_prefix("error: ") {
        Some(rest) => rest.to_string(),
        None if line.is_empty() => "invalid command line".into(),
        None => line,
    };
    let near = [K::SuggestedSubcommand, K::SuggestedArg].map(|k| match e.get(k) {
        Some(V::String(s)) => Some(s.clone()),
        Some(V::Strings(v)) => v.first().cloned(),
        _ => None,
    });
    let near = near
        .into_iter()
        .flatten()
        .next()
        .or_else(|| nearest_command(e));
    near.map(|n| format!("{line}; did you mean {n}?"))
        .unwrap_or(line)
}

/// The command one edit from a mistyped one (a letter changed, added, dropped or two swapped:
/// `tpc`), where clap's similarity, which weighs swapped letters lightly, finds none.
fn nearest_command(e: &clap::Error) -> Option<String> {
    use clap::{error::ContextKind, error::ContextValue, CommandFactory};
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    let command = Cli::command();
    let mut names = command.get_subcommands().map(|c| c.get_name());
    names
        .find(|name| strsim::osa_distance(name, typed) == 1)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measuring::MeasuringCli;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
        MeasuringCli::command().debug_assert();
    }
}
