//! The frame engines' part of [`TestSpec::check`](super::TestSpec::check): a `udp_stream` whose
//! sender builds Ethernet frames (`packet`, `xdp`) needs a server that counts them at its
//! driver (`serve --frames`: an XDP program on its interface for the test), goes client to
//! server only (the server's sender is a socket), and varies its flows as pkt-gen's patterns
//! do: 1 or 100 source ports, 1 or 100 destination ports.

use thiserror::Error;

use super::{SpecLimits, UdpParams};

/// Ports a frame engine varies per side: pkt-gen's patterns (1, 100, 100, 10,000 flows).
pub const FRAME_PORTS: [u32; 2] = [1, 100];

/// A flow count of `linerate pps` as a frame engine's (source, destination) ports: pkt-gen's 1,
/// 100 (source ports) and 10,000 (100 × 100) flows; `None` for any other count.
pub fn frame_flows(total: u32) -> Option<(u32, u32)> {
    match total {
        1 => Some((1, 1)),
        100 => Some((100, 1)),
        10_000 => Some((100, 100)),
        _ => None,
    }
}

/// A `linerate pps` flow count its engine cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PpsFlowsError {
    /// Outside the socket engine's range.
    #[error("--flows {0}: must be between 1 and 10000")]
    Range(u32),
    /// Not one of the frame engines' patterns.
    #[error("--flows {0}: the frame engines take 1, 100 or 10000")]
    Frames(u32),
}

/// A `linerate pps` cell's flow count as (source, destination) ports for `engine`: the socket
/// engine spreads over source ports only; a frame engine takes pkt-gen's patterns
/// ([`frame_flows`]).
pub fn pps_flows(engine: super::UdpEngine, total: u32) -> Result<(u32, u32), PpsFlowsError> {
    if engine.sends_frames() {
        return frame_flows(total).ok_or(PpsFlowsError::Frames(total));
    }
    match total {
        1..=super::check::MAX_UDP_FLOWS => Ok((total, 1)),
        _ => Err(PpsFlowsError::Range(total)),
    }
}

/// Why a frame engine's test cannot run as asked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FramesRefusal {
    /// The server does not attach its counter for clients.
    #[error("--engine {0}: this server does not count frames at its driver; start it with `serve --frames` (it needs CAP_NET_ADMIN and CAP_BPF), or use --engine socket")]
    NotServed(&'static str),
    /// Frames go client to server only.
    #[error("--engine {0}: frames go from the client to the server only; drop -R/--bidir, or use --engine socket")]
    Direction(&'static str),
    /// Flows outside pkt-gen's patterns.
    #[error("--engine {engine}: --flows {flows} and --flows-dst {flows_dst}: each takes 1 or 100 (pkt-gen's 1, 100, 100 and 10,000 flows)")]
    Flows {
        /// The engine asked.
        engine: &'static str,
        /// Source ports.
        flows: u32,
        /// Destination ports.
        flows_dst: u32,
    },
}

/// The frame engines' checks (nothing for the socket engine).
pub(super) fn check_frames(udp: &UdpParams, limits: &SpecLimits) -> Result<(), FramesRefusal> {
    let engine = udp.engine.name();
    if !udp.engine.sends_frames() {
        return Ok(());
    }
    if !limits.frames {
        return Err(FramesRefusal::NotServed(engine));
    }
    if udp.direction != super::Direction::Send {
        return Err(FramesRefusal::Direction(engine));
    }
    if !FRAME_PORTS.contains(&udp.flows) || !FRAME_PORTS.contains(&udp.flows_dst) {
        return Err(FramesRefusal::Flows {
            engine,
            flows: udp.flows,
            flows_dst: udp.flows_dst,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Direction, UdpEngine};
    use super::*;

    fn frames(direction: Direction) -> UdpParams {
        UdpParams {
            engine: UdpEngine::Packet,
            ..UdpParams::new(direction)
        }
    }

    #[test]
    fn a_frame_test_needs_a_frames_server_one_way_and_pkt_gens_flows() {
        let served = SpecLimits {
            frames: true,
            ..SpecLimits::default()
        };
        let up = frames(Direction::Send);
        assert_eq!(check_frames(&up, &served), Ok(()));
        let err = check_frames(&up, &SpecLimits::default()).unwrap_err();
        assert!(err.to_string().contains("serve --frames"), "{err}");
        let down = frames(Direction::Reverse);
        assert_eq!(
            check_frames(&down, &served),
            Err(FramesRefusal::Direction("packet"))
        );
        let odd = UdpParams { flows: 7, ..up };
        assert!(matches!(
            check_frames(&odd, &served),
            Err(FramesRefusal::Flows { flows: 7, .. })
        ));
        let ten_thousand = UdpParams {
            flows: 100,
            flows_dst: 100,
            ..up
        };
        assert_eq!(check_frames(&ten_thousand, &served), Ok(()));
        assert_eq!(frame_flows(10_000), Some((100, 100)));
        assert_eq!(frame_flows(1000), None);
        assert_eq!(pps_flows(UdpEngine::Socket, 1000), Ok((1000, 1)));
        assert_eq!(
            pps_flows(UdpEngine::Xdp, 1000),
            Err(PpsFlowsError::Frames(1000))
        );
        assert_eq!(
            pps_flows(UdpEngine::Socket, 0),
            Err(PpsFlowsError::Range(0))
        );
        let socket = UdpParams::new(Direction::Reverse);
        assert_eq!(check_frames(&socket, &SpecLimits::default()), Ok(()));
    }
}
