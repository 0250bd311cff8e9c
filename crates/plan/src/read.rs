//! The walk over a plan's TOML document: the top-level keys, `[hosts]`, `[tags]`, and the
//! `[[step]]` tables handed to [`crate::step`].
//!
//! The document is read as toml's spanned tree ([`DeTable`]) rather than through serde, so
//! every key and value keeps its byte span and every message can say what the format allows
//! at that place. Keys are visited in the order the file has them (toml's `preserve_order`),
//! so the first problem reported is the first in the file.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::error::{Expected, Location, Place, PlanError, Position, Problem};
use crate::{step, Plan};

/// A TOML value with its byte span.
pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

/// Host names and their hosts.
pub(crate) type Hosts = BTreeMap<String, String>;

/// The text being read, for the positions of messages.
#[derive(Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The file as the caller named it.
    pub(crate) file: &'a str,
    /// Its text.
    pub(crate) text: &'a str,
}

impl Source<'_> {
    /// `problem`, at the start of `span`.
    pub(crate) fn error(&self, span: Range<usize>, problem: Problem) -> PlanError {
        PlanError::Invalid {
            at: Location {
                file: self.file.to_string(),
                position: Some(Position::of(self.text, span.start)),
            },
            problem,
        }
    }

    /// `problem`, of the whole file.
    fn file_error(&self, problem: Problem) -> PlanError {
        PlanError::Invalid {
            at: Location {
                file: self.file.to_string(),
                position: None,
            },
            problem,
        }
    }

    /// The 1-based line where `span` starts.
    pub(crate) fn line(&self, span: &Range<usize>) -> usize {
        Position::of(self.text, span.start).line
    }
}

/// Reads and validates a whole plan.
pub(crate) fn plan(text: &str, file: &str) -> Result<Plan, PlanError> {
    let src = Source { file, text };
    let doc = DeTable::parse(text).map_err(|e| syntax(src, &e))?;
    let top = doc.get_ref();
    check_keys(src, top, Place::Plan)?;
    let name = match top.get("name") {
        Some(v) => plan_name(src, v)?,
        None => default_name(src)?,
    };
    let hosts = match top.get("hosts") {
        Some(v) => hosts(src, v)?,
        None => Hosts::new(),
    };
    let tags = match top.get("tags") {
        Some(v) => tags(src, v)?,
        None => Vec::new(),
    };
    let tables = match top.get("step") {
        Some(v) => step_tables(src, v)?,
        None => &[],
    };
    if tables.is_empty() {
        return Err(src.file_error(Problem::NoSteps));
    }
    let plan = step::Defaults {
        hosts: &hosts,
        tags: &tags,
    };
    let mut steps = Vec::with_capacity(tables.len());
    for table in tables {
        let step = step::build(src, table, &plan, &steps)?;
        steps.push(step);
    }
    Ok(Plan { name, tags, steps })
}

/// A TOML syntax error, at its place when toml gives one.
fn syntax(src: Source<'_>, e: &toml::de::Error) -> PlanError {
    let problem = Problem::Syntax {
        message: e.message().trim_end().to_string(),
    };
    match e.span() {
        Some(span) => src.error(span, problem),
        None => src.file_error(problem),
    }
}

/// Refuses the first key of `table` that `place` does not have.
pub(crate) fn check_keys(
    src: Source<'_>,
    table: &DeTable<'_>,
    place: Place,
) -> Result<(), PlanError> {
    match table
        .keys()
        .find(|k| !place.keys().contains(&k.get_ref().as_ref()))
    {
        Some(key) => Err(src.error(
            key.span(),
            Problem::UnknownKey {
                key: key.get_ref().to_string(),
                place,
            },
        )),
        None => Ok(()),
    }
}

/// The value's type as messages name it: "an integer", "a table", ….
fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The error for `v`, called `what`, not being `expected`.
pub(crate) fn wrong_type(
    src: Source<'_>,
    v: &Value<'_>,
    what: String,
    expected: Expected,
) -> PlanError {
    let problem = Problem::WrongType {
        what,
        expected,
        found: type_name(v.get_ref()),
    };
    src.error(v.span(), problem)
}

/// `v` as a string; `what` names it in the error.
pub(crate) fn string<'v>(
    src: Source<'_>,
    v: &'v Value<'_>,
    what: &str,
) -> Result<&'v str, PlanError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s),
        _ => Err(wrong_type(src, v, what.to_string(), Expected::String)),
    }
}

/// `v` as a table; `what` names it in the error.
pub(crate) fn table<'v, 'i>(
    src: Source<'_>,
    v: &'v Value<'i>,
    what: &str,
) -> Result<&'v DeTable<'i>, PlanError> {
    match v.get_ref() {
        DeValue::Table(t) => Ok(t),
        _ => Err(wrong_type(src, v, what.to_string(), Expected::Table)),
    }
}

/// Whether `name` may be a step's or the plan's name: 1 to 64 of A-Z a-z 0-9 . _ -.
pub(crate) fn is_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether `s` is an identifier, as host names are: [A-Za-z_][A-Za-z0-9_-]*.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The top-level `name`.
fn plan_name(src: Source<'_>, v: &Value<'_>) -> Result<String, PlanError> {
    let name = string(src, v, "name")?;
    if !is_name(name) {
        let problem = Problem::BadName {
            what: "plan",
            name: name.to_string(),
        };
        return Err(src.error(v.span(), problem));
    }
    Ok(name.to_string())
}

/// The plan's name when it gives none: the file's stem.
fn default_name(src: Source<'_>) -> Result<String, PlanError> {
    let stem = Path::new(src.file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_name(&stem) {
        return Err(src.file_error(Problem::BadStem { stem }));
    }
    Ok(stem)
}

/// A `hosts` table, the plan's or a step's.
pub(crate) fn hosts(src: Source<'_>, v: &Value<'_>) -> Result<Hosts, PlanError> {
    let mut hosts = Hosts::new();
    for (key, value) in table(src, v, "hosts")? {
        let name = key.get_ref().as_ref();
        if name == "value" {
            return Err(src.error(key.span(), Problem::ReservedHost));
        }
        if !is_identifier(name) {
            let problem = Problem::BadHostName {
                name: name.to_string(),
            };
            return Err(src.error(key.span(), problem));
        }
        let host = string(src, value, &format!("host {name:?}"))?;
        if host.is_empty() || host.chars().any(char::is_whitespace) {
            let problem = Problem::BadHost {
                name: name.to_string(),
                value: host.to_string(),
            };
            return Err(src.error(value.span(), problem));
        }
        hosts.insert(name.to_string(), host.to_string());
    }
    Ok(hosts)
}

/// A `tags` table, the plan's or a step's, in the file's order.
pub(crate) fn tags(src: Source<'_>, v: &Value<'_>) -> Result<Vec<(String, String)>, PlanError> {
    let mut tags = Vec::new();
    for (key, value) in table(src, v, "tags")? {
        let k = key.get_ref().as_ref();
        if k.is_empty() || k.contains('=') || k.chars().any(char::is_whitespace) {
            let problem = Problem::BadTagKey { key: k.to_string() };
            return Err(src.error(key.span(), problem));
        }
        if k == "plan" || k == "step" {
            let problem = Problem::ReservedTag { key: k.to_string() };
            return Err(src.error(key.span(), problem));
        }
        let value = string(src, value, &format!("tag {k:?}"))?;
        tags.push((k.to_string(), value.to_string()));
    }
    Ok(tags)
}

/// The `step` array: `[[step]]` tables (or `step = [{ … }, …]`).
fn step_tables<'v, 'i>(src: Source<'_>, v: &'v Value<'i>) -> Result<&'v [Value<'i>], PlanError> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(wrong_type(src, v, "step".to_string(), Expected::Steps));
    };
    if let Some(item) = items.iter().find(|i| !i.get_ref().is_table()) {
        return Err(wrong_type(src, item, "a step".to_string(), Expected::Table));
    }
    Ok(&items[..])
}
