//! `linerate cc`: connect and close, repeat, no data; run as `rr` runs (`commands::rr`).

pub use crate::rr_args::CcArgs as Flags;
