//! A `linerate pps` matrix in words: one row per (frame, flows) cell against the line rate,
//! and what the `% line` column can and cannot say (a virtual link has no line rate).

use std::io::Write;

use measure::units::format_bits_per_sec as bps;
use record::PpsCell;

/// A cell's flows as `pps --flows` names them, from its run's ports (`100d`: 100 destination
/// ports from one source port).
pub(crate) fn flow_pattern(c: &PpsCell) -> String {
    match c.run.spec.udp() {
        Some(u) => wire::spec::PpsFlows::of_ports(u.flows, u.flows_dst).to_string(),
        None => c.flows.to_string(),
    }
}

/// The receiving interface of a cell that crossed a software link (veth, loopback, bridge).
fn virtual_interface(c: &PpsCell) -> Option<&str> {
    let mut frames = c
        .run
        .summary
        .flows
        .iter()
        .filter_map(|f| f.interface_frames.as_ref());
    let virtual_link = frames.rfind(|i| i.virtual_link)?;
    Some(&virtual_link.receiver_interface)
}

/// Writes a `linerate pps` matrix: one row per (frame, flows) cell.
pub fn write_pps(
    w: &mut dyn Write,
    target: &str,
    link_bps: Option<u64>,
    cells: &[PpsCell],
) -> std::io::Result<()> {
    match link_bps {
        Some(l) => writeln!(
            w,
            "packet rate to {target}; line rate = {} / 8 / (frame + 20)",
            bps(l as f64)
        )?,
        None => match cells.iter().find_map(virtual_interface) {
            Some(name) => writeln!(
                w,
                "packet rate to {target}; {name} is a virtual link, which has no line rate: \
                 give --link-speed for a % line"
            )?,
            None => writeln!(
                w,
                "packet rate to {target}; give --link-speed to compare with the line rate"
            )?,
        },
    }
    writeln!(
        w,
        "{:>6} {:>8} {:>6} {:>12} {:>12} {:>8} {:>12} {:>7}",
        "frame", "payload", "flows", "sent pps", "recv pps", "loss %", "line pps", "% line"
    )?;
    for c in cells {
        let (line, ratio) = match (c.line_rate_pps, c.line_rate_ratio) {
            (Some(l), Some(r)) => (format!("{l:.0}"), format!("{:.1}", r * 100.0)),
            _ => ("-".into(), "-".into()),
        };
        writeln!(
            w,
            "{:>6} {:>8} {:>6} {:>12.0} {:>12.0} {:>8.3} {:>12} {:>7}",
            c.frame_bytes,
            c.payload_bytes,
            flow_pattern(c),
            c.pps_sent,
            c.pps_received,
            c.loss_pct,
            line,
            ratio
        )?;
    }
    if cells
        .iter()
        .any(|c| c.line_rate_ratio.is_some_and(|r| r > 1.0))
    {
        let why = match cells.iter().find_map(virtual_interface) {
            Some(name) => format!("{name} is a virtual link, which has no line rate"),
            None => "the link is faster than --link-speed says".into(),
        };
        writeln!(
            w,
            "% line above 100: more frames crossed than the line rate allows: {why}"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::InterfaceFrames;

    /// A 1518-byte cell of `pps` frames/s over `receiver`, a veth when `virtual_link`.
    fn cell(pps: f64, link: Option<u64>, virtual_link: bool) -> PpsCell {
        let mut run = analysis::testing::udp_trial(pps, pps, 1.0, 1472);
        run.summary.flows[0].interface_frames = Some(InterfaceFrames {
            sender_interface: "va".into(),
            sender_tx_frames: pps as u64,
            sender_tx_bytes: pps as u64 * 1514,
            receiver_interface: "vb".into(),
            receiver_rx_frames: pps as u64,
            receiver_rx_bytes: pps as u64 * 1514,
            virtual_link,
            one_interface: false,
        });
        crate::pps::cell(1518, 1472, 1, link, run)
    }

    fn text(link: Option<u64>, cells: &[PpsCell]) -> String {
        let mut out = Vec::new();
        write_pps(&mut out, "198.18.0.2:5301", link, cells).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Issue 47: on a veth, a `% line` without `--link-speed` would be against no line at all.
    #[test]
    fn issue47_a_virtual_link_is_said_to_have_no_line_rate() {
        let veth = text(None, &[cell(1e5, None, true)]);
        assert!(
            veth.starts_with(
                "packet rate to 198.18.0.2:5301; vb is a virtual link, which has no line rate: \
                 give --link-speed for a % line\n"
            ),
            "{veth}"
        );
        let nic = text(None, &[cell(1e5, None, false)]);
        assert!(nic.contains("give --link-speed to compare"), "{nic}");
    }

    /// Issue 47: a veth carried 1.1 M frames/s of 1518 bytes, 135 % of a 10G line.
    #[test]
    fn issue47_a_line_exceeded_says_why() {
        let link = Some(10_000_000_000);
        let over = text(link, &[cell(1.1e6, link, true)]);
        assert!(over.contains("135.3"), "{over}");
        assert!(
            over.ends_with(
                "% line above 100: more frames crossed than the line rate allows: vb is a \
                 virtual link, which has no line rate\n"
            ),
            "{over}"
        );
        let under = text(link, &[cell(8e5, link, true)]);
        assert!(!under.contains("above 100"), "{under}");
        let nic = text(link, &[cell(1.1e6, link, false)]);
        assert!(nic.contains("faster than --link-speed says"), "{nic}");
    }
}
