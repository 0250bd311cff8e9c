//! One end's CPU as the verdict's rules see it: its data threads' share of a core, and the
//! core its work is judged on (the one its threads were pinned to, else its host's busiest).

use measure::cpu::CoreCpu;

use super::{pct, rule};

/// One end's CPU as the rules see it.
pub(super) struct EndCpu {
    /// Its data threads, % of one core per stream.
    pub(super) thread_pct: f64,
    /// Its data threads, % of each core they can occupy: one per stream, at most the host's
    /// cores (with more streams than cores, the streams share them).
    pub(super) core_share_pct: f64,
    /// The core its work is judged on: the one its data threads were pinned to (`-A`), else
    /// its host's busiest (a busier core than the pinned one holds other work).
    pub(super) judged: Option<CoreCpu>,
    /// Whether `judged` is the core its threads were pinned to.
    pub(super) pinned: bool,
    /// Whether every core of its host was saturated: only then had an unpinned thread no idle
    /// core to be moved to, so that other work on its core could hold it back.
    pub(super) host_full: bool,
    /// Its host's cores (0: not known).
    pub(super) cores: usize,
}

impl EndCpu {
    pub(super) fn of(
        threads_pct: f64,
        streams: usize,
        cores: &[CoreCpu],
        pinned: Option<u32>,
    ) -> Self {
        let pinned = pinned
            .and_then(|p| cores.iter().find(|c| c.core == p))
            .copied();
        Self {
            thread_pct: threads_pct / streams.max(1) as f64,
            core_share_pct: threads_pct / streams.min(cores.len()).max(1) as f64,
            judged: pinned.or_else(|| {
                (cores.iter().copied()).max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct))
            }),
            pinned: pinned.is_some(),
            host_full: !cores.is_empty() && cores.iter().all(|c| c.busy_pct >= rule::CORE_PCT),
            cores: cores.len(),
        }
    }

    /// How the evidence names [`Self::judged`]: `busiest core` or `pinned core`.
    pub(super) fn core_name(&self) -> &'static str {
        if self.pinned {
            "pinned core"
        } else {
            "busiest core"
        }
    }

    pub(super) fn thread_saturated(&self) -> bool {
        self.thread_pct >= rule::THREAD_PCT
    }

    /// `; the NAME's host: core N at …` (`the NAME's pinned core: …`), the evidence's clause
    /// on its core, if known.
    pub(super) fn core_clause(&self, name: &str) -> String {
        let core = self.judged.map(|c| core_words(&c));
        let whose = if self.pinned { "pinned core" } else { "host" };
        core.map_or_else(String::new, |c| format!("; the {name}'s {whose}: {c}"))
    }

    /// The judged core when it is saturated with this end's work: its threads run there (the
    /// core they were pinned to, or any core of a host whose every core is full), or the core
    /// is busy with receive processing. A core busy with other work is not this end's limit:
    /// an unpinned thread that waits for it is moved to an idle core, so with one idle core
    /// on the host a full core is someone else's (a spinning process took core 0 of a CI run
    /// and a receiver at 31 % of a core was called CPU-bound).
    pub(super) fn core_saturated(&self) -> Option<CoreCpu> {
        let threads_held = self.pinned || self.host_full;
        self.judged.filter(|c| {
            c.busy_pct >= rule::CORE_PCT
                && ((self.core_share_pct >= rule::CORE_THREAD_PCT && threads_held)
                    || c.irq_pct + c.softirq_pct >= rule::CORE_IRQ_PCT)
        })
    }
}

/// How strongly an end is CPU-bound: its thread saturated beats one of its host's cores.
pub(super) fn saturation(end: &EndCpu) -> Option<(u8, f64)> {
    if end.thread_saturated() {
        Some((2, end.thread_pct))
    } else {
        end.core_saturated().map(|_| (1, end.core_share_pct))
    }
}

pub(super) fn core_words(c: &CoreCpu) -> String {
    format!(
        "core {} at {} busy ({} system, {} softirq, {} irq)",
        c.core,
        pct(c.busy_pct),
        pct(c.system_pct),
        pct(c.softirq_pct),
        pct(c.irq_pct)
    )
}
