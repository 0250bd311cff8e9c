//! Turning successive cumulative counter snapshots of both ends into interval samples.
//!
//! Invariant: the intervals of a run add up to its totals, because each sample is the
//! difference from the previous snapshot and the last one is taken at Stop.

use std::time::Duration;

use measure::cpu::CpuSoFar;
use measure::latency::Latency;
use measure::tcp_info::TcpInfo;
use measure::units::bits_per_sec;
use record::{FlowInterval, IntervalCpu, IntervalSample, IntervalTcp, RrInterval, UdpInterval};
use wire::msg::StreamCounts;
use wire::spec::FamilyId;
use wire::spec::Flow;
use wire::TestSpec;

use crate::per_sec;

/// Turns successive counter snapshots into interval samples.
#[derive(Debug, Clone)]
pub struct IntervalTracker {
    flows: Vec<(u16, Flow)>,
    udp: bool,
    rr: bool,
    prev_local: Vec<StreamCounts>,
    prev_server: Vec<StreamCounts>,
    /// Each stream's sender's retransmit count at its last TCP_INFO.
    prev_retransmits: Vec<u32>,
    prev_end: Duration,
    /// Each end's CPU reading at the previous interval's end (both start at the test's start).
    prev_local_cpu: CpuSoFar,
    prev_remote_cpu: CpuSoFar,
    /// The warm-up (`TestSpec::omit_ms`): an interval starting within it is marked omitted.
    omit: Duration,
}

impl IntervalTracker {
    /// A tracker for `spec`'s streams, starting at zero.
    pub fn new(spec: &TestSpec) -> Self {
        let flows = spec.flows();
        let n = flows.len();
        Self {
            flows,
            udp: spec.kind().row().family == FamilyId::Datagram,
            rr: spec.kind().row().family == FamilyId::Transaction,
            prev_local: vec![StreamCounts::default(); n],
            prev_server: vec![StreamCounts::default(); n],
            prev_retransmits: vec![0; n],
            prev_end: Duration::ZERO,
            prev_local_cpu: CpuSoFar::START,
            prev_remote_cpu: CpuSoFar::START,
            omit: Duration::from_millis(spec.omit_ms),
        }
    }

    /// Puts both ends' CPU since the previous call into `sample` (the interval just taken),
    /// from each end's reading at its end: `local`, this end's; `remote`, the far end's, `None`
    /// from one that does not send it (its figures are then `null`). Each end's share is over
    /// its own clock. A missed remote reading leaves the next one's span longer, not wrong.
    pub fn add_cpu(
        &mut self,
        sample: &mut IntervalSample,
        local: CpuSoFar,
        remote: Option<CpuSoFar>,
    ) {
        let (prev_local, prev_remote) = (self.prev_local_cpu, self.prev_remote_cpu);
        sample.cpu = local
            .threads_pct_since(&prev_local)
            .map(|local_pct| IntervalCpu {
                local_pct,
                remote_pct: remote.and_then(|r| r.threads_pct_since(&prev_remote)),
                local_host_busy_pct: local.host_busy_pct_since(&prev_local),
                remote_host_busy_pct: remote.and_then(|r| r.host_busy_pct_since(&prev_remote)),
            });
        self.prev_local_cpu = local;
        if let Some(r) = remote {
            self.prev_remote_cpu = r;
        }
    }

    /// The interval from the previous sample to `at`, from both ends' cumulative counters.
    pub fn sample(
        &mut self,
        at: Duration,
        local: &[StreamCounts],
        server: &[StreamCounts],
    ) -> IntervalSample {
        let secs = (at - self.prev_end.min(at)).as_secs_f64();
        let mut flows: Vec<FlowInterval> = Vec::new();
        let mut tcp: Vec<(Flow, usize, TcpInfo)> = Vec::new();
        for (i, &(_, flow)) in self.flows.iter().enumerate() {
            let (l, s) = (
                local.get(i).copied().unwrap_or_default(),
                server.get(i).copied().unwrap_or_default(),
            );
            let (pl, ps) = (self.prev_local[i], self.prev_server[i]);
            let ((snd, psnd), (rcv, prcv)) = match flow {
                Flow::ClientToServer => ((l, pl), (s, ps)),
                Flow::ServerToClient => ((s, ps), (l, pl)),
            };
            let entry = match flows.iter().position(|f| f.flow == flow) {
                Some(at) => &mut flows[at],
                None => {
                    flows.push(self.empty_flow(flow));
                    let last = flows.len() - 1;
                    &mut flows[last]
                }
            };
            if let Some(info) = snd.tcp_info {
                tcp.push((flow, i, info));
            }
            let received = rcv.bytes.saturating_sub(prcv.bytes);
            entry.sender_bytes += snd.bytes.saturating_sub(psnd.bytes);
            entry.receiver_bytes += received;
            entry.stream_receiver_bytes.push(received);
            if let Some(r) = &mut entry.rr {
                r.transactions += snd.packets.saturating_sub(psnd.packets);
            }
            if let Some(u) = &mut entry.udp {
                let (rx, prx) = (rcv.rx.unwrap_or_default(), prcv.rx.unwrap_or_default());
                u.packets_sent += snd.packets.saturating_sub(psnd.packets);
                u.packets_received += rx.unique.saturating_sub(prx.unique);
                u.packets_lost += rx.lost_so_far as i64 - prx.lost_so_far as i64;
                u.packets_out_of_order += rx.out_of_order.saturating_sub(prx.out_of_order);
                u.packets_duplicate += rx.duplicates.saturating_sub(prx.duplicates);
                u.packets_late += rx.late.saturating_sub(prx.late);
                // Summed here, divided by the flow's stream count below.
                u.jitter_us += rx.jitter_ns as f64 / 1000.0;
            }
        }
        for f in &mut flows {
            rates(f, secs);
            f.tcp_info = self.tcp_state(f.flow, &tcp);
        }
        let sample = IntervalSample {
            start_s: self.prev_end.as_secs_f64(),
            end_s: at.as_secs_f64(),
            flows,
            probe: None,
            cpu: None,
            // The client polls at the warm-up's end, so no interval straddles it.
            omitted: self.prev_end < self.omit,
        };
        self.prev_local = local.to_vec();
        self.prev_server = server.to_vec();
        self.prev_end = at;
        sample
    }

    /// A flow's interval before any stream is added to it.
    fn empty_flow(&self, flow: Flow) -> FlowInterval {
        FlowInterval {
            flow,
            sender_bytes: 0,
            receiver_bytes: 0,
            throughput_bps: 0.0,
            stream_receiver_bytes: Vec::new(),
            udp: self.udp.then(UdpInterval::default),
            rr: self.rr.then(RrInterval::default),
            tcp_info: None,
            self_probes: None,
            self_probe_round_trips_us: Vec::new(),
        }
    }

    /// `flow`'s TCP state from its senders' TCP_INFO (`None` without any): retransmits since
    /// each stream's previous reading, windows and delivery rates summed, RTT averaged, the
    /// lowest minimum RTT.
    fn tcp_state(&mut self, flow: Flow, infos: &[(Flow, usize, TcpInfo)]) -> Option<IntervalTcp> {
        let mine: Vec<&(Flow, usize, TcpInfo)> = infos.iter().filter(|t| t.0 == flow).collect();
        if mine.is_empty() {
            return None;
        }
        let mut state = IntervalTcp::default();
        let mut rtt_sum = 0u64;
        for &&(_, i, info) in &mine {
            state.retransmits += info.retransmits.saturating_sub(self.prev_retransmits[i]);
            self.prev_retransmits[i] = info.retransmits;
            state.snd_cwnd_segments += info.snd_cwnd_segments;
            rtt_sum += u64::from(info.rtt_us);
            if let Some(rate) = info.delivery_rate_bps {
                *state.delivery_rate_bps.get_or_insert(0) += rate;
            }
            if let Some(m) = info.min_rtt_us {
                state.min_rtt_us = Some(state.min_rtt_us.map_or(m, |x| x.min(m)));
            }
        }
        state.rtt_us = (rtt_sum / mine.len() as u64) as u32;
        Some(state)
    }
}

/// Fills a flow interval's rates over `secs` once all its streams are in.
fn rates(f: &mut FlowInterval, secs: f64) {
    f.throughput_bps = bits_per_sec(f.receiver_bytes, secs);
    if let Some(r) = &mut f.rr {
        r.transactions_per_s = per_sec(r.transactions, secs);
    }
    if let Some(u) = &mut f.udp {
        u.jitter_us /= f.stream_receiver_bytes.len().max(1) as f64;
        u.pps_sent = per_sec(u.packets_sent, secs);
        u.pps_received = per_sec(u.packets_received, secs);
    }
}

/// Puts an interval's round-trip percentiles into its request/response figures; on a stream
/// test (which has none), the round trips are its self probes' (`tcp --self-probes`, one way
/// only, so its one flow's).
pub fn add_latency(sample: &mut IntervalSample, latency: Option<&Latency>) {
    let Some(l) = latency.filter(|l| !l.is_empty()) else {
        return;
    };
    let secs = sample.end_s - sample.start_s;
    for f in &mut sample.flows {
        let r = match &mut f.rr {
            Some(r) => r,
            None => {
                f.self_probe_round_trips_us = l.values_us(record::schema::MAX_PROBE_ROUND_TRIPS);
                f.self_probes.insert(RrInterval {
                    transactions: l.len(),
                    transactions_per_s: per_sec(l.len(), secs),
                    ..RrInterval::default()
                })
            }
        };
        r.p50_us = Some(l.quantile_us(0.50));
        r.p99_us = Some(l.quantile_us(0.99));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::{Direction, Params, StreamParams};

    fn bytes(b: u64) -> StreamCounts {
        StreamCounts {
            bytes: b,
            ..Default::default()
        }
    }

    #[test]
    fn tracker_splits_sender_and_receiver_by_flow() {
        let params = Params::TcpStream {
            stream: StreamParams::new(Direction::Bidir),
            tcp: Default::default(),
        };
        let spec = TestSpec::new(params, 1, 2000);
        let mut t = IntervalTracker::new(&spec);
        // stream 0 client->server, stream 1 server->client
        let s = t.sample(
            Duration::from_secs(1),
            &[bytes(1000), bytes(300)],
            &[bytes(900), bytes(400)],
        );
        assert_eq!(s.flows[0].flow, Flow::ClientToServer);
        assert_eq!(
            (s.flows[0].sender_bytes, s.flows[0].receiver_bytes),
            (1000, 900)
        );
        assert_eq!(
            (s.flows[1].sender_bytes, s.flows[1].receiver_bytes),
            (400, 300)
        );
        assert_eq!(s.flows[0].throughput_bps, 7200.0);
        let s = t.sample(
            Duration::from_millis(1500),
            &[bytes(2000), bytes(300)],
            &[bytes(1900), bytes(400)],
        );
        assert_eq!(s.start_s, 1.0);
        assert_eq!(s.flows[0].receiver_bytes, 1000);
        assert_eq!(s.flows[0].throughput_bps, 16000.0);
        assert_eq!(s.flows[1].receiver_bytes, 0);
    }

    #[test]
    fn each_ends_cpu_is_over_its_own_clock_from_the_previous_reading() {
        let spec = TestSpec::new(
            Params::TcpStream {
                stream: StreamParams::new(Direction::Send),
                tcp: Default::default(),
            },
            1,
            3000,
        );
        let mut t = IntervalTracker::new(&spec);
        let reading = |elapsed_ms: u64, threads_ms: u64, busy: u64, total: u64| CpuSoFar {
            elapsed_us: elapsed_ms * 1000,
            threads_us: threads_ms * 1000,
            host: Some(measure::cpu::HostTicks { busy, total }),
        };
        let mut s = t.sample(Duration::from_secs(1), &[bytes(1)], &[bytes(1)]);
        t.add_cpu(
            &mut s,
            reading(1000, 900, 100, 200),
            Some(reading(990, 495, 50, 200)),
        );
        let cpu = s.cpu.unwrap();
        assert_eq!(cpu.local_pct, 90.0);
        assert_eq!(cpu.remote_pct, Some(50.0));
        assert_eq!(
            (cpu.local_host_busy_pct, cpu.remote_host_busy_pct),
            (Some(50.0), Some(25.0))
        );
        // A far end that sent nothing this time: no remote figures; the next reading spans
        // both intervals on its side.
        let mut s = t.sample(Duration::from_secs(2), &[bytes(2)], &[bytes(2)]);
        t.add_cpu(&mut s, reading(2000, 1900, 300, 400), None);
        let cpu = s.cpu.unwrap();
        assert_eq!((cpu.local_pct, cpu.remote_pct), (100.0, None));
        assert_eq!(cpu.remote_host_busy_pct, None);
        let mut s = t.sample(Duration::from_secs(3), &[bytes(3)], &[bytes(3)]);
        t.add_cpu(
            &mut s,
            reading(3000, 2000, 300, 600),
            Some(reading(2990, 1495, 250, 600)),
        );
        let cpu = s.cpu.unwrap();
        assert_eq!((cpu.local_pct, cpu.remote_pct), (10.0, Some(50.0)));
        assert_eq!(cpu.remote_host_busy_pct, Some(50.0));
    }

    fn sent_with(b: u64, retransmits: u32, cwnd: u32, rtt: u32) -> StreamCounts {
        StreamCounts {
            bytes: b,
            tcp_info: Some(TcpInfo {
                retransmits,
                snd_cwnd_segments: cwnd,
                rtt_us: rtt,
                delivery_rate_bps: Some(1000),
                min_rtt_us: Some(rtt / 2),
                ..TcpInfo::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn tcp_state_is_the_senders_with_retransmits_per_interval() {
        let params = Params::TcpStream {
            stream: StreamParams::new(Direction::Send),
            tcp: Default::default(),
        };
        let mut t = IntervalTracker::new(&TestSpec::new(params, 2, 2000));
        let s = t.sample(
            Duration::from_secs(1),
            &[sent_with(10, 5, 10, 100), sent_with(10, 1, 20, 300)],
            &[bytes(10), bytes(10)],
        );
        let tcp = s.flows[0].tcp_info.unwrap();
        assert_eq!(
            (tcp.retransmits, tcp.snd_cwnd_segments, tcp.rtt_us),
            (6, 30, 200)
        );
        assert_eq!(tcp.delivery_rate_bps, Some(2000));
        assert_eq!(tcp.min_rtt_us, Some(50), "the lower of the streams'");
        // Retransmits count from the previous reading; a stream without one this time is left
        // out of the state but keeps its count for the next.
        let s = t.sample(
            Duration::from_secs(2),
            &[sent_with(20, 7, 12, 50), bytes(20)],
            &[bytes(20), bytes(20)],
        );
        let tcp = s.flows[0].tcp_info.unwrap();
        assert_eq!(
            (tcp.retransmits, tcp.snd_cwnd_segments, tcp.rtt_us),
            (2, 12, 50)
        );
        // The receiving end's TCP_INFO is not the flow's.
        let s = t.sample(
            Duration::from_secs(3),
            &[bytes(30), bytes(30)],
            &[sent_with(30, 0, 1, 1), bytes(30)],
        );
        assert_eq!(s.flows[0].tcp_info, None);
    }
}
