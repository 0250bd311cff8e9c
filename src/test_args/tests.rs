use super::*;
use crate::commands::rr::RequestResponse;
use crate::measuring::{MeasuringArgs, MeasuringCli};
use clap::Parser;
use wire::spec::{RrParams, TestKind};
fn plan(args: &[&str]) -> Result<RunPlan, String> {
    let cli = MeasuringCli::try_parse_from(["linerate", "tcp"].iter().chain(args))
        .map_err(|e| e.to_string())?;
    match cli.command {
        MeasuringArgs::Tcp(t) => t.plan().map_err(|e| e.to_string()),
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
fn send_mode_is_auto_on_tcp_and_write_on_unix_sockets() {
    let mode = |p: RunPlan| p.spec.stream().unwrap().send_mode;
    assert_eq!(mode(plan(&[]).unwrap()), SendMode::Auto);
    let splice = plan(&["--send-mode", "splice"]).unwrap();
    assert_eq!(mode(splice), SendMode::Splice);
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
        (&["-t", "-1"][..], "--time -1"),
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
    let cli = MeasuringCli::try_parse_from(["linerate", "udp"].iter().chain(args))
        .map_err(|e| e.to_string())?;
    match cli.command {
        MeasuringArgs::Udp(u) => u.plan().map_err(|e| e.to_string()),
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
        MeasuringCli::try_parse_from(["linerate"].iter().chain(args)).map_err(|e| e.to_string())?;
    match cli.command {
        MeasuringArgs::Rr(r) => r.plan().map_err(|e| e.to_string()),
        MeasuringArgs::Crr(r) => r.plan().map_err(|e| e.to_string()),
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
fn conflicting_flags_are_refused() {
    assert!(plan(&["--reverse", "--bidir"]).is_err());
    assert!(plan(&["-4", "-6"]).is_err());
}
