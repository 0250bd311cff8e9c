//! Progress of a sweep, a repetition, an rfc2544 search or a mesh on stderr: points done and an
//! estimate of the time left ([`Eta`]), drawn from what the executors report (an
//! [`events::Observer`]). [`StderrBar`] draws an indicatif bar on a terminal and prints one
//! line per point otherwise (a log file gets a readable record, not control codes); the live
//! rows of a single test are [`crate::live_table`]'s.
//!
//! The estimate scales the planned time of the points left (their test durations) by how long
//! the finished points really took against their plan, so setup and drain overheads and
//! `--until-ci` repetitions are accounted for as soon as one point has finished.

use std::time::Duration;

use events::Observer;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// `1h02m`, `3m05s`, `42s`.
pub fn format_left(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// A bar on stderr (or plain lines when stderr is not a terminal).
pub struct StderrBar {
    bar: Option<ProgressBar>,
    eta: Eta,
    title: String,
}

impl Default for StderrBar {
    fn default() -> Self {
        Self::new()
    }
}

impl StderrBar {
    /// A bar that appears at [`Observer::begin`].
    pub fn new() -> Self {
        Self {
            bar: None,
            eta: Eta::default(),
            title: String::new(),
        }
    }

    fn total(&self) -> usize {
        self.eta.total()
    }
}

impl Observer for StderrBar {
    fn begin(&mut self, title: &str, planned: &[f64], _hosts: &[String]) {
        self.eta = Eta::new(planned);
        self.title = title.to_string();
        let bar =
            ProgressBar::with_draw_target(Some(planned.len() as u64), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} points, {msg} (elapsed {elapsed})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(title.to_string());
        bar.set_message(format!("~{} left", format_left(self.eta.left())));
        if bar.is_hidden() {
            eprintln!(
                "{title}: {} points, ~{} planned",
                planned.len(),
                format_left(self.eta.left())
            );
        } else {
            bar.enable_steady_tick(Duration::from_millis(500));
            self.bar = Some(bar);
        }
    }

    fn point_started(&mut self, _index: usize, label: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{label}, ~{} left", format_left(self.eta.left())));
        }
    }

    fn point_done(&mut self, index: usize, label: &str, seconds: f64) {
        self.eta.done(seconds);
        let left = format_left(self.eta.left());
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.eta.finished() as u64);
                bar.set_message(format!("~{left} left"));
            }
            None => eprintln!(
                "{}: point {}/{} ({label}) done in {seconds:.1} s, ~{left} left",
                self.title,
                index + 1,
                self.total()
            ),
        }
    }

    fn note(&mut self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Time left from planned and actual point durations.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Eta {
    planned: Vec<f64>,
    actual: Vec<f64>,
}

impl Eta {
    /// An estimate over points planned to take `planned` seconds each.
    pub fn new(planned: &[f64]) -> Self {
        Self {
            planned: planned.to_vec(),
            actual: Vec::new(),
        }
    }

    /// The next point finished after `seconds`.
    pub fn done(&mut self, seconds: f64) {
        if self.actual.len() < self.planned.len() {
            self.actual.push(seconds.max(0.0));
        }
    }

    /// Points finished.
    pub fn finished(&self) -> usize {
        self.actual.len()
    }

    /// Points planned.
    pub fn total(&self) -> usize {
        self.planned.len()
    }

    /// The time the points left should take: their plan × (actual / planned so far).
    pub fn left(&self) -> Duration {
        let n = self.actual.len();
        let planned_done: f64 = self.planned[..n].iter().sum();
        let actual_done: f64 = self.actual.iter().sum();
        let ratio = if n > 0 && planned_done > 0.0 {
            actual_done / planned_done
        } else {
            1.0
        };
        let left: f64 = self.planned[n..].iter().sum::<f64>() * ratio;
        Duration::from_secs_f64(left.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_short() {
        assert_eq!(format_left(Duration::from_secs(42)), "42s");
        assert_eq!(format_left(Duration::from_secs(185)), "3m05s");
        assert_eq!(format_left(Duration::from_secs(3720)), "1h02m");
    }

    #[test]
    fn time_left_scales_with_what_points_really_took() {
        let mut eta = Eta::new(&[10.0, 10.0, 10.0, 10.0]);
        assert_eq!(eta.left(), Duration::from_secs(40));
        // The first point took 12 s of its planned 10 (setup, drain): 3 × 12 s left.
        eta.done(12.0);
        assert_eq!(eta.left(), Duration::from_secs(36));
        eta.done(14.0);
        assert_eq!(eta.left(), Duration::from_secs(26));
        eta.done(13.0);
        eta.done(13.0);
        assert_eq!(eta.left(), Duration::ZERO);
        eta.done(1.0);
        assert_eq!(eta.finished(), 4, "extra reports are ignored");
    }
}
