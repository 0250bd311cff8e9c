//! One `[[step]]` table into a [`Step`]: its name, its commands split into words with
//! `{host}` replaced, its kind, and its tags merged over the plan's.
//!
//! Invariants of a built step: `words` is not empty and its first word is `kind`; no word is
//! a flag the plan provides (`--db`, `--no-store`, `--tag`); no `{identifier}` is left in any
//! word except `{value}`, which belongs to `sweep knob --pre`.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::error::{CommandKey, Expected, Place, PlanError, PlanWord, Problem};
use crate::read::{self, Hosts, Source, Value};
use crate::words::split_words;
use crate::{Measuring, Step};

/// What every step of a plan starts from.
pub(crate) struct Defaults<'a> {
    /// The plan's `[hosts]`.
    pub(crate) hosts: &'a Hosts,
    /// The plan's `[tags]`.
    pub(crate) tags: &'a [(String, String)],
}

/// A word and the span it came from (the whole string for a split string).
struct Word {
    text: String,
    span: Range<usize>,
}

/// Builds the step of the `[[step]]` table `v`; `earlier` are the plan's steps before it.
pub(crate) fn build(
    src: Source<'_>,
    v: &Value<'_>,
    plan: &Defaults<'_>,
    earlier: &[Step],
) -> Result<Step, PlanError> {
    let table = read::table(src, v, "a step")?;
    read::check_keys(src, table, Place::Step)?;
    let line = src.line(&v.span());
    let name = name(src, table, v.span(), earlier)?;
    let mut hosts = plan.hosts.clone();
    if let Some(own) = table.get("hosts") {
        hosts.extend(read::hosts(src, own)?);
    }
    let mut tags = plan.tags.to_vec();
    if let Some(own) = table.get("tags") {
        for (key, value) in read::tags(src, own)? {
            match tags.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => tags.push((key, value)),
            }
        }
    }
    let Some(run) = table.get("run") else {
        let problem = Problem::MissingRun { step: name };
        return Err(src.error(v.span(), problem));
    };
    let step = Command {
        src,
        step: &name,
        hosts: &hosts,
    };
    let words = step.words(CommandKey::Run, run)?;
    let kind = step.kind(&words)?;
    step.refuse_plan_words(&words)?;
    let pre = table
        .get("pre")
        .map(|v| step.words(CommandKey::Pre, v))
        .transpose()?;
    let post = table
        .get("post")
        .map(|v| step.words(CommandKey::Post, v))
        .transpose()?;
    let texts = |words: Vec<Word>| words.into_iter().map(|w| w.text).collect();
    Ok(Step {
        name,
        line,
        kind,
        words: texts(words),
        tags,
        pre: pre.map(texts),
        post: post.map(texts),
    })
}

/// The `name` of the step `table` whose header is at `header`: present, valid, and not the
/// name of an earlier step.
fn name(
    src: Source<'_>,
    table: &DeTable<'_>,
    header: Range<usize>,
    earlier: &[Step],
) -> Result<String, PlanError> {
    let Some(value) = table.get("name") else {
        return Err(src.error(header, Problem::MissingName));
    };
    let name = read::string(src, value, "name")?;
    if !read::is_name(name) {
        let problem = Problem::BadName {
            what: "step",
            name: name.to_string(),
        };
        return Err(src.error(value.span(), problem));
    }
    if let Some(first) = earlier.iter().find(|s| s.name == name) {
        let problem = Problem::DuplicateStep {
            name: name.to_string(),
            first_line: first.line,
        };
        return Err(src.error(value.span(), problem));
    }
    Ok(name.to_string())
}

/// What reading one step's commands needs.
struct Command<'a> {
    src: Source<'a>,
    step: &'a str,
    hosts: &'a Hosts,
}

impl Command<'_> {
    /// The words of command `key`, with `{host}` replaced: a string split like a shell splits
    /// words, or an array of strings taken as words.
    fn words(&self, key: CommandKey, v: &Value<'_>) -> Result<Vec<Word>, PlanError> {
        let mut words = match v.get_ref() {
            DeValue::String(s) => split_words(s)
                .map_err(|error| {
                    let problem = Problem::Split {
                        step: self.step.to_string(),
                        key,
                        error,
                    };
                    self.src.error(v.span(), problem)
                })?
                .into_iter()
                .map(|text| Word {
                    text,
                    span: v.span(),
                })
                .collect(),
            DeValue::Array(items) => self.array(key, items)?,
            _ => {
                let what = key.as_str().to_string();
                return Err(read::wrong_type(self.src, v, what, Expected::Command));
            }
        };
        if words.is_empty() {
            let problem = Problem::Empty {
                step: self.step.to_string(),
                key,
            };
            return Err(self.src.error(v.span(), problem));
        }
        for word in &mut words {
            word.text = substitute(&word.text, self.hosts).map_err(|UnknownHost(host)| {
                let problem = Problem::UnknownHost {
                    step: self.step.to_string(),
                    host,
                    known: self.hosts.keys().cloned().collect(),
                };
                self.src.error(word.span.clone(), problem)
            })?;
        }
        Ok(words)
    }

    /// An array command's words, each a string.
    fn array(&self, key: CommandKey, items: &[Value<'_>]) -> Result<Vec<Word>, PlanError> {
        let mut words = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let what = format!("word {} of {}", i + 1, key.as_str());
            let text = read::string(self.src, item, &what)?;
            words.push(Word {
                text: text.to_string(),
                span: item.span(),
            });
        }
        Ok(words)
    }

    /// The kind named by the first word of `run`.
    fn kind(&self, words: &[Word]) -> Result<Measuring, PlanError> {
        // `words` made it: never empty.
        let first = &words[0];
        first.text.parse().map_err(|kind| {
            let problem = Problem::UnknownKind {
                step: self.step.to_string(),
                kind,
            };
            self.src.error(first.span.clone(), problem)
        })
    }

    /// Refuses a word of `run` that the plan provides.
    fn refuse_plan_words(&self, words: &[Word]) -> Result<(), PlanError> {
        for word in words {
            let Some(flag) = plan_word(&word.text) else {
                continue;
            };
            let problem = Problem::PlanWord {
                step: self.step.to_string(),
                word: flag,
                given: word.text.clone(),
            };
            return Err(self.src.error(word.span.clone(), problem));
        }
        Ok(())
    }
}

/// The flag the plan provides that `word` is, alone or as `--flag=value`.
fn plan_word(word: &str) -> Option<PlanWord> {
    let flag = word.split_once('=').map_or(word, |(flag, _)| flag);
    [PlanWord::Db, PlanWord::NoStore, PlanWord::Tag]
        .into_iter()
        .find(|w| w.as_str() == flag)
}

/// A `{name}` in a step's words whose name is no host of the plan's `[hosts]` (the name,
/// without braces).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{{{0}}} names no host in [hosts]")]
pub(crate) struct UnknownHost(pub String);

/// `word` with each `{name}` that names a host replaced by the host. `{value}`, and braces
/// around anything but an identifier, stay as they are; the error is an identifier that
/// names no host. Hosts are not substituted again.
pub(crate) fn substitute(word: &str, hosts: &Hosts) -> Result<String, UnknownHost> {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name = after.find('}').map(|close| &after[..close]);
        match name {
            Some(name) if read::is_identifier(name) => {
                if name == "value" {
                    out.push_str("{value}");
                } else if let Some(host) = hosts.get(name) {
                    out.push_str(host);
                } else {
                    return Err(UnknownHost(name.to_string()));
                }
                rest = &after[name.len() + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}
