//! What the executors report while a sweep, a repetition or an rfc2544 search runs. The
//! binary draws it (a progress bar on stderr); [`Quiet`] shows nothing.

/// Receives a sweep's progress.
pub trait SweepProgress {
    /// The sweep starts: `points` points, planned to take `planned` seconds each.
    fn begin(&mut self, title: &str, planned: &[f64]);
    /// Point `index` (0-based) starts.
    fn point_started(&mut self, index: usize, label: &str);
    /// Point `index` finished after `seconds`.
    fn point_done(&mut self, index: usize, label: &str, seconds: f64);
    /// A line for the user (a dropped size, a failed command).
    fn note(&mut self, line: &str);
    /// The sweep ended (finished, stopped or interrupted).
    fn finish(&mut self);
}

/// Shows nothing (tests, `--json` to a pipe when the caller wants silence).
pub struct Quiet;

impl SweepProgress for Quiet {
    fn begin(&mut self, _: &str, _: &[f64]) {}
    fn point_started(&mut self, _: usize, _: &str) {}
    fn point_done(&mut self, _: usize, _: &str, _: f64) {}
    fn note(&mut self, _: &str) {}
    fn finish(&mut self) {}
}
