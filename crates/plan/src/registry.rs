//! The registry of measuring commands: [`Measuring`], one variant per linerate command that
//! measures (runs tests and stores them), with what the rest of the program needs to know of
//! it. Everything else that lists the measuring commands is derived from here: the binary's
//! clap subcommands are checked against [`Measuring::ALL`] by a test and dispatched by an
//! exhaustive `match`, a plan step's first word is parsed here, the web UI accepts the
//! commands and the record kinds [`Measuring::ui_names`] gives, and a mesh or sweep runs the
//! ones [`Measuring::is_test`] says are one test.
//!
//! Adding a command shaped like an existing one is a variant here, a variant of the binary's
//! `MeasuringArgs` (src/measuring.rs), its args file, its engine or method, and its text.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A linerate command that measures, named by the first word of its command line.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Measuring {
    /// `linerate tcp`: bulk TCP throughput.
    Tcp,
    /// `linerate udp`: UDP at a target rate.
    Udp,
    /// `linerate rr`: request/response over TCP.
    Rr,
    /// `linerate crr`: connect, request, response, close.
    Crr,
    /// `linerate cc`: connect and close, no data.
    Cc,
    /// `linerate pps`: the packet-rate matrix.
    Pps,
    /// `linerate sweep …`: message sizes, a test parameter or a knob.
    Sweep,
    /// `linerate rfc2544`: the zero-loss throughput search.
    Rfc2544,
    /// `linerate mesh`: tests between every pair of hosts.
    Mesh,
    /// `linerate rpm`: responsiveness under working conditions (a run per direction).
    Rpm,
}

/// What a command is, beyond its name.
struct Entry {
    kind: Measuring,
    name: &'static str,
    /// One test, one stored run per invocation: what a sweep or mesh runs per point.
    test: bool,
    /// Words that name it on the command line (`sweep size`: two).
    words: usize,
    /// The record kinds (`tcp_stream`) the UI also takes for it in a request's `kind`.
    record_kinds: &'static [&'static str],
    /// Whether the UI takes it as options (`{"kind":"tcp",…}`), not only as words.
    ui_options: bool,
    /// What it measures, in a few words: the page's choice of test says it beside the name.
    summary: &'static str,
}

/// The registry, in the order messages list the commands.
const ENTRIES: [Entry; 10] = [
    entry(
        Measuring::Tcp,
        "tcp",
        true,
        &["tcp_stream"],
        "bulk throughput",
    ),
    entry(
        Measuring::Udp,
        "udp",
        true,
        &["udp_stream"],
        "rate, loss, jitter",
    ),
    entry(
        Measuring::Rr,
        "rr",
        true,
        &["tcp_rr"],
        "request/response latency",
    ),
    entry(
        Measuring::Crr,
        "crr",
        true,
        &["tcp_crr"],
        "connect/request/response",
    ),
    entry(Measuring::Cc, "cc", true, &["tcp_cc"], "connect/close"),
    entry(
        Measuring::Pps,
        "pps",
        false,
        &["udp_pps"],
        "packet rate matrix",
    ),
    Entry {
        words: 2,
        ui_options: false,
        ..entry(
            Measuring::Sweep,
            "sweep",
            false,
            &[],
            "a parameter's values",
        )
    },
    entry(
        Measuring::Rfc2544,
        "rfc2544",
        false,
        &[],
        "throughput search",
    ),
    entry(Measuring::Mesh, "mesh", false, &[], "every pair of hosts"),
    entry(
        Measuring::Rpm,
        "rpm",
        false,
        &[],
        "responsiveness under load",
    ),
];

const fn entry(
    kind: Measuring,
    name: &'static str,
    test: bool,
    record_kinds: &'static [&'static str],
    summary: &'static str,
) -> Entry {
    Entry {
        kind,
        name,
        test,
        words: 1,
        record_kinds,
        ui_options: true,
        summary,
    }
}

impl Measuring {
    /// Every measuring command, in the order messages list them.
    pub const ALL: [Measuring; ENTRIES.len()] = {
        let mut all = [Measuring::Tcp; ENTRIES.len()];
        let mut i = 0;
        while i < ENTRIES.len() {
            all[i] = ENTRIES[i].kind;
            i += 1;
        }
        all
    };

    fn entry(self) -> &'static Entry {
        // Every variant has its entry: `registry_is_whole` holds it.
        ENTRIES
            .iter()
            .find(|e| e.kind == self)
            .unwrap_or(&ENTRIES[0])
    }

    /// The command's name, as the first word of a command line spells it: `tcp`, `rfc2544`, ….
    pub fn as_str(self) -> &'static str {
        self.entry().name
    }

    /// Whether the command is one test (`tcp`, `udp`, `rr`, `crr`), each run of which is one
    /// stored run: what a sweep's point or a mesh's pair runs, a plan's test step.
    pub fn is_test(self) -> bool {
        self.entry().test
    }

    /// How many words name the command on its command line (`sweep size`: 2), which is where
    /// a plan's runner puts its own flags.
    pub fn words(self) -> usize {
        self.entry().words
    }

    /// Whether the web UI takes it as options (`{"kind":"tcp","time":2}`); `sweep`, whose
    /// shape options do not fit, it takes as words only.
    pub fn ui_options(self) -> bool {
        self.entry().ui_options
    }

    /// What it measures, in a few words (`bulk throughput`), beside its name on the page.
    pub fn summary(self) -> &'static str {
        self.entry().summary
    }

    /// The names a UI request's `kind` may give it by: the command's, then its record kinds'
    /// (`tcp`, `tcp_stream`).
    pub fn ui_names(self) -> impl Iterator<Item = &'static str> {
        let e = self.entry();
        std::iter::once(e.name).chain(e.record_kinds.iter().copied())
    }

    /// The single tests, for `--test` of a mesh and a sweep's `-- TEST`.
    pub fn tests() -> impl Iterator<Item = Measuring> {
        Measuring::ALL.into_iter().filter(|k| k.is_test())
    }

    /// The names of `kinds`, comma-separated, for messages.
    pub fn list(kinds: impl IntoIterator<Item = Measuring>) -> String {
        let names: Vec<&str> = kinds.into_iter().map(Measuring::as_str).collect();
        names.join(", ")
    }
}

impl fmt::Display for Measuring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no measuring command.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "unknown step kind `{word}` (kinds: {})",
    Measuring::list(Measuring::ALL)
)]
pub struct UnknownKind {
    /// The word as given.
    pub word: String,
}

impl FromStr for Measuring {
    type Err = UnknownKind;

    /// The command named exactly (case-sensitive, as the command line spells it).
    fn from_str(s: &str) -> Result<Measuring, UnknownKind> {
        Measuring::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind {
                word: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_whole() {
        for (i, kind) in Measuring::ALL.into_iter().enumerate() {
            assert_eq!(ENTRIES[i].kind, kind);
            assert_eq!(
                ENTRIES.iter().filter(|e| e.kind == kind).count(),
                1,
                "{kind:?}"
            );
        }
        // A variant missing from ENTRIES would show as a duplicate of another in ALL.
        let names: std::collections::HashSet<&str> =
            Measuring::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ENTRIES.len());
    }

    #[test]
    fn names_round_trip() {
        for kind in Measuring::ALL {
            assert_eq!(kind.as_str().parse::<Measuring>(), Ok(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
    }

    #[test]
    fn only_single_tests_are_tests() {
        let tests: Vec<Measuring> = Measuring::tests().collect();
        assert_eq!(
            tests,
            [
                Measuring::Tcp,
                Measuring::Udp,
                Measuring::Rr,
                Measuring::Crr,
                Measuring::Cc
            ]
        );
        assert_eq!(Measuring::Sweep.words(), 2);
        assert!(!Measuring::Sweep.ui_options());
        assert_eq!(
            Measuring::Tcp.ui_names().collect::<Vec<_>>(),
            ["tcp", "tcp_stream"]
        );
    }

    #[test]
    fn an_unknown_word_lists_the_kinds() {
        let err = "TCP".parse::<Measuring>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown step kind `TCP` (kinds: tcp, udp, rr, crr, cc, pps, sweep, rfc2544, mesh, rpm)"
        );
    }
}
