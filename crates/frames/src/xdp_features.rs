//! What an interface's driver does with XDP, as the kernel's `netdev` generic-netlink family
//! says (`NETDEV_CMD_DEV_GET`, its `NETDEV_A_DEV_XDP_FEATURES` bits, as `ynl` shows them): the
//! `xdp` engine sends through `ndo_xdp_xmit` ([`crate::xdp_live`]) only where the driver has
//! it, and a veth has it only while its peer runs an XDP program (or GRO), which is exactly
//! when frames sent that way arrive.
//!
//! Two bounded requests through `measure::netlink::ask_on`: the family's id by name, then the
//! device. A kernel without the family (before 6.3) answers `None`, as does any failure.

use measure::netlink::{ask_on, attr, attrs, request};

const GENL_ID_CTRL: u16 = 16;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const NETDEV_CMD_DEV_GET: u8 = 1;
const NETDEV_A_DEV_IFINDEX: u16 = 1;
const NETDEV_A_DEV_XDP_FEATURES: u16 = 3;
/// `NETDEV_XDP_ACT_NDO_XMIT`: the driver transmits frames redirected to it.
const ACT_NDO_XMIT: u64 = 1 << 2;
/// `NETDEV_XDP_ACT_XSK_ZEROCOPY`: AF_XDP sockets may bind in zero-copy mode.
const ACT_XSK_ZEROCOPY: u64 = 1 << 3;
/// Bytes of `struct genlmsghdr` (cmd, version, reserved).
const GENL_HDR: usize = 4;

/// An interface's XDP feature bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XdpFeatures(pub u64);

impl XdpFeatures {
    /// Whether the driver transmits frames an XDP program redirects to it (`ndo_xdp_xmit`).
    pub fn ndo_xmit(self) -> bool {
        self.0 & ACT_NDO_XMIT != 0
    }

    /// Whether AF_XDP sockets may bind in zero-copy mode.
    pub fn zero_copy(self) -> bool {
        self.0 & ACT_XSK_ZEROCOPY != 0
    }
}

/// Interface `ifindex`'s XDP features, or `None` when the kernel cannot say.
pub fn of(ifindex: u32) -> Option<XdpFeatures> {
    let family = netdev_family()?;
    let index = ifindex.to_ne_bytes();
    let req = request(
        family,
        0,
        &[NETDEV_CMD_DEV_GET, 1, 0, 0],
        &[(NETDEV_A_DEV_IFINDEX, &index)],
    );
    let mut bits = None;
    ask_on(libc::NETLINK_GENERIC, &req, false, |m| {
        if m.kind == family {
            bits = u64_attr(m.payload, NETDEV_A_DEV_XDP_FEATURES);
        }
    })
    .ok()?;
    bits.map(XdpFeatures)
}

/// The `netdev` family's id.
fn netdev_family() -> Option<u16> {
    let req = request(
        GENL_ID_CTRL,
        0,
        &[CTRL_CMD_GETFAMILY, 1, 0, 0],
        &[(CTRL_ATTR_FAMILY_NAME, b"netdev\0")],
    );
    let mut id = None;
    ask_on(libc::NETLINK_GENERIC, &req, false, |m| {
        if m.kind == GENL_ID_CTRL {
            id = attr(&attrs(m.payload, GENL_HDR), CTRL_ATTR_FAMILY_ID)
                .and_then(|v| Some(u16::from_ne_bytes(v.get(..2)?.try_into().ok()?)));
        }
    })
    .ok()?;
    id
}

fn u64_attr(payload: &[u8], want: u16) -> Option<u64> {
    Some(u64::from_ne_bytes(
        attr(&attrs(payload, GENL_HDR), want)?
            .get(..8)?
            .try_into()
            .ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feature_bits_are_read_past_the_generic_header() {
        // genlmsghdr, then attribute 3 (len 12) holding NDO_XMIT | BASIC.
        let mut p = vec![1, 1, 0, 0, 12, 0, 3, 0];
        p.extend_from_slice(&(ACT_NDO_XMIT | 1).to_ne_bytes());
        let f = XdpFeatures(u64_attr(&p, NETDEV_A_DEV_XDP_FEATURES).unwrap());
        assert!(f.ndo_xmit() && !f.zero_copy());
        assert_eq!(
            u64_attr(&p[..10], NETDEV_A_DEV_XDP_FEATURES),
            None,
            "cut short"
        );
    }
}
