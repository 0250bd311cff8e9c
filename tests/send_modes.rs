//! `tcp --send-mode`: `auto` (the default) resolves per connection by the congestion control
//! the sender runs (write under BBR's pacing, splice otherwise), on whichever end sends, and
//! every stream's record says which mode ran; an explicit mode runs as asked.

use super::*;
use wire::spec::SendMode;
use wire::TestSpec;

use crate::skip;

fn spec_with(mode: SendMode, congestion: &str, direction: Direction) -> TestSpec {
    let mut sp = spec(direction, 2, 300);
    sp.stream_mut().unwrap().send_mode = mode;
    sp.tcp_mut().unwrap().congestion = Some(congestion.to_string());
    sp
}

/// Whether the host offers `name` to sockets (`-C` can set it).
fn available(name: &str) -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .is_ok_and(|s| s.split_whitespace().any(|a| a == name))
}

/// The mode every stream of every direction of a run said it ran (all the same).
fn ran(r: &record::RunRecord) -> SendMode {
    let flows = &r.summary.flows;
    assert!(!flows.is_empty());
    let mode = flows[0].send_mode.expect("the senders say which mode ran");
    for f in flows {
        assert!(f.reconciled, "{f:?}");
        assert_eq!(f.send_mode, Some(mode), "{f:?}");
        assert!(f.streams.iter().all(|s| s.send_mode == Some(mode)));
    }
    mode
}

#[test]
fn auto_sends_by_write_under_bbr_and_by_splice_otherwise_on_either_end() {
    let server = test_server();
    let mut cases = vec![("cubic", SendMode::Splice), ("reno", SendMode::Splice)];
    if available("bbr") {
        cases.push(("bbr", SendMode::Write));
    } else {
        skip("bbr is not available on this host: auto's write case is not checked");
    }
    for (cc, expected) in cases {
        for direction in [Direction::Send, Direction::Reverse, Direction::Bidir] {
            let r = run(server.addr, spec_with(SendMode::Auto, cc, direction)).unwrap();
            assert_eq!(ran(&r), expected, "{cc} {direction:?}");
        }
    }
}

#[test]
fn an_explicit_send_mode_runs_as_asked_whatever_the_congestion_control() {
    let server = test_server();
    let cc = if available("bbr") { "bbr" } else { "cubic" };
    for mode in [SendMode::Splice, SendMode::Sendfile, SendMode::Write] {
        let r = run(server.addr, spec_with(mode, cc, Direction::Bidir)).unwrap();
        assert_eq!(ran(&r), mode, "{cc}");
    }
}

#[test]
fn the_summary_names_the_mode_that_ran() {
    let out = linerate()
        .args(["tcp", "-t", "0.3", "-C", "cubic", "--no-store", "-v"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("send mode auto"), "{text}");
    assert!(text.contains("  send       splice"), "{text}");
}

#[test]
fn auto_under_bbr_splices_several_streams_to_another_host_and_writes_one() {
    if !available("bbr") {
        return skip("bbr is not available on this host: auto's stream-count rule is not checked");
    }
    if !crate::util::can_use_netns() {
        return skip("no network namespaces here: auto off this host is not checked");
    }
    let pair = crate::util::VethPair::new("sm");
    let _server = pair.serve();
    for (streams, expected) in [("1", "write"), ("2", "splice")] {
        let r = pair.client_json(&["tcp", "-t", "0.3", "-C", "bbr", "-P", streams, "--no-store"]);
        for flow in r["summary"]["flows"].as_array().unwrap() {
            assert_eq!(flow["send_mode"], expected, "-P {streams}: {flow}");
        }
    }
}
