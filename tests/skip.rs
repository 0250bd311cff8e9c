//! Runtime skips for tests that cannot run on this machine (not root, a peer tool missing).
//!
//! libtest has no runtime skip: such a test returns early and libtest counts it as passed.
//! [`skip`] prints the reason (seen with `--nocapture`) and, when `LINERATE_SKIP_LOG` names a
//! file (scripts/test.sh sets it), appends one line `test-name: reason` there; the script's
//! closing line then counts the test as skipped instead of passed (scripts/test-counts.sh).
//! Call it once per test, then return.
//!
//! The workspace's test binaries share this file through `#[path]` (it needs only std), so
//! every skip site writes the same line format.

use std::io::Write;
use std::path::Path;

/// Reports the running test as skipped for `reason`; the caller returns right after.
///
/// Panics (failing the test) when the skip log is set but cannot be written: a skip that
/// is not logged would count as a pass.
pub fn skip(reason: &str) {
    // libtest runs each test on a thread named after the test's path.
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("(unnamed test)");
    eprintln!("SKIPPED: {name}: {reason}");
    if let Some(log) = std::env::var_os("LINERATE_SKIP_LOG") {
        record(Path::new(&log), name, reason);
    }
}

/// Appends `name: reason` (on one line) to the skip log at `log`.
pub fn record(log: &Path, name: &str, reason: &str) {
    let line = format!("{name}: {}\n", reason.replace('\n', " "));
    // One append-mode write per line, so lines from test threads and test binaries running at
    // once do not interleave.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot record the skip of {name} in {}: {e}", log.display());
    }
}
