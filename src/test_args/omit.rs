//! `-O/--omit DURATION`: a warm-up within `--time` (unlike iperf3's: `-O 1 -t 3` sums the last
//! 2 s), shown but left out of the summary, whose window starts at its end (`analysis::window`).

use wire::TestSpec;

/// The warm-up in milliseconds for `spec`, from `-O` (`None`: none; rr's default is its own).
pub(crate) fn omit_ms(omit: Option<f64>, spec: &TestSpec, iperf3: bool) -> anyhow::Result<u64> {
    let Some(s) = omit else { return Ok(0) };
    if iperf3 && s != 0.0 {
        anyhow::bail!("--omit with --iperf3: the iperf3 server counts from the start; drop one");
    }
    if !s.is_finite() || s < 0.0 || s * 1000.0 >= spec.duration_ms as f64 {
        anyhow::bail!(
            "--omit {s}: must be at least 0 and shorter than --time ({} s)",
            spec.duration_ms as f64 / 1000.0
        );
    }
    Ok((s * 1000.0).round() as u64)
}
