//! What each verdict suggests (its `try` line), for each kind and client: a table of
//! (kind, verdict) cases whose hints must make sense for the run (issue 35), and the notes
//! under BBR and on one host, said once per run.

use super::*;

/// Words a hint of a UDP run must not say: TCP's own remedies.
const TCP_ONLY: &[&str] = &[
    "splice",
    "--send-mode",
    "-C ",
    "cubic",
    "bbr",
    " fq",
    "tcp_rmem",
    "tcp_wmem",
    "--notsent-lowat",
    "-Z",
];

/// One case: a run built to get `verdict`, judged as `client`'s.
struct Case {
    name: &'static str,
    udp: bool,
    record: RunRecord,
    verdict: Verdict,
}

fn case(name: &'static str, udp: bool, record: RunRecord, verdict: Verdict) -> Case {
    Case {
        name,
        udp,
        record,
        verdict,
    }
}

fn tcp_cases() -> Vec<Case> {
    let mut paced = run(0.4992);
    paced.spec.params.tcp_mut().unwrap().pacing_bps = Some(500_000_000);
    let mut window = run(1.2);
    chrono(&mut window).rwnd_limited_pct = 58.0;
    window.summary.flows[0].streams[0]
        .tcp_info
        .as_mut()
        .unwrap()
        .snd_wnd_bytes = Some(8192);
    let mut buffer = run(16.0);
    chrono(&mut buffer).sndbuf_limited_pct = 45.0;
    let mut sender = run(61.0);
    sender.summary.flows[0].sender_cpu_pct = 98.0;
    let mut receiver = run(30.0);
    receiver.summary.flows[0].receiver_cpu_pct = 99.0;
    let mut queue = run(0.096);
    queue.summary.flows[0].rtt_us = Some(6686);
    chrono(&mut queue).min_rtt_us = Some(8);
    let mut lossy = run(27.0);
    lossy.summary.flows[0].streams[0]
        .tcp_info
        .as_mut()
        .unwrap()
        .retransmits = 29_000;
    vec![
        case("tcp paced", false, paced, Verdict::Application),
        case("tcp window", false, window, Verdict::ReceiveWindow),
        case("tcp sndbuf", false, buffer, Verdict::SendBuffer),
        case("tcp sender cpu", false, sender, Verdict::SenderCpu),
        case("tcp receiver cpu", false, receiver, Verdict::ReceiverCpu),
        case("tcp queue", false, queue, Verdict::Path),
        case("tcp losses", false, lossy, Verdict::Congestion),
        case("tcp unknown", false, run(5.0), Verdict::Unknown),
    ]
}

fn udp_cases() -> Vec<Case> {
    let mut paced = udp_run(0, Some(0), Some(0));
    paced.spec.params.udp_mut().unwrap().rate = wire::spec::UdpRate::BitsPerSec(500_000_000);
    paced.summary.flows[0].throughput_bps = 499e6;
    let mut sender = udp_run(0, Some(0), Some(0));
    sender.summary.flows[0].sender_cpu_pct = 99.0;
    let mut reader = udp_run(200_000, Some(199_000), Some(1_000));
    reader.summary.flows[0].receiver_cpu_pct = 99.0;
    vec![
        case("udp paced", true, paced, Verdict::Application),
        case("udp sender cpu", true, sender, Verdict::SenderCpu),
        case("udp reader", true, reader, Verdict::ReceiverCpu),
        case(
            "udp socket buffer",
            true,
            udp_run(200_000, Some(199_000), Some(1_000)),
            Verdict::ReceiveWindow,
        ),
        case(
            "udp network",
            true,
            udp_run(50_000, Some(0), Some(50_000)),
            Verdict::Path,
        ),
        case(
            "udp unknown",
            true,
            udp_run(0, Some(0), Some(0)),
            Verdict::Unknown,
        ),
    ]
}

/// `r`'s first verdict as `client`'s run on a host whose default congestion control is bbr.
fn judge_as(r: &RunRecord, client: Client) -> LimitedBy {
    let mut r = r.clone();
    let hosts = Hosts {
        client: HostFacts {
            tcp_congestion: Some("bbr".into()),
            ..Default::default()
        },
        server: None,
    };
    add_verdicts_for(&mut r.summary, &r.spec, &hosts, client);
    r.summary.flows[0].limited_by.clone().unwrap()
}

/// What any hint must hold for its case: the kind's own remedies, the client's own flags,
/// `-P` only below the host's cores.
fn check(c: &Case, client: Client, v: &LimitedBy) {
    let at = format!("{} ({client:?}): {}", c.name, v.hint);
    assert_eq!(v.verdict, c.verdict, "{at}; evidence: {}", v.evidence);
    if c.udp {
        for word in TCP_ONLY {
            assert!(!v.hint.contains(word), "{word:?} on UDP: {at}");
        }
    }
    if c.verdict == Verdict::Application {
        assert!(!(c.udp && v.hint.contains("without -b")), "{at}");
        let unpaced = match (c.udp, client) {
            (true, Client::Linerate) => "-b max",
            (true, Client::Iperf3) => "-b 0",
            (false, _) => "without -b",
        };
        assert!(v.hint.contains(unpaced), "{at}");
    }
    if client == Client::Iperf3 {
        assert!(
            !v.hint.contains("linerate"),
            "iperf3 paced its own run: {at}"
        );
    }
    let cores = c.record.summary.local_cores.len();
    if c.record.spec.flows().len() >= cores {
        assert!(!v.hint.contains("-P"), "streams already >= cores: {at}");
    }
}

#[test]
fn every_kind_and_verdict_gets_a_hint_that_fits_its_run() {
    for c in tcp_cases().into_iter().chain(udp_cases()) {
        for client in [Client::Linerate, Client::Iperf3] {
            check(&c, client, &judge_as(&c.record, client));
        }
    }
}

#[test]
fn more_streams_only_while_the_run_has_fewer_than_the_hosts_cores() {
    let four = |mut r: RunRecord| {
        r.summary.local_cores = (0..4).map(|n| core(n, 40.0)).collect();
        r.summary.remote_cores = r.summary.local_cores.clone();
        r
    };
    for c in tcp_cases().into_iter().chain(udp_cases()) {
        if !matches!(c.verdict, Verdict::SenderCpu | Verdict::ReceiverCpu) {
            continue;
        }
        let v = judge_as(&four(c.record.clone()), Client::Linerate);
        assert!(
            v.hint.contains("more streams (-P)"),
            "{}: {}",
            c.name,
            v.hint
        );
        // One stream on a 1-core host: -P would add none.
        let v = judge_as(&c.record, Client::Linerate);
        assert!(!v.hint.contains("-P"), "{}: {}", c.name, v.hint);
    }
    // Loopback: one stream's sender and receiver fill a 2-core host.
    let mut r = run(61.0);
    r.summary.flows[0].sender_cpu_pct = 98.0;
    r.summary.local_cores = vec![core(0, 99.0), core(1, 99.0)];
    let on = |interface: &str| {
        let client = HostFacts {
            interface: Some(interface.into()),
            ..Default::default()
        };
        judge_from(&r, client).hint
    };
    assert!(!on("lo").contains("-P"), "{}", on("lo"));
    assert!(on("eth0").contains("-P"), "{}", on("eth0"));
}

#[test]
fn zero_copy_is_suggested_only_to_a_tcp_sender_that_copies() {
    let mut r = run(61.0);
    r.summary.flows[0].sender_cpu_pct = 98.0;
    let splice = judge_as(&r, Client::Linerate);
    assert!(
        !splice.hint.contains("--send-mode"),
        "already splice: {}",
        splice.hint
    );
    r.spec.params.stream_mut().unwrap().send_mode = SendMode::Write;
    let write = judge_as(&r, Client::Linerate);
    assert!(write.hint.contains("--send-mode splice"), "{}", write.hint);
}

#[test]
fn a_bidir_runs_bbr_note_is_said_once() {
    let mut r = run(25.0);
    r.spec.params.stream_mut().unwrap().direction = wire::spec::Direction::Bidir;
    let mut back = r.summary.flows[0].clone();
    (back.flow, back.sender) = (Flow::ServerToClient, End::Server);
    r.summary.flows.push(back);
    for f in &mut r.summary.flows {
        f.sender_cpu_pct = 98.0;
    }
    let hosts = Hosts {
        client: HostFacts {
            tcp_congestion: Some("bbr".into()),
            ..Default::default()
        },
        server: Some(HostFacts {
            tcp_congestion: Some("bbr".into()),
            ..Default::default()
        }),
    };
    add_verdicts(&mut r.summary, &r.spec, &hosts);
    let hints: Vec<String> = r
        .summary
        .flows
        .iter()
        .map(|f| f.limited_by.clone().unwrap().hint)
        .collect();
    assert!(
        hints
            .iter()
            .all(|h| h.starts_with("the sending host's CPU")),
        "{hints:?}"
    );
    let notes = hints.iter().filter(|h| h.contains("-C cubic")).count();
    assert_eq!(notes, 1, "{hints:?}");
}

#[test]
fn a_cpu_verdict_under_bbr_says_what_pacing_costs() {
    let mut r = run(25.0);
    r.summary.flows[0].sender_cpu_pct = 98.0;
    let judge_on = |r: &RunRecord, default: Option<&str>| {
        judge_from(
            r,
            HostFacts {
                tcp_congestion: default.map(Into::into),
                ..Default::default()
            },
        )
    };
    let bbr = judge_on(&r, Some("bbr"));
    assert_eq!(bbr.verdict, Verdict::SenderCpu);
    assert!(bbr.hint.contains("-C cubic"), "{}", bbr.hint);
    assert!(!judge_on(&r, Some("cubic")).hint.contains("bbr"));
    assert!(!judge_on(&r, None).hint.contains("bbr"));
    // -C on both ends wins over the host's default.
    r.spec.tcp_mut().unwrap().congestion = Some("cubic".into());
    assert!(!judge_on(&r, Some("bbr")).hint.contains("bbr"));
    r.spec.tcp_mut().unwrap().congestion = Some("bbr".into());
    assert!(judge_on(&r, Some("cubic")).hint.contains("bbr"));
}

#[test]
fn receivers_that_did_the_sending_on_one_host_are_named() {
    let mut r = run(36.0);
    (
        r.summary.flows[0].sender_cpu_pct,
        r.summary.flows[0].receiver_cpu_pct,
    ) = (18.0, 171.0);
    let judge_on = |r: &RunRecord, interface: &str, cc: &str| {
        judge_from(
            r,
            HostFacts {
                interface: Some(interface.into()),
                tcp_congestion: Some(cc.into()),
                ..Default::default()
            },
        )
    };
    let bbr = judge_on(&r, "lo", "bbr");
    assert_eq!(bbr.verdict, Verdict::ReceiverCpu);
    assert!(
        bbr.evidence
            .contains("receivers' threads (171 % of a core) did much of the sending"),
        "{}",
        bbr.evidence
    );
    assert!(bbr.hint.contains("--notsent-lowat 256K"), "{}", bbr.hint);
    let cubic = judge_on(&r, "lo", "cubic");
    assert!(cubic.evidence.contains("did much of the sending"));
    assert!(!cubic.hint.contains("--notsent-lowat"), "{}", cubic.hint);
    // Two hosts: a receiver's core cannot send for the other host.
    assert!(!judge_on(&r, "eth0", "bbr").evidence.contains("sending"));
    // A sender as busy as its receiver sent for itself.
    r.summary.flows[0].sender_cpu_pct = 98.0;
    assert!(!judge_on(&r, "lo", "bbr")
        .evidence
        .contains("did much of the sending"));
}
