//! The verdict's rules, one test per rule; `tests/hints.rs`: what each verdict suggests.

use super::*;
use crate::testing::record_with;
use measure::cpu::CoreCpu;
use measure::host::HostFacts;
use record::{Hosts, RunRecord, StreamSummary, TcpTime};
use wire::spec::SendMode;

mod hints;

/// A one-stream TCP run at `gbps` with quiet CPUs, TCP_INFO at MSS 1448 / MTU 1500 and the
/// chrono figures of an unconstrained sender; the cases edit it.
fn run(gbps: f64) -> RunRecord {
    let mut r = record_with("tcp", gbps * 1e9);
    let f = &mut r.summary.flows[0];
    f.throughput_bps = gbps * 1e9;
    (f.sender_cpu_pct, f.receiver_cpu_pct) = (40.0, 30.0);
    f.rtt_us = Some(50);
    f.tcp_time = Some(TcpTime {
        busy_pct: 99.0,
        min_rtt_us: Some(30),
        ..TcpTime::default()
    });
    f.streams[0].tcp_info = Some(TcpInfo {
        retransmits: 10,
        rtt_us: 50,
        segs_out: Some(1_000_000),
        snd_mss_bytes: 1448,
        pmtu_bytes: 1500,
        snd_wnd_bytes: Some(4 << 20),
        ..TcpInfo::default()
    });
    r.summary.local_cores = vec![core(0, 50.0)];
    r.summary.remote_cores = vec![core(0, 40.0)];
    r
}

/// `r` with both ends pinned to core 0 (`-A 0,0`) of a 2-core host, core 0 saturated and
/// core 1 idle, at both ends (one host).
fn both_ends_on_core_zero(mut r: RunRecord) -> RunRecord {
    (r.spec.client_cpu, r.spec.server_cpu) = (Some(0), Some(0));
    r.summary.local_cores = vec![core(0, 100.0), core(1, 0.0)];
    r.summary.remote_cores = r.summary.local_cores.clone();
    r
}

/// The receiver's CPU, with the saturated core 0 named.
fn assert_names_core_zero(v: LimitedBy) {
    assert_eq!(v.verdict, Verdict::ReceiverCpu);
    assert!(
        v.evidence.contains("core 0 at 100 % busy"),
        "{}",
        v.evidence
    );
}

/// The first direction's verdict of `r` run from a client host with `client`'s facts.
fn judge_from(r: &RunRecord, client: HostFacts) -> LimitedBy {
    let mut r = r.clone();
    let hosts = Hosts {
        client,
        server: None,
    };
    add_verdicts(&mut r.summary, &r.spec, &hosts);
    r.summary.flows[0].limited_by.clone().unwrap()
}

fn core(n: u32, busy: f64) -> CoreCpu {
    CoreCpu {
        core: n,
        busy_pct: busy,
        system_pct: busy * 0.6,
        softirq_pct: busy * 0.4,
        ..CoreCpu::default()
    }
}

fn chrono(r: &mut RunRecord) -> &mut TcpTime {
    r.summary.flows[0].tcp_time.as_mut().unwrap()
}

fn judge(mut r: RunRecord) -> LimitedBy {
    add_verdicts(&mut r.summary, &r.spec, &Hosts::default());
    r.summary.flows[0].limited_by.clone().unwrap()
}

#[test]
fn the_rate_asked_for_is_the_application() {
    let mut r = run(0.4992);
    r.spec.params.tcp_mut().unwrap().pacing_bps = Some(500_000_000);
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::Application);
    assert!(
        v.evidence.contains("100 % of the 500 Mbit/s"),
        "{}",
        v.evidence
    );
    // Far below the rate asked for, pacing did not bind: the next rule (here the sender's CPU).
    r.summary.flows[0].sender_cpu_pct = 99.0;
    r.spec.params.tcp_mut().unwrap().pacing_bps = Some(5_000_000_000);
    assert_eq!(judge(r).verdict, Verdict::SenderCpu);
}

#[test]
fn a_small_advertised_window_is_the_receive_window_even_with_a_busy_reader() {
    let mut r = run(1.2);
    chrono(&mut r).rwnd_limited_pct = 58.0;
    r.summary.flows[0].receiver_cpu_pct = 95.0;
    r.summary.flows[0].streams[0]
        .tcp_info
        .as_mut()
        .unwrap()
        .snd_wnd_bytes = Some(8192);
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::ReceiveWindow);
    assert!(v.evidence.contains("rwnd-limited 58 %"), "{}", v.evidence);
    // 8 KiB per 50 µs round trip is 1.31 Gbit/s.
    assert!(
        v.evidence
            .contains("advertised 8.00 KiB at the end, which over the RTT allows 1.31 Gbit/s"),
        "{}",
        v.evidence
    );
    // Below the chrono threshold, goodput near what the window allows says the same.
    let mut near = r.clone();
    chrono(&mut near).rwnd_limited_pct = 20.0;
    assert_eq!(judge(near).verdict, Verdict::ReceiveWindow);
    // A large window that fills because the reader is at full CPU: the receiver's CPU.
    r.summary.flows[0].streams[0]
        .tcp_info
        .as_mut()
        .unwrap()
        .snd_wnd_bytes = Some(1 << 20);
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::ReceiverCpu);
    // Its thread was the limit; where its host was busiest is said too.
    assert!(
        v.evidence.contains("the receiver's host: core 0 at"),
        "{}",
        v.evidence
    );
    // The same filled window with the reader's thread below saturation but its core full of
    // its work (both ends pinned to one core): the receiver's CPU, and the core is named.
    r.summary.flows[0].receiver_cpu_pct = 51.0;
    assert_names_core_zero(judge(both_ends_on_core_zero(r)));
}

#[test]
fn the_send_buffer_by_its_chrono_share_or_by_idle_time() {
    let mut r = run(16.0);
    chrono(&mut r).sndbuf_limited_pct = 45.0;
    assert_eq!(judge(r.clone()).verdict, Verdict::SendBuffer);
    chrono(&mut r).sndbuf_limited_pct = 0.4;
    chrono(&mut r).busy_pct = 71.0;
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::SendBuffer);
    assert!(v.evidence.contains("idle 29 %"), "{}", v.evidence);
    // Idle because the writer could not keep up: its CPU, not the buffer.
    r.summary.flows[0].sender_cpu_pct = 97.0;
    assert_eq!(judge(r).verdict, Verdict::SenderCpu);
}

#[test]
fn a_saturated_thread_or_core_names_its_end() {
    let mut r = run(61.0);
    r.summary.flows[0].sender_cpu_pct = 98.0;
    let v = judge(r);
    assert_eq!(v.verdict, Verdict::SenderCpu);
    assert!(
        v.evidence.contains("sender thread at 98 %"),
        "{}",
        v.evidence
    );
    // Both ends pinned to one core of one host: the core is saturated on "both" hosts, and
    // the end whose thread used more of it is named.
    let mut r = run(23.0);
    (
        r.summary.flows[0].sender_cpu_pct,
        r.summary.flows[0].receiver_cpu_pct,
    ) = (35.0, 51.0);
    r = both_ends_on_core_zero(r);
    assert_names_core_zero(judge(r.clone()));
    // A core saturated by other work (threads idle, little interrupt work) is not the limit.
    (
        r.summary.flows[0].sender_cpu_pct,
        r.summary.flows[0].receiver_cpu_pct,
    ) = (1.0, 1.0);
    r.summary.local_cores[0].softirq_pct = 20.0;
    r.summary.remote_cores[0].softirq_pct = 20.0;
    assert_eq!(judge(r.clone()).verdict, Verdict::Unknown);
    // The same core busy with receive processing is.
    r.summary.local_cores[0].softirq_pct = 70.0;
    r.summary.remote_cores[0].softirq_pct = 70.0;
    assert_eq!(judge(r).verdict, Verdict::SenderCpu);
}

/// Unpinned ends on a host where another process fills core 0 and core 1 has room: the
/// scheduler moves a thread that waits to the idle core, so the full core is not the
/// receiver's limit (a CI run beside a spinning process called a receiver at 31 % of a core
/// CPU-bound); with every core full it is.
#[test]
fn an_unpinned_end_is_not_held_by_a_core_another_process_fills() {
    let mut r = run(23.0);
    r.summary.flows[0].receiver_cpu_pct = 31.0;
    r.summary.remote_cores = vec![core(0, 100.0), core(1, 40.0)];
    let v = judge(r.clone());
    assert_ne!(v.verdict, Verdict::ReceiverCpu, "{}", v.evidence);
    r.summary.remote_cores[1] = core(1, 99.0);
    assert_names_core_zero(judge(r));
}

/// Both ends pinned to core 0 (`-A 0,0`) while another process fills core 1 (a fresh-clone CI
/// run beside a spinning process named core 1, the spinner's, as the receiver's limit): the
/// core judged is the one the threads were pinned to, and the evidence says so.
#[test]
fn a_pinned_end_is_judged_on_its_core_not_on_a_busier_one() {
    let mut r = run(23.0);
    (
        r.summary.flows[0].sender_cpu_pct,
        r.summary.flows[0].receiver_cpu_pct,
    ) = (35.0, 51.0);
    r.summary.local_cores = vec![core(0, 99.0), core(1, 100.0)];
    r.summary.remote_cores = r.summary.local_cores.clone();
    (r.spec.client_cpu, r.spec.server_cpu) = (Some(0), Some(0));
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::ReceiverCpu, "{}", v.evidence);
    assert!(
        v.evidence.contains("pinned core: core 0 at 99 %"),
        "{}",
        v.evidence
    );
    // Unpinned, the host's busiest core is the one judged, as before.
    (r.spec.client_cpu, r.spec.server_cpu) = (None, None);
    let v = judge(r);
    assert!(
        v.evidence.contains("host: core 1 at 100 %"),
        "{}",
        v.evidence
    );
}

#[test]
fn many_streams_sharing_few_saturated_cores_are_cpu_bound_not_idle() {
    // 16 streams on a 2-core host, every core saturated: each thread used little of a core,
    // but together they filled both; the connections sat idle waiting for CPU, not for the
    // send buffer.
    let mut r = run(45.0);
    r.spec.streams = 16;
    let one = r.summary.flows[0].streams[0].clone();
    r.summary.flows[0].streams = (0..16)
        .map(|i| StreamSummary {
            stream: i,
            ..one.clone()
        })
        .collect();
    (
        r.summary.flows[0].sender_cpu_pct,
        r.summary.flows[0].receiver_cpu_pct,
    ) = (104.8, 78.7);
    r.summary.local_cores = vec![core(0, 99.0), core(1, 100.0)];
    r.summary.remote_cores = r.summary.local_cores.clone();
    chrono(&mut r).busy_pct = 50.0;
    let v = judge(r);
    assert_eq!(v.verdict, Verdict::SenderCpu, "{}", v.evidence);
    assert!(
        v.evidence
            .contains("share the host's cores at 52 % of each"),
        "{}",
        v.evidence
    );
}

#[test]
fn a_queue_or_the_links_ceiling_is_the_path() {
    let mut r = run(0.096);
    r.summary.flows[0].rtt_us = Some(6686);
    chrono(&mut r).min_rtt_us = Some(8);
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::Path);
    assert!(
        v.evidence.contains("6.69 ms against a minimum of 0.008 ms"),
        "{}",
        v.evidence
    );
    // Over loopback a long RTT is a busy host: no path to blame.
    let mut hosts = Hosts::default();
    hosts.client.interface = Some("lo".into());
    let spec = r.spec.clone();
    add_verdicts(&mut r.summary, &spec, &hosts);
    let v = r.summary.flows[0].limited_by.clone().unwrap();
    assert_eq!(v.verdict, Verdict::Unknown, "{}", v.evidence);
    // 9.3 Gbit/s of a 10 Gbit/s link: 1448 / 1538 of it is 9.41 Gbit/s.
    let mut r = run(9.3);
    r.summary.link_speed_bps = Some(10_000_000_000);
    r.summary.link_speed_source = Some(record::LinkSpeedSource::Interface {
        end: record::End::Client,
        name: "va".into(),
    });
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::Path);
    assert!(
        v.evidence.contains("99 % of the 10.0 Gbit/s link"),
        "{}",
        v.evidence
    );
    // A veth's speed is nominal: no claim from it.
    let mut hosts = Hosts::default();
    hosts.client.nic = Some(measure::nic::NicFacts {
        driver: Some("veth".into()),
        ..Default::default()
    });
    let mut veth = r.clone();
    add_verdicts(&mut veth.summary, &veth.spec, &hosts);
    let v = veth.summary.flows[0].limited_by.clone().unwrap();
    assert_eq!(v.verdict, Verdict::Unknown, "{}", v.evidence);
    // Faster than the "link" (a veth says 10 Gbit/s): no claim.
    r.summary.flows[0].throughput_bps = 28e9;
    assert_eq!(judge(r).verdict, Verdict::Unknown);
}

#[test]
fn losses_without_a_queue_are_congestion() {
    let mut r = run(27.0);
    r.summary.flows[0].streams[0]
        .tcp_info
        .as_mut()
        .unwrap()
        .retransmits = 29_000;
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::Congestion);
    assert!(v.evidence.contains("retransmits 2.90 %"), "{}", v.evidence);
    // Nearly all of them reported twice by the receiver (reordering, as on a veth): no loss.
    r.summary.flows[0].streams[0]
        .tcp_info
        .as_mut()
        .unwrap()
        .dsack_dups = Some(28_500);
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::Unknown);
    assert!(
        v.evidence
            .contains("28500 of them spurious (D-SACK), so 0.05 %"),
        "{}",
        v.evidence
    );
    // Spurious at 2.85 % of segments: the hint says the path reordered, and for a zero-copy
    // sender names the send mode that keeps one stream on one core.
    assert!(v.hint.contains("reordered"), "{}", v.hint);
    assert!(v.hint.contains("--send-mode write"), "{}", v.hint);
    r.spec.params.stream_mut().unwrap().send_mode = SendMode::Write;
    let v = judge(r.clone());
    assert!(v.hint.contains("RPS, a bond, ECMP"), "{}", v.hint);
    // A few spurious ones are no finding.
    let info = r.summary.flows[0].streams[0].tcp_info.as_mut().unwrap();
    (info.retransmits, info.dsack_dups) = (300, Some(290));
    assert_eq!(judge(r).hint, "");
}

#[test]
fn unknown_says_what_was_checked_and_missing_figures_give_no_verdict() {
    let v = judge(run(5.0));
    assert_eq!(v.verdict, Verdict::Unknown);
    assert!(v.evidence.contains("no end saturated"), "{}", v.evidence);
    assert!(v.evidence.contains("retransmits 0.00 %"), "{}", v.evidence);
    let mut r = run(5.0);
    r.summary.flows[0].sender_cpu_pct = 99.0;
    r.summary.incomplete = Some("control connection closed".into());
    let v = judge(r);
    assert_eq!(v.verdict, Verdict::Unknown);
    assert!(
        v.evidence
            .starts_with("no verdict: the run is incomplete: the server's figures are missing"),
        "{}",
        v.evidence
    );
}

#[test]
fn request_response_runs_have_no_verdict() {
    let mut r = record_with("rr", 0.0);
    add_verdicts(&mut r.summary, &r.spec, &Hosts::default());
    assert!(r.summary.flows.iter().all(|f| f.limited_by.is_none()));
}

fn udp_run(lost: u64, socket: Option<u64>, network: Option<u64>) -> RunRecord {
    let mut r = record_with("udp", 1e9);
    let f = &mut r.summary.flows[0];
    let u = f.udp.as_mut().unwrap();
    u.packets_sent = 1_000_000;
    u.packets_lost = lost;
    u.loss_pct = lost as f64 / 1e4;
    f.loss_causes = Some(record::LossCauses {
        receiver_socket_buffer: socket,
        receiver_ip: Some(0),
        receiver_host: Some(0),
        sender_host: Some(0),
        network,
        at_driver: None,
        bounds: Default::default(),
        note: String::new(),
    });
    (f.sender_cpu_pct, f.receiver_cpu_pct) = (50.0, 40.0);
    r.summary.local_cores = vec![core(0, 50.0)];
    r.summary.remote_cores = vec![core(0, 40.0)];
    r.spec.params.udp_mut().unwrap().rate = wire::spec::UdpRate::Max;
    r
}

#[test]
fn udp_loss_is_named_where_the_counters_put_it() {
    let v = judge(udp_run(200_000, Some(199_000), Some(1_000)));
    assert_eq!(v.verdict, Verdict::ReceiveWindow, "{}", v.evidence);
    assert!(
        v.evidence.contains("20.00 % of datagrams lost"),
        "{}",
        v.evidence
    );
    assert!(
        v.evidence
            .contains("100 % of them at the receiving sockets' full buffers"),
        "{}",
        v.evidence
    );
    let mut busy = udp_run(200_000, Some(199_000), Some(1_000));
    busy.summary.flows[0].receiver_cpu_pct = 99.0;
    assert_eq!(judge(busy).verdict, Verdict::ReceiverCpu);
    let v = judge(udp_run(50_000, Some(0), Some(50_000)));
    assert_eq!(v.verdict, Verdict::Path, "{}", v.evidence);
    // A little loss, or a split the counters cannot make: the other rules decide.
    assert_eq!(
        judge(udp_run(5_000, Some(5_000), Some(0))).verdict,
        Verdict::Unknown
    );
    assert_eq!(
        judge(udp_run(200_000, None, None)).verdict,
        Verdict::Unknown
    );
}

/// Issue 47: `udp -b max -w 16K` lost at the receiving sockets with the reader at 44 % of a
/// core while a core of the (shared) host was full: the buffer -w shrank, named so, not the
/// receiver's CPU. Only a saturated reader's thread makes it the CPU.
#[test]
fn issue47_a_small_w_is_the_receive_window_naming_it_not_the_cpu() {
    let mut r = udp_run(200_000, Some(199_000), Some(1_000));
    r.spec.window_bytes = Some(16 << 10);
    r.summary.flows[0].receiver_cpu_pct = 44.0;
    // The host's busiest core full (the sender's, on one host), as the issue saw.
    r.summary.remote_cores = vec![core(0, 100.0)];
    r.summary.local_cores = vec![core(0, 100.0)];
    let v = judge(r.clone());
    assert_eq!(v.verdict, Verdict::ReceiveWindow, "{}", v.evidence);
    assert!(v.evidence.contains("-w 16.0 KiB"), "{}", v.evidence);
    assert!(v.evidence.contains("reader at 44 %"), "{}", v.evidence);
    assert!(v.hint.contains("raise -w"), "{}", v.hint);
    r.summary.flows[0].receiver_cpu_pct = 95.0;
    assert_eq!(judge(r).verdict, Verdict::ReceiverCpu);
}

/// A client host whose `va` holds a tbf at 100 Mbit/s that dropped and held back `held`.
fn shaped_client(held: u64) -> HostFacts {
    let tbf = measure::qdisc::Qdisc {
        kind: "tbf".into(),
        handle: "1:".into(),
        parent: "root".into(),
        rate_bps: Some(100_000_000),
        during_test: Some(measure::qdisc::QdiscCounts {
            overlimits: held,
            ..Default::default()
        }),
        ..Default::default()
    };
    HostFacts {
        interface: Some("va".into()),
        qdiscs: Some(vec![tbf]),
        ..HostFacts::default()
    }
}

#[test]
fn goodput_at_a_tbfs_rate_is_the_shaper_named() {
    // tbf counts 1514 bytes for each 1448 of payload: 100 Mbit/s carries 95.6 of goodput.
    let mut r = run(0.0956);
    // A queue built up too, which the path rule would name: the shaper comes first.
    r.summary.flows[0].rtt_us = Some(6686);
    chrono(&mut r).min_rtt_us = Some(8);
    let v = judge_from(&r, shaped_client(5000));
    assert_eq!(v.verdict, Verdict::Shaper, "{}", v.evidence);
    assert!(
        v.evidence
            .contains("is 100 % of what the tbf qdisc at 100 Mbit/s on the client's va (tbf 1:)"),
        "{}",
        v.evidence
    );
    assert!(v.evidence.contains("5000 times"), "{}", v.evidence);
    let shaper = v.shaper.unwrap();
    assert_eq!((shaper.end, shaper.rate_bps), (End::Client, 100_000_000));
    // A qdisc that held nothing back did not limit it; nor one far above the goodput.
    assert_eq!(judge_from(&r, shaped_client(0)).verdict, Verdict::Path);
    let slow = run(0.05);
    assert_ne!(
        judge_from(&slow, shaped_client(5000)).verdict,
        Verdict::Shaper
    );
    // The server's qdiscs shape the other direction, not this one.
    let mut hosts = Hosts {
        client: HostFacts::default(),
        server: Some(shaped_client(5000)),
    };
    hosts.client.interface = Some("va".into());
    let mut r2 = r.clone();
    let spec = r2.spec.clone();
    add_verdicts(&mut r2.summary, &spec, &hosts);
    assert_eq!(
        r2.summary.flows[0].limited_by.as_ref().unwrap().verdict,
        Verdict::Path
    );
}
