//! [`PpsMatrix`]: the document `linerate pps --json` writes, read back for charts and reports.

use results::PpsCell;
use serde::{Deserialize, Serialize};

/// A packet-rate matrix: one cell per (frame size, flow count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpsMatrix {
    /// Where the matrix was measured.
    #[serde(default)]
    pub target: String,
    /// Link speed the line rate is computed for, bits/s (`--link-speed`).
    #[serde(default)]
    pub link_speed_bps: Option<u64>,
    /// The cells, in the order they ran.
    pub cells: Vec<PpsCell>,
}
