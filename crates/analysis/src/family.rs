//! A run's kind family with the figures only that family has (`record::Family`), built by
//! [`crate::summarize()`]'s first pass over the finished flows: a `tcp_stream` run's TCP
//! figures and self probes, a `udp_stream` run's datagram accounting, a request/response
//! run's transactions. The family follows the spec's kind, so a summary always has the one
//! its record's kind has; the frames and the latency under load are added by later passes.

use record::{DatagramFamily, Family, FlowSummary, StreamFamily, TcpFigures, TransactionFamily};
use wire::TestKind;

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
    match raw.spec.kind() {
        TestKind::TcpStream => Family::Stream(StreamFamily {
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
        TestKind::UdpStream => Family::Datagram(DatagramFamily {
            udp: udp_total(flows.iter().filter_map(|f| f.udp.as_ref())).unwrap_or_default(),
            frames: None,
            latency_under_load: None,
        }),
        TestKind::TcpRr | TestKind::UdpRr | TestKind::TcpCrr | TestKind::TcpCc => {
            Family::Transaction(TransactionFamily {
                rr: rr_summary(raw, secs),
                tcp,
            })
        }
    }
}

/// A sum of figures some of which may be missing; `None` when all are.
pub(crate) fn sum_opt(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}
