//! `tcp --rx-mode`: every receive mode counts every byte the sender wrote, in every direction
//! (the server receives forward, the client with -R, both with --bidir), and the record and
//! the summary text say which mode ran and how the bytes left the kernel.

use super::*;
use wire::msg::ReceiveCounts;
use wire::spec::RxMode;
use wire::TestSpec;

fn spec_in(mode: RxMode, direction: Direction, streams: u16) -> TestSpec {
    let mut sp = spec(direction, streams, 300);
    sp.stream_mut().unwrap().rx_mode = mode;
    sp
}

/// A direction's receive figures, checked against its byte counts.
fn receive_of(f: &record::FlowSummary) -> ReceiveCounts {
    assert!(f.reconciled, "{f:?}");
    assert_eq!(f.bytes_received_after_drain, f.bytes_sent);
    let r = f.receive.expect("a tcp_stream receiver's figures");
    assert_eq!(r.total_bytes(), f.bytes_sent, "{r:?}");
    let per_stream: u64 = f
        .streams
        .iter()
        .map(|s| s.receive.expect("each stream's figures").total_bytes())
        .sum();
    assert_eq!(per_stream, f.bytes_sent);
    r
}

#[test]
fn every_receive_mode_counts_every_byte_the_sender_wrote_in_every_direction() {
    let server = test_server();
    for mode in [RxMode::Copy, RxMode::Trunc, RxMode::Zerocopy] {
        for (direction, streams) in [
            (Direction::Send, 1),
            (Direction::Reverse, 1),
            (Direction::Bidir, 2),
        ] {
            let r = run(server.addr, spec_in(mode, direction, streams)).unwrap();
            assert_eq!(r.spec.stream().unwrap().rx_mode, mode);
            for f in &r.summary.flows {
                assert!(f.bytes_sent > 0, "{mode:?} {direction:?}");
                let got = receive_of(f);
                assert_eq!(got.mode, mode, "{mode:?} {direction:?}: {got:?}");
                let (copied, discarded, mapped) =
                    (got.copied_bytes, got.discarded_bytes, got.mapped_bytes);
                match mode {
                    RxMode::Copy => assert_eq!(copied, f.bytes_sent),
                    RxMode::Trunc => assert_eq!(discarded, f.bytes_sent),
                    RxMode::Zerocopy => {
                        assert_eq!(discarded, 0);
                        assert_eq!(mapped + copied, f.bytes_sent);
                    }
                }
            }
        }
    }
}

#[test]
fn the_summary_text_and_json_say_which_receive_mode_ran() {
    let text = linerate_ok(&["tcp", "--no-store", "-v", "-t", "0.5", "--rx-mode", "trunc"]);
    assert!(
        text.contains("  receive    trunc (discarded in the kernel with MSG_TRUNC, never copied)"),
        "{text}"
    );
    let text = linerate_ok(&[
        "tcp",
        "--no-store",
        "-v",
        "-t",
        "0.5",
        "-R",
        "--rx-mode",
        "zerocopy",
    ]);
    assert!(text.contains("  receive    zerocopy, "), "{text}");
    assert!(text.contains("% of bytes mapped"), "{text}");
    let copy = linerate_ok(&["tcp", "--no-store", "-v", "-t", "0.3"]);
    assert!(
        !copy.contains("  receive "),
        "copy, the default, has no line: {copy}"
    );

    let json = linerate_json(&[
        "tcp",
        "--no-store",
        "-t",
        "0.5",
        "--json",
        "--rx-mode",
        "zerocopy",
    ]);
    assert_eq!(json["spec"]["params"]["stream"]["rx_mode"], "zerocopy");
    let flow = &json["summary"]["flows"][0];
    assert_eq!(flow["receive"]["mode"], "zerocopy");
    let (mapped, copied) = (
        num(&flow["receive"]["mapped_bytes"]),
        num(&flow["receive"]["copied_bytes"]),
    );
    assert_eq!(mapped + copied, num(&flow["bytes_received_after_drain"]));
    let json = linerate_json(&["tcp", "--no-store", "-t", "0.3", "--json"]);
    assert!(json["spec"]["params"]["stream"].get("rx_mode").is_none());
    assert_eq!(json["summary"]["flows"][0]["receive"]["mode"], "copy");
}

#[test]
fn a_receive_mode_where_it_cannot_run_is_refused_naming_the_flag() {
    fails_in_one_line(
        &[
            "tcp",
            "--unix",
            "/nonexistent/linerate.sock",
            "--rx-mode",
            "trunc",
        ],
        "--rx-mode trunc: TCP only",
    );
    fails_in_one_line(
        &["tcp", "--self-probes", "10", "--rx-mode", "zerocopy"],
        "--rx-mode zerocopy: not with self probes",
    );
    let out = linerate()
        .args(["tcp", "--rx-mode", "splice"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--rx-mode"), "{stderr}");
    assert!(stderr.contains("copy, trunc, zerocopy"), "{stderr}");
}

#[test]
fn a_server_refuses_a_peers_receive_mode_over_unix_sockets() {
    let mut sp = spec_in(RxMode::Trunc, Direction::Send, 1);
    sp.stream_mut().unwrap().transport = wire::spec::Transport::Unix;
    let err = sp
        .check(&wire::spec::SpecLimits::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "receive mode trunc (--rx-mode): TCP only, not Unix-domain sockets"
    );
}
