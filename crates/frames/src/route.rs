//! The path a frame to the peer takes, asked of the kernel as `ip route get` and `ip neigh`
//! would: the route to the peer's address gives the interface and the source address (and a
//! gateway, if the peer is not on the link), the interface gives its MAC and MTU, and the
//! neighbour table the next hop's MAC. The frame engine sends only with these: to the test's
//! peer, from this host's own address, on the interface the kernel itself would use.
//!
//! The neighbour entry must already be there: the control connection to the peer made it (its
//! TCP handshake resolved the next hop). An entry that is missing, incomplete or failed is an
//! error naming the next hop, never a guess.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{PathError, SysError};
use measure::netlink::{ask, attr, attrs, request};

/// Where frames to one peer go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// The outgoing interface's index.
    pub ifindex: u32,
    /// Its name.
    pub ifname: String,
    /// Its MTU, bytes.
    pub mtu: usize,
    /// This host's address on the route (the kernel's preferred source).
    pub src: IpAddr,
    /// The interface's MAC.
    pub src_mac: [u8; 6],
    /// The peer, or the gateway toward it.
    pub next_hop: IpAddr,
    /// The next hop's MAC, from the neighbour table.
    pub dst_mac: [u8; 6],
}

/// What the route to a destination says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Route {
    ifindex: u32,
    src: Option<IpAddr>,
    gateway: Option<IpAddr>,
    local: bool,
}

/// The link's facts frames need.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    name: String,
    ethernet: bool,
    mac: Option<[u8; 6]>,
    mtu: usize,
}

const NEIGH_USABLE: u16 = libc::NUD_REACHABLE
    | libc::NUD_STALE
    | libc::NUD_DELAY
    | libc::NUD_PROBE
    | libc::NUD_PERMANENT
    | libc::NUD_NOARP;

/// The path to `peer` in this thread's network namespace.
pub fn path_to(peer: IpAddr) -> Result<Path, PathError> {
    let route = route_to(peer)?;
    if route.local {
        return Err(PathError::Local(peer));
    }
    let link = link(route.ifindex)?;
    let src_mac = link
        .mac
        .filter(|_| link.ethernet)
        .ok_or_else(|| PathError::NotEthernet(link.name.clone()))?;
    let next_hop = route.gateway.unwrap_or(peer);
    let dst_mac = neighbour(route.ifindex, next_hop)?.ok_or_else(|| PathError::NoNeighbour {
        next_hop,
        ifname: link.name.clone(),
    })?;
    let src = route.src.ok_or_else(|| PathError::NoSource {
        peer,
        ifname: link.name.clone(),
    })?;
    Ok(Path {
        ifindex: route.ifindex,
        ifname: link.name,
        mtu: link.mtu,
        src,
        src_mac,
        next_hop,
        dst_mac,
    })
}

/// A netlink failure, named with the request.
fn call(what: &str, source: std::io::Error) -> SysError {
    SysError::Call {
        call: what.to_string(),
        source,
    }
}

fn family(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => libc::AF_INET as u8,
        IpAddr::V6(_) => libc::AF_INET6 as u8,
    }
}

fn octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

fn ip_of(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes).ok()?))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(bytes).ok()?,
        ))),
        _ => None,
    }
}

fn route_to(peer: IpAddr) -> Result<Route, PathError> {
    let bits = if peer.is_ipv4() { 32 } else { 128 };
    // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags (u32).
    let fixed = [family(peer), bits, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let dst = octets(peer);
    let req = request(libc::RTM_GETROUTE, 0, &fixed, &[(libc::RTA_DST, &dst)]);
    let mut found = None;
    ask(&req, false, |m| {
        if m.kind == libc::RTM_NEWROUTE {
            found = parse_route(m.payload);
        }
    })
    .map_err(|e| PathError::NoRoute(peer, call("RTM_GETROUTE", e)))?;
    found.ok_or_else(|| {
        let none = std::io::Error::other("the kernel's answer names no outgoing interface");
        PathError::NoRoute(peer, call("RTM_GETROUTE", none))
    })
}

fn parse_route(payload: &[u8]) -> Option<Route> {
    let kind = *payload.get(7)?;
    let mut route = Route {
        ifindex: 0,
        src: None,
        gateway: None,
        local: kind == libc::RTN_LOCAL,
    };
    for (t, v) in attrs(payload, 12) {
        match t {
            libc::RTA_OIF => route.ifindex = u32::from_ne_bytes(v.try_into().ok()?),
            libc::RTA_PREFSRC => route.src = ip_of(v),
            libc::RTA_GATEWAY => route.gateway = ip_of(v),
            _ => {}
        }
    }
    (route.ifindex != 0).then_some(route)
}

fn link(ifindex: u32) -> Result<Link, PathError> {
    measure::netlink::link(ifindex, parse_link)
        .map_err(|e| PathError::Link(call("RTM_GETLINK", e)))?
        .ok_or_else(|| PathError::Link(SysError::NoInterface(format!("index {ifindex}"))))
}

fn parse_link(payload: &[u8]) -> Option<Link> {
    let kind = u16::from_ne_bytes(payload.get(2..4)?.try_into().ok()?);
    let mut link = Link {
        name: String::new(),
        ethernet: kind == libc::ARPHRD_ETHER,
        mac: None,
        mtu: 0,
    };
    for (t, v) in attrs(payload, 16) {
        match t {
            libc::IFLA_ADDRESS => link.mac = v.try_into().ok(),
            libc::IFLA_IFNAME => {
                link.name = String::from_utf8_lossy(v)
                    .trim_end_matches('\0')
                    .to_string()
            }
            libc::IFLA_MTU => link.mtu = u32::from_ne_bytes(v.try_into().ok()?) as usize,
            _ => {}
        }
    }
    Some(link)
}

/// The MAC of `ip` on interface `ifindex` when its entry is usable.
fn neighbour(ifindex: u32, ip: IpAddr) -> Result<Option<[u8; 6]>, PathError> {
    // struct ndmsg: family, pad, pad (u16), ifindex (i32), state (u16), flags, type.
    let mut fixed = [0u8; 12];
    fixed[0] = family(ip);
    let req = request(libc::RTM_GETNEIGH, libc::NLM_F_DUMP as u16, &fixed, &[]);
    let mut found = None;
    ask(&req, true, |m| {
        if m.kind == libc::RTM_NEWNEIGH && found.is_none() {
            found = parse_neighbour(m.payload, ifindex, ip);
        }
    })
    .map_err(|e| PathError::Link(call("RTM_GETNEIGH", e)))?;
    Ok(found)
}

fn parse_neighbour(payload: &[u8], ifindex: u32, ip: IpAddr) -> Option<[u8; 6]> {
    let index = i32::from_ne_bytes(payload.get(4..8)?.try_into().ok()?);
    let state = u16::from_ne_bytes(payload.get(8..10)?.try_into().ok()?);
    if index as u32 != ifindex || state & NEIGH_USABLE == 0 {
        return None;
    }
    let a = attrs(payload, 12);
    if ip_of(attr(&a, libc::NDA_DST)?)? != ip {
        return None;
    }
    attr(&a, libc::NDA_LLADDR)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(t: u16, v: &[u8]) -> Vec<u8> {
        let mut out = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
        out.extend_from_slice(&t.to_ne_bytes());
        out.extend_from_slice(v);
        out.resize((out.len() + 3) & !3, 0);
        out
    }

    #[test]
    fn a_route_reply_gives_interface_source_and_gateway() {
        let mut p = vec![2, 32, 0, 0, 254, 0, 0, libc::RTN_UNICAST, 0, 0, 0, 0];
        p.extend(attr(libc::RTA_OIF, &7u32.to_ne_bytes()));
        p.extend(attr(libc::RTA_PREFSRC, &[198, 18, 0, 1]));
        p.extend(attr(libc::RTA_GATEWAY, &[198, 18, 0, 254]));
        let r = parse_route(&p).unwrap();
        assert_eq!(r.ifindex, 7);
        assert_eq!(r.src, Some(IpAddr::from([198, 18, 0, 1])));
        assert_eq!(r.gateway, Some(IpAddr::from([198, 18, 0, 254])));
        assert!(!r.local);
        p[7] = libc::RTN_LOCAL;
        assert!(parse_route(&p).unwrap().local);
    }

    #[test]
    fn a_neighbour_counts_only_on_its_interface_for_its_address_when_usable() {
        let entry = |ifindex: i32, state: u16, ip: [u8; 4]| {
            let mut p = vec![2, 0, 0, 0];
            p.extend_from_slice(&ifindex.to_ne_bytes());
            p.extend_from_slice(&state.to_ne_bytes());
            p.extend([0, 1]);
            p.extend(attr(libc::NDA_DST, &ip));
            p.extend(attr(libc::NDA_LLADDR, &[2, 0, 0, 0, 0, 9]));
            p
        };
        let ip = IpAddr::from([198, 18, 0, 2]);
        let mac = Some([2, 0, 0, 0, 0, 9]);
        assert_eq!(
            parse_neighbour(&entry(3, libc::NUD_STALE, [198, 18, 0, 2]), 3, ip),
            mac
        );
        assert_eq!(
            parse_neighbour(&entry(4, libc::NUD_STALE, [198, 18, 0, 2]), 3, ip),
            None
        );
        assert_eq!(
            parse_neighbour(&entry(3, libc::NUD_FAILED, [198, 18, 0, 2]), 3, ip),
            None
        );
        assert_eq!(
            parse_neighbour(&entry(3, libc::NUD_INCOMPLETE, [198, 18, 0, 2]), 3, ip),
            None
        );
        assert_eq!(
            parse_neighbour(&entry(3, libc::NUD_REACHABLE, [198, 18, 0, 3]), 3, ip),
            None
        );
    }

    #[test]
    fn the_loopback_route_is_local_and_refused() {
        let err = path_to(IpAddr::from([127, 0, 0, 1])).unwrap_err();
        assert!(matches!(err, PathError::Local(_)), "{err}");
        assert!(err.to_string().contains("two namespaces"), "{err}");
    }
}
