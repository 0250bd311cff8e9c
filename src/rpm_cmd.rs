//! `linerate rpm`: responsiveness under working conditions (`session::rpm`), printed as text
//! (a line per interval on stderr, then the summary) or one JSON document.

use std::io::Write;
use std::time::Duration;

use anyhow::{bail, Result};
use engine::Signal;
use results::rpm::{RpmTick, RpmWay};
use session::rpm::{RpmProgress, RpmSetup};
use wire::spec::{Params, StreamParams, TcpOptions};

use crate::commands::RunOutcome;
use crate::connection_args::ConnectionArgs;
use crate::store_args::StoreArgs;
use crate::test_args::CommonArgs;

/// Which way the load goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Way {
    /// Client -> server.
    Up,
    /// Server -> client.
    Down,
    /// Up, then down.
    Both,
}

/// `linerate rpm`.
#[derive(Debug, clap::Args)]
pub struct RpmArgs {
    /// Where the server is, the key, the address family.
    #[command(flatten)]
    pub conn: ConnectionArgs,
    /// Load-generating connections at most (the draft's MNP); each is a session, so the
    /// server must allow as many (serve --max-sessions, 16 by default).
    #[arg(long = "parallel", short = 'P', value_name = "N", default_value_t = 16)]
    pub parallel: u16,
    /// Longest each direction may take, stable or not, seconds.
    #[arg(
        long = "time",
        short = 't',
        value_name = "SECONDS",
        default_value_t = 20.0
    )]
    pub time: f64,
    /// Which way the load goes.
    #[arg(long, value_enum, default_value_t = Way::Both)]
    pub direction: Way,
    /// The load connections' TCP congestion control on both ends, e.g. cubic, reno, bbr.
    #[arg(long, short = 'C', value_name = "ALGO")]
    pub congestion: Option<String>,
    /// TCP_NOTSENT_LOWAT on the load connections, bytes (K, M): less waits in the senders'
    /// buffers, which the self probes show.
    #[arg(long, value_name = "BYTES")]
    pub notsent_lowat: Option<String>,
    /// Foreign probes a second, and as many self probes over all connections (the draft's
    /// MPS of 100 is both kinds together: at most 50); lowered to keep both within 5 % of the
    /// capacity.
    #[arg(long, value_name = "PER_SEC", default_value_t = 50)]
    pub probes: u32,
    /// Print one JSON document instead of the text.
    #[arg(long)]
    pub json: bool,
}

struct Lines;

impl RpmProgress for Lines {
    fn tick(&mut self, way: RpmWay, tick: &RpmTick) {
        eprintln!("{}", report::rpm_text::tick_line(way, tick));
    }
}

/// `linerate rpm`: the idle path, then each direction until stable or out of time.
pub fn rpm(args: &RpmArgs, interrupt: Signal) -> Result<RunOutcome> {
    if !(1..=64).contains(&args.parallel) {
        bail!(
            "-P {}: between 1 and 64 load-generating connections",
            args.parallel
        );
    }
    if !(1..=50).contains(&args.probes) {
        bail!(
            "--probes {}: between 1 and 50 a second (the draft's cap, 100 probes a second, is foreign and self probes together)",
            args.probes
        );
    }
    if !(2.0..=600.0).contains(&args.time) {
        bail!(
            "--time {}: between 2 and 600 seconds per direction",
            args.time
        );
    }
    let common = CommonArgs {
        conn: args.conn.clone(),
        time: args.time,
        parallel: 1,
        reverse: false,
        bidir: false,
        interval: 1.0,
        link_speed: None,
        json: false,
        json_stream: false,
        store: StoreArgs::default(),
    };
    let plan = common.plan(Params::TcpStream {
        stream: StreamParams::new(wire::spec::Direction::Send),
        tcp: TcpOptions::default(),
    })?;
    if let Some(name) = &args.congestion {
        engine::sockopt::check_congestion(name)?;
    }
    let reached = crate::reach::target_for(&plan, &common, None)?;
    let setup = RpmSetup {
        target: reached.target.clone(),
        label: reached.label.clone(),
        key: reached.key.clone(),
        params: analysis::rpm::Params {
            max_connections: args.parallel,
            max_probes_per_s: f64::from(args.probes) * 2.0,
            ..Default::default()
        },
        max_time: Duration::from_secs_f64(args.time),
        congestion: args.congestion.clone(),
        notsent_lowat_bytes: args
            .notsent_lowat
            .as_deref()
            .map(crate::test_args::notsent_lowat)
            .transpose()?,
        interrupt,
    };
    let ways: &[RpmWay] = match args.direction {
        Way::Up => &[RpmWay::Up],
        Way::Down => &[RpmWay::Down],
        Way::Both => &[RpmWay::Up, RpmWay::Down],
    };
    let result = session::rpm::run(&setup, ways, &mut Lines)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        report::rpm_text::write(&mut out, &result)?;
    }
    out.flush()?;
    Ok(RunOutcome {
        interrupted: result.interrupted,
        incomplete: false,
    })
}
