//! `linerate crr`: connect, request, response, close, repeat; run as `rr` runs (`commands::rr`).

pub use crate::rr_args::CrrArgs as Flags;
