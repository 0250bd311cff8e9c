//! The one seam between the UI and the test commands: [`Launcher`]. The binary implements it
//! with its own command line, so a test started from the page is parsed, checked, run and
//! stored exactly as `linerate tcp …` would be; this crate only hands it words and listens.
//!
//! A test is checked before it gets an id ([`Launcher::prepare`]: a usage error is the HTTP
//! 400's message), then run once on a thread of its own (the [`PreparedTest`]), which reports
//! each interval through [`session::client::Progress`] and ends with the stored record.

use engine::Signal;
use results::store::RunId;
use results::RunRecord;
use session::client::Progress;

/// Why a test could not be prepared or run, as the command line would have said it (one line,
/// naming the flag or input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LaunchError(pub String);

/// A finished (or stopped) test: its record and where the store keeps it.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The record, as `--json` prints it.
    pub record: RunRecord,
    /// Its id in the UI's database.
    pub run_id: RunId,
}

/// A checked test, ready to run once: it runs to its end, or until the [`Signal`] is raised
/// (what was measured is kept), reporting the start and every interval to the [`Progress`];
/// then it is stored.
pub type PreparedTest =
    Box<dyn FnOnce(Signal, &mut dyn Progress) -> Result<Finished, LaunchError> + Send>;

/// Checks and runs tests from their command-line words.
pub trait Launcher: Send + Sync + 'static {
    /// Parses and checks a test's words (those after `linerate`, e.g. `["tcp", "--time=2"]`)
    /// as the command line does, opening what it needs (the store, the target) so that a bad
    /// database or host fails here, before the test has an id.
    fn prepare(&self, words: &[String]) -> Result<PreparedTest, LaunchError>;
}
