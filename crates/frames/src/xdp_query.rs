//! Which XDP program an interface already has: asked of rtnetlink (`RTM_GETLINK`, the
//! `IFLA_XDP` attribute's `IFLA_XDP_PROG_ID`), then named with `bpf(2)` (`BPF_PROG_GET_FD_BY_ID`,
//! `BPF_OBJ_GET_INFO_BY_FD`), so a refusal to attach can say what is in the way.
//!
//! Best effort and bounded: one request through `measure::netlink` (its receive timeout);
//! any failure is `None` (the refusal then names the interface alone).
//!
//! Also how many receive and transmit queues an interface has in use ([`queues`]): an AF_XDP
//! socket binds one queue, and a queue takes one socket.

use crate::bpf::sys;
use measure::netlink::{attr, attrs};

const IFLA_XDP: u16 = 43;
const IFLA_XDP_PROG_ID: u16 = 4;

/// The XDP program on interface `ifindex` (any mode): its id and name.
pub fn attached(ifindex: u32) -> Option<(u32, String)> {
    let id = prog_id(ifindex)?;
    let name = sys::prog_name(id).unwrap_or_default();
    Some((id, name))
}

fn prog_id(ifindex: u32) -> Option<u32> {
    let id = measure::netlink::link(ifindex, prog_of).ok()??;
    (id != 0).then_some(id)
}

/// The program id in a link message's `IFLA_XDP` attribute.
fn prog_of(link: &[u8]) -> Option<u32> {
    let xdp = attr(&attrs(link, 16), IFLA_XDP)?;
    let id = attr(&attrs(xdp, 0), IFLA_XDP_PROG_ID)?;
    Some(u32::from_ne_bytes(id.get(..4)?.try_into().ok()?))
}

/// Receive and transmit queues an interface has in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queues {
    /// Receive queues (`rx-N`).
    pub rx: u32,
    /// Transmit queues (`tx-N`).
    pub tx: u32,
}

/// The queues of `ifname` in use, from `/sys/class/net/IF/queues/{rx,tx}-N`; `None` where
/// sysfs does not show this namespace's interface of that name (a namespace whose sysfs was not
/// remounted for it shows another's, its index not the one this namespace gives the name).
pub fn queues(ifname: &str) -> Option<Queues> {
    let dir = format!("/sys/class/net/{ifname}");
    let index = std::fs::read_to_string(format!("{dir}/ifindex")).ok()?;
    if index.trim().parse::<u32>().ok()? != crate::xdp::ifindex(ifname).ok()? {
        return None;
    }
    let entries: Vec<String> = std::fs::read_dir(format!("{dir}/queues"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let count = |prefix: &str| entries.iter().filter(|e| e.starts_with(prefix)).count() as u32;
    let (rx, tx) = (count("rx-"), count("tx-"));
    (rx > 0 && tx > 0).then_some(Queues { rx, tx })
}
