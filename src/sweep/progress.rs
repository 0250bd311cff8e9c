//! Progress of a sweep, a repetition or an rfc2544 search on stderr: points done and an
//! estimate of the time left ([`Eta`]), drawn from what the executors report (an
//! [`events::Observer`]). [`StderrBar`] draws an indicatif bar on a terminal and prints one
//! line per point otherwise (a log file gets a readable record, not control codes).

use std::time::Duration;

use events::Observer;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sweep::progress::Eta;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_short() {
        assert_eq!(format_left(Duration::from_secs(42)), "42s");
        assert_eq!(format_left(Duration::from_secs(185)), "3m05s");
        assert_eq!(format_left(Duration::from_secs(3720)), "1h02m");
    }
}
