//! The datagram and request/response parts of a run summary: per-stream datagram accounting
//! and its totals, and the transactions and round trips of every requester.
//!
//! Invariant of the datagram accounting: `sent = received + lost` for every stream, flow and
//! run, since loss is what the receiver's sequence accounting says never arrived.

use measure::latency::Latency;
use measure::udp_stats::UdpCounts;
use record::{RrSummary, UdpSummary};
use wire::spec::Loss;

use crate::per_sec;
use crate::raw::RawRun;

/// Datagram accounting of one stream: `sent` by the sender, `rx_end` the receiver's final
/// accounting, `rx_stop` its accounting when the window closed.
pub(crate) fn udp_stream_summary(
    sent: u64,
    rx_end: UdpCounts,
    rx_stop: UdpCounts,
    secs: f64,
    rx_secs: f64,
) -> UdpSummary {
    let lost = rx_end.lost(sent);
    UdpSummary {
        packets_sent: sent,
        packets_received: rx_end.unique,
        packets_lost: lost,
        loss_pct: if sent > 0 {
            lost as f64 * 100.0 / sent as f64
        } else {
            0.0
        },
        packets_out_of_order: rx_end.out_of_order,
        packets_duplicate: rx_end.duplicates,
        packets_late: rx_end.late,
        jitter_us: rx_end.jitter_ns as f64 / 1000.0,
        pps_sent: per_sec(sent, secs),
        pps_received: per_sec(rx_stop.unique, rx_secs),
    }
}

/// Sums stream (or flow) accounting; jitter is the mean.
pub(crate) fn udp_total<'a>(parts: impl Iterator<Item = &'a UdpSummary>) -> Option<UdpSummary> {
    let mut total: Option<UdpSummary> = None;
    let mut n = 0.0;
    for p in parts {
        let t = total.get_or_insert_with(UdpSummary::default);
        t.packets_sent += p.packets_sent;
        t.packets_received += p.packets_received;
        t.packets_lost += p.packets_lost;
        t.packets_out_of_order += p.packets_out_of_order;
        t.packets_duplicate += p.packets_duplicate;
        t.packets_late += p.packets_late;
        t.jitter_us += p.jitter_us;
        t.pps_sent += p.pps_sent;
        t.pps_received += p.pps_received;
        n += 1.0;
    }
    total.map(|mut t| {
        t.jitter_us /= n;
        t.loss_pct = if t.packets_sent > 0 {
            t.packets_lost as f64 * 100.0 / t.packets_sent as f64
        } else {
            0.0
        };
        t
    })
}

/// Transactions and merged round trips of every requester (the client's streams).
/// Every transaction after the warm-up is one histogram sample, so the count comes from there.
pub(crate) fn rr_summary(raw: &RawRun, secs: f64) -> RrSummary {
    let mut latency = Latency::new();
    let (mut lost, mut missed) = (0, 0);
    for l in &raw.local_streams {
        if let Some(Ok(report)) = &l.result {
            lost += report.lost_transactions;
            missed += report.slots_missed;
            if let Some(h) = &report.latency {
                latency.add(h);
            }
        }
    }
    let omit_s = (raw.spec.rr().map_or(0, |rr| rr.omit_ms) as f64 / 1000.0).min(secs);
    RrSummary {
        transactions: latency.len(),
        transactions_per_s: per_sec(latency.len(), secs - omit_s),
        omit_s,
        lost_transactions: (raw.spec.kind().row().loss == Loss::Transactions).then_some(lost),
        slots_missed: raw
            .spec
            .rr()
            .is_some_and(|rr| rr.transactions_per_sec.is_some())
            .then_some(missed),
        connections_per_s: (raw.spec.kind().row().connects)
            .then(|| per_sec(latency.len(), secs - omit_s)),
        latency_us: latency.summary(),
    }
}
