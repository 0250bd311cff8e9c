//! The filter of [`super::Store::list`] (and every [`super::ResultStore`]): which runs a
//! listing returns.

use record::{Tags, TestKind};

/// Which runs [`super::Store::list`] returns: all conditions must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Every one of these tags, with these values.
    pub tags: Tags,
    /// Only this kind.
    pub kind: Option<TestKind>,
    /// Only runs started at or after this instant, Unix epoch ms.
    pub since_unix_ms: Option<u64>,
    /// Only the newest this many of the runs that match ([`super::Store::list`] only; still
    /// listed oldest first).
    pub last: Option<usize>,
}
