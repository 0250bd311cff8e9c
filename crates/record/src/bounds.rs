//! How large a stored run may be: the one size limit both results stores (SQLite and
//! PostgreSQL) hold a record to when they write it, and check from its stored length before
//! they read it, and `linerate import` holds a file's runs to.

/// The most bytes a run's record (and, apart, its host facts) may take as JSON in a results
/// store: 16 MiB. A store refuses to write a larger one (the measuring commands keep it as a
/// JSON file instead), and refuses to read one whose stored length is over it, naming its id,
/// without loading it: reading a record decodes it through a JSON tree about twelve times its
/// size, so this bounds the memory one `show`, or each run of a `report`, takes to a few
/// hundred MB.
pub const MAX_RECORD_BYTES: usize = 16 << 20;
