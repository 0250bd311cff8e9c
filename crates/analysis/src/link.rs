//! The link speed of a run: `--link-speed`, or else what the two ends' drivers report.

use results::Summary;

use crate::summary::performance_index;

/// Without `--link-speed`, the slower of the two ends' interfaces as their drivers report
/// them becomes the summary's link speed, and the Performance Index is computed with it.
pub fn link_from_hosts(summary: &mut Summary, hosts: &results::Hosts) {
    if summary.link_speed_bps.is_some() {
        return;
    }
    let speed = |end: &str, h: &measure::host::HostFacts| {
        let mbps = h.nic.as_ref()?.speed_mbps?;
        Some((
            u64::from(mbps) * 1_000_000,
            format!("the {end}'s {} link", h.interface.as_deref()?),
        ))
    };
    let slower = [
        speed("client", &hosts.client),
        hosts.server.as_ref().and_then(|s| speed("server", s)),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|(bps, _)| *bps);
    if let Some((bps, source)) = slower {
        let busier = summary.local_cpu_pct.max(summary.remote_cpu_pct);
        summary.performance_index = performance_index(summary.throughput_bps, busier, bps as f64);
        summary.link_speed_bps = Some(bps);
        summary.link_speed_source = Some(source);
    }
}
