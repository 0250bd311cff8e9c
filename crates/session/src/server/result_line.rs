//! The one log line a finished test leaves on the server, as `iperf3 -s` shows its numbers:
//! the command the client ran (`tcp`, `udp`, `rr`, `rr --udp`, `crr`), its direction and
//! streams, each direction's rate in its unit, and the window it covers.
//!
//! Invariant: the server reports only what it counted itself. Where it receives, the rate is
//! the receiver's goodput over its window; where it sends (`-R`, `--bidir`), it is the rate it
//! sent, said so, since the client holds the receiver's count.

use std::time::Duration;

use measure::units::{bits_per_sec, format_bits_per_sec};
use wire::msg::StreamCounts;
use wire::spec::{Direction, FamilyId, Flow, Headline, Loss};
use wire::TestSpec;

/// `spec`'s test, done: `streams` are this server's ends (each with its flow: counts when its
/// window closed, and at the end), `window` that window's length by its clock.
pub fn line(
    spec: &TestSpec,
    streams: &[(Flow, StreamCounts, StreamCounts)],
    window: Duration,
) -> String {
    let secs = window.as_secs_f64();
    let n = spec.streams;
    let row = spec.kind().row();
    let transactions = row.family == FamilyId::Transaction;
    // Request/response tests have one shape: requests from the client.
    let direction = match spec.direction() {
        _ if transactions => "",
        Direction::Send => " send",
        Direction::Reverse => " reverse",
        Direction::Bidir => " bidir",
    };
    let plural = if n == 1 { "" } else { "s" };
    let mut parts = Vec::new();
    for flow in [Flow::ClientToServer, Flow::ServerToClient] {
        let ours: Vec<_> = streams.iter().filter(|(f, ..)| *f == flow).collect();
        if ours.is_empty() {
            continue;
        }
        let bytes: u64 = ours.iter().map(|(_, stop, _)| stop.bytes).sum();
        let count: u64 = ours.iter().map(|(_, stop, _)| stop.packets).sum();
        let rate = format_bits_per_sec(bits_per_sec(bytes, secs));
        let per_s = if secs > 0.0 { count as f64 / secs } else { 0.0 };
        let part = match (row.headline, row.loss, flow) {
            (Headline::Transactions | Headline::Connections, ..) => {
                format!("{per_s:.0} {}", row.headline.unit())
            }
            (Headline::Throughput, Loss::Datagrams, Flow::ClientToServer) => {
                udp_received(&rate, &ours)
            }
            (Headline::Throughput, _, Flow::ClientToServer) => format!("c->s {rate} received"),
            (Headline::Throughput, _, Flow::ServerToClient) => format!("s->c {rate} sent"),
        };
        parts.push(part);
        if transactions {
            break;
        }
    }
    format!(
        "{}{direction}, {n} stream{plural}, {secs:.2} s: {}",
        row.command,
        parts.join(", ")
    )
}

/// A UDP direction the server received: its loss as the client computes it (docs/RESULTS.md,
/// "Datagram accounting": sent − unique received), the sent count from each stream's
/// end-of-test (FIN) datagram. A stream whose FIN never came leaves the sent count to the
/// client: the line then gives the gaps in the sequence numbers, and says so.
fn udp_received(rate: &str, ours: &[&(Flow, StreamCounts, StreamCounts)]) -> String {
    let ends: Vec<_> = ours.iter().filter_map(|(_, _, end)| end.rx).collect();
    let got: u64 = ends.iter().map(|r| r.unique).sum();
    let totals: Option<u64> = match ends.len() == ours.len() {
        true => ends.iter().map(|r| r.sender_total).sum(),
        false => None,
    };
    let Some(sent) = totals else {
        let gaps: u64 = ends.iter().map(|r| r.lost_so_far).sum();
        return format!(
            "c->s {rate} received, {got} datagrams, {gaps} missing in the sequence (no end-of-test datagram: the client holds the sent count and the loss)"
        );
    };
    let lost: u64 = ends
        .iter()
        .filter_map(|r| Some(r.lost(r.sender_total?)))
        .sum();
    let pct = match sent {
        0 => 0.0,
        n => lost as f64 * 100.0 / n as f64,
    };
    format!("c->s {rate} received, {pct:.3} % lost ({lost} of {sent})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::Params;
    use wire::TestKind;

    fn bytes(b: u64) -> StreamCounts {
        StreamCounts {
            bytes: b,
            ..Default::default()
        }
    }

    #[test]
    fn a_bidir_tcp_test_says_what_each_way_moved() {
        let mut spec = TestSpec::new(Params::defaults(TestKind::TcpStream), 2, 2000);
        if let Params::TcpStream { stream, .. } = &mut spec.params {
            stream.direction = Direction::Bidir;
        }
        let b = 1_250_000_000 / 2;
        let streams = [
            (Flow::ClientToServer, bytes(b), bytes(b)),
            (Flow::ClientToServer, bytes(b), bytes(b)),
            (Flow::ServerToClient, bytes(b / 2), bytes(b / 2)),
            (Flow::ServerToClient, bytes(b / 2), bytes(b / 2)),
        ];
        let line = line(&spec, &streams, Duration::from_secs(2));
        assert_eq!(
            line,
            "tcp bidir, 2 streams, 2.00 s: c->s 5.00 Gbit/s received, s->c 2.50 Gbit/s sent"
        );
    }

    /// Issue 47: the server's line said 4.02 % lost where the client said 1.193 %: it counted
    /// gaps in the sequence numbers. It now takes the sent count from the FIN, as the client
    /// does (sent − unique received), and says what it counts when no FIN came.
    #[test]
    fn issue47_a_udp_loss_is_the_clients_definition() {
        let spec = TestSpec::new(Params::defaults(TestKind::UdpStream), 1, 1000);
        let rx = |sender_total| measure::udp_stats::UdpCounts {
            unique: 988_070,
            // Gaps open when the receiver ended: a count of its own, not the loss.
            lost_so_far: 41_000,
            sender_total,
            ..Default::default()
        };
        let end = |total| StreamCounts {
            bytes: 1000,
            rx: Some(rx(total)),
            ..Default::default()
        };
        let line_of = |total| {
            let s = [(Flow::ClientToServer, end(total), end(total))];
            line(&spec, &s, Duration::from_secs(1))
        };
        assert!(
            line_of(Some(1_000_000)).ends_with("1.193 % lost (11930 of 1000000)"),
            "{}",
            line_of(Some(1_000_000))
        );
        let without = line_of(None);
        assert!(
            without.contains("988070 datagrams, 41000 missing in the sequence (no end-of-test datagram: the client holds the sent count and the loss)"),
            "{without}"
        );
    }

    #[test]
    fn a_request_response_test_gives_its_rate() {
        let spec = TestSpec::new(Params::defaults(TestKind::TcpCrr), 1, 1000);
        let done = StreamCounts {
            packets: 5000,
            ..Default::default()
        };
        let line = line(
            &spec,
            &[(Flow::ClientToServer, done, done)],
            Duration::from_secs(1),
        );
        assert_eq!(line, "crr, 1 stream, 1.00 s: 5000 connections/s");
    }
}
