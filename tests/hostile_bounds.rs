//! Issue 48, rows 1 and 2: every number a client sends is bounded where the server reads it,
//! by the CLI's own rule (`wire::spec::bounds`). A hand-made control client asks for 1 ms
//! intervals (which grew a relay's memory 2.35 MB/s for one 128-stream test) and for
//! 2,000,000,000 µs of busy polling (196 % of the server's CPU for 200 transactions/s); the
//! server refuses each, naming the bound and its flag, and keeps serving.

use super::*;
use crate::hostile_budgets::{refusal_text, start};
use crate::proc::serve_child;
use crate::relay::{loopback_policy, relay_server, relayed};
use session::client::Silent;
use std::net::SocketAddr;
use wire::spec::bounds::{MAX_BUSY_POLL_US, MIN_INTERVAL_MS, SERVER_BUSY_POLL_US};
use wire::spec::{Params, RrParams, TcpOptions};
use wire::TestSpec;

/// `rr --tps 100 -P 2` for 1 s, busy polling `us` when set: within `--max-rate 1M`.
fn rr_spec(busy_poll_us: Option<u32>) -> TestSpec {
    let rr = RrParams {
        transactions_per_sec: Some(100),
        busy_poll_us,
        ..RrParams::new(64, 64)
    };
    let tcp = TcpOptions::no_delay();
    TestSpec::new(Params::TcpRr { rr, tcp }, 2, 1000)
}

fn one_ms_intervals(mut spec: TestSpec) -> TestSpec {
    spec.interval_ms = 1;
    spec
}

#[test]
fn a_server_refuses_intervals_below_the_clis_minimum_and_keeps_serving() {
    let (_server, port) = serve_child(&[]);
    let (_c, answer) = start(port, one_ms_intervals(rr_spec(None)));
    let text = refusal_text(&answer);
    assert!(
        text.starts_with(&format!(
            "interval 1 ms outside {MIN_INTERVAL_MS}..=1000 ms"
        )) && text.contains("--interval"),
        "{text}"
    );
    let (_c, answer) = start(port, one_ms_intervals(spec(Direction::Send, 128, 35_000)));
    let text = refusal_text(&answer);
    assert!(
        text.starts_with("interval 1 ms outside 50..=35000 ms"),
        "{text}"
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let record = run(addr, rr_spec(None)).unwrap();
    assert!(
        record.summary.rr().unwrap().transactions > 0,
        "the next test runs"
    );
}

/// The relay checks a relayed test's spec before it connects anywhere: its interval samples
/// would be its own memory.
#[test]
fn a_relay_refuses_one_ms_intervals_and_keeps_relaying() {
    let relay = relay_server(loopback_policy());
    let far = TestServer::start(ServerConfig::default());
    let short = one_ms_intervals(spec(Direction::Send, 128, 35_000));
    let err = session::client::run(&relayed(relay.addr, far.addr, short), &mut Silent)
        .unwrap_err()
        .to_string();
    assert!(err.contains("interval 1 ms outside 50..=35000 ms"), "{err}");
    let normal = spec(Direction::Send, 1, 300);
    let record = session::client::run(&relayed(relay.addr, far.addr, normal), &mut Silent).unwrap();
    assert!(record.summary.throughput_bps > 0.0);
}

#[test]
fn a_server_refuses_busy_polling_beyond_its_cap_and_names_the_flag() {
    let (_server, port) = serve_child(&["--max-rate", "1M"]);
    let (_c, answer) = start(port, rr_spec(Some(2_000_000_000)));
    let text = refusal_text(&answer);
    assert_eq!(
        text,
        format!(
            "busy-poll 2000000000 µs (--busy-poll) outside 1..={SERVER_BUSY_POLL_US} µs (this \
             server's limit; serve --allow-busy-poll takes up to {MAX_BUSY_POLL_US})"
        )
    );
    let (_c, answer) = start(port, rr_spec(Some(SERVER_BUSY_POLL_US + 1)));
    assert!(refusal_text(&answer).starts_with("busy-poll 101 µs"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let record = run(addr, rr_spec(None)).unwrap();
    assert!(
        record.summary.rr().unwrap().transactions > 0,
        "the next test runs"
    );

    // `--allow-busy-poll` raises the cap to the protocol's, never past it.
    let (_server, port) = serve_child(&["--max-rate", "1M", "--allow-busy-poll"]);
    let (_c, answer) = start(port, rr_spec(Some(2_000_000_000)));
    assert_eq!(
        refusal_text(&answer),
        format!("busy-poll 2000000000 µs (--busy-poll) outside 1..={MAX_BUSY_POLL_US} µs")
    );
}

/// The client's flags refuse what a server would: one rule, the same words.
#[test]
fn the_cli_refuses_the_same_bounds() {
    for (args, words) in [
        (
            &["rr", "--busy-poll", "20000"][..],
            "busy-poll 20000 µs (--busy-poll) outside 1..=10000 µs",
        ),
        (
            &["rr", "--busy-poll", "0"][..],
            "busy-poll 0 µs (--busy-poll) outside 1..=10000 µs",
        ),
        (
            &["tcp", "-i", "0.001"][..],
            "--interval 0.001: must be between 0.05 and 3600 seconds",
        ),
    ] {
        let out = linerate().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(words),
            "{args:?}: {stderr}"
        );
    }
}
