//! Where a relayed test may go (`serve --relay`, `--relay-to`): the check on the address the
//! relay is about to connect to, after name resolution.
//!
//! Invariants: the address checked is the one the test connects to (the name is resolved once,
//! and the test's connections all go to that address); an address of a special class
//! (loopback, link-local, unspecified, multicast, limited broadcast) or one of this host's
//! own is refused unless a `--relay-to` prefix names it: a prefix inside the class's range
//! (`127.0.0.0/8`, `127.0.0.1`, `fe80::/10`…) for a class, any prefix but a catch-all (`/0`)
//! for an own address; a catch-all never names them. With `--relay-to`, an address outside
//! every prefix is refused too.

use std::net::IpAddr;

use super::allow::{allowed, Prefix};

/// Why the relay will not connect to an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Denied {
    /// Outside every `--relay-to` prefix.
    OutsideRelayTo,
    /// In a special class (or this host's own) that no `--relay-to` prefix names.
    Special(&'static str),
}

/// The special classes: a name for messages, and the range as a prefix.
const CLASSES: &[(&str, &str)] = &[
    ("a loopback address", "127.0.0.0/8"),
    ("a loopback address", "::1/128"),
    ("an unspecified address", "0.0.0.0/8"),
    ("an unspecified address", "::/128"),
    ("a link-local address", "169.254.0.0/16"),
    ("a link-local address", "fe80::/10"),
    ("a multicast address", "224.0.0.0/4"),
    ("a multicast address", "ff00::/8"),
    ("the broadcast address", "255.255.255.255/32"),
];

/// Checks `ip` (the address the relayed test will connect to) against `relay_to` (empty:
/// no `--relay-to`) and this host's addresses `own`.
pub(super) fn check(relay_to: &[Prefix], own: &[IpAddr], ip: IpAddr) -> Result<(), Denied> {
    let ip = ip.to_canonical();
    if !allowed(relay_to, ip) {
        return Err(Denied::OutsideRelayTo);
    }
    for (what, range) in CLASSES {
        let Ok(range) = range.parse::<Prefix>() else {
            continue;
        };
        if range.contains(ip) && !relay_to.iter().any(|p| p.contains(ip) && p.within(&range)) {
            return Err(Denied::Special(what));
        }
    }
    let named = relay_to
        .iter()
        .any(|p| p.contains(ip) && p.prefix_len() > 0);
    if own.iter().any(|a| a.to_canonical() == ip) && !named {
        return Err(Denied::Special("an address of this relay's own"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixes(list: &[&str]) -> Vec<Prefix> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn special_addresses_are_refused_without_relay_to() {
        let own = [ip("198.18.0.1"), ip("2001:db8::1")];
        for bad in [
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "::",
            "169.254.1.1",
            "fe80::1",
            "224.0.0.1",
            "ff02::1",
            "255.255.255.255",
            "198.18.0.1",
            "2001:db8::1",
        ] {
            assert!(
                matches!(check(&[], &own, ip(bad)), Err(Denied::Special(_))),
                "{bad}"
            );
        }
        assert_eq!(check(&[], &own, ip("198.18.0.2")), Ok(()));
        assert_eq!(check(&[], &own, ip("2001:db8::2")), Ok(()));
    }

    #[test]
    fn only_a_prefix_inside_the_class_names_it() {
        let own = [ip("198.18.0.1")];
        let lo = prefixes(&["127.0.0.0/8"]);
        assert_eq!(check(&lo, &own, ip("127.0.0.1")), Ok(()));
        assert_eq!(
            check(&lo, &own, ip("198.18.0.2")),
            Err(Denied::OutsideRelayTo)
        );
        assert_eq!(
            check(&prefixes(&["127.0.0.1"]), &own, ip("127.0.0.1")),
            Ok(())
        );
        for wide in ["0.0.0.0/0", "64.0.0.0/2", "0.0.0.0/1"] {
            assert!(
                matches!(
                    check(&prefixes(&[wide]), &own, ip("127.0.0.1")),
                    Err(Denied::Special("a loopback address"))
                ),
                "{wide}"
            );
        }
        assert!(check(&prefixes(&["::/0"]), &own, ip("fe80::1")).is_err());
        assert_eq!(
            check(&prefixes(&["fe80::/64"]), &own, ip("fe80::1")),
            Ok(())
        );
    }

    #[test]
    fn an_own_address_needs_a_prefix_that_is_not_a_catch_all() {
        let own = [ip("198.18.0.1")];
        assert!(check(&prefixes(&["0.0.0.0/0"]), &own, ip("198.18.0.1")).is_err());
        assert_eq!(
            check(&prefixes(&["198.18.0.0/15"]), &own, ip("198.18.0.1")),
            Ok(())
        );
        assert_eq!(
            check(&prefixes(&["0.0.0.0/0"]), &own, ip("198.18.0.2")),
            Ok(())
        );
    }
}
