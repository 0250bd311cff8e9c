//! A test by amount (`-n`, `-k`): one end's senders share a [`Budget`] of units (TCP bytes, UDP
//! datagrams: `wire::TestSpec::amount_units`), each taking what it sends next through its own
//! [`Quota`], so that together they send exactly the amount, however the streams' speeds differ.

use std::sync::atomic::{AtomicU64, Ordering};

/// What is left of an amount for one end's senders.
#[derive(Debug)]
pub struct Budget {
    left: AtomicU64,
}

impl Budget {
    /// `units` to send in all.
    pub fn new(units: u64) -> Self {
        Self {
            left: AtomicU64::new(units),
        }
    }

    /// Takes up to `want` units; returns how many (0 once all are taken).
    pub fn take(&self, want: u64) -> u64 {
        let taken = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                (left > 0).then(|| left - want.min(left))
            });
        taken.map_or(0, |left| want.min(left))
    }
}

/// One sender's share of a [`Budget`]: what it took and has not sent yet is its own to send
/// (a partial write leaves it owed), so nothing taken is lost when the others have finished.
/// Without a budget it gives whatever is asked.
#[derive(Debug)]
pub struct Quota<'a> {
    budget: Option<&'a Budget>,
    owed: u64,
}

impl<'a> Quota<'a> {
    /// A sender's share of `budget` (`None`: a test by time).
    pub fn new(budget: Option<&'a Budget>) -> Self {
        Self { budget, owed: 0 }
    }

    /// How many units to send next, at most `want`: what is owed, else a new take; 0 once the
    /// budget is spent and everything taken was sent.
    pub fn next(&mut self, want: u64) -> u64 {
        let Some(budget) = self.budget else {
            return want;
        };
        if self.owed == 0 {
            self.owed = budget.take(want);
        }
        self.owed.min(want)
    }

    /// `n` of the units [`Quota::next`] gave were sent.
    pub fn sent(&mut self, n: u64) {
        self.owed -= n.min(self.owed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_sharing_a_budget_send_exactly_it_whatever_their_writes_take() {
        let budget = Budget::new(10_000);
        let (mut a, mut b) = (Quota::new(Some(&budget)), Quota::new(Some(&budget)));
        let mut sent = 0;
        // `a` writes 4096-unit chunks whole, `b` a third of each chunk per call.
        loop {
            let (na, nb) = (a.next(4096), b.next(4096));
            if na == 0 && nb == 0 {
                break;
            }
            let nb = nb.div_ceil(3).min(nb);
            a.sent(na);
            b.sent(nb);
            sent += na + nb;
        }
        assert_eq!(sent, 10_000);
        assert_eq!(budget.take(1), 0);
    }

    #[test]
    fn without_a_budget_every_ask_is_given() {
        let mut q = Quota::new(None);
        assert_eq!(q.next(512), 512);
        q.sent(512);
        assert_eq!(q.next(512), 512);
    }
}
