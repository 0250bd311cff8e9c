//! What a step runs: the linerate command named by the first word of its `run`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The linerate command a step runs, named by the first word of its `run`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StepKind {
    /// `linerate tcp`: bulk TCP throughput.
    Tcp,
    /// `linerate udp`: UDP at a target rate.
    Udp,
    /// `linerate rr`: request/response over TCP.
    Rr,
    /// `linerate crr`: connect, request, response, close.
    Crr,
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

impl StepKind {
    /// Every kind, in the order messages list them.
    pub const ALL: [StepKind; 9] = [
        StepKind::Tcp,
        StepKind::Udp,
        StepKind::Rr,
        StepKind::Crr,
        StepKind::Pps,
        StepKind::Sweep,
        StepKind::Rfc2544,
        StepKind::Mesh,
        StepKind::Rpm,
    ];

    /// The command's name, as the first word of `run` spells it: `tcp`, `rfc2544`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Tcp => "tcp",
            StepKind::Udp => "udp",
            StepKind::Rr => "rr",
            StepKind::Crr => "crr",
            StepKind::Pps => "pps",
            StepKind::Sweep => "sweep",
            StepKind::Rfc2544 => "rfc2544",
            StepKind::Mesh => "mesh",
            StepKind::Rpm => "rpm",
        }
    }

    /// Whether the step is one test (`tcp`, `udp`, `rr`, `crr`), each run of which is one
    /// stored run, rather than a command that runs many (`pps`, `sweep`, `rfc2544`, `mesh`,
    /// `rpm`).
    pub fn is_test(self) -> bool {
        matches!(
            self,
            StepKind::Tcp | StepKind::Udp | StepKind::Rr | StepKind::Crr
        )
    }

    /// The kinds' names, comma-separated, for messages.
    pub(crate) fn list() -> String {
        let names: Vec<&str> = StepKind::ALL.iter().map(|k| k.as_str()).collect();
        names.join(", ")
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no step kind.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown step kind `{word}` (kinds: {})", StepKind::list())]
pub struct UnknownKind {
    /// The word as given.
    pub word: String,
}

impl FromStr for StepKind {
    type Err = UnknownKind;

    /// The kind named exactly (case-sensitive, as the command line spells it).
    fn from_str(s: &str) -> Result<StepKind, UnknownKind> {
        StepKind::ALL
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
    fn names_round_trip() {
        for kind in StepKind::ALL {
            assert_eq!(kind.as_str().parse::<StepKind>(), Ok(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
    }

    #[test]
    fn only_single_tests_are_tests() {
        let tests: Vec<StepKind> = StepKind::ALL.into_iter().filter(|k| k.is_test()).collect();
        assert_eq!(
            tests,
            [StepKind::Tcp, StepKind::Udp, StepKind::Rr, StepKind::Crr]
        );
    }

    #[test]
    fn an_unknown_word_lists_the_kinds() {
        let err = "TCP".parse::<StepKind>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown step kind `TCP` (kinds: tcp, udp, rr, crr, pps, sweep, rfc2544, mesh, rpm)"
        );
    }
}
