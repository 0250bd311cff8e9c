//! What authentication puts on the wire (docs/PROTOCOL.md section 12): the server's challenge
//! after its hello, the client's proof in its first message, and the server's proof in its
//! answer. The MACs themselves are computed by the session crate; this module only carries
//! them, so it needs no cryptography.
//!
//! Invariants: a nonce and a MAC are exactly [`NONCE_LEN`] and [`MAC_LEN`] bytes (a JSON value
//! of any other length, or not hex, fails to decode); a key's name is 1 to
//! [`MAX_USER_LEN`] bytes of `A-Z a-z 0-9 . _ @ -`, checked when it is decoded.

use std::net::SocketAddr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes in a nonce.
pub const NONCE_LEN: usize = 32;
/// Bytes in a MAC (HMAC-SHA-256).
pub const MAC_LEN: usize = 32;
/// Longest key name, bytes.
pub const MAX_USER_LEN: usize = 64;

/// A fresh random challenge: the server's follows its hello, the client's is in its proof.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Nonce(pub [u8; NONCE_LEN]);

/// An HMAC-SHA-256 tag proving knowledge of a key.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; MAC_LEN]);

impl std::fmt::Debug for Nonce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Nonce({})", hex(&self.0))
    }
}

impl std::fmt::Debug for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mac({})", hex(&self.0))
    }
}

/// The client's half of the exchange, in its `start` or `attach`.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientProof {
    /// The key's name (the user).
    pub user: UserName,
    /// The client's fresh nonce.
    pub nonce: Nonce,
    /// The server the client proves its key to: the address it connected to, as
    /// [`server_identity`] writes it (`IP:PORT`, `[IPv6]:PORT`, `unix`). The MAC covers it,
    /// so the proof passes only at a server reached at that address.
    pub server: String,
    /// HMAC over the role, both nonces, the name and the server (see the session crate's
    /// `auth`).
    pub mac: Mac,
}

/// A server's identity as a proof names it: `addr`'s IP (an IPv4-mapped IPv6 address as the
/// IPv4 address, without an IPv6 zone, which differs between hosts) and port; `unix` for a
/// Unix-domain socket (`None`). Both ends write it the same way, the client from the address
/// it connected to and the server from the address the connection reached.
pub fn server_identity(addr: Option<SocketAddr>) -> String {
    match addr {
        None => "unix".to_string(),
        Some(a) => SocketAddr::new(a.ip().to_canonical(), a.port()).to_string(),
    }
}

/// A key's name: who ran a test, in logs and records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct UserName(String);

/// A name with characters outside `A-Z a-z 0-9 . _ @ -`, empty, or too long.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key name {0:?}: use 1 to 64 of the characters A-Z a-z 0-9 . _ @ -")]
pub struct BadUserName(pub String);

impl UserName {
    /// Checks `name`.
    pub fn new(name: &str) -> Result<Self, BadUserName> {
        let ok = (1..=MAX_USER_LEN).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._@-".contains(&b));
        if ok {
            Ok(Self(name.to_string()))
        } else {
            Err(BadUserName(name.chars().take(MAX_USER_LEN + 1).collect()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for UserName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Only valid names, so that every generated message decodes to itself.
#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for UserName {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-";
        let len = u.int_in_range(1..=MAX_USER_LEN)?;
        let name = (0..len)
            .map(|_| u.choose(CHARS).map(|&c| char::from(c)))
            .collect::<arbitrary::Result<String>>()?;
        Ok(Self(name))
    }
}

impl<'de> Deserialize<'de> for UserName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        UserName::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Exactly `N` bytes from lower- or upper-case hex.
fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in text.as_bytes().chunks_exact(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

macro_rules! hex_serde {
    ($ty:ident, $len:expr) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&hex(&self.0))
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                unhex::<{ $len }>(&text).map($ty).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "{}: expected {} hex digits",
                        stringify!($ty),
                        2 * $len
                    ))
                })
            }
        }
    };
}

hex_serde!(Nonce, NONCE_LEN);
hex_serde!(Mac, MAC_LEN);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_travel_as_hex_and_only_at_their_length() {
        let nonce = Nonce([0xab; NONCE_LEN]);
        let text = serde_json::to_string(&nonce).unwrap();
        assert_eq!(text, format!("\"{}\"", "ab".repeat(NONCE_LEN)));
        assert_eq!(serde_json::from_str::<Nonce>(&text).unwrap(), nonce);
        for bad in ["\"ab\"", "\"zz\"", "17", &format!("\"{}\"", "é".repeat(32))] {
            assert!(serde_json::from_str::<Nonce>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn server_identities_are_the_same_text_at_both_ends() {
        let id = |s: &str| server_identity(Some(s.parse().unwrap()));
        assert_eq!(id("[::ffff:198.18.0.1]:5301"), "198.18.0.1:5301");
        assert_eq!(id("198.18.0.1:5301"), "198.18.0.1:5301");
        assert_eq!(id("[fe80::1%7]:5301"), "[fe80::1]:5301");
        assert_eq!(id("[2001:db8::1]:5301"), "[2001:db8::1]:5301");
        assert_eq!(server_identity(None), "unix");
    }

    #[test]
    fn user_names_are_checked_when_decoded() {
        assert_eq!(
            UserName::new("alice@lab-1.x_y").unwrap().as_str(),
            "alice@lab-1.x_y"
        );
        for bad in ["", "a b", "a\nb", "ä", &"x".repeat(65)] {
            assert!(UserName::new(bad).is_err(), "{bad:?}");
            let json = serde_json::to_string(bad).unwrap();
            assert!(serde_json::from_str::<UserName>(&json).is_err(), "{bad:?}");
        }
    }
}
