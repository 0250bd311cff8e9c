//! What the gate logs in bulk: connections closed at the caps or from outside `--allow`, failed
//! accepts (out of descriptors), and single-connection lines past [`CONN_LINES_PER_SECOND`],
//! each reported at most once per second, so a flood of bad connections cannot flood the log.

use std::time::{Duration, Instant};

use super::pending::MAX_TALKING_PER_SOURCE;
use super::{Shared, MAX_PENDING};

/// Lines about single connections (drops, refusals) logged per second; past that they are
/// counted, and the count is logged once per second.
const CONN_LINES_PER_SECOND: u32 = 20;

/// The gate's counts since its last report.
#[derive(Default)]
pub(super) struct GateLog {
    /// Connections closed at the global cap.
    pub count: u64,
    /// Connections dropped at their source's cap of talking connections.
    pub busy_sources: u64,
    /// Connections from outside `--allow`.
    pub outsiders: u64,
    last_report: Option<Instant>,
    pub accept_error: Option<std::io::Error>,
    /// Single-connection lines logged in this second.
    lines: u32,
    /// Single-connection lines not logged in this second.
    suppressed: u64,
}

impl GateLog {
    /// Logs a line about one connection, or counts it once this second's share is spent.
    pub(super) fn conn_line(&mut self, shared: &Shared, line: String) {
        if self.lines < CONN_LINES_PER_SECOND {
            self.lines += 1;
            (shared.log)(line);
        } else {
            self.suppressed += 1;
        }
    }

    pub(super) fn report(&mut self, shared: &Shared) {
        if self
            .last_report
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        if self.count > 0 {
            (shared.log)(format!(
                "turned away {} connection{}: {MAX_PENDING} already in handshake (the cap)",
                self.count,
                plural(self.count)
            ));
        }
        if self.busy_sources > 0 {
            (shared.log)(format!(
                "dropped {} connection{} at their first bytes: {MAX_TALKING_PER_SOURCE} from the \
                 same address (IPv6: /64) already in handshake (the per-address cap)",
                self.busy_sources,
                plural(self.busy_sources)
            ));
        }
        if self.outsiders > 0 {
            (shared.log)(format!(
                "closed {} connection{} from outside --allow",
                self.outsiders,
                plural(self.outsiders)
            ));
        }
        if let Some(e) = self.accept_error.take() {
            (shared.log)(format!("accept failed: {e}"));
        }
        if self.suppressed > 0 {
            (shared.log)(format!(
                "{} more connection{} dropped or refused during handshake in the last second \
                 (not logged one by one past {CONN_LINES_PER_SECOND} a second)",
                self.suppressed,
                plural(self.suppressed)
            ));
        }
        self.count = 0;
        self.busy_sources = 0;
        self.outsiders = 0;
        self.lines = 0;
        self.suppressed = 0;
        self.last_report = Some(Instant::now());
    }
}
