//! A run's kind family with the figures only that family has (`record::Family`), built by
//! [`crate::summarize()`]'s first pass over the finished flows: a `tcp_stream` run's TCP
//! figures and self probes, a `udp_stream` run's datagram accounting, a request/response
//! run's transactions. The family follows the spec's kind, so a summary always has the one
//! its record's kind has; the frames and the latency under load are added by later passes.

use record::{DatagramFamily, Family, FlowSummary, StreamFamily, TcpFigures, TransactionFamily};
use wire::spec::FamilyId;

use crate::raw::RawRun;
use crate::udp_rr::{rr_summary, udp_total};

/// The run's kind family with its own figures over its finished flows (the frames and the
/// latency under load are added later by their passes).
pub(crate) fn of(raw: &RawRun, secs: f64, flows: &[FlowSummary]) -> Family {
    let all_infos: Vec<_> = flows
        .iter()
        .flat_map(|f| f.streams.iter().filter_map(|s| s.tcp_info))
        .collect();
    let tcp = TcpFigures {
        retransmits: flows.iter().fold(None, |a, f| sum_opt(a, f.retransmits)),
        rtt_us: (!all_infos.is_empty())
            .then(|| all_infos.iter().map(|t| t.rtt_us).sum::<u32>() / all_infos.len() as u32),
    };
    match raw.spec.kind().row().family {
        FamilyId::Stream => Family::Stream(StreamFamily {
            tcp,
            self_probes: raw
                .spec
                .stream()
                .and_then(|s| s.self_probes_per_s)
                .map(|_| rr_summary(raw, secs)),
            latency_under_load: None,
        }),
        // Every stream of a UDP test has its accounting, so the total is there (zeros
        // without streams).
        FamilyId::Datagram => Family::Datagram(DatagramFamily {
            udp: udp_total(flows.iter().filter_map(|f| f.udp.as_ref())).unwrap_or_default(),
            frames: None,
            latency_under_load: None,
        }),
        FamilyId::Transaction => Family::Transaction(TransactionFamily {
            rr: rr_summary(raw, secs),
            tcp,
        }),
    }
}

/// A sum of figures some of which may be missing; `None` when all are.
pub(crate) fn sum_opt(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use record::{Hosts, RunRecord};
    use wire::msg::{ServerInfo, ServerResults};
    use wire::spec::Params;
    use wire::{TestKind, TestSpec};

    use super::*;
    use crate::verdict::Client;

    /// A one-second run of `kind` in which nothing moved.
    fn idle_run(kind: TestKind) -> RawRun {
        let window = Duration::from_secs(1);
        RawRun {
            spec: TestSpec::new(Params::defaults(kind), 1, 1000),
            window,
            interrupted: false,
            local_wall: window,
            local_streams: Vec::new(),
            local_process_cpu: Default::default(),
            local_system_cpu: None,
            local_cores: Vec::new(),
            local_drops: None,
            local_link: None,
            server: ServerResults {
                wall_us: 1_000_000,
                window_us: 1_000_000,
                ..ServerResults::default()
            },
            server_lost: None,
            window_start: None,
        }
    }

    #[test]
    fn every_kind_is_summarized_in_its_family_and_stored_as_it() {
        for kind in TestKind::ALL {
            let raw = idle_run(kind);
            let s = crate::summarize(&raw, &[], &Hosts::default(), Client::Linerate);
            assert!(s.family.fits(kind), "{kind:?}: {}", s.family.name());
            let expected = match kind {
                TestKind::TcpStream => "stream",
                TestKind::UdpStream => "datagram",
                _ => "transaction",
            };
            assert_eq!(s.family.name(), expected, "{kind:?}");
            let server = ServerInfo::default();
            let r = RunRecord::new(raw.spec, "in-process".into(), 1, server, None, s);
            let back: RunRecord = serde_json::to_string(&r)
                .and_then(|j| serde_json::from_str(&j))
                .unwrap();
            assert_eq!(back.summary.family.name(), expected, "{kind:?}");
        }
    }
}
