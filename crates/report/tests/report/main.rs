//! The report crate's integration tests: snapshots of every text exporter and a chart SVG over
//! fixed synthetic runs (`tests/fixtures/*.json`), PNG rendering, and the HTML report opened in
//! headless Chromium.

mod browser;
mod fixtures;
// The workspace's one runtime-skip helper (std only), shared with the binary's tests.
#[path = "../../../../tests/skip.rs"]
mod skip;
mod snapshots;
