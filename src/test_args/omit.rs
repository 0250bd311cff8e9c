//! `-O/--omit SECONDS` on `tcp` and `udp`: a warm-up at the start of `--time`, run and shown
//! (its live rows marked omitted) but left out of the summary and the stored figures, as
//! iperf3's `-O`. The window then starts at the client's poll at its end (`analysis::window`).
//! Unlike iperf3, the warm-up is part of `--time`, as `rr --omit` is: `-O 1 -t 3` runs 3 s and
//! sums the last 2.

use wire::TestSpec;

/// The warm-up in milliseconds for `spec`, from `-O` (`None`: none).
pub(crate) fn omit_ms(omit: Option<f64>, spec: &TestSpec, iperf3: bool) -> anyhow::Result<u64> {
    let Some(s) = omit else { return Ok(0) };
    if iperf3 && s != 0.0 {
        anyhow::bail!(
            "--omit with --iperf3: the iperf3 server counts from the start; drop --omit, or run \
             against `linerate serve`"
        );
    }
    if !s.is_finite() || s < 0.0 || s * 1000.0 >= spec.duration_ms as f64 {
        anyhow::bail!(
            "--omit {s}: must be at least 0 and shorter than --time ({} s)",
            spec.duration_ms as f64 / 1000.0
        );
    }
    Ok((s * 1000.0).round() as u64)
}
