//! The kernel's drop counters on one host, before and after a test: where the datagrams a UDP
//! test lost may have gone. Each is host-wide (or, for /proc/net/snmp, network-namespace-wide):
//! other traffic over the same period counts too, which is why the figures say so.
//!
//! - `/proc/net/snmp` `Udp:` `RcvbufErrors` (datagrams dropped at full receive buffers),
//!   `SndbufErrors` (datagrams dropped on the way out: no send buffer, or the qdisc dropped
//!   them and the socket does not ask for errors, `IP_RECVERR`), `InErrors`;
//! - `/sys/class/net/IF/statistics`: the interface's `rx_dropped`, `rx_missed_errors`,
//!   `rx_fifo_errors`, `rx_over_errors` (the NIC and its driver) and `tx_dropped` (not for a
//!   software link such as a veth: its transmit drops are its peer's backlog drops, below);
//! - `/proc/net/softnet_stat`, second column, summed over CPUs: packets dropped because a CPU's
//!   input backlog was full (`net.core.netdev_max_backlog`). Machine-wide.
//! - `/proc/net/snmp` `Ip:` `InReceives`, `InDelivers`, `ForwDatagrams`, `InDiscards`, with
//!   `/proc/net/snmp6`'s `Ip6InReceives`, `Ip6InDelivers`, `Ip6OutForwDatagrams`,
//!   `Ip6InDiscards` added: what reached the IP layer and what it handed up. A packet that
//!   reached it and was neither delivered nor forwarded was dropped there: a firewall rule
//!   (netfilter keeps no counter of its own here), a bad header, no route, a discard. These count
//!   IP packets: a coalesced (GRO) or unsegmented GSO packet holding many datagrams counts once.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::link_counts::{is_virtual, statistic};

/// One reading of the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropSnapshot {
    udp: Option<[u64; 3]>,
    nic_rx: Option<u64>,
    nic_tx: Option<u64>,
    backlog: Option<u64>,
    ip: Option<[u64; 4]>,
}

/// What the counters added between two readings.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HostDrops {
    /// `Udp: RcvbufErrors`: datagrams dropped at full receive buffers, every UDP socket of the
    /// network namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_rcvbuf_errors: Option<u64>,
    /// `Udp: SndbufErrors`: datagrams (a GSO batch counts once) dropped on the way out: no
    /// send buffer, or dropped by a qdisc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_sndbuf_errors: Option<u64>,
    /// `Udp: InErrors`: datagrams the stack could not deliver (buffer drops included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_in_errors: Option<u64>,
    /// The test interface's receive drops: `rx_dropped + rx_missed_errors + rx_fifo_errors +
    /// rx_over_errors`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_rx_dropped: Option<u64>,
    /// The test interface's `tx_dropped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_tx_dropped: Option<u64>,
    /// Input backlog drops over all CPUs (`/proc/net/softnet_stat`, machine-wide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_drops: Option<u64>,
    /// `Ip: InReceives` (+ `Ip6InReceives`): IP packets that reached the IP layer, every
    /// interface of the network namespace. A coalesced (GRO) packet counts once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_in_receives: Option<u64>,
    /// `Ip: InDelivers` (+ `Ip6InDelivers`): IP packets handed to a transport protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_in_delivers: Option<u64>,
    /// `Ip: ForwDatagrams` (+ `Ip6OutForwDatagrams`): IP packets forwarded, not for this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_forw_datagrams: Option<u64>,
    /// `Ip: InDiscards` (+ `Ip6InDiscards`): IP packets discarded for want of resources (one
    /// of the reasons in [`HostDrops::ip_dropped`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_in_discards: Option<u64>,
}

impl HostDrops {
    /// IP packets that reached the IP layer and were neither delivered nor forwarded:
    /// `InReceives − InDelivers − ForwDatagrams`, dropped in the host's IP layer (a firewall
    /// rule, a discard, a bad header or address). Packets, not datagrams, under GRO.
    pub fn ip_dropped(&self) -> Option<u64> {
        let passed = self.ip_in_delivers? + self.ip_forw_datagrams?;
        Some(self.ip_in_receives?.saturating_sub(passed))
    }
}

impl DropSnapshot {
    /// Reads the counters now, with `interface`'s (the one the test uses) when known.
    pub fn now(interface: Option<&str>) -> Self {
        Self::read_from(Path::new("/"), interface)
    }

    /// Reads the counters under `root` (`/` on a live system).
    pub fn read_from(root: &Path, interface: Option<&str>) -> Self {
        let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
        let stat = |name: &str| statistic(root, interface?, name);
        let rx_names = [
            "rx_dropped",
            "rx_missed_errors",
            "rx_fifo_errors",
            "rx_over_errors",
        ];
        Self {
            udp: read("proc/net/snmp").and_then(|t| udp_counters(&t)),
            nic_rx: rx_names.iter().map(|n| stat(n)).sum(),
            // A software link (veth) counts as its transmit drops what its peer's input
            // backlog refused: counted once, as the receiving host's backlog drops.
            nic_tx: stat("tx_dropped").filter(|_| !interface.is_some_and(|i| is_virtual(root, i))),
            backlog: read("proc/net/softnet_stat").and_then(|t| backlog_drops(&t)),
            ip: read("proc/net/snmp").and_then(|t| {
                let v6 = read("proc/net/snmp6").and_then(|t6| ip6_counters(&t6));
                let v4 = ip_counters(&t)?;
                Some(std::array::from_fn(|i| v4[i] + v6.map_or(0, |v| v[i])))
            }),
        }
    }

    /// What each counter added since `earlier` (a counter that went backwards reads 0).
    pub fn since(&self, earlier: &DropSnapshot) -> HostDrops {
        let d = |now: Option<u64>, then: Option<u64>| Some(now?.saturating_sub(then?));
        let udp = |i: usize| d(self.udp.map(|u| u[i]), earlier.udp.map(|u| u[i]));
        let ip = |i: usize| d(self.ip.map(|u| u[i]), earlier.ip.map(|u| u[i]));
        HostDrops {
            udp_rcvbuf_errors: udp(0),
            udp_sndbuf_errors: udp(1),
            udp_in_errors: udp(2),
            nic_rx_dropped: d(self.nic_rx, earlier.nic_rx),
            nic_tx_dropped: d(self.nic_tx, earlier.nic_tx),
            backlog_drops: d(self.backlog, earlier.backlog),
            ip_in_receives: ip(0),
            ip_in_delivers: ip(1),
            ip_forw_datagrams: ip(2),
            ip_in_discards: ip(3),
        }
    }
}

/// `RcvbufErrors`, `SndbufErrors`, `InErrors` from the text of /proc/net/snmp (a header line
/// of names, then a line of values, per protocol).
pub fn udp_counters(snmp: &str) -> Option<[u64; 3]> {
    let mut lines = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().collect();
    let get = |name: &str| -> Option<u64> {
        let at = names.iter().position(|n| *n == name)?;
        values.get(at)?.parse().ok()
    };
    Some([get("RcvbufErrors")?, get("SndbufErrors")?, get("InErrors")?])
}

/// `InReceives`, `InDelivers`, `ForwDatagrams`, `InDiscards` from the text of /proc/net/snmp.
pub fn ip_counters(snmp: &str) -> Option<[u64; 4]> {
    let mut lines = snmp.lines().filter(|l| l.starts_with("Ip:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().collect();
    let get = |name: &str| -> Option<u64> {
        let at = names.iter().position(|n| *n == name)?;
        values.get(at)?.parse().ok()
    };
    let names = ["InReceives", "InDelivers", "ForwDatagrams", "InDiscards"];
    Some([
        get(names[0])?,
        get(names[1])?,
        get(names[2])?,
        get(names[3])?,
    ])
}

/// The same four from the text of /proc/net/snmp6 (a name and a value per line).
pub fn ip6_counters(snmp6: &str) -> Option<[u64; 4]> {
    let get = |name: &str| -> Option<u64> {
        let line = snmp6
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some([
        get("Ip6InReceives")?,
        get("Ip6InDelivers")?,
        get("Ip6OutForwDatagrams")?,
        get("Ip6InDiscards")?,
    ])
}

/// The second column of /proc/net/softnet_stat (hexadecimal), summed over CPUs.
pub fn backlog_drops(softnet: &str) -> Option<u64> {
    softnet
        .lines()
        .map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL InReceives InDiscards InDelivers ForwDatagrams\n\
        Ip: 1 64 1000 2 900 10\n\
        Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors\n\
        Udp: 100 2 30 90 25 4 0\n\
        UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors\n\
        UdpLite: 0 0 0 0 0 0 0\n";

    #[test]
    fn parses_the_udp_line_by_name() {
        assert_eq!(udp_counters(SNMP), Some([25, 4, 30]));
        assert_eq!(udp_counters("Ip: a\nIp: 1\n"), None);
        assert_eq!(ip_counters(SNMP), Some([1000, 900, 10, 2]));
        let v6 = "Ip6InReceives 50\nIp6InDelivers 40\nIp6OutForwDatagrams 1\nIp6InDiscards 0\n";
        assert_eq!(ip6_counters(v6), Some([50, 40, 1, 0]));
    }

    #[test]
    fn sums_the_backlog_column_in_hex() {
        let text = "0a1ac77a 00000010 00000015\n0a377844 0000000f 00000013\n";
        assert_eq!(backlog_drops(text), Some(31));
        assert_eq!(backlog_drops("garbage\n"), None);
    }

    #[test]
    fn reads_a_synthetic_tree_and_subtracts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let stats = root.join("sys/class/net/eth0/statistics");
        std::fs::create_dir_all(&stats).unwrap();
        std::fs::create_dir_all(root.join("proc/net")).unwrap();
        let write = |rx: u64, tx: u64, snmp: &str, softnet: &str| {
            for (name, v) in [
                ("rx_dropped", rx),
                ("rx_missed_errors", 1),
                ("rx_fifo_errors", 0),
                ("rx_over_errors", 0),
                ("tx_dropped", tx),
            ] {
                std::fs::write(stats.join(name), format!("{v}\n")).unwrap();
            }
            std::fs::write(root.join("proc/net/snmp"), snmp).unwrap();
            std::fs::write(root.join("proc/net/softnet_stat"), softnet).unwrap();
        };
        write(5, 1, SNMP, "0 00000002 0\n");
        let before = DropSnapshot::read_from(root, Some("eth0"));
        write(
            9,
            3,
            &SNMP
                .replace("100 2 30 90 25 4 0", "150 2 40 95 35 6 0")
                .replace("1 64 1000 2 900 10", "1 64 1300 2 1150 10"),
            "0 0000000a 0\n",
        );
        let d = DropSnapshot::read_from(root, Some("eth0")).since(&before);
        assert_eq!(d.udp_rcvbuf_errors, Some(10));
        assert_eq!(d.udp_sndbuf_errors, Some(2));
        assert_eq!(d.udp_in_errors, Some(10));
        assert_eq!(d.nic_rx_dropped, Some(4));
        assert_eq!(d.nic_tx_dropped, Some(2));
        assert_eq!(d.backlog_drops, Some(8));
        assert_eq!((d.ip_in_receives, d.ip_in_delivers), (Some(300), Some(250)));
        // 300 reached IP, 250 were delivered, none forwarded: 50 dropped there.
        assert_eq!(d.ip_dropped(), Some(50));
        // A software link's transmit drops are its peer's backlog drops: not counted twice.
        std::fs::create_dir_all(root.join("sys/devices/virtual/net")).unwrap();
        std::fs::rename(
            root.join("sys/class/net/eth0"),
            root.join("sys/devices/virtual/net/eth0"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            root.join("sys/devices/virtual/net/eth0"),
            root.join("sys/class/net/eth0"),
        )
        .unwrap();
        let veth = DropSnapshot::read_from(root, Some("eth0"));
        assert_eq!((veth.nic_tx, veth.nic_rx), (None, Some(10)));
        // Without an interface, its counters are unknown, not zero.
        let none = DropSnapshot::read_from(root, None).since(&before);
        assert_eq!((none.nic_rx_dropped, none.nic_tx_dropped), (None, None));
    }
}
