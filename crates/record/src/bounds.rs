//! How large a record may grow: the byte limit a stored record is held to (by both results
//! stores and by `linerate import`), and the bounds on
//! what grows with a run's length (its intervals, their listed round trips) that keep any
//! record of the protocol's widest test under it.
//!
//! Invariant: a record of [`wire::spec::bounds::MAX_STREAMS`] streams each way, every field of
//! every interval present at its widest, with [`MAX_INTERVALS`] intervals and
//! [`MAX_KEPT_ROUND_TRIPS`] listed round trips, serializes to about half [`MAX_RECORD_BYTES`]
//! (`analysis`'s `the_widest_record_of_the_longest_run_serializes_well_under_the_stores_limit`
//! builds that record). The producers keep their intervals through
//! `analysis::BoundedIntervals`, which holds both bounds, so no run of any length stores more.

/// Largest record a results store takes, bytes (16 MiB): the JSON of one run as stored (and,
/// apart, its host facts). Both stores (SQLite and PostgreSQL) refuse to write a larger one
/// (the measuring commands keep it as a JSON file instead) and refuse to read one whose stored
/// length is over it, naming its id, without loading it; `linerate import` holds a file's runs
/// to it too. Reading a record decodes it through a JSON tree about twelve times its size, so
/// this bounds what one `show`, or each run of a `report`, takes to a few hundred MB.
pub const MAX_RECORD_BYTES: usize = 16 << 20;

/// Most intervals a record keeps (1,024). A run with more keeps its whole span at a coarser
/// grain: when this many are held, adjacent pairs merge into intervals twice as long
/// (docs/RESULTS.md, "At most 1,024 intervals"). An hour at the default 1 s interval keeps
/// 900 of 4 s; a day, 675 of 128 s. Why this many: a widest interval (128 streams each way,
/// every count at 20 digits) is about 6.3 kB of JSON, so 1,024 of them are 6.4 MB: with the
/// round trips and the summary, about half of [`MAX_RECORD_BYTES`] (8.4 MB, measured by
/// `analysis`'s test of the widest record).
pub const MAX_INTERVALS: usize = 1024;

/// Most round trips a record's intervals list together
/// (`FlowInterval::self_probe_round_trips_us`, 100,000, at most 1.3 MB of JSON; 100 seconds
/// of the most one interval lists): past it, every list keeps every other round trip by rank,
/// and so do the intervals that follow.
pub const MAX_KEPT_ROUND_TRIPS: usize = 100_000;
