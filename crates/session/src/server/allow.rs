//! `serve --allow`: the address prefixes a client may connect from. A connection from
//! anywhere else is closed by the gate before any byte of it is read; with no prefix given,
//! every address may connect. An IPv4 client on the dual-stack listener (`::ffff:a.b.c.d`)
//! is matched as the IPv4 address it is.

use std::net::IpAddr;
use std::str::FromStr;

/// An address prefix, `198.18.0.0/15` or `2001:db8::/32`; a bare address is a prefix of its
/// full length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

/// A prefix that does not parse; the text names the input and the form expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: not an address prefix; give ADDRESS/LENGTH, e.g. 198.18.0.0/15 or 2001:db8::/32")]
pub struct PrefixError(pub String);

impl FromStr for Prefix {
    type Err = PrefixError;

    fn from_str(s: &str) -> Result<Self, PrefixError> {
        let bad = || PrefixError(s.to_string());
        let (addr, len) = match s.trim().split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(l) => l.parse::<u8>().ok().filter(|l| *l <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Prefix { addr, len })
    }
}

impl Prefix {
    /// Its length in bits: 0 for a catch-all (`0.0.0.0/0`, `::/0`).
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// Whether every address of `self` is inside `outer`.
    pub fn within(&self, outer: &Prefix) -> bool {
        self.len >= outer.len && outer.contains(self.addr)
    }

    /// Whether `ip` is inside the prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Whether a peer at `ip` may connect under `allow` (empty: everyone).
pub fn allowed(allow: &[Prefix], ip: IpAddr) -> bool {
    allow.is_empty() || allow.iter().any(|p| p.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_their_addresses_only() {
        let p: Prefix = "198.18.0.0/15".parse().unwrap();
        assert!(p.contains("198.19.255.1".parse().unwrap()));
        assert!(!p.contains("198.20.0.1".parse().unwrap()));
        assert!(
            p.contains("::ffff:198.18.0.9".parse().unwrap()),
            "IPv4 on a dual-stack socket"
        );
        let v6: Prefix = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains("2001:db8:1::5".parse().unwrap()));
        assert!(!v6.contains("2001:db9::5".parse().unwrap()));
        assert!(!v6.contains("198.18.0.1".parse().unwrap()));
        let all: Prefix = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("1.2.3.4".parse().unwrap()));
        let one: Prefix = "127.0.0.1".parse().unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        assert!(allowed(&[], "1.2.3.4".parse().unwrap()));
    }

    #[test]
    fn bad_prefixes_name_themselves() {
        for bad in [
            "198.18.0.0/33",
            "2001:db8::/129",
            "example.com",
            "10.0.0.0/x",
            "",
        ] {
            let e = bad.parse::<Prefix>().unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("{bad}: not an address prefix")),
                "{e}"
            );
        }
    }
}
