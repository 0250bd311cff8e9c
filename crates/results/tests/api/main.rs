//! The results store through its public API, as one test binary: round trips and refusals
//! (`store`), listings (`listing`), selections (`select`), layout-1 records and stores
//! (`layout_v1`), rows nobody should have written (`hostile_rows`) and writers killed at random
//! moments (`kill`).

mod common;
mod hostile_rows;
mod kill;
mod layout_v1;
mod listing;
mod select;
mod store;
