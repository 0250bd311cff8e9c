//! What a command line names among the stored runs: one run (`12`, `#12`) or a tag set
//! (`driver=a`, `driver=a,mtu=9000`: the runs carrying all of these tags), as `compare`,
//! `check`, `trend`, `report` and `chart` take their items.
//!
//! Invariant: a tag set's label lists its tags in key order, as `linerate runs` prints them, so
//! a label can be pasted back as an item.

use record::{RunId, TagError, Tags};

/// One item of the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// One stored run: `12` or `#12`.
    Run(RunId),
    /// The runs carrying all of these tags: `driver=a` or `driver=a,mtu=9000`.
    Tags(Tags),
}

/// An item that is neither a run id nor a tag set; the message names it and says what is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemError {
    /// A tag set with a bad tag.
    #[error("{item}: {error}")]
    Tag {
        /// As given.
        item: String,
        /// What is wrong with it.
        error: TagError,
    },
    /// A `#` or number that is no run id.
    #[error("{0}")]
    RunId(#[from] record::RunIdError),
    /// Neither.
    #[error(
        "{0}: neither a run id (12 or #12) nor a tag set; a tag is KEY=VALUE, e.g. \
         driver=velocityget (driver=a,mtu=9000 for runs carrying both)"
    )]
    Neither(String),
}

impl Item {
    /// Parses an item: a tag set when it holds `=`, a run id when it is a number (with or
    /// without `#`); anything else is refused in one line naming it.
    pub fn parse(s: &str) -> Result<Item, ItemError> {
        let t = s.trim();
        if t.contains('=') {
            let pieces = t.split(',').map(str::trim).filter(|p| !p.is_empty());
            return Tags::parse(pieces)
                .map(Item::Tags)
                .map_err(|error| ItemError::Tag {
                    item: s.to_string(),
                    error,
                });
        }
        if t.starts_with('#') || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())) {
            return Ok(Item::Run(t.parse()?));
        }
        Err(ItemError::Neither(s.to_string()))
    }

    /// The column's label: `#12`, or the tags as `driver=a,mtu=9000` (key order).
    pub fn label(&self) -> String {
        match self {
            Item::Run(id) => id.to_string(),
            Item::Tags(tags) => tags.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_run_ids_or_tag_sets() {
        assert_eq!(Item::parse("12").unwrap(), Item::Run(RunId(12)));
        assert_eq!(Item::parse("#7").unwrap(), Item::Run(RunId(7)));
        let set = Item::parse("mtu=9000, driver=a").unwrap();
        assert_eq!(
            set,
            Item::Tags(Tags::parse(["driver=a", "mtu=9000"]).unwrap())
        );
        assert_eq!(set.label(), "driver=a,mtu=9000");
        assert_eq!(Item::parse("#7").unwrap().label(), "#7");
    }

    #[test]
    fn bad_items_name_themselves() {
        for (item, needle) in [
            ("driver", "driver: neither a run id"),
            ("#x", "#x: a run id is a positive number"),
            ("0", "0: a run id is a positive number"),
            ("driver=a,mtu", "driver=a,mtu: mtu: a tag is KEY=VALUE"),
            ("=a", "=a: =a: the key before '=' is empty"),
            ("a=1,a=2", "given twice"),
        ] {
            let err = Item::parse(item).unwrap_err().to_string();
            assert!(err.contains(needle), "{item}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}
