//! The short summary over the fixed synthetic runs (`tests/fixtures`): its length, its last
//! `RESULT` line, and that each figure is the record's, worded as the full report words it.

use measure::units::format_bits_per_sec as bps;
use record::{End, LimitedBy, RunRecord, Verdict};
use wire::spec::{Flow, TestKind};

use super::write_brief;

fn tcp() -> RunRecord {
    let runs: Vec<RunRecord> =
        serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
    runs.into_iter().next().unwrap()
}

fn udp() -> RunRecord {
    serde_json::from_str(include_str!("../tests/fixtures/udp_run.json")).unwrap()
}

fn rr() -> RunRecord {
    let runs: Vec<RunRecord> =
        serde_json::from_str(include_str!("../tests/fixtures/rr_runs.json")).unwrap();
    runs.into_iter().next().unwrap()
}

fn brief(r: &RunRecord) -> String {
    let mut out = Vec::new();
    write_brief(&mut out, r, false).unwrap();
    String::from_utf8(out).unwrap()
}

/// The lines of `text`, checking the shape every short summary has: a header first, at most
/// `max` lines, and `RESULT` on the last line only.
fn lines(text: &str, max: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() <= max,
        "{} lines, at most {max}:\n{text}",
        lines.len()
    );
    assert!(lines[0].starts_with("--- summary: "), "{text}");
    let last = lines.last().unwrap();
    assert!(last.starts_with("RESULT  "), "{text}");
    assert_eq!(text.matches("RESULT").count(), 1, "{text}");
    lines
}

const SENDER_CPU_HINT: &str = "the sending host's CPU is the limit: more streams (-P), a free core (-A); the congestion control is bbr, which paces with a timer";

fn sender_cpu() -> LimitedBy {
    LimitedBy {
        verdict: Verdict::SenderCpu,
        evidence: "sender thread at 99 % of a core".into(),
        hint: SENDER_CPU_HINT.into(),
        shaper: None,
    }
}

#[test]
fn one_tcp_direction_is_a_header_a_line_and_the_result() {
    let r = tcp();
    let f = &r.summary.flows[0];
    let text = brief(&r);
    let lines = lines(&text, 4);
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines[1],
        format!(
            "c->s  {:>11} goodput  retr 12    CPU client 38 %, server 52 % of a core",
            bps(f.throughput_bps)
        )
    );
    assert_eq!(
        lines[2],
        "RESULT  9.41 Gbit/s c->s (1 stream, 3.00 s), retr 12, sender CPU 38 %"
    );
    assert!(
        lines[0].contains("tcp_stream to 10.0.0.2:5201, 3.00 s"),
        "{text}"
    );
}

#[test]
fn by_amount_the_header_and_result_say_what_moved_and_the_time_it_took() {
    let mut r = tcp();
    r.spec.amount = Some(wire::spec::Amount::Bytes(5 << 20));
    r.summary.duration_s = 0.004_213;
    r.summary.flows[0].bytes_sent = 5 << 20;
    let text = brief(&r);
    assert!(
        text.contains("tcp_stream to 10.0.0.2:5201, 5.00 MiB in 0.00421 s;"),
        "{text}"
    );
    assert!(text.contains("(1 stream, 5.00 MiB in 0.00421 s)"), "{text}");
    r.spec.amount = Some(wire::spec::Amount::Blocks(3));
    r.spec.set_message_len_bytes(128 << 10);
    r.summary.duration_s = 12.5;
    let f = &mut r.summary.flows[0];
    f.bytes_sent = 3 << 17;
    assert!(
        brief(&r).contains("(1 stream, 3 writes of 128 KiB in 12.5 s)"),
        "{}",
        brief(&r)
    );
    r.summary.flows[0].bytes_sent = 1 << 17;
    let cut = "(1 stream, cut short: 128 KiB of 3 writes of 128 KiB in 12.5 s)";
    assert!(brief(&r).contains(cut), "{}", brief(&r));
}

#[test]
fn a_cpu_verdict_is_a_few_words_and_one_line_of_its_hints_first_clause() {
    let mut r = tcp();
    r.summary.flows[0].limited_by = Some(sender_cpu());
    let text = brief(&r);
    let lines = lines(&text, 6);
    assert!(lines[1].ends_with("  limited by sender CPU"), "{text}");
    assert_eq!(
        lines[2],
        "try   the sending host's CPU is the limit: more streams (-P), a free core (-A)"
    );
    assert!(
        !text.contains("bbr"),
        "the rest of the hint is -v's: {text}"
    );
    assert!(
        !text.contains("99 % of a core"),
        "the evidence is -v's: {text}"
    );
}

#[test]
fn a_verdict_with_nothing_to_change_gives_no_advice() {
    let mut r = tcp();
    for verdict in [
        Verdict::Path,
        Verdict::Application,
        Verdict::Congestion,
        Verdict::Unknown,
    ] {
        r.summary.flows[0].limited_by = Some(LimitedBy {
            verdict,
            evidence: "figures".into(),
            hint: "run without -b to find what else limits it".into(),
            shaper: None,
        });
        let text = brief(&r);
        assert!(!text.contains("try"), "{verdict:?}: {text}");
        assert_eq!(lines(&text, 3).len(), 3, "{verdict:?}: {text}");
    }
}

#[test]
fn bidir_is_one_line_per_direction_the_same_advice_once_and_the_sum() {
    let mut r = tcp();
    r.summary.flows[0].limited_by = Some(sender_cpu());
    let mut back = r.summary.flows[0].clone();
    back.flow = Flow::ServerToClient;
    back.sender = End::Server;
    back.throughput_bps = 5e9;
    back.retransmits = Some(3);
    r.summary.flows.push(back);
    r.summary.throughput_bps = 9.41e9 + 5e9;
    r.summary.tcp_mut().unwrap().retransmits = Some(15);
    let text = brief(&r);
    let lines = lines(&text, 8);
    assert!(lines[1].starts_with("c->s "), "{text}");
    assert!(lines[2].starts_with("s->c "), "{text}");
    // The server sends s->c: its 38 % is the sender's, the client's 52 % the receiver's.
    assert!(lines[2].contains("CPU client 52 %, server 38 %"), "{text}");
    assert_eq!(text.matches("try ").count(), 1, "{text}");
    assert_eq!(
        lines.last().unwrap(),
        &"RESULT  14.4 Gbit/s total = 9.41 Gbit/s c->s + 5.00 Gbit/s s->c (1 stream each way, 3.00 s), retr 15"
    );
}

#[test]
fn udp_says_loss_of_sent_and_jitter() {
    let r = udp();
    let u = r.summary.udp().unwrap();
    let text = brief(&r);
    let lines = lines(&text, 4);
    let lost = format!(
        "lost {}/{} datagrams ({:.3} %)",
        u.packets_lost, u.packets_sent, u.loss_pct
    );
    assert!(lines[1].contains(&lost), "{text}");
    assert!(
        lines[1].contains(&format!("jitter {:.1} us", u.jitter_us)),
        "{text}"
    );
    assert!(!lines[1].contains("retr"), "{text}");
    let result = lines.last().unwrap();
    assert!(result.starts_with(&format!(
        "RESULT  {} c->s",
        bps(r.summary.flows[0].throughput_bps)
    )));
    assert!(result.contains(&lost), "{text}");
}

#[test]
fn rr_and_crr_say_their_rate_and_round_trips() {
    let mut r = rr();
    let rr = *r.summary.rr().unwrap();
    let l = rr.latency_us.unwrap();
    let text = brief(&r);
    let lines = lines(&text, 4);
    let rate = format!("{:.0} transactions/s", rr.transactions_per_s);
    assert!(lines[1].starts_with(&format!("rr    {rate}")), "{text}");
    assert!(
        lines[1].contains(&format!("p50 {:.1} us, p99 {:.1} us", l.p50, l.p99)),
        "{text}"
    );
    assert_eq!(
        lines[2],
        format!(
            "RESULT  {rate}, p50 {:.1} us, p99 {:.1} us (1 stream, 2.00 s)",
            l.p50, l.p99
        )
    );

    r.kind = TestKind::TcpCrr;
    if let Some(rr) = r.summary.rr_mut() {
        rr.connections_per_s = Some(rr.transactions_per_s);
    }
    let text = brief(&r);
    let cps = format!("{:.0} connections/s", rr.transactions_per_s);
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("crr   {cps}")),
        "{text}"
    );
    assert!(
        lines_last(&text).starts_with(&format!("RESULT  {cps}")),
        "{text}"
    );
}

fn lines_last(text: &str) -> &str {
    text.lines().last().unwrap()
}

#[test]
fn a_partial_run_says_so_in_the_header_and_the_result() {
    let mut r = tcp();
    r.summary.interrupted = true;
    let text = brief(&r);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("(INTERRUPTED: partial)"),
        "{text}"
    );
    assert!(
        lines_last(&text).ends_with("(INTERRUPTED: partial)"),
        "{text}"
    );
    r.summary.incomplete = Some("the server went away mid-test".into());
    let text = brief(&r);
    // The reason once, in the header, with what the figures cover; the result is marked.
    assert_eq!(text.matches("went away").count(), 1, "{text}");
    let head = text.lines().next().unwrap();
    assert!(
        head.contains("(INCOMPLETE: the server went away mid-test; the client's own figures only)"),
        "{text}"
    );
    assert!(
        lines_last(&text).ends_with("(INCOMPLETE: partial)"),
        "{text}"
    );
}

#[test]
fn only_the_result_line_is_bold_and_only_when_asked() {
    let r = tcp();
    let mut out = Vec::new();
    write_brief(&mut out, &r, true).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.matches('\x1b').count(), 2, "{text:?}");
    assert!(lines_last(&text).starts_with("\x1b[1mRESULT  "), "{text:?}");
    assert!(lines_last(&text).ends_with("\x1b[0m"), "{text:?}");
    assert!(!brief(&r).contains('\x1b'));
}
