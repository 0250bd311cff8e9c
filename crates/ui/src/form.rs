//! The page's run form, as the API sees it: its fields ([`FIELDS`]) and which of them each
//! measuring command takes ([`Accepts::with_fields`]), which `GET /api/kinds` tells the page
//! (form.js shows a field for a kind only if it is listed there, and sends it only then).
//!
//! A field is taken by a command when one of its sample requests, `{"kind": KIND, …sample}`,
//! is a test the API would start: past the UI's own refusals ([`crate::words`]: the same
//! allow-list `POST /api/tests` enforces) and past the command's parser and checks (the
//! binary's judge, the same its child applies), so the page can never show a field the API
//! refuses, nor hide one it takes. tests/ui_form.rs holds the answer against the API itself.

use serde_json::{Map, Value};

use crate::accept::Accepts;

/// One field of the run form (its input's `name`, the label's `data-field`), and the requests'
/// options it stands for: taken if any one is.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Its name in the form.
    pub name: &'static str,
    /// What it adds to a request, as JSON objects' text; empty: every options command takes it.
    pub samples: &'static [&'static str],
}

/// The run form's fields that depend on the kind, in the form's order. The kind, the tags and
/// the command's own words are every kind's.
pub const FIELDS: [Field; 9] = [
    // The host goes after `--` (a mesh's before): a positional argument, which all take.
    field("host", &[r#"{"host":"127.0.0.1"}"#]),
    // 2 s: rpm's shortest run.
    field("time", &[r#"{"time":2}"#]),
    field("parallel", &[r#"{"parallel":2}"#]),
    // -R and --bidir, or rpm's one direction (`direction: down`).
    field(
        "direction",
        &[r#"{"reverse":true}"#, r#"{"direction":"down"}"#],
    ),
    field("rate", &[r#"{"rate":"20M"}"#]),
    field("length", &[r#"{"length":"1000"}"#]),
    field("latency", &[r#"{"latency":true}"#]),
    field("repeat", &[r#"{"repeat":2}"#]),
    // "More options (JSON)": any of the command's options.
    field("extra", &[]),
];

const fn field(name: &'static str, samples: &'static [&'static str]) -> Field {
    Field { name, samples }
}

impl Accepts {
    /// The same, each options command with the [`FIELDS`] it takes: a field one of whose
    /// samples makes a request `words` allows and `takes` (the command line's words after
    /// `linerate`, parsed and checked as its child would) accepts.
    pub fn with_fields(mut self, takes: impl Fn(&[String]) -> bool) -> Accepts {
        let taken: Vec<Vec<String>> = self
            .commands
            .iter()
            .map(|command| match command.options {
                false => Vec::new(),
                true => FIELDS
                    .iter()
                    .filter(|f| {
                        f.samples.is_empty()
                            || f.samples
                                .iter()
                                .any(|s| self.sample_taken(&command.names[0], s, &takes))
                    })
                    .map(|f| f.name.to_string())
                    .collect(),
            })
            .collect();
        for (command, fields) in self.commands.iter_mut().zip(taken) {
            command.fields = fields;
        }
        self
    }

    /// Whether `{"kind": kind, …sample}` passes the UI's refusals and `takes`.
    fn sample_taken(&self, kind: &str, sample: &str, takes: &impl Fn(&[String]) -> bool) -> bool {
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(sample) else {
            return false;
        };
        let mut request = Map::new();
        request.insert("kind".into(), Value::String(kind.to_string()));
        request.extend(fields);
        let body = Value::Object(request).to_string();
        crate::words(body.as_bytes(), self).is_ok_and(|words| takes(&words))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accept::{CommandRule, FlagRule};

    /// A kind is given the fields whose samples pass both the UI's table and the judge.
    #[test]
    fn a_field_is_a_kinds_when_a_sample_passes_the_table_and_the_judge() {
        let allowed = FlagRule::Allowed { takes_value: true };
        let rule = |name: &str, options: bool| CommandRule {
            names: vec![name.to_string()],
            options,
            flags: [("--time", allowed), ("--parallel", allowed)]
                .into_iter()
                .map(|(f, r)| (f.to_string(), r))
                .chain([("--rate".to_string(), FlagRule::Local)])
                .collect(),
            ..CommandRule::default()
        };
        let table = Accepts {
            commands: vec![rule("tcp", true), rule("sweep", false)],
            kinds: Vec::new(),
        }
        // The judge refuses --parallel, the table refuses --rate (a "local" flag here).
        .with_fields(|words| !words.iter().any(|w| w.starts_with("--parallel")));
        assert_eq!(
            table.commands[0].fields,
            [
                "host",
                "time",
                "direction",
                "length",
                "latency",
                "repeat",
                "extra"
            ]
        );
        assert!(table.commands[1].fields.is_empty(), "a sweep takes words");
    }
}
