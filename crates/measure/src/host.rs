//! Facts about the host a run ran on, stored with every run so that results from different
//! machines, kernels, MTUs and NIC drivers can be told apart later.
//!
//! Everything is read from `/proc` and `/sys` (plus `getifaddrs` to find which interface holds
//! an address); a fact that cannot be read is `None`, never an error, because a missing fact
//! must not fail a finished test. The readers take a root directory so tests can run them over
//! a synthetic tree.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::nic::NicFacts;

/// The host's identity and the interface a test's traffic used.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HostFacts {
    /// Host name (`/proc/sys/kernel/hostname`); empty when unknown.
    #[serde(default)]
    pub hostname: String,
    /// Kernel release (`/proc/sys/kernel/osrelease`), e.g. `6.8.0-45-generic`.
    #[serde(default)]
    pub kernel_release: Option<String>,
    /// CPU model as `/proc/cpuinfo` names it.
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// CPUs this process may run on.
    #[serde(default)]
    pub cores: u32,
    /// Interface that holds the local address of the test's connection, e.g. `eth0` or `lo`.
    #[serde(default)]
    pub interface: Option<String>,
    /// That interface's MTU, bytes (`/sys/class/net/IF/mtu`).
    #[serde(default)]
    pub mtu_bytes: Option<u32>,
    /// That interface's device driver (`/sys/class/net/IF/device/driver`), e.g. `virtio_net`;
    /// `None` for loopback and other virtual interfaces, which have no device. Stored as every
    /// record has it; code reads the interface's driver through [`HostFacts::nic_driver`].
    #[serde(default)]
    pub driver: Option<String>,
    /// The interface as its driver reports it: driver version, firmware, link speed, offloads,
    /// rings, interrupt coalescing, queues, NUMA node (`crate::nic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NicFacts>,
    /// The TCP congestion control a connection gets when it does not choose one
    /// (`/proc/sys/net/ipv4/tcp_congestion_control`, this network namespace's), e.g. `cubic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_congestion: Option<String>,
    /// The qdiscs on that interface at the test's end, with what their counters added over
    /// the test (`crate::qdisc`); absent when they could not be read (not Linux, an older
    /// peer). Filled by the session around the test, not by [`HostFacts::collect`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdiscs: Option<Vec<crate::qdisc::Qdisc>>,
}

impl HostFacts {
    /// The interface's driver, the one name every reader uses: as the driver reports it
    /// (`nic.driver`, `ETHTOOL_GDRVINFO`, which names a software link's too: `veth`), else
    /// the name of its device's driver in /sys (`driver`: a record from before `nic`, or a
    /// driver that did not answer the ioctl). `None` for loopback.
    pub fn nic_driver(&self) -> Option<&str> {
        self.nic
            .as_ref()
            .and_then(|n| n.driver.as_deref())
            .or(self.driver.as_deref())
    }

    /// Facts about this host and the interface holding `local_ip` (the local address of the
    /// test's control connection), if given.
    pub fn collect(local_ip: Option<IpAddr>) -> HostFacts {
        let interface = local_ip.and_then(interface_for_ip);
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(0);
        let mut facts = HostFacts::read_from(Path::new("/"), cores, interface);
        // The driver's own facts need its ioctl, which only the real host answers.
        facts.nic = facts
            .interface
            .as_deref()
            .map(|name| NicFacts::collect(Path::new("/"), name));
        facts
    }

    /// Facts about this host and the interface that routes to `target`. Finding the route sends
    /// nothing: a UDP socket is connected to `target` and asked its local address.
    pub fn collect_towards(target: Option<SocketAddr>) -> HostFacts {
        HostFacts::collect(target.and_then(|t| local_ip_towards(t).ok()))
    }

    /// The facts as found under `root` (`/` on a real host), with the given core count and
    /// interface name.
    pub fn read_from(root: &Path, cores: u32, interface: Option<String>) -> HostFacts {
        let read = |rel: &str| -> Option<String> {
            let text = std::fs::read_to_string(root.join(rel)).ok()?;
            let text = text.trim();
            (!text.is_empty()).then(|| text.to_string())
        };
        let (mtu_bytes, driver) = match &interface {
            Some(name) => {
                let dir = root.join("sys/class/net").join(name);
                let mtu = std::fs::read_to_string(dir.join("mtu"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                let driver = std::fs::read_link(dir.join("device/driver"))
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
                (mtu, driver)
            }
            None => (None, None),
        };
        HostFacts {
            hostname: read("proc/sys/kernel/hostname").unwrap_or_default(),
            kernel_release: read("proc/sys/kernel/osrelease"),
            cpu_model: read("proc/cpuinfo").and_then(|c| cpu_model(&c)),
            cores,
            nic: interface
                .as_deref()
                .map(|name| NicFacts::read_sys(root, name)),
            interface,
            mtu_bytes,
            driver,
            tcp_congestion: read("proc/sys/net/ipv4/tcp_congestion_control"),
            qdiscs: None,
        }
    }
}

/// The CPU model from `/proc/cpuinfo` text: x86's `model name`, else the names other
/// architectures use (`Model`, `cpu model`, `cpu`, `Hardware`).
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    const KEYS: [&str; 5] = ["model name", "Model", "cpu model", "cpu", "Hardware"];
    let field = |key: &str| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            let v = v.trim();
            (k.trim() == key && !v.is_empty()).then(|| v.to_string())
        })
    };
    KEYS.iter().find_map(|k| field(k))
}

/// The local address the kernel would use to reach `target`. Sends nothing.
pub fn local_ip_towards(target: SocketAddr) -> io::Result<IpAddr> {
    let any: SocketAddr = match target {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let sock = UdpSocket::bind(any)?;
    sock.connect(target)?;
    Ok(sock.local_addr()?.ip())
}

/// The name of the interface that holds `ip` (IPv4-mapped IPv6 addresses count as IPv4). A
/// loopback address that no interface holds (e.g. 127.0.0.2) maps to the loopback interface.
pub fn interface_for_ip(ip: IpAddr) -> Option<String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    let addrs = interface_addresses().ok()?;
    addrs
        .iter()
        .find(|a| a.ip == Some(ip))
        .or_else(|| {
            ip.is_loopback()
                .then(|| addrs.iter().find(|a| a.loopback))
                .flatten()
        })
        .map(|a| a.name.clone())
}

/// Every IP address this host's interfaces hold, up or down (IPv4-mapped IPv6 as IPv4).
pub fn host_addresses() -> io::Result<Vec<IpAddr>> {
    Ok(interface_addresses()?
        .into_iter()
        .filter_map(|a| a.ip.map(|ip| ip.to_canonical()))
        .collect())
}

/// One entry of `getifaddrs`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IfAddr {
    name: String,
    ip: Option<IpAddr>,
    loopback: bool,
}

/// Every interface address on this host.
fn interface_addresses() -> io::Result<Vec<IfAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list that freeifaddrs releases below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: ifa_addr, when not null, points at a sockaddr whose family says its layout.
        let ip = unsafe { sockaddr_ip(ifa.ifa_addr) };
        let loopback = ifa.ifa_flags & libc::IFF_LOOPBACK as u32 != 0;
        out.push(IfAddr { name, ip, loopback });
        cur = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// The IP address in a `sockaddr`, for the IPv4 and IPv6 families.
///
/// # Safety
/// `sa` is null or points at a valid sockaddr of the size its family implies.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    match i32::from((*sa).sa_family) {
        libc::AF_INET => {
            let sin = &*(sa as *const libc::sockaddr_in);
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                sin.sin_addr.s_addr,
            ))))
        }
        libc::AF_INET6 => {
            let sin6 = &*(sa as *const libc::sockaddr_in6);
            Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch directory removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "linerate-host-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn write(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn reads_a_synthetic_tree() {
        let root = Scratch::new("tree");
        root.write("proc/sys/kernel/hostname", "lab-a\n");
        root.write("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
        root.write(
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n",
        );
        root.write("sys/class/net/eth0/mtu", "9000\n");
        root.write("sys/bus/pci/drivers/velocityget/.keep", "");
        std::fs::create_dir_all(root.0.join("sys/class/net/eth0/device")).unwrap();
        std::os::unix::fs::symlink(
            root.0.join("sys/bus/pci/drivers/velocityget"),
            root.0.join("sys/class/net/eth0/device/driver"),
        )
        .unwrap();
        root.write("sys/class/net/lo/mtu", "65536\n");
        root.write("proc/sys/net/ipv4/tcp_congestion_control", "bbr\n");

        let eth = HostFacts::read_from(&root.0, 8, Some("eth0".into()));
        assert_eq!(
            eth,
            HostFacts {
                hostname: "lab-a".into(),
                kernel_release: Some("6.8.0-45-generic".into()),
                cpu_model: Some("Intel(R) Xeon(R) Gold 6338".into()),
                cores: 8,
                interface: Some("eth0".into()),
                mtu_bytes: Some(9000),
                driver: Some("velocityget".into()),
                nic: Some(crate::nic::NicFacts::default()),
                tcp_congestion: Some("bbr".into()),
                qdiscs: None,
            }
        );
        let lo = HostFacts::read_from(&root.0, 8, Some("lo".into()));
        assert_eq!((lo.mtu_bytes, lo.driver), (Some(65536), None));
        let none = HostFacts::read_from(&root.0.join("missing"), 1, None);
        assert_eq!(
            none,
            HostFacts {
                cores: 1,
                ..HostFacts::default()
            }
        );
    }

    #[test]
    fn the_driver_is_the_nics_and_an_older_records_device_link_otherwise() {
        // A record from before `nic`: only the /sys device link's name.
        let old: HostFacts = serde_json::from_str(r#"{"driver":"virtio_net"}"#).unwrap();
        assert_eq!(old.nic_driver(), Some("virtio_net"));
        // A veth has no device, so no link; its driver still names it.
        let veth: HostFacts =
            serde_json::from_str(r#"{"driver":null,"nic":{"driver":"veth"}}"#).unwrap();
        assert_eq!(veth.nic_driver(), Some("veth"));
        let both: HostFacts =
            serde_json::from_str(r#"{"driver":"mlx5_core","nic":{"driver":"mlx5_core"}}"#).unwrap();
        assert_eq!(both.nic_driver(), Some("mlx5_core"));
        // Read back, a record keeps both fields as it had them.
        let again = serde_json::to_value(&veth).unwrap();
        assert_eq!(
            (&again["driver"], &again["nic"]["driver"]),
            (&serde_json::Value::Null, &serde_json::json!("veth"))
        );
        assert_eq!(HostFacts::default().nic_driver(), None);
    }

    #[test]
    fn cpu_model_on_other_architectures() {
        assert_eq!(
            cpu_model("processor : 0\nBogoMIPS : 50.00\nModel : Raspberry Pi 4 Model B\n"),
            Some("Raspberry Pi 4 Model B".into())
        );
        assert_eq!(
            cpu_model("processor\t: 0\ncpu\t\t: POWER9 (raw)\n"),
            Some("POWER9 (raw)".into())
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn loopback_is_lo_without_a_driver() {
        let lo = interface_for_ip("127.0.0.1".parse().unwrap());
        assert!(lo.is_some(), "no interface holds 127.0.0.1");
        // An unassigned loopback address still maps to the loopback interface.
        assert_eq!(interface_for_ip("127.0.0.2".parse().unwrap()), lo);
        assert_eq!(interface_for_ip("::ffff:127.0.0.1".parse().unwrap()), lo);
        let facts = HostFacts::collect_towards(Some("127.0.0.1:9".parse().unwrap()));
        assert_eq!(facts.interface, lo);
        assert_eq!((facts.driver.as_deref(), facts.nic_driver()), (None, None));
        assert!(facts.mtu_bytes.is_some() && facts.cores >= 1);
        // Documentation address: no interface holds it.
        assert_eq!(interface_for_ip("192.0.2.1".parse().unwrap()), None);
    }
}
