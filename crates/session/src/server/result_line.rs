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
use wire::spec::{Direction, Flow};
use wire::{TestKind, TestSpec};

/// `spec`'s test, done: `streams` are this server's ends (each with its flow: counts when its
/// window closed, and at the end), `window` that window's length by its clock.
pub fn line(
    spec: &TestSpec,
    streams: &[(Flow, StreamCounts, StreamCounts)],
    window: Duration,
) -> String {
    let secs = window.as_secs_f64();
    let n = spec.streams;
    let kind = spec.kind();
    // Request/response tests have one shape: requests from the client.
    let direction = match spec.direction() {
        _ if kind.is_rr() => "",
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
        let part = match (kind, flow) {
            (k, _) if k.connects_per_transaction() => format!("{per_s:.0} connections/s"),
            (k, _) if k.is_rr() => format!("{per_s:.0} transactions/s"),
            (TestKind::UdpStream, Flow::ClientToServer) => {
                let lost: u64 = (ours.iter())
                    .map(|(_, _, end)| end.rx.map_or(0, |r| r.lost_so_far))
                    .sum();
                let got: u64 = (ours.iter())
                    .map(|(_, _, end)| end.rx.map_or(0, |r| r.unique))
                    .sum();
                let pct = if got + lost > 0 {
                    lost as f64 * 100.0 / (got + lost) as f64
                } else {
                    0.0
                };
                format!(
                    "c->s {rate} received, {pct:.2} % lost ({lost} of {})",
                    got + lost
                )
            }
            (_, Flow::ClientToServer) => format!("c->s {rate} received"),
            (_, Flow::ServerToClient) => format!("s->c {rate} sent"),
        };
        parts.push(part);
        if kind.is_rr() {
            break;
        }
    }
    format!(
        "{}{direction}, {n} stream{plural}, {secs:.2} s: {}",
        kind.command(),
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::Params;

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
