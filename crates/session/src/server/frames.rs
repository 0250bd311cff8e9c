//! A frame engine's test at the server (`serve --frames`): the test's UDP ports are one
//! contiguous block, so that the XDP counter on the server's interface matches exactly them;
//! the counter is attached for the test (its frames counted at the driver, then passed to the
//! test's sockets, which keep the sequence accounting) and detached when the session drops it,
//! also when the server is killed (a BPF link, pinned nowhere).
//!
//! Invariants: only the test's own ports are counted (the block is held by the session's
//! sockets, so no other socket has them), and only frames from the client's address (the
//! control connection's peer), so another host's frames to those ports are not the test's; an
//! interface that already has an XDP program is refused, never replaced
//! (`frames::SysError::XdpBusy`).

use std::net::{IpAddr, SocketAddr, UdpSocket};

use engine::udp_socket::udp_socket;
use engine::Conn;
use frames::xdp::{Action, PortRange, XdpCounter};
use wire::msg::DriverCounts;

use super::SessionError;

/// Tries at finding a free block of ports before giving up.
const BLOCK_TRIES: usize = 32;

/// `n` UDP sockets on `ip` at consecutive ports, each with `window` buffers.
pub(super) fn port_block(
    ip: IpAddr,
    n: usize,
    window: Option<u32>,
) -> Result<Vec<UdpSocket>, SessionError> {
    let mut last = None;
    for _ in 0..BLOCK_TRIES {
        let first = udp_socket(SocketAddr::new(ip, 0), window).map_err(SessionError::UdpSocket)?;
        let base = first.local_addr()?.port();
        let mut block = vec![first];
        for k in 1..n {
            let Some(port) = u16::try_from(k).ok().and_then(|k| base.checked_add(k)) else {
                break;
            };
            match udp_socket(SocketAddr::new(ip, port), window) {
                Ok(s) => block.push(s),
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        if block.len() == n {
            return Ok(block);
        }
    }
    Err(SessionError::UdpSocket(last.unwrap_or_else(|| {
        engine::EngineError::Io(std::io::Error::other(format!(
            "no {n} consecutive free UDP ports found in {BLOCK_TRIES} tries"
        )))
    })))
}

/// The counter of one test: on the interface holding the control connection's local address.
pub(super) struct FrameCounter {
    counter: XdpCounter,
    interface: String,
}

impl FrameCounter {
    /// The counter of `spec`'s test when it is a frame engine's (`None` otherwise).
    pub(super) fn for_test(
        spec: &wire::TestSpec,
        interface: Option<&str>,
        client: Option<IpAddr>,
        conns: &[Conn],
    ) -> Result<Option<Self>, SessionError> {
        match spec.udp() {
            Some(u) if u.engine.sends_frames() => Self::attach(interface, client, conns).map(Some),
            _ => Ok(None),
        }
    }

    /// Attaches the counter for the ports of `conns` (one contiguous block) on `interface`,
    /// counting frames from `client`'s address only (the control connection's peer).
    pub(super) fn attach(
        interface: Option<&str>,
        client: Option<IpAddr>,
        conns: &[Conn],
    ) -> Result<Self, SessionError> {
        let interface = interface.ok_or(SessionError::FramesInterface)?;
        let ports: Vec<u16> = conns.iter().flat_map(local_ports).collect();
        let (Some(&first), Some(&last)) = (ports.iter().min(), ports.iter().max()) else {
            return Err(SessionError::FramesInterface);
        };
        let range = PortRange {
            first,
            count: last - first + 1,
        };
        let counter = XdpCounter::attach_from(interface, range, client, Action::Pass)?;
        Ok(Self {
            counter,
            interface: interface.to_string(),
        })
    }

    /// What it counted so far (the counter stays attached until dropped).
    pub(super) fn counts(&self) -> Result<DriverCounts, SessionError> {
        let c = self.counter.counts()?;
        Ok(DriverCounts {
            interface: self.interface.clone(),
            frames: c.frames,
            bytes: c.bytes,
        })
    }
}

/// Every local port of a UDP data connection.
fn local_ports(conn: &Conn) -> Vec<u16> {
    let port = |s: &UdpSocket| s.local_addr().ok().map(|a| a.port());
    match conn {
        Conn::Udp(s) | Conn::UdpFrom(s, _) => port(s).into_iter().collect(),
        Conn::UdpMulti(m) => std::iter::once(&m.sock)
            .chain(&m.extra_recv)
            .filter_map(port)
            .collect(),
        _ => Vec::new(),
    }
}
