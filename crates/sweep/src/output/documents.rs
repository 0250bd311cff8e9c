//! A sweep's, a repetition's and an rfc2544 search's result as the documents `report::write`
//! writes: a table, CSV or JSON each.

use std::io::Write;

use report::{pretty_json, Exporter, Format, Result};

use super::{write_repeat_csv, write_repeat_table, write_sweep_csv, write_sweep_table};
use super::{write_rfc2544_csv, write_rfc2544_table};
use crate::result::SweepResult;
use crate::rfc2544::Rfc2544Result;
use crate::run::RepeatResult;

/// The formats of every result here.
const FORMATS: &[Format] = &[Format::Table, Format::Json, Format::Csv];

impl Exporter for SweepResult {
    fn name(&self) -> &'static str {
        "a sweep"
    }

    fn formats(&self) -> &'static [Format] {
        FORMATS
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        pretty_json(w, self)
    }

    fn table(&self, w: &mut dyn Write, _width: Option<u16>) -> Result<()> {
        Ok(write_sweep_table(w, self)?)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        write_sweep_csv(w, self)
    }
}

impl Exporter for RepeatResult {
    fn name(&self) -> &'static str {
        "a repetitions summary"
    }

    fn formats(&self) -> &'static [Format] {
        FORMATS
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        pretty_json(w, self)
    }

    fn table(&self, w: &mut dyn Write, _width: Option<u16>) -> Result<()> {
        Ok(write_repeat_table(w, self)?)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        write_repeat_csv(w, self)
    }
}

impl Exporter for Rfc2544Result {
    fn name(&self) -> &'static str {
        "an rfc2544 search"
    }

    fn formats(&self) -> &'static [Format] {
        FORMATS
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        pretty_json(w, self)
    }

    fn table(&self, w: &mut dyn Write, _width: Option<u16>) -> Result<()> {
        Ok(write_rfc2544_table(w, self)?)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        write_rfc2544_csv(w, self)
    }
}
