//! The link speed of a run and the Performance Index computed with it.
//!
//! The link speed is `--link-speed`, or else the slower of the two ends' physical interfaces
//! as their drivers report it. A software interface's speed (a veth says 10 Gbit/s, and
//! carries more) is nominal, so it gives none. The Performance Index (`T/C × T/L`) is a
//! throughput figure: request/response runs (rr, crr) have none, and none is computed when the
//! goodput is above what the link carries, its speed each way (a utilisation above 100 % says
//! the link speed is wrong, which the summary's text then says).

use record::{End, LinkSpeedSource, Summary};

/// Whether `summary`'s link speed was given with `--link-speed` (not read from a driver).
pub fn from_flag(summary: &Summary) -> bool {
    summary
        .link_speed_source
        .as_ref()
        .is_some_and(LinkSpeedSource::is_flag)
}

/// `PI = T/C × T/L` with T and L in Mbit/s and C in %; `None` when C or L is zero.
pub fn performance_index(throughput_bps: f64, cpu_pct: f64, link_bps: f64) -> Option<f64> {
    let t = throughput_bps / 1e6;
    let l = link_bps / 1e6;
    (cpu_pct > 0.0 && l > 0.0).then(|| (t / cpu_pct) * (t / l))
}

/// Whether `summary`'s goodput is above what its link speed carries: the speed once per
/// direction (a full-duplex link carries it each way), so the link speed is wrong.
pub fn above_link(summary: &Summary) -> bool {
    let directions = summary.flows.len().max(1) as f64;
    summary
        .link_speed_bps
        .is_some_and(|l| summary.throughput_bps > l as f64 * directions)
}

/// Whether a run is judged by its throughput (stream kinds), so a Performance Index means
/// something: request/response runs (with `rr` figures) are judged by their round trips.
fn throughput_run(summary: &Summary) -> bool {
    summary.rr().is_none()
}

/// The summary's Performance Index from its throughput, the busier end's data-thread CPU and
/// its link speed, for throughput runs with a link speed.
pub fn set_performance_index(summary: &mut Summary) {
    let busier = summary.local_cpu_pct.max(summary.remote_cpu_pct);
    summary.performance_index = summary
        .link_speed_bps
        .filter(|_| throughput_run(summary) && !above_link(summary))
        .and_then(|l| performance_index(summary.throughput_bps, busier, l as f64));
}

/// Without `--link-speed`, the slower of the two ends' physical interfaces as their drivers
/// report them becomes the summary's link speed, and the Performance Index is computed with it.
pub(crate) fn link_from_hosts(summary: &mut Summary, hosts: &record::Hosts) {
    if summary.link_speed_bps.is_some() {
        set_performance_index(summary);
        return;
    }
    let speed = |end: End, h: &measure::host::HostFacts| {
        let nic = h.nic.as_ref().filter(|n| !n.is_virtual())?;
        let mbps = nic.speed_mbps?;
        let name = h.interface.clone()?;
        Some((
            u64::from(mbps) * 1_000_000,
            LinkSpeedSource::Interface { end, name },
        ))
    };
    let slower = [
        speed(End::Client, &hosts.client),
        hosts.server.as_ref().and_then(|s| speed(End::Server, s)),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|(bps, _)| *bps);
    if let Some((bps, source)) = slower {
        summary.link_speed_bps = Some(bps);
        summary.link_speed_source = Some(source);
        set_performance_index(summary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::host::HostFacts;
    use measure::nic::NicFacts;
    use record::Hosts;

    #[test]
    fn performance_index_formula() {
        assert_eq!(
            performance_index(1e9, 50.0, 10e9),
            Some((1000.0 / 50.0) * (1000.0 / 10000.0))
        );
        assert_eq!(performance_index(1e9, 0.0, 10e9), None);
        assert_eq!(performance_index(10e9, 50.0, 10e9), Some(200.0 * 1.0));
    }

    fn host(driver: &str, mbps: u32) -> HostFacts {
        HostFacts {
            interface: Some("eth0".into()),
            nic: Some(NicFacts {
                driver: Some(driver.into()),
                speed_mbps: Some(mbps),
                ..NicFacts::default()
            }),
            ..HostFacts::default()
        }
    }

    fn with_link(kind: &str, gbps: f64, hosts: &Hosts) -> Summary {
        let mut s = crate::testing::record_with(kind, gbps * 1e9).summary;
        (s.link_speed_bps, s.link_speed_source, s.performance_index) = (None, None, None);
        (s.local_cpu_pct, s.remote_cpu_pct) = (50.0, 40.0);
        link_from_hosts(&mut s, hosts);
        s
    }

    #[test]
    fn a_physical_nics_speed_gives_the_pi_and_a_veths_gives_none() {
        let physical = Hosts {
            client: host("ixgbe", 10_000),
            server: None,
        };
        let s = with_link("tcp", 9.0, &physical);
        assert_eq!(s.link_speed_bps, Some(10_000_000_000));
        assert_eq!(
            s.link_speed_source,
            Some(LinkSpeedSource::Interface {
                end: End::Client,
                name: "eth0".into()
            })
        );
        let stored = serde_json::to_value(&s).unwrap();
        assert_eq!(stored["link_speed_source"], "the client's eth0 link");
        assert!(s.performance_index.is_some());
        let veth = Hosts {
            client: host("veth", 10_000),
            server: None,
        };
        let s = with_link("tcp", 9.0, &veth);
        assert_eq!((s.link_speed_bps, s.performance_index), (None, None));
    }

    #[test]
    fn no_pi_for_request_response_or_above_the_link_speed() {
        let physical = Hosts {
            client: host("ixgbe", 10_000),
            server: None,
        };
        let rr = with_link("rr", 0.001, &physical);
        assert_eq!(
            rr.performance_index, None,
            "rr is judged by its round trips"
        );
        let above = with_link("tcp", 15.5, &physical);
        assert_eq!(above.link_speed_bps, Some(10_000_000_000));
        assert_eq!(
            above.performance_index, None,
            "15.5 Gbit/s on a 10 Gbit/s link"
        );
        assert!(above_link(&above));
        // Both ways at once, a full-duplex link carries its speed each way.
        let mut bidir = crate::testing::record_with("tcp", 15.5e9).summary;
        let back = bidir.flows[0].clone();
        bidir.flows.push(back);
        (bidir.link_speed_bps, bidir.link_speed_source) = (None, None);
        link_from_hosts(&mut bidir, &physical);
        assert!(!above_link(&bidir) && bidir.performance_index.is_some());
        // --link-speed is taken at its word, within the same rules.
        let mut flag = crate::testing::record_with("tcp", 0.5e9).summary;
        (flag.local_cpu_pct, flag.remote_cpu_pct) = (10.0, 5.0);
        flag.link_speed_bps = Some(1_000_000_000);
        flag.link_speed_source = Some(LinkSpeedSource::Flag);
        link_from_hosts(&mut flag, &Hosts::default());
        assert!(from_flag(&flag));
        assert_eq!(flag.performance_index, Some((500.0 / 10.0) * 0.5));
    }
}
