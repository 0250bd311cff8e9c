//! pkt-gen's flow patterns: 1 flow, 100 source ports, 100 destination ports, and 10,000 flows
//! (100 source × 100 destination ports).
//!
//! A flow is a UDP 4-tuple; flow `i` of a pattern is the base ports plus [`FlowPattern::offsets`].
//! Invariant: the offsets of a pattern's flows are distinct pairs, so `count()` flows are
//! `count()` different 4-tuples (the receiver's hash spreads them over its queues).

/// How the flows of a test differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowPattern {
    /// One flow: the base ports.
    One,
    /// 100 flows: source ports base..base+100.
    SourcePorts,
    /// 100 flows: destination ports base..base+100.
    DestinationPorts,
    /// 10,000 flows: every source port of 100 with every destination port of 100.
    SourceAndDestination,
}

/// Ports a varying side takes (pkt-gen's 100).
pub const PORTS_PER_SIDE: u16 = 100;

impl FlowPattern {
    /// All patterns, in pkt-gen's order.
    pub const ALL: [FlowPattern; 4] = [
        Self::One,
        Self::SourcePorts,
        Self::DestinationPorts,
        Self::SourceAndDestination,
    ];

    /// How many flows the pattern has.
    pub fn count(self) -> usize {
        let (s, d) = self.sides();
        usize::from(s) * usize::from(d)
    }

    /// How many source and destination ports the pattern uses.
    pub fn sides(self) -> (u16, u16) {
        match self {
            Self::One => (1, 1),
            Self::SourcePorts => (PORTS_PER_SIDE, 1),
            Self::DestinationPorts => (1, PORTS_PER_SIDE),
            Self::SourceAndDestination => (PORTS_PER_SIDE, PORTS_PER_SIDE),
        }
    }

    /// Flow `i`'s (source, destination) port offsets; `i` is taken modulo `count()`.
    pub fn offsets(self, i: usize) -> (u16, u16) {
        let (s, d) = self.sides();
        let i = i % self.count();
        // Destination varies fastest, so consecutive frames of the 10,000-flow pattern change
        // the destination port, as pkt-gen's range walk does. Both values fit u16 (< 100).
        let d_off = (i % usize::from(d)) as u16;
        let s_off = (i / usize::from(d)) as u16;
        debug_assert!(s_off < s);
        (s_off, d_off)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn each_pattern_has_pkt_gens_count_of_distinct_flows() {
        let want = [1, 100, 100, 10_000];
        for (p, n) in FlowPattern::ALL.into_iter().zip(want) {
            assert_eq!(p.count(), n, "{p:?}");
            let distinct: HashSet<_> = (0..n).map(|i| p.offsets(i)).collect();
            assert_eq!(distinct.len(), n, "{p:?}");
            assert_eq!(p.offsets(n), p.offsets(0), "{p:?} wraps");
        }
    }

    #[test]
    fn a_side_that_does_not_vary_stays_at_its_base() {
        assert!((0..100).all(|i| FlowPattern::SourcePorts.offsets(i).1 == 0));
        assert!((0..100).all(|i| FlowPattern::DestinationPorts.offsets(i).0 == 0));
    }
}
