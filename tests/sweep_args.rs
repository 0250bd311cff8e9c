//! `linerate sweep …`, `--repeat` and `rfc2544` flags validated into plans (no test runs).

use std::time::Duration;

use clap::CommandFactory;
use sweep::result::SweepKind;
use wire::spec::{TestKind, UdpRate};

use linerate::cli::{Cli, Command};
use linerate::measuring::MeasuringArgs as WiredCommand;
use linerate::sweep::args::{parse_duration, PreparedSweep};
use linerate::sweep::rfc2544_args::PreparedRfc2544;

fn parse(args: &[&str]) -> Result<WiredCommand, String> {
    let cli = <Cli as clap::Parser>::try_parse_from(
        std::iter::once("linerate").chain(args.iter().copied()),
    )
    .map_err(|e| e.to_string())?;
    match cli.command {
        Command::Measuring(m) => Ok(m),
        other => Err(format!("not a measuring command: {other:?}")),
    }
}

fn sweep(args: &[&str]) -> Result<PreparedSweep, String> {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    match parse(&all)? {
        WiredCommand::Sweep(s) => s.plan().map_err(|e| format!("{e:#}")),
        _ => unreachable!(),
    }
}

fn rfc(args: &[&str]) -> Result<PreparedRfc2544, String> {
    let mut all = vec!["rfc2544"];
    all.extend_from_slice(args);
    match parse(&all)? {
        WiredCommand::Rfc2544(a) => a.plan().map_err(|e| format!("{e:#}")),
        _ => unreachable!(),
    }
}

#[test]
fn definitions_are_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn repeat_flags_on_a_test_command() {
    let WiredCommand::Tcp(tcp) =
        parse(&["tcp", "HOST", "--repeat", "5", "--until-ci", "95:2"]).unwrap()
    else {
        unreachable!()
    };
    let plan = tcp.repeat.plan().unwrap();
    assert_eq!(plan.runs, 5);
    assert_eq!(plan.ci.unwrap().width_pct, 2.0);
    let WiredCommand::Rr(rr) = parse(&["rr", "--until-ci", "99:5"]).unwrap() else {
        unreachable!()
    };
    assert_eq!(rr.repeat.plan().unwrap().runs, 10);
}

#[test]
fn parameter_sweep_over_the_test_after_the_dashes() {
    let p = sweep(&[
        "streams", "server1", "--values", "1,2,4,8", "--", "tcp", "-t", "2", "-l", "64K",
    ])
    .unwrap();
    assert_eq!(p.base.common.conn.host.as_deref(), Some("server1"));
    assert_eq!(p.plan.kind, SweepKind::Streams);
    let streams: Vec<u16> = p.plan.points.iter().map(|x| x.specs[0].streams).collect();
    assert_eq!(streams, [1, 2, 4, 8]);
    let s = &p.plan.points[3].specs[0];
    assert_eq!((s.duration_ms, s.message_len_bytes()), (2000, 65536));
    // The default test is tcp, and the host may come after --.
    let p = sweep(&["window", "--values", "64K,1M", "--", "tcp", "h2"]).unwrap();
    assert_eq!(p.base.common.conn.host.as_deref(), Some("h2"));
    assert_eq!(p.plan.points[1].specs[0].window_bytes, Some(1 << 20));
    let p = sweep(&[
        "payload", "--values", "16,1472", "--", "udp", "--rate", "1G",
    ])
    .unwrap();
    assert_eq!(p.plan.points[1].specs[0].message_len_bytes(), 1472);
    let rate = |p: &PreparedSweep, i: usize| p.plan.points[i].specs[0].udp().map(|u| u.rate);
    assert_eq!(rate(&p, 1), Some(UdpRate::BitsPerSec(1_000_000_000)));
    let p = sweep(&["rate", "--values", "100M,1G", "--", "udp"]).unwrap();
    assert_eq!(rate(&p, 0), Some(UdpRate::BitsPerSec(100_000_000)));
    let p = sweep(&["mss", "--values", "536,1460", "--", "rr", "-t", "1"]).unwrap();
    let tcp = p.plan.points[0].specs[0].tcp().unwrap();
    assert_eq!(tcp.mss_bytes, Some(536));
    let p = sweep(&["streams", "--values", "1,2", "--repeat", "3"]).unwrap();
    assert_eq!(p.plan.repeat.runs, 3);
    assert_eq!(p.plan.points[0].specs[0].kind(), TestKind::TcpStream);
    let p = sweep(&["streams", "--values", "1", "--", "udp", "--latency"]).unwrap();
    assert!(p.plan.probe.is_some(), "--latency of the test carries over");
}

#[test]
fn bad_input_is_one_line_before_anything_runs() {
    for (args, needle) in [
        (
            &["streams", "--values", "4,2"][..],
            "--values 4,2: give the values in increasing order (2 comes after 4)",
        ),
        (
            &["streams", "--values", ""],
            "--values: give at least one value",
        ),
        (
            &["streams", "--values", "0,1"],
            "--values 0: streams must be between 1 and 128",
        ),
        (
            &["mss", "--values", "1400", "--", "udp"],
            "the MSS is a TCP setting",
        ),
        (
            &["rate", "--values", "1G", "--", "tcp"],
            "sweep rate: sweeps the UDP send rate",
        ),
        (
            &["streams", "a", "--values", "1", "--", "tcp", "b"],
            "HOST given twice ('a' before -- and 'b' after it)",
        ),
        (
            &["streams", "--values", "1", "--", "pps"],
            "-- pps: a sweep runs one test per point",
        ),
        (
            &["streams", "--values", "1", "--", "tcp", "--bogus"],
            "-- tcp --bogus: unexpected argument '--bogus'",
        ),
        (
            &["streams", "--values", "1", "--", "tcp", "-w", "1"],
            "--window 1: a socket buffer must be between",
        ),
        (
            &["streams", "--values", "1", "--", "tcp", "--repeat", "3"],
            "--repeat after --",
        ),
        (
            &[
                "knob",
                "--values",
                "0,1",
                "--pre",
                "ethtool -C eth0 rx-usecs 3",
            ],
            "--pre 'ethtool -C eth0 rx-usecs 3': no {value} in it",
        ),
        (
            &[
                "knob",
                "--values",
                "0,1",
                "--pre",
                "linerate-no-such-tool {value}",
            ],
            "linerate-no-such-tool: not found on PATH",
        ),
        (
            &["knob", "--values", "3,1", "--pre", "echo {value}"],
            "increasing order",
        ),
        (
            &["knob", "--values", "1", "--pre", "echo {value} | tee"],
            "'|' is shell syntax",
        ),
        (
            &[
                "knob",
                "--values",
                "1",
                "--pre",
                "echo {value}",
                "--knob-timeout",
                "soon",
            ],
            "--knob-timeout soon: give a duration",
        ),
        (
            &["size", "--proto", "udp", "--min", "8"],
            "--min 8: a UDP message is between 16",
        ),
        (
            &["size", "--min", "1M", "--max", "1K"],
            "--min 1048576 is above --max 1024",
        ),
        (
            &["size", "--repeat", "2", "--until-ci", "95:2"],
            "needs at least 3 runs",
        ),
        (&["size", "-t", "0"], "--time 0"),
    ] {
        let err = sweep(args).unwrap_err();
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains('\n'), "{args:?}: one line: {err}");
    }
}

#[test]
fn knob_sweep_plan() {
    let p = sweep(&[
        "knob",
        "--values",
        "0,1,2,3,4,5,6,7",
        "--pre",
        "echo dma_length={value}",
        "--post",
        "true",
        "--",
        "tcp",
        "h",
        "-t",
        "3",
    ])
    .unwrap();
    assert_eq!(p.plan.points.len(), 8);
    assert_eq!(p.plan.points[7].value.label, "7");
    let knob = p.plan.knob.unwrap();
    assert_eq!(knob.pre.render("5"), ["echo", "dma_length=5"]);
    assert!(knob.post.is_some());
    assert_eq!(knob.timeout(), Duration::from_secs(120));
    assert_eq!(p.plan.points[0].specs[0].duration_ms, 3000);
    // Words are run in the order given.
    let p = sweep(&[
        "knob",
        "--values",
        "bbr,cubic,reno",
        "--pre",
        "echo {value}",
    ])
    .unwrap();
    assert_eq!(p.plan.points[0].value.label, "bbr");
}

/// issue 35: the default ladder is the powers of two (about a minute of 1 s tests); `--full`
/// is NetPIPE's perturbed ladder, as the default was.
#[test]
fn size_sweep_default_is_the_powers_of_two_and_full_is_netpipes_ladder() {
    let sizes = |args: &[&str]| -> Vec<u32> {
        let p = sweep(args).unwrap();
        (p.plan.points.iter())
            .map(|pt| pt.specs[0].message_len_bytes())
            .collect()
    };
    let default = sizes(&["size"]);
    assert_eq!(default.len(), 24, "{default:?}");
    assert!(default.iter().all(|s| s.is_power_of_two()), "{default:?}");
    assert_eq!(sizes(&["size", "--full"]).len(), 66);
    assert_eq!(sizes(&["size", "--proto", "udp"]).len(), 13);
    assert_eq!(
        sizes(&["size", "--max", "64", "--perturbation", "3"]).len(),
        15
    );
}

#[test]
fn size_sweep_plan() {
    let p = sweep(&["size", "srv", "--max", "64", "-t", "0.5", "--full"]).unwrap();
    assert_eq!(p.base.common.conn.host.as_deref(), Some("srv"));
    assert_eq!(p.plan.kind, SweepKind::Size);
    assert_eq!(p.plan.points.len(), 15);
    let last = &p.plan.points[14];
    assert_eq!(last.value.number, Some(64.0));
    let (stream, rr) = (&last.specs[0], &last.specs[1]);
    assert_eq!(
        (stream.kind(), stream.message_len_bytes()),
        (TestKind::TcpStream, 64)
    );
    assert_eq!(
        stream.stream().unwrap().send_mode,
        wire::spec::SendMode::Write
    );
    assert_eq!(stream.duration_ms, 500);
    assert_eq!(
        (
            rr.kind(),
            rr.rr().map(|t| (t.request_len_bytes, t.response_len_bytes))
        ),
        (TestKind::TcpRr, Some((64, 64)))
    );
    let p = sweep(&["size", "--proto", "udp", "--max", "1472", "--no-latency"]).unwrap();
    let first = &p.plan.points[0];
    assert_eq!(first.value.number, Some(16.0));
    assert_eq!(first.specs.len(), 1);
    assert_eq!(
        first.specs[0].udp().map(|u| u.rate),
        Some(UdpRate::Max),
        "udp_stream at max rate"
    );
    let p = sweep(&["size", "--proto", "udp", "--max", "100", "-w", "1M", "-4"]).unwrap();
    assert_eq!(p.plan.points[0].specs[1].kind(), TestKind::UdpRr);
    assert_eq!(p.plan.points[0].specs[1].window_bytes, Some(1 << 20));
    assert_eq!(p.base.plan.family, session::target::Family::V4);
    // Planned time: (0.5 s + 0.1 s setup) × 2 tests per size.
    let p = sweep(&["size", "--max", "4", "-t", "0.5"]).unwrap();
    let planned = p.plan.planned_seconds();
    assert_eq!(planned.len(), 3);
    assert!(
        planned.iter().all(|s| (s - 1.2).abs() < 1e-9),
        "{planned:?}"
    );
}

#[test]
fn rfc2544_plan() {
    let p = rfc(&["dut", "--link-speed", "1G", "--trial", "2s"]).unwrap();
    assert_eq!(p.base.common.conn.host.as_deref(), Some("dut"));
    let frames: Vec<(u32, u32)> = p
        .plan
        .frames
        .iter()
        .map(|f| (f.frame_bytes, f.payload_bytes))
        .collect();
    assert_eq!(
        frames,
        [
            (64, 18),
            (128, 82),
            (256, 210),
            (512, 466),
            (1024, 978),
            (1280, 1234),
            (1518, 1472)
        ]
    );
    let f = &p.plan.frames[0];
    assert_eq!(f.line_rate_pps.map(f64::round), Some(1_488_095.0));
    assert_eq!(
        (f.spec.kind(), f.spec.duration_ms),
        (TestKind::UdpStream, 2000)
    );
    // Frames, not GSO buffers: one datagram a frame (issue 47).
    assert_eq!(
        f.spec.udp().map(|u| (u.rate, u.gso)),
        Some((UdpRate::Max, false))
    );
    assert_eq!(p.plan.loss_ratio, 0.0);
    assert_eq!(p.plan.resolution, 0.005);
    assert_eq!(p.plan.latency.unwrap().1, 2000);
    let p = rfc(&[
        "--frame",
        "1518",
        "-6",
        "--loss",
        "0.1",
        "--no-latency",
        "-P",
        "2",
        "--no-gso",
    ])
    .unwrap();
    assert!(!p.plan.frames[0].spec.udp().unwrap().gso);
    assert_eq!(p.plan.frames[0].payload_bytes, 1452);
    assert_eq!(p.plan.frames[0].line_rate_pps, None);
    assert_eq!(p.plan.frames[0].spec.streams, 2);
    assert!((p.plan.loss_ratio - 0.001).abs() < 1e-12);
    assert_eq!(p.plan.latency, None);
    for (args, needle) in [
        (
            &["--frame", "40"][..],
            "--frame 40: Ethernet frames are at least 64 bytes",
        ),
        (
            &["--frame", "1518,64"],
            "--frame 1518,64: give the values in increasing order",
        ),
        (&["--frame", ""], "--frame: give at least one value"),
        (&["--frame", "64", "-6"], "--frame 64: too small"),
        (&["--loss", "100"], "--loss 100"),
        (&["--trial", "0s"], "--trial 0s"),
        (&["--resolution", "0"], "--resolution 0"),
        (&["--link-speed", "1X"], "--link-speed 1X"),
    ] {
        let err = rfc(args).unwrap_err();
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn durations() {
    assert_eq!(
        parse_duration("--trial", "10s").unwrap(),
        Duration::from_secs(10)
    );
    assert_eq!(
        parse_duration("--trial", "500ms").unwrap(),
        Duration::from_millis(500)
    );
    assert_eq!(
        parse_duration("--trial", "1.5").unwrap(),
        Duration::from_millis(1500)
    );
    assert!(parse_duration("--trial", "abc")
        .unwrap_err()
        .to_string()
        .contains("give a duration, e.g. 10s"));
    assert!(parse_duration("--trial", "10ms")
        .unwrap_err()
        .to_string()
        .contains("between 0.1"));
}
