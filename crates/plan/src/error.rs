//! Why a plan was refused, and where in its file.
//!
//! Every refusal is a [`PlanError`] whose `Display` is the one line the user sees: the file,
//! the 1-based line and column of what is wrong (when there is one place), what is wrong, and
//! what to do. Positions come from byte offsets in the TOML text ([`Position::of`]); columns
//! count characters, not bytes.

use std::fmt;

use thiserror::Error;

use crate::registry::UnknownKind;
use crate::words::SplitError;

/// A plan that could not be read or is not valid.
#[derive(Debug, Error)]
pub enum PlanError {
    /// The file could not be read (missing, unreadable, not UTF-8).
    #[error("{file}: cannot read it: {error}")]
    Read {
        /// The file as the caller named it.
        file: String,
        /// What reading it said (shown in the message, so not a `source`).
        error: std::io::Error,
    },
    /// The file was read but is not a valid plan.
    #[error("{at}: {problem}")]
    Invalid {
        /// Where: the file, and the line and column when one place is wrong.
        at: Location,
        /// What is wrong.
        problem: Problem,
    },
}

impl PlanError {
    /// What is wrong with the plan, unless the file could not be read.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            PlanError::Read { .. } => None,
            PlanError::Invalid { problem, .. } => Some(problem),
        }
    }

    /// Where in the file the problem is, when it is at one place.
    pub fn position(&self) -> Option<Position> {
        match self {
            PlanError::Read { .. } => None,
            PlanError::Invalid { at, .. } => at.position,
        }
    }
}

/// A file, and a place in it when the problem has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as the caller named it.
    pub file: String,
    /// The place; `None` for a problem of the whole file (no steps, no usable name).
    pub position: Option<Position>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "{} line {}, column {}", self.file, p.line, p.column),
            None => f.write_str(&self.file),
        }
    }
}

/// A 1-based line and column in a plan's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The line, from 1.
    pub line: usize,
    /// The column in characters, from 1.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` of `text` (an offset past the end is the end; one inside
    /// a character is that character).
    pub fn of(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// Where an unknown key was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The top level of the plan.
    Plan,
    /// A `[[step]]`.
    Step,
}

impl Place {
    /// The keys allowed there.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Place::Plan => &["name", "hosts", "tags", "step"],
            Place::Step => &["name", "run", "tags", "hosts", "pre", "post"],
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Place::Plan => "at the top of the plan",
            Place::Step => "in a step",
        })
    }
}

/// Which command of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKey {
    /// `run`, the linerate command.
    Run,
    /// `pre`, run before it.
    Pre,
    /// `post`, run after it.
    Post,
}

impl CommandKey {
    /// The key's name.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKey::Run => "run",
            CommandKey::Pre => "pre",
            CommandKey::Post => "post",
        }
    }

    /// What to do about an empty one.
    fn empty_hint(self) -> &'static str {
        match self {
            CommandKey::Run => {
                "give the linerate command without `linerate`, e.g. \"tcp {target}\""
            }
            CommandKey::Pre | CommandKey::Post => "give a command, or remove the key",
        }
    }
}

/// A word in `run` that the plan itself provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanWord {
    /// `--db`: the plan stores every run in one database.
    Db,
    /// `--no-store`: the plan stores every run.
    NoStore,
    /// `--tag`: tags go in `tags`.
    Tag,
}

impl PlanWord {
    /// The flag.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanWord::Db => "--db",
            PlanWord::NoStore => "--no-store",
            PlanWord::Tag => "--tag",
        }
    }

    /// Why the plan refuses it, and what to do instead.
    fn why(self) -> &'static str {
        match self {
            PlanWord::Db => "the plan stores every run in one database, the plan's; remove it",
            PlanWord::NoStore => {
                "the plan stores every run (--resume and --report read them); remove it"
            }
            PlanWord::Tag => {
                "put tags in the step's tags = { KEY = \"VALUE\" } or in the plan's [tags]"
            }
        }
    }
}

/// What the kinds of value are called in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// A string.
    String,
    /// A table (`[hosts]`, `tags = { … }`).
    Table,
    /// The steps: an array of tables, written `[[step]]`.
    Steps,
    /// A command: a string, or an array of strings.
    Command,
}

impl Expected {
    /// What to write instead, when the type's name does not say it.
    fn hint(self) -> &'static str {
        match self {
            Expected::Steps => "; write each step as [[step]]",
            Expected::String | Expected::Table | Expected::Command => "",
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::String => "a string",
            Expected::Table => "a table",
            Expected::Steps => "an array of tables",
            Expected::Command => "a string or an array of strings",
        })
    }
}

/// What is wrong with a plan; the `Display` says what to do about it too.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Problem {
    /// Not valid TOML.
    #[error("not valid TOML: {message}")]
    Syntax {
        /// The TOML parser's message.
        message: String,
    },
    /// A key the plan format does not have.
    #[error("unknown key {key:?} {place} (keys: {})", place.keys().join(", "))]
    UnknownKey {
        /// The key.
        key: String,
        /// Where it was found.
        place: Place,
    },
    /// A value of the wrong type.
    #[error("{what} must be {expected}, not {found}{}", expected.hint())]
    WrongType {
        /// The value: `run`, `tag "mtu"`, ….
        what: String,
        /// What it must be.
        expected: Expected,
        /// What it is (`integer`, `table`, …, as TOML names them).
        found: &'static str,
    },
    /// A step without `name`.
    #[error(
        "this step has no name; add one, e.g. name = \"tcp-send\" (1 to 64 of A-Z a-z 0-9 . _ -)"
    )]
    MissingName,
    /// A step without `run`.
    #[error(
        "step {step} has no run; add the linerate command without `linerate`, e.g. \
         run = \"tcp {{target}}\""
    )]
    MissingRun {
        /// The step.
        step: String,
    },
    /// A step or plan name outside 1 to 64 of A-Z a-z 0-9 . _ -.
    #[error("{what} name {name:?} is not valid; use 1 to 64 of A-Z a-z 0-9 . _ -")]
    BadName {
        /// `step` or `plan`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// No `name`, and the file's stem cannot be the plan's name.
    #[error(
        "the file's stem {stem:?} cannot be the plan's name (1 to 64 of A-Z a-z 0-9 . _ -); \
         set one with name = \"…\" at the top of the plan"
    )]
    BadStem {
        /// The file's stem.
        stem: String,
    },
    /// Two steps of one name.
    #[error(
        "step name {name:?} is already the name of the step on line {first_line}; give each \
         step its own name"
    )]
    DuplicateStep {
        /// The name.
        name: String,
        /// The line of the first step of that name.
        first_line: usize,
    },
    /// A plan without steps.
    #[error("the plan has no steps; add one with [[step]], name = \"…\" and run = \"…\"")]
    NoSteps,
    /// A host name that is not an identifier.
    #[error(
        "host name {name:?} is not valid; use a letter or _ then letters, digits, _ or -, \
         so that {{{name}}} can name it"
    )]
    BadHostName {
        /// The name.
        name: String,
    },
    /// A host named `value`, which is sweep knob's placeholder.
    #[error(
        "host name \"value\" is reserved: {{value}} is the value of `sweep knob --pre`; use \
         another name"
    )]
    ReservedHost,
    /// A host that is empty or has whitespace.
    #[error("host {name:?} = {value:?}: give a host name or address, without whitespace")]
    BadHost {
        /// The host's name.
        name: String,
        /// Its value.
        value: String,
    },
    /// A tag key that is empty or has whitespace or `=`.
    #[error("tag key {key:?} is not valid; a key is not empty and has no whitespace and no =")]
    BadTagKey {
        /// The key.
        key: String,
    },
    /// A tag the runner sets itself.
    #[error(
        "tag {key:?} is set by the runner (plan=NAME and step=NAME on every run); use another key"
    )]
    ReservedTag {
        /// `plan` or `step`.
        key: String,
    },
    /// A step's command that cannot be split into words.
    #[error("step {step}: {} cannot be split into words: {error}", key.as_str())]
    Split {
        /// The step.
        step: String,
        /// Which command.
        key: CommandKey,
        /// Why.
        error: SplitError,
    },
    /// A step's command without words.
    #[error("step {step}: {} is empty; {}", key.as_str(), key.empty_hint())]
    Empty {
        /// The step.
        step: String,
        /// Which command.
        key: CommandKey,
    },
    /// A `run` whose first word is no step kind.
    #[error("step {step}: {kind}")]
    UnknownKind {
        /// The step.
        step: String,
        /// The word.
        kind: UnknownKind,
    },
    /// A word the plan itself provides.
    #[error("step {step}: `{given}` in run: {}", word.why())]
    PlanWord {
        /// The step.
        step: String,
        /// Which flag.
        word: PlanWord,
        /// The word as written (`--db`, `--db=x.sqlite`).
        given: String,
    },
    /// `{name}` naming no host.
    #[error(
        "step {step}: {{{host}}} is not a host in [hosts] or the step's hosts; known: {}",
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )]
    UnknownHost {
        /// The step.
        step: String,
        /// The name between the braces.
        host: String,
        /// The hosts the step knows, sorted.
        known: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(Position::of(text, 0), Position { line: 1, column: 1 });
        assert_eq!(Position::of(text, 6), Position { line: 2, column: 1 });
        // "é" is two bytes but one column.
        assert_eq!(Position::of(text, 9), Position { line: 2, column: 3 });
        // An offset inside "é" is "é".
        assert_eq!(Position::of(text, 8), Position { line: 2, column: 2 });
        assert_eq!(Position::of(text, 99), Position { line: 3, column: 1 });
    }

    #[test]
    fn a_location_without_a_position_is_the_file() {
        let at = Location {
            file: "p.toml".into(),
            position: None,
        };
        assert_eq!(at.to_string(), "p.toml");
    }
}
