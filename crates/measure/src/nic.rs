//! A network interface's facts, read from the kernel: the driver, its version and firmware
//! (the ethtool ioctl `ETHTOOL_GDRVINFO`), offloads, ring sizes and interrupt coalescing (the
//! same ioctl's legacy queries), and from /sys the link speed, the queue counts and the NUMA
//! node. Nothing runs the ethtool program. A fact the driver does not report is `None`.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// What the kernel says about one interface.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct NicFacts {
    /// Driver name (`ETHTOOL_GDRVINFO`), e.g. `veth`, `ixgbe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// Firmware version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Bus address, e.g. `0000:3b:00.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus: Option<String>,
    /// Link speed, Mbit/s (`/sys/class/net/IF/speed`; absent when unknown, as for virtual links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u32>,
    /// TCP segmentation offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tso: Option<bool>,
    /// Generic segmentation offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<bool>,
    /// Generic receive offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// Large receive offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lro: Option<bool>,
    /// Receive checksum offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_checksum: Option<bool>,
    /// Transmit checksum offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_checksum: Option<bool>,
    /// Receive ring size in use, descriptors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_ring: Option<u32>,
    /// Transmit ring size in use, descriptors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_ring: Option<u32>,
    /// Receive interrupt coalescing, µs (`rx-usecs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_usecs: Option<u32>,
    /// Receive interrupt coalescing, frames (`rx-frames`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_frames: Option<u32>,
    /// Transmit interrupt coalescing, µs (`tx-usecs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_usecs: Option<u32>,
    /// Adaptive receive coalescing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_rx: Option<bool>,
    /// Receive queues (`/sys/class/net/IF/queues/rx-*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_queues: Option<u32>,
    /// Transmit queues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queues: Option<u32>,
    /// The device's NUMA node (absent where the device has none, or -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
}

/// Drivers of software links whose reported speed is nominal, not a rate anything enforces.
const VIRTUAL_DRIVERS: &[&str] = &[
    "veth",
    "tun",
    "bridge",
    "dummy",
    "vxlan",
    "geneve",
    "macvlan",
    "ipvlan",
    "vrf",
    "wireguard",
];

impl NicFacts {
    /// Whether the driver is a software link (veth, tun, bridge, …): its speed is nominal.
    pub fn is_virtual(&self) -> bool {
        self.driver
            .as_deref()
            .is_some_and(|d| VIRTUAL_DRIVERS.contains(&d))
    }

    /// Everything about `interface`: the /sys facts under `root` and, on Linux, the ioctl ones.
    pub fn collect(root: &Path, interface: &str) -> NicFacts {
        let mut facts = NicFacts::read_sys(root, interface);
        #[cfg(target_os = "linux")]
        ethtool::fill(interface, &mut facts);
        facts
    }

    /// The facts /sys holds: link speed, queue counts, NUMA node.
    pub fn read_sys(root: &Path, interface: &str) -> NicFacts {
        let dir = root.join("sys/class/net").join(interface);
        let number = |rel: &str| -> Option<i64> {
            std::fs::read_to_string(dir.join(rel))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let queues = |prefix: &str| -> Option<u32> {
            let n = std::fs::read_dir(dir.join("queues"))
                .ok()?
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .count();
            Some(n as u32)
        };
        NicFacts {
            speed_mbps: number("speed")
                .and_then(|s| u32::try_from(s).ok())
                .filter(|&s| s > 0),
            rx_queues: queues("rx-"),
            tx_queues: queues("tx-"),
            numa_node: number("device/numa_node").and_then(|n| u32::try_from(n).ok()),
            ..NicFacts::default()
        }
    }
}

#[cfg(target_os = "linux")]
mod ethtool {
    //! The `SIOCETHTOOL` ioctl's read-only queries.

    use std::os::fd::AsRawFd;

    use super::NicFacts;

    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const GDRVINFO: u32 = 0x03;
    const GCOALESCE: u32 = 0x0e;
    const GRINGPARAM: u32 = 0x10;
    const GRXCSUM: u32 = 0x14;
    const GTXCSUM: u32 = 0x16;
    const GTSO: u32 = 0x1e;
    const GGSO: u32 = 0x23;
    const GFLAGS: u32 = 0x25;
    const GGRO: u32 = 0x2b;
    const FLAG_LRO: u32 = 0x8000;

    /// `struct ifreq` with `ifr_data` (40 bytes on 64-bit Linux).
    #[repr(C)]
    struct IfReq {
        name: [u8; libc::IFNAMSIZ],
        data: *mut libc::c_void,
        _pad: [u8; 16],
    }

    /// Runs one query: `buf` starts with the command word and has the command's size.
    fn query(sock: &std::net::UdpSocket, interface: &str, buf: &mut [u32]) -> bool {
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            data: buf.as_mut_ptr().cast(),
            _pad: [0; 16],
        };
        let name = interface.as_bytes();
        if name.len() >= libc::IFNAMSIZ {
            return false;
        }
        req.name[..name.len()].copy_from_slice(name);
        // SAFETY: `req` names the interface and points at `buf`, which is as large as the
        // command's struct; the kernel writes only within it.
        unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &mut req) == 0 }
    }

    /// A 0/1 query (`struct ethtool_value`).
    fn flag(sock: &std::net::UdpSocket, interface: &str, cmd: u32) -> Option<u32> {
        let mut v = [cmd, 0];
        query(sock, interface, &mut v).then_some(v[1])
    }

    /// A NUL-terminated string of `len` bytes at byte `at` of `words`.
    fn text(words: &[u32], at: usize, len: usize) -> Option<String> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let field = bytes.get(at..at + len)?;
        let end = field.iter().position(|&b| b == 0).unwrap_or(len);
        let s = String::from_utf8_lossy(&field[..end]).trim().to_string();
        (!s.is_empty()).then_some(s)
    }

    pub(super) fn fill(interface: &str, facts: &mut NicFacts) {
        let Ok(sock) = std::net::UdpSocket::bind("0.0.0.0:0") else {
            return;
        };
        let mut drv = [0u32; 49]; // struct ethtool_drvinfo: 196 bytes
        drv[0] = GDRVINFO;
        if query(&sock, interface, &mut drv) {
            facts.driver = text(&drv, 4, 32);
            facts.driver_version = text(&drv, 36, 32);
            facts.firmware = text(&drv, 68, 32).filter(|f| f != "N/A");
            facts.bus = text(&drv, 100, 32).filter(|b| b != "N/A");
        }
        let on = |cmd| flag(&sock, interface, cmd).map(|v| v != 0);
        facts.tso = on(GTSO);
        facts.gso = on(GGSO);
        facts.gro = on(GGRO);
        facts.rx_checksum = on(GRXCSUM);
        facts.tx_checksum = on(GTXCSUM);
        facts.lro = flag(&sock, interface, GFLAGS).map(|f| f & FLAG_LRO != 0);
        let mut ring = [0u32; 9]; // struct ethtool_ringparam: 36 bytes
        ring[0] = GRINGPARAM;
        if query(&sock, interface, &mut ring) && ring[1] > 0 {
            (facts.rx_ring, facts.tx_ring) = (Some(ring[5]), Some(ring[8]));
        }
        let mut coal = [0u32; 23]; // struct ethtool_coalesce: 92 bytes
        coal[0] = GCOALESCE;
        if query(&sock, interface, &mut coal) {
            facts.rx_usecs = Some(coal[1]);
            facts.rx_frames = Some(coal[2]);
            facts.tx_usecs = Some(coal[5]);
            facts.adaptive_rx = Some(coal[10] != 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_facts_from_a_synthetic_tree() {
        let root = std::env::temp_dir().join(format!("lr-nic-{}", std::process::id()));
        let dev = root.join("sys/class/net/eth9");
        for q in ["queues/rx-0", "queues/rx-1", "queues/tx-0", "device"] {
            std::fs::create_dir_all(dev.join(q)).unwrap();
        }
        std::fs::write(dev.join("speed"), "10000\n").unwrap();
        std::fs::write(dev.join("device/numa_node"), "1\n").unwrap();
        let f = NicFacts::read_sys(&root, "eth9");
        assert_eq!(f.speed_mbps, Some(10_000));
        assert_eq!(
            (f.rx_queues, f.tx_queues, f.numa_node),
            (Some(2), Some(1), Some(1))
        );
        std::fs::write(dev.join("speed"), "-1\n").unwrap();
        std::fs::write(dev.join("device/numa_node"), "-1\n").unwrap();
        let f = NicFacts::read_sys(&root, "eth9");
        assert_eq!(
            (f.speed_mbps, f.numa_node),
            (None, None),
            "unknown speed, no node"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn loopback_answers_the_ioctl() {
        let f = NicFacts::collect(Path::new("/"), "lo");
        // lo has no driver info on every kernel, but it reports its offloads.
        assert!(f.gso.is_some() || f.tso.is_some(), "{f:?}");
    }
}
