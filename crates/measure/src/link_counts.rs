//! An interface's own packet and byte counters, before and after a test: the frames it sent and
//! received, as it counted them (`/sys/class/net/IF/statistics/{rx,tx}_{packets,bytes}`, what
//! `ip -s link` shows).
//!
//! These are the frames of a run, where datagrams at a socket are not: with UDP GSO a sender
//! hands the kernel up to 128 datagrams as one buffer, and a virtual link (veth, loopback)
//! carries that buffer as one packet, never cut into frames; a NIC cuts it on the wire. So a
//! run keeps both, and says which is which. The counters are the interface's, not the test's:
//! everything else it carried over the same time (the control connection, ARP, other traffic)
//! counts too, which is why the figures say so.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One interface's counters at one moment, or what they added between two moments.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LinkCounts {
    /// The interface (`lo`, `eth0`, a veth's name).
    pub interface: String,
    /// Whether it is a software link (veth, loopback, bridge: its sysfs entry is under
    /// `devices/virtual`), which has no line rate and carries GSO buffers whole.
    #[serde(default)]
    pub virtual_link: bool,
    /// Frames it received (`rx_packets`).
    pub rx_packets: u64,
    /// Frames it sent (`tx_packets`).
    pub tx_packets: u64,
    /// Their bytes received (`rx_bytes`: Ethernet header on, FCS off).
    pub rx_bytes: u64,
    /// Their bytes sent (`tx_bytes`).
    pub tx_bytes: u64,
}

impl LinkCounts {
    /// `interface`'s counters now; `None` when it has none to read (no such interface here).
    pub fn now(interface: &str) -> Option<Self> {
        Self::read_from(Path::new("/"), interface)
    }

    /// `interface`'s counters under `root` (`/` on a live system).
    pub fn read_from(root: &Path, interface: &str) -> Option<Self> {
        // A name with a path in it is no interface (and reads nothing outside sysfs).
        if interface.is_empty() || interface.contains('/') || interface.starts_with('.') {
            return None;
        }
        let stat = |name: &str| statistic(root, interface, name);
        Some(Self {
            interface: interface.to_string(),
            virtual_link: is_virtual(root, interface),
            rx_packets: stat("rx_packets")?,
            tx_packets: stat("tx_packets")?,
            rx_bytes: stat("rx_bytes")?,
            tx_bytes: stat("tx_bytes")?,
        })
    }

    /// What each counter has added since these counts were read; `None` when the interface
    /// is gone.
    pub fn added_until_now(&self) -> Option<LinkCounts> {
        Some(Self::now(&self.interface)?.since(self))
    }

    /// What each counter added since `earlier` (a counter that went backwards reads 0).
    pub fn since(&self, earlier: &LinkCounts) -> LinkCounts {
        LinkCounts {
            interface: self.interface.clone(),
            virtual_link: self.virtual_link,
            rx_packets: self.rx_packets.saturating_sub(earlier.rx_packets),
            tx_packets: self.tx_packets.saturating_sub(earlier.tx_packets),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
        }
    }
}

/// Counter `name` of `interface` under `root`: `sys/class/net/IF/statistics/NAME`.
pub(crate) fn statistic(root: &Path, interface: &str, name: &str) -> Option<u64> {
    let path = root
        .join("sys/class/net")
        .join(interface)
        .join("statistics")
        .join(name);
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether `interface` is a software one (its /sys/class/net entry points under
/// `devices/virtual`).
pub(crate) fn is_virtual(root: &Path, interface: &str) -> bool {
    std::fs::read_link(root.join("sys/class/net").join(interface))
        .is_ok_and(|target| target.to_string_lossy().contains("/virtual/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, name: &str, values: [u64; 4]) {
        let dir = root.join("sys/class/net").join(name).join("statistics");
        std::fs::create_dir_all(&dir).unwrap();
        for (file, v) in ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes"]
            .iter()
            .zip(values)
        {
            std::fs::write(dir.join(file), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn reads_a_synthetic_tree_and_subtracts() {
        let root = std::env::temp_dir().join(format!("lr-link-{}", std::process::id()));
        write(&root, "eth9", [10, 20, 1000, 2000]);
        let before = LinkCounts::read_from(&root, "eth9").unwrap();
        write(&root, "eth9", [15, 26, 1500, 2600]);
        let after = LinkCounts::read_from(&root, "eth9").unwrap();
        let d = after.since(&before);
        assert_eq!(
            (d.rx_packets, d.tx_packets, d.rx_bytes, d.tx_bytes),
            (5, 6, 500, 600)
        );
        assert_eq!(d.interface, "eth9");
        assert!(
            !d.virtual_link,
            "a plain directory is no link under virtual/"
        );
        assert_eq!(before.since(&after).rx_packets, 0, "backwards reads 0");
        assert_eq!(LinkCounts::read_from(&root, "nope"), None);
        assert_eq!(LinkCounts::read_from(&root, "../eth9"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn loopback_is_a_software_link_that_counts() {
        if let Some(lo) = LinkCounts::now("lo") {
            assert!(lo.virtual_link, "{lo:?}");
        }
    }
}
