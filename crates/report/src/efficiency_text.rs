//! A direction's cost lines in a run's summary text: what the test's own data threads spent
//! per KB received (`cost`) and, labelled apart, the whole hosts' CPU per KB moved (`host cost`,
//! netperf's service demand, which counts other work on the hosts too); then its efficiency:
//! goodput per core of each end's data threads, datagrams per core (UDP) and CPU seconds per
//! 10⁹ bytes received, each end named (METHODOLOGY.md section 6). Absent figures read
//! `CPU not reported`.

use std::io::Write;

use measure::units::format_bits_per_sec as bps;
use record::{Efficiency, FlowSummary};

/// One end's figures: `48.1 Gbit/s per core, 0.166 CPU s/GB` (with `, 1.05 M datagrams/s per core`
/// between for UDP).
fn end_words(
    bps_per_core: Option<f64>,
    pps_per_core: Option<f64>,
    s_per_gb: Option<f64>,
) -> String {
    let Some(rate) = bps_per_core else {
        return "CPU not reported".into();
    };
    let mut words = format!("{} per core", bps(rate));
    if let Some(pps) = pps_per_core {
        // Datagrams received per second, not frames: with GSO they may cross in far fewer.
        words.push_str(&format!(", {:.3} M datagrams/s per core", pps / 1e6));
    }
    if let Some(s) = s_per_gb {
        words.push_str(&format!(", {s:.3} CPU s/GB"));
    }
    words
}

/// `  efficiency sender (client) 48.1 Gbit/s per core, 0.166 CPU s/GB; receiver (server) …`,
/// when the direction has the figures (stream kinds whose ends reported CPU).
pub(crate) fn write_efficiency(
    w: &mut dyn Write,
    f: &FlowSummary,
    sender: &str,
    receiver: &str,
) -> std::io::Result<()> {
    let Some(e) = f.efficiency else {
        return Ok(());
    };
    let Efficiency {
        sender_goodput_bps_per_core: snd,
        receiver_goodput_bps_per_core: rcv,
        sender_cpu_s_per_gb: snd_gb,
        receiver_cpu_s_per_gb: rcv_gb,
        sender_pps_per_core: snd_pps,
        receiver_pps_per_core: rcv_pps,
        ..
    } = e;
    writeln!(
        w,
        "  efficiency sender ({sender}) {}; receiver ({receiver}) {} (goodput per core of each end's data threads)",
        end_words(snd, snd_pps, snd_gb),
        end_words(rcv, rcv_pps, rcv_gb)
    )
}

/// `  cost       sender (client) 0.172 us/KB, receiver (server) …` from the data threads'
/// CPU, then `  host cost  …` from the whole hosts' (service demand), each when known.
pub(crate) fn write_cost(
    w: &mut dyn Write,
    f: &FlowSummary,
    sender: &str,
    receiver: &str,
) -> std::io::Result<()> {
    let us = |x: Option<f64>| x.map_or("CPU not reported".to_string(), |x| format!("{x:.3} us/KB"));
    if let Some(e) = f
        .efficiency
        .filter(|e| e.sender_us_per_kb.or(e.receiver_us_per_kb).is_some())
    {
        writeln!(
            w,
            "  cost       sender ({sender}) {}, receiver ({receiver}) {} (each end's data threads' CPU per KB received)",
            us(e.sender_us_per_kb),
            us(e.receiver_us_per_kb)
        )?;
    }
    if let (Some(snd), Some(rcv)) = (
        f.sender_service_demand_us_per_kb,
        f.receiver_service_demand_us_per_kb,
    ) {
        writeln!(
            w,
            "  host cost  sender host {snd:.3} us/KB, receiver host {rcv:.3} us/KB (service demand: whole-host CPU per KB moved, other work included)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(e: Option<Efficiency>) -> String {
        let runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let mut f = runs[0].summary.flows[0].clone();
        f.efficiency = e;
        let mut out = Vec::new();
        write_efficiency(&mut out, &f, "client", "server").unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_end_reads_in_gbits_per_core_with_cpu_seconds_per_gigabyte() {
        let e = Efficiency {
            sender_goodput_bps_per_core: Some(48.1e9),
            receiver_goodput_bps_per_core: Some(31.0e9),
            sender_cpu_s_per_gb: Some(8.0 / 48.1),
            receiver_cpu_s_per_gb: Some(8.0 / 31.0),
            ..Efficiency::default()
        };
        assert_eq!(
            text(Some(e)),
            "  efficiency sender (client) 48.1 Gbit/s per core, 0.166 CPU s/GB; \
             receiver (server) 31.0 Gbit/s per core, 0.258 CPU s/GB \
             (goodput per core of each end's data threads)\n"
        );
    }

    #[test]
    fn the_tests_own_cost_and_the_hosts_are_labelled_apart() {
        let runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let mut f = runs[0].summary.flows[0].clone();
        f.efficiency = Some(Efficiency {
            sender_us_per_kb: Some(0.1725),
            ..Efficiency::default()
        });
        (
            f.sender_service_demand_us_per_kb,
            f.receiver_service_demand_us_per_kb,
        ) = (Some(171.631), Some(2.0));
        let mut out = Vec::new();
        write_cost(&mut out, &f, "client", "server").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  cost       sender (client) 0.172 us/KB, receiver (server) CPU not reported \
             (each end's data threads' CPU per KB received)\n  \
             host cost  sender host 171.631 us/KB, receiver host 2.000 us/KB \
             (service demand: whole-host CPU per KB moved, other work included)\n"
        );
    }

    #[test]
    fn udp_adds_packets_per_core_and_an_unreported_end_says_so() {
        let e = Efficiency {
            sender_goodput_bps_per_core: Some(2.5e9),
            sender_cpu_s_per_gb: Some(3.2),
            sender_pps_per_core: Some(1.25e6),
            ..Efficiency::default()
        };
        let line = text(Some(e));
        assert!(
            line.contains(
                "sender (client) 2.50 Gbit/s per core, 1.250 M datagrams/s per core, 3.200 CPU s/GB;"
            ),
            "{line}"
        );
        assert!(
            line.contains("receiver (server) CPU not reported"),
            "{line}"
        );
        assert_eq!(text(None), "", "no figures, no line");
    }
}
