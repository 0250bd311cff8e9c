//! The server's output for an iperf3 client that asked for it (`--get-server-output`): a few
//! lines in the shape of iperf3's own server summary, one per stream, from the very figures the
//! server sends in its results, so what the client prints under "Server output:" agrees with
//! what it prints as the server's side.
//!
//! iperf3's server sends its text output as `server_output_text` when it runs without `-J`, and
//! its JSON as `server_output_json` when it runs with it; the client does not say which it
//! wants, and takes whichever comes (iperf3 3.12, `iperf_api.c`). linerate serve sends the
//! text: iperf3's client prints it after "Server output:", or puts it in its JSON under
//! `server_output_text` with `-J`.
//!
//! Text made outside `report`, on purpose: it is part of the protocol's answer (the client
//! prints it as it comes), built from the figures already in the results, and the session crate
//! does not depend on `report`.

use std::fmt::Write;

use crate::protocol::{Results, StreamResults};
use measure::units::{bits_per_sec, format_bits_per_sec, format_bytes};

/// The text for `server_output_text`: a heading, then a line per stream of this server's
/// figures (`senders` says, per stream in the results' order, whether the server sent on it),
/// with a `[SUM]` line per role when it has several streams. `udp` adds each line's jitter and
/// lost/total datagrams.
pub(super) fn text(version: &str, ours: &Results, senders: &[bool], udp: bool) -> String {
    let mut out = format!("linerate serve {version}: this server's figures\n");
    out.push_str("[ ID] Interval           Transfer     Bitrate");
    if udp {
        out.push_str("          Jitter     Lost/Total Datagrams");
    }
    out.push('\n');
    for role in [true, false] {
        let mine: Vec<&StreamResults> = ours
            .streams
            .iter()
            .zip(senders)
            .filter(|(_, &sends)| sends == role)
            .map(|(s, _)| s)
            .collect();
        for s in &mine {
            line(&mut out, &format!("{:>3}", s.id), &[s], role, udp);
        }
        if mine.len() > 1 {
            line(&mut out, "SUM", &mine, role, udp);
        }
    }
    out.push_str(&format!(
        "CPU: {:.1}% (user {:.1}%, system {:.1}%)\n",
        ours.cpu_util_total, ours.cpu_util_user, ours.cpu_util_system
    ));
    out
}

/// One line over `streams` (one stream, or a role's sum): its time span, bytes, rate, and for
/// UDP the mean jitter and the lost/total datagrams (a sender's lost are 0, as iperf3 prints).
fn line(out: &mut String, id: &str, streams: &[&StreamResults], sends: bool, udp: bool) {
    let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
    let end = streams.iter().map(|s| s.end_time).fold(0.0, f64::max);
    let rate = streams
        .iter()
        .map(|s| bits_per_sec(s.bytes, s.end_time - s.start_time))
        .sum::<f64>();
    let _ = write!(
        out,
        "[{id}]   {:.2}-{end:<6.2} sec  {:<11}  {:<15}",
        0.0,
        format_bytes(bytes),
        format_bits_per_sec(rate)
    );
    if udp {
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        let total: u64 = streams.iter().map(|s| count(s.packets)).sum();
        let lost: u64 = streams.iter().map(|s| count(s.errors)).sum();
        let jitter_ms =
            streams.iter().map(|s| s.jitter).sum::<f64>() * 1000.0 / streams.len().max(1) as f64;
        let pct = if total > 0 {
            lost as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let _ = write!(out, "  {jitter_ms:.3} ms  {lost}/{total} ({pct:.2}%)");
    }
    let _ = writeln!(out, "  {}", if sends { "sender" } else { "receiver" });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(id: i32, bytes: u64, packets: i64, errors: i64) -> StreamResults {
        StreamResults {
            id,
            bytes,
            retransmits: -1,
            jitter: 0.000_02,
            errors,
            omitted_errors: None,
            packets,
            omitted_packets: None,
            start_time: 0.0,
            end_time: 2.0,
        }
    }

    #[test]
    fn a_line_per_stream_and_a_sum_per_role() {
        let ours = Results {
            cpu_util_total: 12.5,
            cpu_util_user: 2.5,
            cpu_util_system: 10.0,
            streams: vec![
                stream(1, 250_000_000, 0, 0),
                stream(3, 250_000_000, 0, 0),
                stream(4, 1 << 20, 0, 0),
            ],
            ..Results::default()
        };
        let t = text("0.1.0", &ours, &[false, false, true], false);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 7, "{t}");
        assert!(
            lines[2].starts_with("[  4]   0.00-2.00   sec  1.00 MiB"),
            "{t}"
        );
        assert!(lines[2].ends_with("sender"), "{t}");
        assert!(
            lines[3].contains("1.00 Gbit/s") && lines[3].ends_with("receiver"),
            "{t}"
        );
        assert!(
            lines[5].starts_with("[SUM]") && lines[5].contains("2.00 Gbit/s"),
            "{t}"
        );
        assert_eq!(lines[6], "CPU: 12.5% (user 2.5%, system 10.0%)");
    }

    #[test]
    fn udp_lines_carry_jitter_and_lost_of_total() {
        let ours = Results {
            streams: vec![stream(1, 1_000_000, 1000, 5)],
            ..Results::default()
        };
        let t = text("0.1.0", &ours, &[false], true);
        assert!(t.contains("Lost/Total Datagrams"), "{t}");
        assert!(t.contains("0.020 ms  5/1000 (0.50%)  receiver"), "{t}");
    }
}
