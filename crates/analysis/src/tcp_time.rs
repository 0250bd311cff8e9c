//! Where a direction's TCP senders spent their time over the run, from the kernel's "chrono"
//! figures in each sender's last TCP_INFO: busy, limited by the receiver's window, limited by
//! the send buffer (Linux 4.10+), with the lowest RTT, the pacing rates and the unsent bytes.

use measure::tcp_info::TcpInfo;
use record::TcpTime;

/// The direction's figures from its senders' TCP_INFO over a window of `window_s`; `None`
/// when no sender's kernel keeps the chrono times.
pub fn of(infos: &[TcpInfo], window_s: f64) -> Option<TcpTime> {
    let chrono: Vec<(u64, u64, u64)> = infos
        .iter()
        .filter_map(|t| Some((t.busy_us?, t.rwnd_limited_us?, t.sndbuf_limited_us?)))
        .collect();
    if chrono.is_empty() {
        return None;
    }
    let busy: u64 = chrono.iter().map(|c| c.0).sum();
    let pct = |part: u64| {
        if busy == 0 {
            0.0
        } else {
            part as f64 / busy as f64 * 100.0
        }
    };
    let window_us = window_s * 1e6;
    // The kernel's clock runs past the window (draining), so the share is capped at 100 %.
    let busy_pct = if window_us > 0.0 {
        (busy as f64 / chrono.len() as f64 / window_us * 100.0).min(100.0)
    } else {
        0.0
    };
    let sum = |f: fn(&TcpInfo) -> Option<u64>| {
        infos
            .iter()
            .filter_map(f)
            .fold(None, |acc: Option<u64>, v| Some(acc.unwrap_or(0) + v))
    };
    Some(TcpTime {
        busy_pct,
        rwnd_limited_pct: pct(chrono.iter().map(|c| c.1).sum()),
        sndbuf_limited_pct: pct(chrono.iter().map(|c| c.2).sum()),
        min_rtt_us: infos.iter().filter_map(|t| t.min_rtt_us).min(),
        pacing_rate_bps: sum(|t| t.pacing_rate_bps),
        notsent_bytes: sum(|t| t.notsent_bytes.map(u64::from)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(busy: u64, rwnd: u64, sndbuf: u64, min_rtt: u32) -> TcpInfo {
        TcpInfo {
            busy_us: Some(busy),
            rwnd_limited_us: Some(rwnd),
            sndbuf_limited_us: Some(sndbuf),
            min_rtt_us: Some(min_rtt),
            notsent_bytes: Some(100),
            ..TcpInfo::default()
        }
    }

    #[test]
    fn shares_of_the_busy_time_over_every_stream() {
        let t = of(
            &[
                info(1_000_000, 500_000, 0, 40),
                info(1_000_000, 0, 100_000, 30),
            ],
            2.0,
        )
        .unwrap();
        assert_eq!(t.busy_pct, 50.0, "each stream busy 1 s of a 2 s window");
        assert_eq!(t.rwnd_limited_pct, 25.0);
        assert_eq!(t.sndbuf_limited_pct, 5.0);
        assert_eq!(t.min_rtt_us, Some(30));
        assert_eq!(t.notsent_bytes, Some(200));
        assert_eq!(t.pacing_rate_bps, None);
    }

    #[test]
    fn an_old_kernel_gives_none_not_zeros() {
        assert_eq!(of(&[TcpInfo::default()], 1.0), None);
        assert_eq!(of(&[], 1.0), None);
    }
}
