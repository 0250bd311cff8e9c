//! What the XDP counter on a frame test's server counted ([`DriverCounts`], in the server's
//! `Results`), and how the test's frames spread over its flows there ([`FlowSpread`]).

use serde::{Deserialize, Serialize};

use crate::spec::FrameRxPath;

/// The test's frames as the receiving driver saw them: counted by the server's XDP program
/// before its stack, then passed on to the test's sockets or redirected to its AF_XDP sockets.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DriverCounts {
    /// The interface the counter was on.
    pub interface: String,
    /// The test's frames (UDP to its ports) that reached it.
    pub frames: u64,
    /// Their bytes as the driver saw them (Ethernet header on, FCS off).
    pub bytes: u64,
    /// `frames` by the receive queue they arrived on, queue 0 up, to the last that had any
    /// (absent: a server before the field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_frames: Vec<u64>,
    /// How the receiver took them from the driver (protocol 16's later servers; absent: up
    /// the stack to the test's sockets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_path: Option<FrameRxPath>,
    /// Receive queues with an AF_XDP socket, queue 0 up (0: the stack's sockets took them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rx_queues: u32,
    /// Frames of the test the AF_XDP sockets had no room for (their `XDP_STATISTICS`: rx ring
    /// full, no free chunk, invalid descriptor): lost in the receiving host.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rx_socket_dropped: u64,
    /// Why an `xdp` test's frames went up the stack (`rx_path` `sockets`) instead of to AF_XDP
    /// sockets: the interface's queues, the frame size, a socket the kernel refused (absent:
    /// they did not, or a server before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_fallback: Option<String>,
    /// `frames` by flow (absent: a server before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowSpread>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// A frame test's frames at the receiving driver by flow (every stream's source × destination
/// ports, as the XDP counter keys them): whether every flow arrived, and how evenly.
/// Invariant: `seen <= counted <= flows`, `min_frames <= max_frames`.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FlowSpread {
    /// Flows the test's frames take: streams × source ports × destination ports.
    pub flows: u32,
    /// Of them, those the counter held a count for: all, unless the host's bound on per-flow
    /// counters (`frames::xdp::flow_keys_held`) held fewer.
    pub counted: u32,
    /// Counted flows with at least one frame at the driver.
    pub seen: u32,
    /// Frames of the counted flows: the driver's `frames` when every frame had its flow
    /// counted (a frame before its stream's probe, or from outside the stream's ports, has not).
    pub frames: u64,
    /// The fewest frames a counted flow had.
    pub min_frames: u64,
    /// The most frames a counted flow had.
    pub max_frames: u64,
}

impl FlowSpread {
    /// The spread of `counted`, the frames of the first `counted.len()` of `flows` flows.
    pub fn of(flows: u32, counted: &[u64]) -> Self {
        Self {
            flows,
            counted: u32::try_from(counted.len()).unwrap_or(u32::MAX),
            seen: u32::try_from(counted.iter().filter(|&&n| n > 0).count()).unwrap_or(u32::MAX),
            frames: counted.iter().sum(),
            min_frames: counted.iter().copied().min().unwrap_or(0),
            max_frames: counted.iter().copied().max().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_counts_the_flows_that_arrived_and_their_extremes() {
        let s = FlowSpread::of(5, &[3, 0, 7, 2]);
        assert_eq!(
            s,
            FlowSpread {
                flows: 5,
                counted: 4,
                seen: 3,
                frames: 12,
                min_frames: 0,
                max_frames: 7,
            }
        );
        assert_eq!(FlowSpread::of(0, &[]), FlowSpread::default());
    }
}
