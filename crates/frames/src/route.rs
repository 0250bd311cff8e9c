//! The path a frame to the peer takes, asked of the kernel as `ip route get` and `ip neigh`
//! would: the route to the peer's address gives the interface and the source address (and a
//! gateway, if the peer is not on the link), the interface gives its MAC and MTU, and the
//! neighbour table the next hop's MAC. The frame engine sends only with these: to the test's
//! peer, from this host's own address, on the interface the kernel itself would use.
//!
//! The neighbour entry must already be there: the control connection to the peer made it (its
//! TCP handshake resolved the next hop). An entry that is missing, incomplete or failed is an
//! error naming the next hop, never a guess.
//!
//! And the other way, the interface a peer's packets arrive on ([`arrived_on`]): what the
//! kernel recorded for an accepted TCP connection from its SYN, which is not always the
//! interface holding the connection's local address (a peer may route to one address of this
//! host through another interface).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, BorrowedFd};

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

/// The index of the interface an accepted TCP connection `sock` arrived on: the kernel keeps
/// its SYN's incoming interface with the connection (`tcp_v4_syn_recv_sock` sets `mc_index`,
/// `tcp_v6_syn_recv_sock` `mcast_oif`, from the SYN's `inet_iif`/`tcp_v6_iif`), and gives it as
/// the `IP_PKTINFO` control message of `getsockopt(IP_PKTOPTIONS)` (`ipi_ifindex`), for IPv6
/// `IPV6_PKTINFO` of `IPV6_2292PKTOPTIONS` (`ipi6_ifindex`), while the socket asks for packet
/// info; asked here, then the option set back off. `ipv6`: the connection's family (an IPv4
/// peer on a dual-stack socket, `::ffff:a.b.c.d`, is IPv4: its socket answers at `SOL_IP`).
///
/// A connection over loopback to `127.0.0.1` or `::1` arrived on `lo`; one from this host to
/// another of its addresses, on the interface holding that address (the kernel's `rt_iif` for a
/// local route). Nothing here reads a packet or changes what the socket receives.
pub fn arrived_on(sock: BorrowedFd<'_>, ipv6: bool) -> Result<u32, SysError> {
    let (level, ask, options, info) = if ipv6 {
        let l = libc::IPPROTO_IPV6;
        (
            l,
            libc::IPV6_RECVPKTINFO,
            libc::IPV6_2292PKTOPTIONS,
            libc::IPV6_PKTINFO,
        )
    } else {
        let l = libc::IPPROTO_IP;
        (l, libc::IP_PKTINFO, libc::IP_PKTOPTIONS, libc::IP_PKTINFO)
    };
    let fd = sock.as_raw_fd();
    let set = |on: libc::c_int, what: &str| {
        // SAFETY: a c_int option value of the size given, on a descriptor the caller holds.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                ask,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(SysError::last(what))
        }
    };
    set(1, "setsockopt(packet info on the control connection)")?;
    // Room for one pktinfo message of either family, with its header, several times over.
    let mut buf = [0u64; 32];
    let mut len = std::mem::size_of_val(&buf) as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes; the kernel writes at most that and sets `len`.
    let r = unsafe { libc::getsockopt(fd, level, options, buf.as_mut_ptr().cast(), &mut len) };
    let got = (r == 0).then_some(()).ok_or_else(|| {
        SysError::last("getsockopt(IP_PKTOPTIONS/IPV6_2292PKTOPTIONS on the control connection)")
    });
    set(0, "setsockopt(packet info off on the control connection)")?;
    got?;
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let data = control_message(&bytes[..(len as usize).min(bytes.len())], level, info);
    // in_pktinfo: ipi_ifindex (int) first; in6_pktinfo: the address (16 bytes), then ifindex.
    let at = if ipv6 { 16 } else { 0 };
    let index = data
        .and_then(|d| d.get(at..at + 4))
        .and_then(|b| b.try_into().ok())
        .map(u32::from_ne_bytes)
        .filter(|&i| i != 0);
    index.ok_or_else(|| SysError::Call {
        call: "getsockopt(IP_PKTOPTIONS/IPV6_2292PKTOPTIONS on the control connection)".into(),
        source: std::io::Error::other("the kernel named no interface the connection arrived on"),
    })
}

/// The data of the first control message of `level` and `kind` in `buf` (a `msg_control`
/// buffer: `cmsghdr` headers, each message padded to the next `size_t`).
fn control_message(buf: &[u8], level: libc::c_int, kind: libc::c_int) -> Option<&[u8]> {
    let word = std::mem::size_of::<usize>();
    let header = std::mem::size_of::<libc::cmsghdr>();
    let mut at = 0usize;
    while at + header <= buf.len() {
        let len = usize::from_ne_bytes(buf.get(at..at + word)?.try_into().ok()?);
        let l = i32::from_ne_bytes(buf.get(at + word..at + word + 4)?.try_into().ok()?);
        let k = i32::from_ne_bytes(buf.get(at + word + 4..at + word + 8)?.try_into().ok()?);
        if len < header {
            return None;
        }
        if l == level && k == kind {
            return buf.get(at + header..at + len);
        }
        at += len.div_ceil(word) * word;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

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

    /// A control message buffer: one IP_TTL message, then IP_PKTINFO with ifindex 7.
    #[test]
    fn the_pktinfo_message_is_found_after_another() {
        let word = std::mem::size_of::<usize>();
        let msg = |level: i32, kind: i32, data: &[u8]| {
            let mut m = (word + 8 + data.len()).to_ne_bytes()[..word].to_vec();
            m.extend(level.to_ne_bytes());
            m.extend(kind.to_ne_bytes());
            m.extend_from_slice(data);
            m.resize(m.len().div_ceil(word) * word, 0);
            m
        };
        let mut buf = msg(libc::IPPROTO_IP, libc::IP_TTL, &64i32.to_ne_bytes());
        let mut info = 7i32.to_ne_bytes().to_vec();
        info.extend([198, 18, 0, 2, 198, 18, 0, 2]);
        buf.extend(msg(libc::IPPROTO_IP, libc::IP_PKTINFO, &info));
        let found = control_message(&buf, libc::IPPROTO_IP, libc::IP_PKTINFO);
        assert_eq!(found, Some(&info[..]));
        assert_eq!(
            control_message(&buf, libc::IPPROTO_IPV6, libc::IPV6_PKTINFO),
            None
        );
        // A header claiming less than itself ends the walk.
        assert_eq!(
            control_message(&[0u8; 32], libc::IPPROTO_IP, libc::IP_TTL),
            None
        );
    }

    /// A connection accepted over loopback arrived on `lo`, for both families (the IPv4 one on
    /// a dual-stack listener too, as `serve` listens), and asking leaves the socket working.
    #[test]
    fn a_loopback_connection_arrived_on_lo() {
        use std::io::{Read, Write};
        let lo = crate::xdp::ifindex("lo").unwrap();
        let cases = [
            ("127.0.0.1:0", "127.0.0.1", false),
            ("[::]:0", "127.0.0.1", false),
            ("[::1]:0", "::1", true),
        ];
        for (listen, to, ipv6) in cases {
            let Ok(listener) = std::net::TcpListener::bind(listen) else {
                continue; // no IPv6 here
            };
            let port = listener.local_addr().unwrap().port();
            let to: IpAddr = to.parse().unwrap();
            let mut client = std::net::TcpStream::connect((to, port)).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            assert_eq!(
                arrived_on(server.as_fd(), ipv6).unwrap(),
                lo,
                "{listen} ← {to}"
            );
            client.write_all(b"x").unwrap();
            let mut b = [0u8; 1];
            server.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"x");
        }
    }
}
