//! Exporters over linerate results: comparison tables, Markdown, CSV, JSON, SVG/PNG charts and
//! a self-contained HTML report.
//!
//! Everything here reads finished [`record::RunRecord`]s and writes text or images; nothing
//! measures and nothing touches the store. The binary loads runs (by id or tag set), wraps each
//! column of a comparison in a [`LabeledRuns`], and hands them to:
//!
//! - [`write()`], which writes a document in one of its [`Format`]s (its [`Exporter`]):
//!   [`Comparison::by_kind`] into [`Comparisons`] for `linerate compare` (table, Markdown,
//!   CSV, JSON), [`Runs`] for `linerate export` (JSON, JSON Lines, per-interval CSV,
//!   Markdown), a check, a trend, a list of runs or one run;
//! - [`chart::render`] / [`chart::pps_chart`] and [`chart::Chart::to_png`] for `linerate chart`;
//! - [`html::render`] for `linerate report`;
//! - [`brief_text::write_brief`] (the default) and [`run_text::write_summary`] (`-v`, `linerate
//!   show`) for a test's summary.
//!
//! Measurement is kept apart from formatting: [`Comparison`] and the chart series hold numbers
//! in the units their names say; only the exporters turn them into text. Every output is
//! deterministic for the same input (no clocks, no random ids), so it can be snapshot-tested.

pub mod brief_text;
pub mod buffer_note;
pub mod chart;
pub mod check;
pub mod check_text;
mod compare;
mod congestion_text;
mod csv_out;
mod differences;
mod efficiency_text;
mod error;
mod export;
pub mod file;
pub mod fold;
mod format;
mod frames_text;
pub mod headline;
pub mod html;
mod html_trend;
mod interface_frames_text;
mod json;
mod labeled;
pub mod live_bar;
pub mod live_table;
pub mod local_time;
mod loss_text;
mod markdown;
pub mod mesh;
pub mod pps;
pub mod pps_text;
mod qdisc_text;
mod receive_text;
pub mod rpm_brief;
pub mod rpm_text;
pub mod run_text;
mod runs_table;
mod sections;
mod send_text;
pub mod stored;
mod table;
pub mod trend;

pub use compare::{left_out_notes, Column, Comparison, Row};
pub use differences::{differences, differences_cells, settings, Difference};
pub use error::Error;
pub use export::{pretty_json, write, Comparisons, Exporter, Format, Runs};
pub use json::write_test_run;
pub use labeled::LabeledRuns;
pub use mesh::{MeshCell, MeshFigure, MeshMatrix};
pub use pps::{cell as pps_cell, MatrixKind, PpsMatrix, PPS_ID_TAG};
pub use runs_table::RunsTable;
pub use sections::{sections, Section};
pub use table::{comparison_table, runs_table, Align, TableStyle, TextTable};

/// Result of every fallible function here.
pub type Result<T, E = Error> = std::result::Result<T, E>;
