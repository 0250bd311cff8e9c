//! The registry of measuring commands: [`measuring_commands!`], the one list of linerate's
//! commands that measure (run tests and store them), and [`Measuring`], the enum it makes here,
//! with what the rest of the program needs to know of each. The binary makes its clap
//! subcommands and their dispatch from the same list (src/measuring.rs), so a command is in
//! both or in neither; a plan step's first word is parsed here, the web UI accepts the
//! commands and the record kinds [`Measuring::ui_names`] gives and offers their
//! [`Measuring::summary`], and a mesh or sweep runs the ones [`Measuring::is_test`] says are
//! one test.
//!
//! Adding a command shaped like an existing one is an entry of the list, its module in the
//! binary's `commands/` (its flags and their `commands::Measure`), and its engine if it needs
//! a new one.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The one list of measuring commands, in the order messages list them: passes it to the
/// macro named, which this crate's [`Measuring`] and the binary's subcommands are made by.
/// Each entry is the command's help text (its doc comment), its variant, its name (the first
/// word of its command line and the binary's `commands::<name>` module) and its facts: whether
/// it is one test (`test`: what a sweep's point or a mesh's pair runs), how many words name it
/// (`words`: `sweep size` is two), whether the web UI takes it as options (`ui_options`), the
/// record kinds a UI request may also name it by (`record_kinds`), and what it measures in a
/// few words (`summary`, beside its name on the page).
#[macro_export]
macro_rules! measuring_commands {
    ($then:ident) => {
        $then! {
            /// Bulk TCP (or Unix-socket) throughput: send, reverse or both ways, N parallel streams.
            Tcp tcp { test: true, words: 1, ui_options: true, record_kinds: &["tcp_stream"],
                summary: "bulk throughput" }
            /// UDP at a target rate: loss, reordering, duplicates and jitter, exactly accounted.
            Udp udp { test: true, words: 1, ui_options: true, record_kinds: &["udp_stream"],
                summary: "rate, loss, jitter" }
            /// Request/response over TCP: transactions per second and round-trip latency percentiles.
            Rr rr { test: true, words: 1, ui_options: true, record_kinds: &["tcp_rr"],
                summary: "request/response latency" }
            /// Connect, request, response, close, repeat: connections per second and connect +
            /// transaction latency percentiles.
            Crr crr { test: true, words: 1, ui_options: true, record_kinds: &["tcp_crr"],
                summary: "connect/request/response" }
            /// Connect and close, repeat, no data (netperf's TCP_CC): connections per second and
            /// connect latency percentiles.
            Cc cc { test: true, words: 1, ui_options: true, record_kinds: &["tcp_cc"],
                summary: "connect/close" }
            /// Packet rate matrix: frame sizes x flow counts at max rate, against the line rate
            /// link_bps / 8 / (frame + 20).
            Pps pps { test: false, words: 1, ui_options: true, record_kinds: &["udp_pps"],
                summary: "packet rate matrix" }
            /// Sweep message sizes (NetPIPE-style), a test parameter or your own setting (a command
            /// run before each point); every point a stored run.
            Sweep sweep { test: false, words: 2, ui_options: false, record_kinds: &[],
                summary: "a parameter's values" }
            /// RFC 2544 throughput: per frame size, the highest rate with loss within --loss, by
            /// binary search over trials, with latency at that rate and the line rate beside it.
            Rfc2544 rfc2544 { test: false, words: 1, ui_options: true, record_kinds: &[],
                summary: "throughput search" }
            /// Every ordered pair of hosts (each a `serve --relay` server) runs the test, the first
            /// as the client: a matrix of throughput (or p50 round trip, connections/s), each cell a
            /// stored run.
            Mesh mesh { test: false, words: 1, ui_options: true, record_kinds: &[],
                summary: "every pair of hosts" }
            /// Responsiveness under working conditions (RPM, the IETF draft): load connections added
            /// one per second until goodput is stable, foreign and in-band self probes beside them,
            /// where the delay sits (socket buffers, network queues), per direction.
            Rpm rpm { test: false, words: 1, ui_options: true, record_kinds: &[],
                summary: "responsiveness under load" }
        }
    };
}

/// What a command is, beyond its name (the facts of its entry in [`measuring_commands!`]).
struct Entry {
    name: &'static str,
    test: bool,
    words: usize,
    record_kinds: &'static [&'static str],
    ui_options: bool,
    summary: &'static str,
}

/// Makes [`Measuring`] and its table, [`ENTRIES`], from the list.
macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident $name:ident { $($fact:ident: $value:expr),* })*) => {
        /// A linerate command that measures, named by the first word of its command line; each
        /// variant's text is the command's help.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum Measuring {
            $($(#[doc = $doc])* $variant,)*
        }

        /// The registry, in [`Measuring`]'s order.
        const ENTRIES: &[Entry] = &[$(Entry { name: stringify!($name), $($fact: $value),* },)*];

        impl Measuring {
            /// Every measuring command, in the order messages list them.
            pub const ALL: [Measuring; ENTRIES.len()] = [$(Measuring::$variant,)*];
        }
    };
}

measuring_commands!(registry);

impl Measuring {
    fn entry(self) -> &'static Entry {
        &ENTRIES[self as usize]
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
            assert_eq!(kind as usize, i);
        }
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
