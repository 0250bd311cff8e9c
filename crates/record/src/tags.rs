//! Tags: the user's `KEY=VALUE` labels on a run (`--tag driver=velocityget --tag mtu=9000`),
//! used to find and group runs later.
//!
//! Invariants: keys are non-empty, hold no `=` and no whitespace, and appear once per run;
//! values may be anything (including empty). Iteration is in key order, so output is stable.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why a tag was refused. Messages name the input; the caller adds the flag (`--tag`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    /// No `=` in the tag.
    #[error("{0}: a tag is KEY=VALUE, e.g. mtu=9000")]
    NoEquals(String),
    /// Nothing before the `=`.
    #[error("{0}: the key before '=' is empty; a tag is KEY=VALUE, e.g. mtu=9000")]
    EmptyKey(String),
    /// Whitespace in the key.
    #[error("{0}: the key holds whitespace; a tag is KEY=VALUE, e.g. mtu=9000")]
    SpaceInKey(String),
    /// The same key given twice.
    #[error("{key}: given twice ({first} and {second}); give each key once")]
    Duplicate {
        /// The key.
        key: String,
        /// The first tag with this key, `KEY=VALUE`.
        first: String,
        /// The second, `KEY=VALUE`.
        second: String,
    },
}

/// One `KEY=VALUE` tag, as parsed from one `--tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The key (non-empty, no `=`, no whitespace).
    pub key: String,
    /// The value (may be empty).
    pub value: String,
}

impl FromStr for Tag {
    type Err = TagError;

    fn from_str(s: &str) -> Result<Tag, TagError> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| TagError::NoEquals(s.to_string()))?;
        if key.is_empty() {
            return Err(TagError::EmptyKey(s.to_string()));
        }
        if key.chars().any(char::is_whitespace) {
            return Err(TagError::SpaceInKey(s.to_string()));
        }
        Ok(Tag {
            key: key.to_string(),
            value: value.to_string(),
        })
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// A run's tags: keys in order, each once. Serialized as a JSON object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Tags(BTreeMap<String, String>);

impl Tags {
    /// No tags.
    pub fn new() -> Tags {
        Tags::default()
    }

    /// Parses `KEY=VALUE` strings, refusing a malformed tag or a key given twice.
    pub fn parse<I, S>(items: I) -> Result<Tags, TagError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut tags = Tags::new();
        for item in items {
            tags.insert(item.as_ref().parse()?)?;
        }
        Ok(tags)
    }

    /// Adds a tag, refusing a key already present.
    pub fn insert(&mut self, tag: Tag) -> Result<(), TagError> {
        if let Some(first) = self.0.get(&tag.key) {
            return Err(TagError::Duplicate {
                first: format!("{}={first}", tag.key),
                second: tag.to_string(),
                key: tag.key,
            });
        }
        self.0.insert(tag.key, tag.value);
        Ok(())
    }

    /// The value of `key`, if tagged.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// `(key, value)` pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of tags.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether every tag of `wanted` is here with the same value.
    pub fn contains_all(&self, wanted: &Tags) -> bool {
        wanted.iter().all(|(k, v)| self.get(k) == Some(v))
    }
}

/// `key=value,key=value` in key order (empty when untagged).
impl fmt::Display for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_in_key_order() {
        let tags = Tags::parse(["mtu=9000", "driver=velocityget", "note=", "expr=a=b"]).unwrap();
        assert_eq!(
            tags.to_string(),
            "driver=velocityget,expr=a=b,mtu=9000,note="
        );
        assert_eq!(tags.get("mtu"), Some("9000"));
        assert_eq!(tags.get("note"), Some(""));
        assert_eq!(tags.get("expr"), Some("a=b"));
        assert_eq!(tags.len(), 4);
        assert_eq!(
            serde_json::to_string(&tags).unwrap(),
            r#"{"driver":"velocityget","expr":"a=b","mtu":"9000","note":""}"#
        );
    }

    #[test]
    fn bad_tags_name_the_input() {
        let err = Tags::parse(["mtu"]).unwrap_err();
        assert_eq!(err, TagError::NoEquals("mtu".into()));
        assert_eq!(err.to_string(), "mtu: a tag is KEY=VALUE, e.g. mtu=9000");
        assert_eq!(
            Tags::parse(["=9000"]).unwrap_err(),
            TagError::EmptyKey("=9000".into())
        );
        assert_eq!(
            Tags::parse(["my key=1"]).unwrap_err(),
            TagError::SpaceInKey("my key=1".into())
        );
        let dup = Tags::parse(["mtu=1500", "mtu=9000"]).unwrap_err();
        assert_eq!(
            dup.to_string(),
            "mtu: given twice (mtu=1500 and mtu=9000); give each key once"
        );
    }

    #[test]
    fn contains_all_is_a_subset_match() {
        let run = Tags::parse(["driver=velocityget", "mtu=9000"]).unwrap();
        assert!(run.contains_all(&Tags::new()));
        assert!(run.contains_all(&Tags::parse(["mtu=9000"]).unwrap()));
        assert!(!run.contains_all(&Tags::parse(["mtu=1500"]).unwrap()));
        assert!(!run.contains_all(&Tags::parse(["host=a"]).unwrap()));
    }
}
