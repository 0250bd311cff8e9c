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

/// A `linerate pps --flows` item: pkt-gen's flow patterns. `N` (or `Ns`) is N flows: the
/// socket engine varies N source ports, a frame engine pkt-gen's 1, 100 (source ports) and
/// 10,000 (100 × 100) flows; `Nd` is N destination ports from one source port (pkt-gen's
/// 100-destination pattern; the server opens N ports: `serve --max-flows-dst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PpsFlows {
    /// `N` or `Ns`: N flows (source ports first).
    Total(u32),
    /// `Nd`: N destination ports.
    Destinations(u32),
}

impl PpsFlows {
    /// The cell's flow count.
    pub fn count(self) -> u32 {
        match self {
            Self::Total(n) | Self::Destinations(n) => n,
        }
    }

    /// The pattern a test's (source, destination) ports make, as `pps` names it.
    pub fn of_ports(src: u32, dst: u32) -> Self {
        match (src, dst) {
            (1, d) if d > 1 => Self::Destinations(d),
            (s, d) => Self::Total(s.saturating_mul(d.max(1))),
        }
    }
}

impl std::fmt::Display for PpsFlows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Total(n) => write!(f, "{n}"),
            Self::Destinations(n) => write!(f, "{n}d"),
        }
    }
}

impl std::str::FromStr for PpsFlows {
    type Err = PpsFlowsError;

    fn from_str(item: &str) -> Result<Self, Self::Err> {
        let item = item.trim();
        let (digits, side): (&str, fn(u32) -> Self) = match item.strip_suffix(['d', 'D']) {
            Some(n) => (n, Self::Destinations),
            None => (item.strip_suffix(['s', 'S']).unwrap_or(item), Self::Total),
        };
        digits
            .parse()
            .map(side)
            .map_err(|_| PpsFlowsError::Syntax(item.to_string()))
    }
}

/// A `linerate pps` flow count its engine cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PpsFlowsError {
    /// Outside the socket engine's range.
    #[error("--flows {0}: must be between 1 and 10000")]
    Range(u32),
    /// Not one of the frame engines' patterns.
    #[error("--flows {0}: the frame engines take 1, 100, 100d or 10000 (pkt-gen's 1 flow, 100 sources, 100 destinations, 10,000 flows)")]
    Frames(PpsFlows),
    /// Neither a count nor a count of destinations.
    #[error("--flows {0:?}: give a flow count (1, 100, 10000; `100s` alike) or a count of destination ports (`100d`)")]
    Syntax(String),
}

/// A `linerate pps` cell's flows as (source, destination) ports for `engine`: the socket
/// engine spreads a count over source ports only; a frame engine takes pkt-gen's patterns
/// ([`frame_flows`]); `Nd` is one source port to N destination ports for either.
pub fn pps_flows(engine: super::UdpEngine, flows: PpsFlows) -> Result<(u32, u32), PpsFlowsError> {
    let frames = engine.sends_frames();
    match flows {
        PpsFlows::Destinations(n) if frames && FRAME_PORTS.contains(&n) => Ok((1, n)),
        PpsFlows::Destinations(_) if frames => Err(PpsFlowsError::Frames(flows)),
        PpsFlows::Total(n) if frames => frame_flows(n).ok_or(PpsFlowsError::Frames(flows)),
        PpsFlows::Destinations(n @ 1..=super::check::MAX_UDP_FLOWS) => Ok((1, n)),
        PpsFlows::Total(n @ 1..=super::check::MAX_UDP_FLOWS) => Ok((n, 1)),
        _ => Err(PpsFlowsError::Range(flows.count())),
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
        assert_eq!(
            pps_flows(UdpEngine::Socket, PpsFlows::Total(1000)),
            Ok((1000, 1))
        );
        assert_eq!(
            pps_flows(UdpEngine::Xdp, PpsFlows::Total(1000)),
            Err(PpsFlowsError::Frames(PpsFlows::Total(1000)))
        );
        assert_eq!(
            pps_flows(UdpEngine::Socket, PpsFlows::Total(0)),
            Err(PpsFlowsError::Range(0))
        );
        let socket = UdpParams::new(Direction::Reverse);
        assert_eq!(check_frames(&socket, &SpecLimits::default()), Ok(()));
    }

    #[test]
    fn pkt_gens_four_patterns_parse_name_and_map_to_ports_old_counts_unchanged() {
        let parse = |t: &str| t.parse::<PpsFlows>();
        let items = ["1", "100", "100s", "100d", "10000"];
        let ports: Vec<_> = (items.iter())
            .map(|t| pps_flows(UdpEngine::Packet, parse(t).unwrap()).unwrap())
            .collect();
        assert_eq!(ports, [(1, 1), (100, 1), (100, 1), (1, 100), (100, 100)]);
        let names: Vec<String> = (ports.iter())
            .map(|(s, d)| PpsFlows::of_ports(*s, *d).to_string())
            .collect();
        assert_eq!(names, ["1", "100", "100", "100d", "10000"]);
        assert_eq!(
            pps_flows(UdpEngine::Socket, parse("50d").unwrap()),
            Ok((1, 50))
        );
        assert_eq!(
            pps_flows(UdpEngine::Xdp, parse("50d").unwrap()),
            Err(PpsFlowsError::Frames(PpsFlows::Destinations(50)))
        );
        let err = parse("100x").unwrap_err().to_string();
        assert!(err.contains("`100d`"), "{err}");
        assert!(parse("d").is_err() && parse("").is_err());
    }
}
