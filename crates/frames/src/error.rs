//! The crate's typed errors: [`FrameError`] for a frame that cannot be built as asked,
//! [`SysError`] for what the kernel refused (sockets, rings, `bpf(2)`, capabilities),
//! [`PathError`] for a peer frames cannot be sent to (its route, link or neighbour entry).

use std::io;
use std::net::IpAddr;

/// A frame that cannot be built as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// The frame size is outside what this family and MTU allow.
    #[error(
        "frame size {size} bytes outside {min}..={max} (FCS included; {family} over an MTU of \
         {mtu}: at least {min} to hold the headers and linerate's data header, at most MTU+18); \
         pick a size in that range"
    )]
    Size {
        /// The size asked for.
        size: usize,
        /// The smallest frame for this family.
        min: usize,
        /// The largest, MTU + 18.
        max: usize,
        /// The interface's MTU.
        mtu: usize,
        /// "IPv4" or "IPv6".
        family: &'static str,
    },
    /// Source and destination are not of the same family.
    #[error("source {src} and destination {dst} are not of the same address family; use two IPv4 or two IPv6 addresses")]
    Family {
        /// The source address.
        src: std::net::IpAddr,
        /// The destination address.
        dst: std::net::IpAddr,
    },
    /// A flow pattern's ports would run past 65535.
    #[error("{what} port {port} + {count} flows runs past 65535; pick a port below {limit}")]
    Ports {
        /// "source" or "destination".
        what: &'static str,
        /// The first port.
        port: u16,
        /// The ports the pattern uses.
        count: u32,
        /// The largest first port that fits.
        limit: u32,
    },
}

/// What the kernel refused, named with the call and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A system call failed.
    #[error("{call}: {source}")]
    Call {
        /// The call and its object, e.g. "setsockopt(PACKET_TX_RING)".
        call: String,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
    /// The process lacks capabilities this part needs.
    #[error("missing capabilities {missing} for {what}; run as root or grant them (setcap cap_net_admin,cap_net_raw,cap_bpf+ep)")]
    Capabilities {
        /// What needed them, e.g. "the XDP counter".
        what: &'static str,
        /// The missing ones, e.g. "CAP_BPF (or CAP_SYS_ADMIN)".
        missing: String,
    },
    /// Another XDP program is on the interface: never replaced.
    #[error("interface {ifname} (index {ifindex}) already has an XDP program attached{holder}; linerate never replaces one: remove it (ip link set dev {ifname} xdp off, or end the process holding its link) or pick another interface ({source})")]
    XdpBusy {
        /// The interface's name.
        ifname: String,
        /// The interface's index.
        ifindex: u32,
        /// The program in the way, as " (program id N, name NAME)", or empty if unknown.
        holder: String,
        /// The kernel's answer (EBUSY or EEXIST).
        #[source]
        source: io::Error,
    },
    /// The kernel refused XDP on the interface for lack of room (ENOSPC): a veth does while it
    /// has fewer receive queues than its peer has transmit queues.
    #[error("XDP on {ifname}: refused for lack of queues ({source}); on a veth: it has fewer receive queues than its peer has transmit queues, give it as many (ethtool -L {ifname} rx N) or the peer fewer")]
    XdpQueues {
        /// The interface's name.
        ifname: String,
        /// The kernel's answer (ENOSPC).
        #[source]
        source: io::Error,
    },
    /// The verifier refused the program: a bug in this crate, its log attached.
    #[error("the kernel's verifier refused the XDP program ({source}); this is a linerate bug, please report it with this log:\n{log}")]
    Verifier {
        /// The kernel's error.
        #[source]
        source: io::Error,
        /// The verifier's log.
        log: String,
    },
    /// An interface name that is not on this host (or namespace).
    #[error("no interface named {0:?} in this network namespace; `ip link` lists them")]
    NoInterface(String),
    /// A port range the counter cannot match.
    #[error("destination ports {first} + {count}: the range must hold 1 to 65536 - {first} ports")]
    Ports {
        /// The first port.
        first: u16,
        /// How many.
        count: u16,
    },
    /// A counter's source and destination addresses of two families: no frame has both.
    #[error("the XDP counter's source {from} and destination {to} are of two address families; a frame has one")]
    Families {
        /// The source address.
        from: IpAddr,
        /// The destination address.
        to: IpAddr,
    },
    /// A frame larger than a ring slot.
    #[error("frame of {len} bytes does not fit a TX ring slot of {slot} bytes; use frames of at most {slot} bytes")]
    Slot {
        /// The frame's length.
        len: usize,
        /// The slot's data capacity.
        slot: usize,
    },
}

impl SysError {
    /// The last OS error, named with `call`.
    pub(crate) fn last(call: impl Into<String>) -> Self {
        Self::Call {
            call: call.into(),
            source: io::Error::last_os_error(),
        }
    }
}

/// Why no frame can be sent toward a peer: its route, link or neighbour entry says no.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The peer is this host: frames on the loopback never reach a driver.
    #[error("{0} is an address of this host: frames need a real link (a veth pair between two namespaces, or two hosts); the socket engine measures loopback")]
    Local(IpAddr),
    /// The kernel has no route to the peer.
    #[error("no route to {0} ({1}); `ip route get {0}` says why")]
    NoRoute(IpAddr, #[source] SysError),
    /// The route's interface could not be read.
    #[error("reading the route's interface: {0}")]
    Link(#[source] SysError),
    /// The interface carries no Ethernet frames (a tunnel, loopback, WireGuard).
    #[error("interface {0} is not Ethernet: the frame engine builds Ethernet frames; use the socket engine on it")]
    NotEthernet(String),
    /// The next hop's MAC is not known (yet), or its entry failed.
    #[error("no usable neighbour entry for {next_hop} on {ifname} (`ip neigh show dev {ifname}`); reach it once (ping {next_hop}) and run again")]
    NoNeighbour {
        /// The peer or its gateway.
        next_hop: IpAddr,
        /// The interface.
        ifname: String,
    },
    /// The route names no source address for the peer.
    #[error("the route to {peer} via {ifname} has no source address; give {ifname} an address of that family")]
    NoSource {
        /// The peer.
        peer: IpAddr,
        /// The interface.
        ifname: String,
    },
}
