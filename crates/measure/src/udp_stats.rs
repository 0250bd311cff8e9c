//! Receiver-side accounting for one UDP stream: loss, duplicates, reordering and RFC 3550 jitter
//! from the sequence numbers and send timestamps the data-plane header carries.
//!
//! A [`SeqTracker`] is fed every received data datagram ([`SeqTracker::record`]) and read with
//! [`SeqTracker::snapshot`], which returns plain [`UdpCounts`]. Every datagram lands in exactly
//! one of three classes, so `unique + duplicates + late == packets` always holds:
//!
//! - **unique**: a sequence number not received before. If it is below the highest seen it is
//!   also counted in `out_of_order` (RFC 4737: below the next expected, and not a duplicate).
//! - **duplicate**: a sequence number already received.
//! - **late**: [`WINDOW`] or more below the highest sequence number seen. The tracker no longer
//!   remembers that far back, so it cannot tell whether the datagram is new or a duplicate.
//!
//! Loss reconciles exactly with the sender: `sent = unique + lost` ([`SeqTracker::lost`]). A late
//! datagram is not unique, so it is counted as lost *and* reported in `late`; a late arrival is
//! as good as lost for a throughput test, and it keeps the sum exact.
//!
//! Memory of which sequence numbers arrived is a bitmap over the last [`WINDOW`] sequence numbers
//! (a ring of u64 words, 128 KiB) allocated once in [`SeqTracker::new`]. `record` never
//! allocates, never divides, uses no floating point, never panics on any `u64` sequence number
//! (jumps, repeats, `u64::MAX`), and costs O(1) plus one word cleared per 64 sequence numbers the
//! window advances; a jump of [`WINDOW`] or more clears the whole ring in one `fill` (128 KiB),
//! so even a hostile peer's jumps are bounded per datagram.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How many sequence numbers, counting back from the highest seen, the tracker remembers.
pub const WINDOW: u64 = 1 << 20;

/// Fractional bits of the fixed-point jitter.
const JITTER_FRAC: u32 = 16;
/// The largest |D| (ns) the jitter takes in; larger ones count as this much.
const JITTER_D_MAX: u64 = 1 << 46;

/// Bits per ring word.
const WORD_BITS: u64 = 64;
/// Number of u64 words in the ring.
const WORDS: usize = (WINDOW / WORD_BITS) as usize;

/// What a [`SeqTracker`] has counted so far. All counts are of datagrams unless named otherwise.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UdpCounts {
    /// Datagrams received, including duplicates and late ones.
    pub packets: u64,
    /// Payload bytes received, including duplicates and late datagrams.
    pub bytes: u64,
    /// Distinct sequence numbers received (late datagrams excluded).
    pub unique: u64,
    /// Datagrams whose sequence number had already been received.
    pub duplicates: u64,
    /// Unique datagrams that arrived after a higher sequence number (RFC 4737 reordered).
    pub out_of_order: u64,
    /// Datagrams [`WINDOW`] or more below the highest sequence number: neither unique nor
    /// duplicate, and so counted as lost.
    pub late: u64,
    /// `highest_seq + 1 − unique`: gaps currently open (later arrivals close them); 0 before any
    /// datagram. Saturates at `u64::MAX`.
    pub lost_so_far: u64,
    /// RFC 3550 interarrival jitter, in nanoseconds, rounded.
    pub jitter_ns: u64,
    /// The highest sequence number seen; 0 when `has_packets` is false.
    pub highest_seq: u64,
    /// Whether any datagram has been recorded (tells `highest_seq == 0` apart from nothing).
    pub has_packets: bool,
    /// Datagrams the kernel dropped at the receiving sockets (their own drop counter, read when
    /// the receiver ends; `None` before that, or where the kernel does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_drops: Option<u64>,
    /// Whether the receiver got datagrams coalesced (GRO), so that `socket_drops` counts
    /// dropped batches, not datagrams.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub socket_drops_batched: bool,
    /// The sender's count of data datagrams, carried by the first end-of-test (FIN) datagram
    /// the receiver got (set when the receiver ends; `None` before that, when no FIN came, or
    /// for a receiver that does not read FINs). With it the receiver knows its loss as the
    /// client computes it: [`UdpCounts::lost`]`(sender_total)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_total: Option<u64>,
}

impl UdpCounts {
    /// Final loss given the sender's count of data datagrams sent: `sent_total − unique`,
    /// saturating at 0, so `sent_total == unique + lost` whenever the receiver saw no sequence
    /// number at or above `sent_total`. Late datagrams are included (they are not unique).
    pub fn lost(&self, sent_total: u64) -> u64 {
        sent_total.saturating_sub(self.unique)
    }
}

/// Receiver-side sequence and jitter accounting for one UDP stream.
pub struct SeqTracker {
    /// Bit `s % WINDOW` is set when sequence number `s` (within the window) has been received.
    seen: Box<[u64]>,
    /// Highest sequence number received; meaningful only when `has_packets`.
    highest: u64,
    has_packets: bool,
    packets: u64,
    bytes: u64,
    unique: u64,
    duplicates: u64,
    out_of_order: u64,
    late: u64,
    /// RFC 3550 `J`, in nanoseconds, kept unrounded: fixed point with [`JITTER_FRAC`]
    /// fractional bits (integer arithmetic: this runs for every datagram, and a floating-point
    /// recurrence is a chain of slow dependent instructions).
    jitter_fixed: i64,
    /// Transit time (`recv_ns − sent_ns`, mixed clocks, modulo 2^64) of the previous arrival.
    prev_transit_ns: Option<u64>,
}

impl SeqTracker {
    /// An empty tracker. Allocates the 128 KiB window; nothing allocates afterwards.
    pub fn new() -> Self {
        Self {
            seen: vec![0u64; WORDS].into_boxed_slice(),
            highest: 0,
            has_packets: false,
            packets: 0,
            bytes: 0,
            unique: 0,
            duplicates: 0,
            out_of_order: 0,
            late: 0,
            jitter_fixed: 0,
            prev_transit_ns: None,
        }
    }

    /// Records one received data datagram.
    ///
    /// `sent_ns` is the sender's timestamp from the header, `recv_ns` the receiver's clock at
    /// arrival; the two clocks need not agree, only differences between datagrams are used.
    /// `bytes` is the datagram's payload length. Every datagram, duplicates and late ones
    /// included, feeds the jitter estimate, in arrival order.
    #[inline]
    pub fn record(&mut self, seq: u64, sent_ns: u64, recv_ns: u64, bytes: usize) {
        self.packets += 1;
        self.bytes = self
            .bytes
            .saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
        self.update_jitter(sent_ns, recv_ns);

        if self.has_packets && Some(seq) == self.highest.checked_add(1) {
            // The common case, the next in order: advancing by one clears this slot and
            // marking sets it again, so set it.
            let (word, mask) = Self::slot(seq);
            if let Some(w) = self.seen.get_mut(word) {
                *w |= mask;
            }
            self.highest = seq;
            self.unique += 1;
        } else if !self.has_packets {
            // The ring is all zero from `new`, so nothing to clear.
            self.has_packets = true;
            self.highest = seq;
            self.mark(seq);
            self.unique += 1;
        } else if seq > self.highest {
            self.advance_to(seq);
            self.mark(seq);
            self.unique += 1;
        } else if self.highest - seq >= WINDOW {
            self.late += 1;
        } else if self.mark(seq) {
            // Below the highest (seq == highest is always a duplicate) and new: reordered.
            self.unique += 1;
            self.out_of_order += 1;
        } else {
            self.duplicates += 1;
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> UdpCounts {
        let lost_so_far = if self.has_packets {
            let open = (u128::from(self.highest) + 1).saturating_sub(u128::from(self.unique));
            u64::try_from(open).unwrap_or(u64::MAX)
        } else {
            0
        };
        UdpCounts {
            packets: self.packets,
            bytes: self.bytes,
            unique: self.unique,
            duplicates: self.duplicates,
            out_of_order: self.out_of_order,
            late: self.late,
            lost_so_far,
            // Rounded to nearest; J is never negative.
            jitter_ns: ((self.jitter_fixed + (1 << (JITTER_FRAC - 1))) >> JITTER_FRAC) as u64,
            highest_seq: if self.has_packets { self.highest } else { 0 },
            has_packets: self.has_packets,
            socket_drops: None,
            socket_drops_batched: false,
            sender_total: None,
        }
    }

    /// Final loss given the sender's total of data datagrams sent (from its FIN or report):
    /// `sent_total − unique`, saturating at 0. See [`UdpCounts::lost`].
    pub fn lost(&self, sent_total: u64) -> u64 {
        sent_total.saturating_sub(self.unique)
    }

    /// RFC 3550 §6.4.1: `D = (R_j − R_i) − (S_j − S_i)`, `J += (|D| − J) / 16`.
    ///
    /// Transit times are taken modulo 2^64 and their difference read as signed, which is exact
    /// whenever |D| < 2^63 ns, whatever offset the two clocks have. |D| is capped at
    /// [`JITTER_D_MAX`] (about 19.5 hours) so the fixed point cannot overflow.
    #[inline]
    fn update_jitter(&mut self, sent_ns: u64, recv_ns: u64) {
        let transit = recv_ns.wrapping_sub(sent_ns);
        if let Some(prev) = self.prev_transit_ns {
            let d = (transit.wrapping_sub(prev) as i64)
                .unsigned_abs()
                .min(JITTER_D_MAX);
            // d ≤ 2^46, so d << 16 ≤ 2^62 and the difference below fits an i64; the shift of a
            // negative difference floors, an error of at most 2^-16 ns a step.
            let target = (d << JITTER_FRAC) as i64;
            self.jitter_fixed += (target - self.jitter_fixed) >> 4;
        }
        self.prev_transit_ns = Some(transit);
    }

    /// Word index and bit mask of `seq` in the ring.
    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let bit = seq & (WINDOW - 1);
        // < WORDS, so the cast cannot truncate.
        ((bit / WORD_BITS) as usize, 1u64 << (bit % WORD_BITS))
    }

    /// Sets `seq`'s bit; returns whether it was clear.
    #[inline]
    fn mark(&mut self, seq: u64) -> bool {
        let (word, mask) = Self::slot(seq);
        match self.seen.get_mut(word) {
            Some(w) => {
                let was_clear = *w & mask == 0;
                *w |= mask;
                was_clear
            }
            None => false,
        }
    }

    /// Moves the window's top from `self.highest` up to `seq` (> highest), clearing the bits of
    /// `highest + 1 ..= seq`: their slots last held sequence numbers now out of the window.
    #[inline]
    fn advance_to(&mut self, seq: u64) {
        let delta = seq - self.highest;
        if delta >= WINDOW {
            self.seen.fill(0);
        } else {
            // delta < WINDOW, so these fit in usize and `end < 2 * WINDOW`.
            let start = ((self.highest + 1) & (WINDOW - 1)) as usize;
            let end = start + delta as usize;
            let window = WINDOW as usize;
            if end <= window {
                self.clear_bits(start, end);
            } else {
                self.clear_bits(start, window);
                self.clear_bits(0, end - window);
            }
        }
        self.highest = seq;
    }

    /// Clears ring bits `lo..hi` (`lo < hi <= WINDOW`), a word at a time where it can.
    fn clear_bits(&mut self, lo: usize, hi: usize) {
        const BITS: usize = WORD_BITS as usize;
        let (lo_word, lo_bit) = (lo / BITS, lo % BITS);
        let (hi_word, hi_bit) = (hi / BITS, hi % BITS);
        if lo_word == hi_word {
            // Same word, so 0 < hi_bit - lo_bit < 64.
            let mask = ((1u64 << (hi_bit - lo_bit)) - 1) << lo_bit;
            if let Some(w) = self.seen.get_mut(lo_word) {
                *w &= !mask;
            }
            return;
        }
        if let Some(w) = self.seen.get_mut(lo_word) {
            *w &= !(u64::MAX << lo_bit);
        }
        if let Some(words) = self.seen.get_mut(lo_word + 1..hi_word) {
            words.fill(0);
        }
        if hi_bit > 0 {
            if let Some(w) = self.seen.get_mut(hi_word) {
                *w &= u64::MAX << hi_bit;
            }
        }
    }
}

impl Default for SeqTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SeqTracker {
    /// The counts, not the 16,384 words of the window.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeqTracker")
            .field("counts", &self.snapshot())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    /// Records `seqs` with constant transit and 100-byte payloads.
    fn track(seqs: &[u64]) -> SeqTracker {
        let mut t = SeqTracker::new();
        for (i, &seq) in seqs.iter().enumerate() {
            let now = i as u64 * 1_000;
            t.record(seq, now, now + 50_000, 100);
        }
        t
    }

    fn feed(t: &mut SeqTracker, seqs: &[u64]) {
        for &seq in seqs {
            t.record(seq, 0, 0, 100);
        }
    }

    #[test]
    fn empty_tracker_counts_nothing() {
        let c = SeqTracker::new().snapshot();
        assert_eq!(c, UdpCounts::default());
        assert!(!c.has_packets);
    }

    #[test]
    fn in_order_has_no_loss() {
        let seqs: Vec<u64> = (0..1000).collect();
        let t = track(&seqs);
        let c = t.snapshot();
        assert_eq!(
            c,
            UdpCounts {
                packets: 1000,
                bytes: 100_000,
                unique: 1000,
                highest_seq: 999,
                has_packets: true,
                ..UdpCounts::default()
            }
        );
        assert_eq!(t.lost(1000), 0);
    }

    #[test]
    fn gap_then_fill_is_out_of_order_and_closes_loss() {
        let mut t = track(&[0, 1, 2, 5, 6]);
        assert_eq!(t.snapshot().lost_so_far, 2);
        assert_eq!(t.snapshot().out_of_order, 0);
        feed(&mut t, &[3, 4]);
        let c = t.snapshot();
        assert_eq!((c.out_of_order, c.lost_so_far, c.unique), (2, 0, 7));
        assert_eq!(c.duplicates, 0);
    }

    #[test]
    fn duplicate_is_counted_once() {
        let c = track(&[0, 1, 1, 2]).snapshot();
        assert_eq!((c.packets, c.unique, c.duplicates), (4, 3, 1));
        assert_eq!((c.out_of_order, c.lost_so_far, c.bytes), (0, 0, 400));
    }

    #[test]
    fn repeat_of_highest_and_of_reordered_are_duplicates() {
        let c = track(&[0, 0, 3, 1, 1, 3]).snapshot();
        assert_eq!((c.unique, c.duplicates, c.out_of_order), (3, 3, 1));
        assert_eq!(c.lost_so_far, 1);
    }

    #[test]
    fn swap_is_one_out_of_order() {
        let c = track(&[0, 2, 1, 3]).snapshot();
        assert_eq!(
            (c.unique, c.out_of_order, c.duplicates, c.lost_so_far),
            (4, 1, 0, 0)
        );
    }

    #[test]
    fn first_packet_above_zero_is_not_reordered() {
        let c = track(&[5, 6]).snapshot();
        assert_eq!((c.unique, c.out_of_order, c.lost_so_far), (2, 0, 5));
    }

    #[test]
    fn older_than_window_is_late_and_lost() {
        // A jump of exactly WINDOW takes the clear-everything path.
        let mut t = track(&[0, WINDOW]);
        feed(&mut t, &[0]); // WINDOW behind: late, even though it is a duplicate
        feed(&mut t, &[1]); // WINDOW - 1 behind: still tracked
        let c = t.snapshot();
        assert_eq!(
            (c.late, c.unique, c.duplicates, c.out_of_order),
            (1, 3, 0, 1)
        );
        assert_eq!(c.unique + c.duplicates + c.late, c.packets);
        assert_eq!(t.lost(WINDOW + 1), WINDOW + 1 - 3);
    }

    #[test]
    fn slots_reused_after_wrap_start_clear() {
        // 0..10, then a jump short of WINDOW that wraps the ring: the window is now
        // 6..=WINDOW+5, so slots of 0..=5 were cleared (0..=4 now stand for WINDOW..=WINDOW+4
        // and must read as unseen) while 6..=9 are still remembered.
        let mut t = track(&(0..10).collect::<Vec<_>>());
        feed(&mut t, &[WINDOW + 5]);
        feed(
            &mut t,
            &[WINDOW, WINDOW + 1, WINDOW + 2, WINDOW + 3, WINDOW + 4],
        );
        feed(&mut t, &[9, 6]);
        let c = t.snapshot();
        assert_eq!((c.out_of_order, c.duplicates, c.late), (5, 2, 0));
        assert_eq!(c.unique, 16);
        assert_eq!(c.lost_so_far, WINDOW + 6 - 16);
    }

    #[test]
    fn huge_jump_is_cheap_and_counts_the_gap() {
        let mut t = track(&[0, 1_000_000_000_000]);
        assert_eq!(t.snapshot().lost_so_far, 1_000_000_000_000 - 1);
        feed(&mut t, &[1_000_000_000_000 - 1, 0]);
        let c = t.snapshot();
        assert_eq!((c.out_of_order, c.late, c.unique), (1, 1, 3));
        // Many jumps of more than WINDOW each: one ring fill apiece, not one bit per seq.
        for k in 2..200u64 {
            feed(&mut t, &[k * 1_000_000_000_000]);
        }
        assert_eq!(t.snapshot().unique, 3 + 198);
    }

    #[test]
    fn extreme_values_do_not_panic() {
        let mut t = SeqTracker::new();
        t.record(u64::MAX, u64::MAX, 0, usize::MAX);
        t.record(u64::MAX, 0, u64::MAX, usize::MAX);
        t.record(u64::MAX - 1, u64::MAX, u64::MAX, 0);
        t.record(0, 0, 0, 0);
        let c = t.snapshot();
        assert_eq!(
            (c.unique, c.duplicates, c.out_of_order, c.late),
            (2, 1, 1, 1)
        );
        assert_eq!(c.lost_so_far, u64::MAX - 1);
        assert_eq!(c.highest_seq, u64::MAX);
        assert_eq!(c.bytes, u64::MAX);
        // Transit times modulo 2^64 are 1, -1, 0, 0: differences of 2, 1 and 0 ns.
        assert_eq!(c.jitter_ns, 0);
    }

    #[test]
    fn a_huge_transit_change_counts_as_the_cap() {
        let mut t = SeqTracker::new();
        t.record(0, 0, 0, 64);
        t.record(1, 0, 1 << 62, 64);
        assert_eq!(t.snapshot().jitter_ns, JITTER_D_MAX / 16);
    }

    #[test]
    fn final_loss_reconciles_with_trailing_losses() {
        let t = track(&(0..=9).collect::<Vec<_>>());
        assert_eq!(t.snapshot().lost_so_far, 0);
        assert_eq!(t.lost(15), 5);
        assert_eq!(t.lost(15) + t.snapshot().unique, 15);
        assert_eq!(t.snapshot().lost(15), 5);
        assert_eq!(t.lost(3), 0, "saturates when the sender claims fewer");
    }

    #[test]
    fn constant_transit_has_zero_jitter() {
        let t = track(&(0..100).collect::<Vec<_>>());
        assert_eq!(t.snapshot().jitter_ns, 0);
    }

    #[test]
    fn jitter_follows_rfc3550_recurrence() {
        let mut t = SeqTracker::new();
        let mut expected = 0.0f64;
        for i in 0..200u64 {
            let sent = i * 1_000_000;
            let transit = if i % 2 == 1 { 1_000 } else { 0 };
            t.record(i, sent, sent + transit, 64);
            if i > 0 {
                expected += (1_000.0 - expected) / 16.0;
            }
            if i == 5 {
                // 1000 * (1 - (15/16)^5) = 275.8…
                assert_eq!(t.snapshot().jitter_ns, 276);
                assert_eq!(t.snapshot().jitter_ns, expected.round() as u64);
            }
        }
        assert_eq!(t.snapshot().jitter_ns, expected.round() as u64);
        assert_eq!(t.snapshot().jitter_ns, 1_000);
    }

    #[test]
    fn jitter_uses_arrival_order_and_survives_clock_offsets() {
        // Receiver clock far behind the sender's: transit is negative, only changes matter.
        let mut t = SeqTracker::new();
        t.record(1, u64::MAX - 10, 5, 64);
        t.record(0, u64::MAX - 20, 5, 64); // D = 0 - (-10) = 10
        assert_eq!(t.snapshot().jitter_ns, 1); // 10 / 16 = 0.625
    }

    /// The classification, re-derived with a set of every sequence number ever seen.
    fn model(seqs: &[u64]) -> (u64, u64, u64, u64) {
        let (mut unique, mut dup, mut ooo, mut late) = (0, 0, 0, 0);
        let mut seen = HashSet::new();
        let mut highest: Option<u64> = None;
        for &s in seqs {
            match highest {
                Some(h) if s <= h && h - s >= WINDOW => late += 1,
                Some(h) if s <= h => {
                    if seen.insert(s) {
                        unique += 1;
                        ooo += 1;
                    } else {
                        dup += 1;
                    }
                }
                _ => {
                    seen.insert(s);
                    unique += 1;
                    highest = Some(s);
                }
            }
        }
        (unique, dup, ooo, late)
    }

    /// Sequence numbers that collide in the ring and cross the window edge.
    fn seq_strategy() -> impl Strategy<Value = u64> {
        prop_oneof![
            6 => 0u64..300,
            3 => (0u64..4, 0u64..300).prop_map(|(k, o)| k * WINDOW + o),
            3 => (1u64..4, 0u64..300).prop_map(|(k, o)| k * WINDOW - o),
            1 => any::<u64>(),
        ]
    }

    proptest! {
        #[test]
        fn classes_partition_packets_and_loss_reconciles(
            seqs in proptest::collection::vec(seq_strategy(), 0..200)
        ) {
            let t = track(&seqs);
            let c = t.snapshot();
            prop_assert_eq!(c.packets, seqs.len() as u64);
            prop_assert_eq!(c.unique + c.duplicates + c.late, c.packets);
            prop_assert_eq!(model(&seqs), (c.unique, c.duplicates, c.out_of_order, c.late));
            if let Some(&max) = seqs.iter().max() {
                prop_assert_eq!(c.highest_seq, max);
                if c.late == 0 {
                    if let Some(sent) = max.checked_add(1) {
                        prop_assert_eq!(t.lost(sent) + c.unique, sent);
                        prop_assert_eq!(c.lost_so_far, t.lost(sent));
                    }
                }
            }
        }
    }
}
