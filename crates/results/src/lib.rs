//! The embedded results store: [`store`], the SQLite database every run is written to, and
//! the [`store::ResultStore`] interface the PostgreSQL store (`pgstore`) implements too.
//!
//! The record itself (`RunRecord`, its summary, tags, stored runs) is the `record` crate's:
//! this crate adds SQL and files only, so a crate that needs a record and no store does not
//! depend on this one (nor compile SQLite). Records of an older layout read as the current one
//! (`record::layout_v1`), so a record layout change needs no migration here.

pub mod store;
