//! How evenly a direction's parallel streams shared it: the spread of their goodput, the
//! slowest stream by name, and Jain's fairness index.

use record::{StreamSpread, StreamSummary};

/// The spread of `streams`' goodput; `None` for fewer than two streams.
pub fn spread(streams: &[StreamSummary]) -> Option<StreamSpread> {
    if streams.len() < 2 {
        return None;
    }
    let mut rates: Vec<f64> = streams.iter().map(|s| s.throughput_bps).collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median_bps = if n % 2 == 1 {
        rates[n / 2]
    } else {
        (rates[n / 2 - 1] + rates[n / 2]) / 2.0
    };
    let slowest = streams
        .iter()
        .min_by(|a, b| a.throughput_bps.total_cmp(&b.throughput_bps))?;
    let sum: f64 = rates.iter().sum();
    let squares: f64 = rates.iter().map(|x| x * x).sum();
    let fairness = if squares > 0.0 {
        sum * sum / (n as f64 * squares)
    } else {
        1.0
    };
    Some(StreamSpread {
        streams: u16::try_from(n).unwrap_or(u16::MAX),
        min_bps: rates[0],
        median_bps,
        max_bps: rates[n - 1],
        slowest: slowest.stream,
        fairness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(stream: u16, throughput_bps: f64) -> StreamSummary {
        StreamSummary {
            stream,
            bytes_sent: 0,
            bytes_received: 0,
            throughput_bps,
            tcp_info: None,
            udp: None,
            error: None,
            receive: None,
            send_mode: None,
        }
    }

    #[test]
    fn one_stream_has_no_spread() {
        assert_eq!(spread(&[stream(0, 1e9)]), None);
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn spread_names_the_slowest_and_takes_the_middle() {
        let s = spread(&[
            stream(0, 3e9),
            stream(1, 1e9),
            stream(2, 2e9),
            stream(3, 6e9),
        ])
        .unwrap();
        assert_eq!(s.streams, 4);
        assert_eq!((s.min_bps, s.median_bps, s.max_bps), (1e9, 2.5e9, 6e9));
        assert_eq!(s.slowest, 1);
        // (12)² / (4 · (9 + 1 + 4 + 36)) = 144 / 200
        assert!((s.fairness - 0.72).abs() < 1e-12);
        let odd = spread(&[stream(5, 2e9), stream(6, 1e9), stream(7, 4e9)]).unwrap();
        assert_eq!((odd.median_bps, odd.slowest), (2e9, 6));
    }

    #[test]
    fn equal_streams_are_perfectly_fair_and_one_hog_is_one_over_n() {
        let equal: Vec<_> = (0..16).map(|i| stream(i, 1e9)).collect();
        assert!((spread(&equal).unwrap().fairness - 1.0).abs() < 1e-12);
        let mut hog: Vec<_> = (0..4).map(|i| stream(i, 0.0)).collect();
        hog[2].throughput_bps = 8e9;
        assert!((spread(&hog).unwrap().fairness - 0.25).abs() < 1e-12);
        let idle: Vec<_> = (0..2).map(|i| stream(i, 0.0)).collect();
        assert_eq!(spread(&idle).unwrap().fairness, 1.0);
    }
}
