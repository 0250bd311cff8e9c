//! The summary's window: where each receiver's count starts and how long it runs.
//!
//! Without a warm-up the window is the test from `Begin` (each end's by its own clock: the
//! client's up to its `Stop`, the server's up to its own close). With a warm-up (`-O`,
//! [`wire::TestSpec::omit_ms`]) the client polls the server when the warm-up ends, and the
//! window starts there on both ends: at the client's snapshot on its clock, and at the
//! server's answer to that poll on the server's (its `CpuSoFar::elapsed_us`). A flow's counts
//! in the window are then its counters less the receiver's at that start, and the sender's
//! less the same base, so `sent = received + in flight` (and for datagrams
//! `sent = received + lost`) hold in the window as over the whole test.

use std::time::Duration;

use measure::udp_stats::UdpCounts;
use wire::msg::StreamCounts;
use wire::spec::Flow;

use crate::raw::RawRun;

/// Both ends' counters where the window starts: the poll at the warm-up's end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowStart {
    /// When the client took `local`, since `Begin` by its clock.
    pub local_at: Duration,
    /// The client's streams' counters then, in stream order.
    pub local: Vec<StreamCounts>,
    /// The server's answer to that poll, in stream order.
    pub server: Vec<StreamCounts>,
    /// When the server counted them, µs since its `Begin` by its clock (`None`: a far end that
    /// does not say, whose window then starts at `local_at`).
    pub server_at_us: Option<u64>,
}

/// The receivers' windows, seconds: each receiver's count covers its own window, the
/// client's, or the server's (the test duration from Begin by its clock, closed before a Stop
/// that may be late), less the warm-up's part of each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windows {
    pub client_s: f64,
    pub server_s: f64,
}

impl Windows {
    pub fn of(raw: &RawRun) -> Self {
        let client_s = raw.window.as_secs_f64();
        let server_s = match raw.server.window_us {
            0 => client_s,
            us => us as f64 / 1e6,
        };
        let Some(start) = &raw.window_start else {
            return Self { client_s, server_s };
        };
        let local_at = start.local_at.as_secs_f64();
        let server_at = start.server_at_us.map_or(local_at, |us| us as f64 / 1e6);
        Self {
            client_s: (client_s - local_at).max(0.0),
            server_s: (server_s - server_at).max(0.0),
        }
    }

    /// The window of `flow`'s receiver.
    pub fn receiver(self, flow: Flow) -> f64 {
        match flow {
            Flow::ClientToServer => self.server_s,
            Flow::ServerToClient => self.client_s,
        }
    }
}

/// Stream `i`'s counters (`sender`, receiver at stop, receiver at the end) from the window's
/// start: less its receiver's count there. Unchanged without a warm-up.
pub(crate) fn from_start(
    raw: &RawRun,
    i: usize,
    flow: Flow,
    counts: [StreamCounts; 3],
) -> [StreamCounts; 3] {
    let Some(start) = &raw.window_start else {
        return counts;
    };
    let base = match flow {
        Flow::ClientToServer => start.server.get(i),
        Flow::ServerToClient => start.local.get(i),
    };
    let base = base.copied().unwrap_or_default();
    let [snd, stop, end] = counts;
    [less_sent(snd, &base), less(stop, &base), less(end, &base)]
}

/// A receiver's counters less `base`, its own at the window's start.
fn less(c: StreamCounts, base: &StreamCounts) -> StreamCounts {
    let rx = match (c.rx, base.rx) {
        (Some(rx), Some(b)) => Some(UdpCounts {
            packets: rx.packets.saturating_sub(b.packets),
            bytes: rx.bytes.saturating_sub(b.bytes),
            unique: rx.unique.saturating_sub(b.unique),
            duplicates: rx.duplicates.saturating_sub(b.duplicates),
            out_of_order: rx.out_of_order.saturating_sub(b.out_of_order),
            late: rx.late.saturating_sub(b.late),
            ..rx
        }),
        (rx, _) => rx,
    };
    StreamCounts {
        bytes: c.bytes.saturating_sub(base.bytes),
        packets: c.packets.saturating_sub(base.packets),
        rx,
        ..c
    }
}

/// A sender's counters less what it had sent before its receiver's window started: the bytes
/// the receiver had read, and (datagrams) every sequence number up to the highest it had seen,
/// so a datagram lost in the warm-up is not lost in the window.
fn less_sent(c: StreamCounts, base: &StreamCounts) -> StreamCounts {
    let packets = match base.rx {
        Some(rx) if rx.has_packets => rx.highest_seq + 1,
        Some(_) => 0,
        None => base.packets,
    };
    StreamCounts {
        bytes: c.bytes.saturating_sub(base.bytes),
        packets: c.packets.saturating_sub(packets),
        ..c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_lost_in_the_warm_up_are_not_lost_in_the_window() {
        let rx = |unique: u64, highest: u64| UdpCounts {
            packets: unique,
            bytes: unique * 100,
            unique,
            lost_so_far: highest + 1 - unique,
            highest_seq: highest,
            has_packets: true,
            ..Default::default()
        };
        let recv = |r: UdpCounts| StreamCounts {
            bytes: r.bytes,
            packets: r.packets,
            rx: Some(r),
            ..Default::default()
        };
        // 10 lost before the window's start (990 of 1000), 3 after it (997 of 1000 more).
        let base = recv(rx(990, 999));
        let sent = StreamCounts {
            packets: 2000,
            bytes: 200_000,
            ..Default::default()
        };
        let snd = less_sent(sent, &base);
        let end = less(recv(rx(1987, 1999)), &base);
        let got = end.rx.unwrap();
        assert_eq!(snd.packets, 1000);
        assert_eq!(got.unique, 997);
        assert_eq!(got.lost(snd.packets), 3);
    }
}
