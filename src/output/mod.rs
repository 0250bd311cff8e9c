//! Exporters over a [`results::RunRecord`]: the human table (live rows and summary) and JSON.
//! Measurement code hands data here; only this module formats.

pub mod json;
pub mod table;
