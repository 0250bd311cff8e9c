//! Which stored runs a command is about (`results::store::select`), from the command line's
//! items and `--db`, and a selection as the report crate takes it.

use std::path::Path;

use anyhow::{anyhow, Result};
use pgstore::Access;
use record::StoredRun;
use report::{LabeledRuns, PpsMatrix};
use results::store::{BadRow, Filter, Item, Listing, ResultStore, StoreLocation};

use crate::store_args::resolve_db;

/// A column of a comparison, chart or report: stored runs under one label.
pub type Column = results::store::Selection;

/// The column as the report crate takes it.
pub fn labeled(column: &Column) -> LabeledRuns {
    LabeledRuns::of_stored(column.label.clone(), &column.tags, &column.runs)
}

/// Every item parsed, then the database opened for reading; one line when an item is bad or
/// the database missing or unusable (a newer, foreign or damaged one is refused untouched).
fn open(items: &[String], db: Option<&Path>) -> Result<(Vec<Item>, Box<dyn ResultStore>)> {
    let parsed = (items.iter())
        .map(|s| Item::parse(s).map_err(|e| anyhow!("{e}")))
        .collect::<Result<Vec<_>>>()?;
    let store = pgstore::open(&resolve_db(db)?, Access::Read).map_err(|e| anyhow!("{e}"))?;
    Ok((parsed, store))
}

/// A listing's rows; each run it left out named on stderr.
pub fn noted<T>(listing: Listing<T>) -> Vec<T> {
    note_skipped(&listing.skipped);
    listing.rows
}

/// `linerate: skipped run #5: …` on stderr for each run that could not be read.
pub fn note_skipped(skipped: &[BadRow]) {
    skipped
        .iter()
        .for_each(|bad| eprintln!("linerate: skipped {bad}"));
}

/// One column per item, in order.
pub fn columns(items: &[String], filter: &Filter, db: Option<&Path>) -> Result<Vec<Column>> {
    let (parsed, mut store) = open(items, db)?;
    (parsed.iter())
        .map(|i| results::store::select(store.as_mut(), i, filter).map_err(|e| anyhow!("{e}")))
        .inspect(|c| c.iter().for_each(|c| note_skipped(&c.skipped)))
        .collect()
}

/// The stored runs of `items` in order (each run once), or every stored run without items:
/// what `export --format stored` writes.
pub fn stored(items: &[String], db: Option<&Path>) -> Result<Vec<StoredRun>> {
    let (parsed, mut store) = open(items, db)?;
    Ok(noted(
        results::store::distinct(store.as_mut(), &parsed).map_err(|e| anyhow!("{e}"))?,
    ))
}

/// A report's columns when no items are given: every stored run that passes `filter`, one
/// column per (kind, tag set); `linerate pps` cells are returned apart, for the matrix. Also
/// returns where the database is, for the report's subtitle.
pub fn grouped(
    filter: &Filter,
    db: Option<&Path>,
) -> Result<(Vec<Column>, Vec<StoredRun>, StoreLocation)> {
    let path = resolve_db(db)?;
    let (_, mut store) = open(&[], db)?;
    let is_cell = |r: &StoredRun| PpsMatrix::cell_key(r).is_some();
    let grouped =
        results::store::grouped(store.as_mut(), filter, is_cell).map_err(|e| anyhow!("{e}"))?;
    note_skipped(&grouped.skipped);
    Ok((grouped.selections, grouped.apart, path))
}
