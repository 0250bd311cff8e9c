//! The capabilities each part of the engine needs, read once with `capget(2)` and checked up
//! front, so a missing one is one line naming it instead of an EPERM from deep inside a setup.
//!
//! The AF_PACKET sender needs CAP_NET_RAW; the XDP counter needs CAP_NET_ADMIN (to attach to an
//! interface) and CAP_BPF (or, on kernels before 5.8, CAP_SYS_ADMIN) to load the program.

use crate::error::SysError;

/// A Linux capability this crate checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// CAP_NET_ADMIN (12): attach XDP programs.
    NetAdmin = 12,
    /// CAP_NET_RAW (13): AF_PACKET sockets.
    NetRaw = 13,
    /// CAP_SYS_ADMIN (21): loads BPF where CAP_BPF does not exist.
    SysAdmin = 21,
    /// CAP_BPF (39): load BPF programs and create maps.
    Bpf = 39,
}

impl Cap {
    fn name(self) -> &'static str {
        match self {
            Self::NetAdmin => "CAP_NET_ADMIN",
            Self::NetRaw => "CAP_NET_RAW",
            Self::SysAdmin => "CAP_SYS_ADMIN",
            Self::Bpf => "CAP_BPF",
        }
    }
}

/// The process's effective capability set as a 64-bit mask.
fn effective() -> Result<u64, SysError> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: header and data are the layouts capget(2) documents for version 3 (two Data).
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if r != 0 {
        return Err(SysError::last("capget"));
    }
    Ok(u64::from(data[0].effective) | (u64::from(data[1].effective) << 32))
}

/// Checks that every capability in `all` is effective, and for `any_of` that at least one is;
/// the error names the missing ones and `what` needed them.
pub fn require(what: &'static str, all: &[Cap], any_of: &[Cap]) -> Result<(), SysError> {
    let eff = effective()?;
    let has = |c: Cap| eff & (1u64 << c as u32) != 0;
    let mut missing: Vec<String> = all
        .iter()
        .filter(|c| !has(**c))
        .map(|c| c.name().to_string())
        .collect();
    if !any_of.is_empty() && !any_of.iter().any(|c| has(*c)) {
        let names: Vec<&str> = any_of.iter().map(|c| c.name()).collect();
        missing.push(names.join(" or "));
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(SysError::Capabilities {
        what,
        missing: missing.join(", "),
    })
}

/// What the XDP counter needs: CAP_NET_ADMIN, and CAP_BPF or CAP_SYS_ADMIN.
pub fn require_xdp() -> Result<(), SysError> {
    require(
        "the XDP counter",
        &[Cap::NetAdmin],
        &[Cap::Bpf, Cap::SysAdmin],
    )
}

/// What the AF_PACKET sender needs: CAP_NET_RAW.
pub fn require_packet() -> Result<(), SysError> {
    require("the packet engine (AF_PACKET)", &[Cap::NetRaw], &[])
}

/// What the AF_XDP sender needs: CAP_NET_RAW.
pub fn require_xsk() -> Result<(), SysError> {
    require("the xdp engine (AF_XDP)", &[Cap::NetRaw], &[])
}

/// What `engine`'s sender needs (nothing for the socket engine): checked by the client before
/// it asks the server for a frame test.
pub fn require_sender(engine: wire::spec::UdpEngine) -> Result<(), SysError> {
    match engine {
        wire::spec::UdpEngine::Socket => Ok(()),
        wire::spec::UdpEngine::Packet => require_packet(),
        wire::spec::UdpEngine::Xdp => require_xsk(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_set_reads_and_root_or_not_the_answer_is_consistent() {
        let eff = effective().expect("capget");
        let r = require_xdp();
        let has_admin = eff & (1 << 12) != 0;
        let has_bpf = eff & ((1 << 39) | (1 << 21)) != 0;
        assert_eq!(r.is_ok(), has_admin && has_bpf, "{r:?}");
        if let Err(e) = r {
            assert!(
                e.to_string().starts_with("missing capabilities CAP_"),
                "{e}"
            );
        }
    }

    /// Clears `drop` from this thread's effective set (capabilities are per thread; the
    /// permitted set is kept, and the thread ends with the test's closure).
    fn without(drop: &[Cap]) {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        let mut h = Header {
            version: 0x2008_0522,
            pid: 0,
        };
        let mut d = [[0u32; 3]; 2];
        // SAFETY: capget/capset with the version-3 layouts, on this thread.
        unsafe {
            assert_eq!(libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()), 0);
            for c in drop {
                let bit = *c as u32;
                d[(bit / 32) as usize][0] &= !(1 << (bit % 32));
            }
            assert_eq!(libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()), 0);
        }
    }

    #[test]
    fn a_thread_without_cap_bpf_and_cap_net_admin_is_refused_in_one_line_naming_both() {
        if require_xdp().is_err() {
            crate::skip::skip("needs CAP_NET_ADMIN and CAP_BPF to drop them");
            return;
        }
        let err = std::thread::spawn(|| {
            without(&[Cap::Bpf, Cap::SysAdmin, Cap::NetAdmin]);
            require_xdp()
        })
        .join()
        .unwrap()
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(
                "missing capabilities CAP_NET_ADMIN, CAP_BPF or CAP_SYS_ADMIN for the XDP counter"
            ),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        let err = std::thread::spawn(|| {
            without(&[Cap::NetRaw]);
            crate::packet_tx::PacketTx::open(1, crate::packet_tx::RingSize::for_frames(60)).err()
        })
        .join()
        .unwrap();
        assert!(
            matches!(&err, Some(SysError::Capabilities { missing, .. }) if missing == "CAP_NET_RAW"),
            "{err:?}"
        );
    }
}
