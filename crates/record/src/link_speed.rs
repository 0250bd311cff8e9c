//! Where a summary's link speed came from ([`LinkSpeedSource`]): `--link-speed`, or an end's
//! interface as its driver reports it. Code matches on the variant; the record stores the
//! words it always stored (`"--link-speed"`, `"the client's eth0 link"`), so stored runs and
//! docs/RESULTS.md keep their meaning, and any other text read back is kept as it was.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::schema::End;

/// `summary.link_speed_source`: what `summary.link_speed_bps` is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum LinkSpeedSource {
    /// Given with `--link-speed`: taken at its word, whatever the interfaces say.
    Flag,
    /// The slower end's physical interface, as its driver reports it.
    Interface {
        /// Which end's.
        end: End,
        /// Its name, e.g. `eth0` (no whitespace: a Linux interface name has none).
        name: String,
    },
    /// Words this build does not know, read from a stored record (kept as they were).
    Other(String),
}

/// The stored words of [`LinkSpeedSource::Flag`].
const FLAG: &str = "--link-speed";

impl LinkSpeedSource {
    /// Whether the speed was given with `--link-speed` (not read from a driver).
    pub fn is_flag(&self) -> bool {
        matches!(self, Self::Flag)
    }
}

impl fmt::Display for LinkSpeedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag => f.write_str(FLAG),
            Self::Interface { end, name } => {
                let end = match end {
                    End::Client => "client",
                    End::Server => "server",
                };
                write!(f, "the {end}'s {name} link")
            }
            Self::Other(words) => f.write_str(words),
        }
    }
}

impl From<LinkSpeedSource> for String {
    fn from(source: LinkSpeedSource) -> Self {
        match source {
            LinkSpeedSource::Other(words) => words,
            known => known.to_string(),
        }
    }
}

impl From<String> for LinkSpeedSource {
    /// The stored words back as what they say; words that name no known source (or an
    /// interface name that would not print back the same) stay [`LinkSpeedSource::Other`].
    fn from(words: String) -> Self {
        if words == FLAG {
            return Self::Flag;
        }
        let interface = |prefix: &str, end: End| {
            let name = words.strip_prefix(prefix)?.strip_suffix(" link")?;
            let plain = !name.is_empty() && !name.contains(char::is_whitespace);
            plain.then(|| Self::Interface {
                end,
                name: name.to_string(),
            })
        };
        interface("the client's ", End::Client)
            .or_else(|| interface("the server's ", End::Server))
            .unwrap_or(Self::Other(words))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_words_stay_the_same_and_read_back_as_the_variant() {
        let cases = [
            (LinkSpeedSource::Flag, "\"--link-speed\""),
            (
                LinkSpeedSource::Interface {
                    end: End::Client,
                    name: "eth0".into(),
                },
                "\"the client's eth0 link\"",
            ),
            (
                LinkSpeedSource::Interface {
                    end: End::Server,
                    name: "enp1s0f1".into(),
                },
                "\"the server's enp1s0f1 link\"",
            ),
            (
                LinkSpeedSource::Other("a link of long ago".into()),
                "\"a link of long ago\"",
            ),
        ];
        for (source, json) in cases {
            assert_eq!(serde_json::to_string(&source).unwrap(), json);
            let back: LinkSpeedSource = serde_json::from_str(json).unwrap();
            assert_eq!(back, source, "{json}");
            assert_eq!(format!("\"{back}\""), json);
        }
        assert!(LinkSpeedSource::from("--link-speed".to_string()).is_flag());
        // Near misses are not a flag or an interface: they are kept as they were.
        for words in [
            "--link-speed ",
            "the client's  link",
            "the client's a b link",
        ] {
            let read = LinkSpeedSource::from(words.to_string());
            assert_eq!(read, LinkSpeedSource::Other(words.into()));
            assert_eq!(String::from(read), words);
        }
    }
}
