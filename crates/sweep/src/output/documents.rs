//! A sweep's, a repetition's and an rfc2544 search's result as the documents `report::write`
//! writes: a table, CSV or JSON each.

use std::io::Write;

use report::{pretty_json, Exporter, Format, Result};

use super::{write_repeat_csv, write_repeat_table, write_sweep_csv, write_sweep_table};
use super::{write_rfc2544_csv, write_rfc2544_table};
use crate::result::SweepResult;
use crate::rfc2544::Rfc2544Result;
use crate::run::RepeatResult;

/// A result as a document: its name, then its table and CSV writers (JSON is its serde form).
macro_rules! document {
    ($($result:ty: $name:literal, $table:ident, $csv:ident;)*) => {$(
        impl Exporter for $result {
            fn name(&self) -> &'static str {
                $name
            }

            fn formats(&self) -> &'static [Format] {
                &[Format::Table, Format::Json, Format::Csv]
            }

            fn json(&self, w: &mut dyn Write) -> Result<()> {
                pretty_json(w, self)
            }

            fn table(&self, w: &mut dyn Write, _width: Option<u16>) -> Result<()> {
                Ok($table(w, self)?)
            }

            fn csv(&self, w: &mut dyn Write) -> Result<()> {
                $csv(w, self)
            }
        }
    )*};
}

document! {
    SweepResult: "a sweep", write_sweep_table, write_sweep_csv;
    RepeatResult: "a repetitions summary", write_repeat_table, write_repeat_csv;
    Rfc2544Result: "an rfc2544 search", write_rfc2544_table, write_rfc2544_csv;
}
