//! What tells one listed run from another at a glance: its headline figure in its kind's own
//! unit ([`Headline`]: goodput for the stream kinds, packets/s for a `linerate pps` cell,
//! transactions/s for request/response), its target as people say it ([`target_label`]: an
//! in-process server is `loopback`), and how it ran (`-R`, `--bidir`, `-P 4`: [`shape_flags`]).
//!
//! Invariant: the headline of a run is the same figure whether it is read from a listing's row
//! or from the full record, so `linerate runs` and `linerate compare` never disagree.

use measure::units::format_bits_per_sec;
use record::RunRow;
use serde::Serialize;
use wire::spec::{Direction, FamilyId};
use wire::TestKind;

/// A run's headline figure: what its kind measures first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// What the figure is: `throughput`, `packet rate`, `transactions`.
    pub figure: &'static str,
    /// The value in `unit`.
    pub value: f64,
    /// `bit/s`, `packets/s`, `transactions/s`.
    pub unit: &'static str,
}

impl Headline {
    /// The headline of a run of `kind` from its indexed figures; `pps_cell` for a `linerate
    /// pps` cell (a UDP run whose point is its packet rate). `None` when the figure is missing.
    pub fn of(
        kind: TestKind,
        pps_cell: bool,
        throughput_bps: Option<f64>,
        pps_received: Option<f64>,
        transactions_per_s: Option<f64>,
    ) -> Option<Headline> {
        let (figure, value, unit) = match kind.row().family {
            FamilyId::Datagram if pps_cell => ("packet rate", pps_received?, "packets/s"),
            FamilyId::Stream | FamilyId::Datagram => ("throughput", throughput_bps?, "bit/s"),
            FamilyId::Transaction => ("transactions", transactions_per_s?, "transactions/s"),
        };
        value.is_finite().then_some(Headline {
            figure,
            value,
            unit,
        })
    }

    /// The headline of a listed run.
    pub fn of_row(r: &RunRow) -> Option<Headline> {
        let pps_cell = r.tags.get("frame_bytes").is_some();
        Headline::of(
            r.kind,
            pps_cell,
            r.throughput_bps,
            r.pps_received,
            r.transactions_per_s,
        )
    }

    /// As a cell: `9.41 Gbit/s`, `1.49 Mpps`, `38679 trans/s`.
    pub fn text(&self) -> String {
        match self.unit {
            "bit/s" => format_bits_per_sec(self.value),
            "packets/s" if self.value >= 1e6 => format!("{:.2} Mpps", self.value / 1e6),
            "packets/s" => format!("{:.0} pps", self.value),
            _ => format!("{:.0} trans/s", self.value),
        }
    }
}

/// The target as a listing shows it: `loopback` for a run against the client's own in-process
/// server (its port is a fresh one every run, so says nothing), else as stored (`HOST:PORT`,
/// `unix:PATH`, `iperf3 server at …`).
pub fn target_label(target: &str) -> String {
    if target.contains("(in-process") || target.starts_with("in-process") {
        "loopback".into()
    } else {
        target.to_string()
    }
}

/// The target's host without its port, for a column name: `198.18.0.2`, `::1`, `loopback`.
pub fn target_host(target: &str) -> String {
    let label = target_label(target);
    if let Some(rest) = label.strip_prefix('[') {
        if let Some((host, port)) = rest.split_once("]:") {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                return host.to_string();
            }
        }
    }
    match label.rsplit_once(':') {
        Some((host, port))
            if !host.contains(':')
                && !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit()) =>
        {
            host.to_string()
        }
        _ => label,
    }
}

/// A direction as listings print it: `send`, `reverse`, `bidir`; `-` for request/response.
pub fn direction_cell(d: Option<Direction>) -> &'static str {
    d.map_or("-", record::status::direction_name)
}

/// The flags that made a run's shape, as the command line spells them: `-R`, `--bidir`,
/// `-P 4` (nothing for one stream sent from the client).
pub fn shape_flags(direction: Option<Direction>, streams: u16) -> Vec<String> {
    let mut out = Vec::new();
    match direction {
        Some(Direction::Reverse) => out.push("-R".to_string()),
        Some(Direction::Bidir) => out.push("--bidir".to_string()),
        _ => {}
    }
    if streams > 1 {
        out.push(format!("-P {streams}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_heads_with_its_own_figure() {
        let h = |k, cell| Headline::of(k, cell, Some(9.41e9), Some(1.49e6), Some(38678.6));
        assert_eq!(h(TestKind::TcpStream, false).unwrap().text(), "9.41 Gbit/s");
        assert_eq!(h(TestKind::UdpStream, false).unwrap().text(), "9.41 Gbit/s");
        assert_eq!(h(TestKind::UdpStream, true).unwrap().text(), "1.49 Mpps");
        assert_eq!(h(TestKind::TcpRr, false).unwrap().text(), "38679 trans/s");
        assert_eq!(h(TestKind::TcpCrr, false).unwrap().unit, "transactions/s");
        assert_eq!(
            Headline::of(TestKind::TcpRr, false, Some(1.0), None, None),
            None
        );
    }

    #[test]
    fn targets_read_as_people_say_them() {
        assert_eq!(
            target_label("127.0.0.1:41234 (in-process server)"),
            "loopback"
        );
        assert_eq!(
            target_host("127.0.0.1:41234 (in-process server)"),
            "loopback"
        );
        assert_eq!(target_host("198.18.0.2:5301"), "198.18.0.2");
        assert_eq!(target_host("[::1]:5301"), "::1");
        assert_eq!(target_host("unix:/tmp/s"), "unix:/tmp/s");
        assert_eq!(
            target_host("iperf3 server at 10.0.0.1:5201"),
            "iperf3 server at 10.0.0.1"
        );
        assert_eq!(shape_flags(Some(Direction::Bidir), 4), ["--bidir", "-P 4"]);
        assert!(shape_flags(None, 1).is_empty());
    }
}
