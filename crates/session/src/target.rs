//! Where the client connects: a resolved TCP address or a Unix socket path.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// linerate's default port.
pub const DEFAULT_PORT: u16 = 5301;

pub use wire::msg::Family;

/// A resolved destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// TCP to `addr`, optionally from `bind`.
    Tcp {
        /// Server address.
        addr: SocketAddr,
        /// Local address to bind.
        bind: Option<SocketAddr>,
    },
    /// A Unix-domain stream socket.
    Unix {
        /// Socket path.
        path: PathBuf,
    },
}

impl Target {
    /// Printable form: `HOST:PORT` or `unix:PATH`.
    pub fn describe(&self) -> String {
        match self {
            Target::Tcp { addr, .. } => addr.to_string(),
            Target::Unix { path } => format!("unix:{}", path.display()),
        }
    }
}

/// Why a host could not be resolved; the message names the host as given.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Nothing but spaces.
    #[error("empty host name")]
    Empty,
    /// `name:port` with a port that is not one.
    #[error("'{host}': port '{port}' is not a number from 1 to 65535")]
    BadPort {
        /// The host as given.
        host: String,
        /// The part after the colon.
        port: String,
    },
    /// The resolver failed.
    #[error("cannot resolve host '{name}': {answer}")]
    Lookup {
        /// The name looked up.
        name: String,
        /// The resolver's answer (in the message, so not a `source`: said once).
        answer: std::io::Error,
    },
    /// The name has addresses, but none of the family asked for.
    #[error("host '{host}' has no {} address", if *.family == Family::V4 { "IPv4 (-4)" } else { "IPv6 (-6)" })]
    NoAddressOfFamily {
        /// The host as given.
        host: String,
        /// `-4` or `-6`.
        family: Family,
    },
}

/// Every address `name` resolves to, each once, in the resolver's order (`mesh --dns`).
pub fn resolve_all(name: &str) -> Result<Vec<IpAddr>, ResolveError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ResolveError::Empty);
    }
    let mut found: Vec<IpAddr> = Vec::new();
    let addrs = (name, 0u16)
        .to_socket_addrs()
        .map_err(|answer| ResolveError::Lookup {
            name: name.to_string(),
            answer,
        })?;
    for a in addrs {
        if !found.contains(&a.ip()) {
            found.push(a.ip());
        }
    }
    Ok(found)
}

/// Resolves `host` (a name, an address, `host:port` or `[v6]:port`) with `port` as default.
pub fn resolve(host: &str, port: u16, family: Family) -> Result<SocketAddr, ResolveError> {
    let host = host.trim();
    if host.is_empty() {
        return Err(ResolveError::Empty);
    }
    let candidates: Vec<SocketAddr> = if let Ok(addr) = host.parse::<SocketAddr>() {
        vec![addr]
    } else if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else {
        let (name, port) = match host.rsplit_once(':') {
            Some((n, p)) if !n.contains(':') => (
                n,
                p.parse().map_err(|_| ResolveError::BadPort {
                    host: host.to_string(),
                    port: p.to_string(),
                })?,
            ),
            _ => (host, port),
        };
        (name, port)
            .to_socket_addrs()
            .map_err(|answer| ResolveError::Lookup {
                name: name.to_string(),
                answer,
            })?
            .collect()
    };
    candidates
        .into_iter()
        .find(|a| match family {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        })
        .ok_or_else(|| ResolveError::NoAddressOfFamily {
            host: host.to_string(),
            family,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_addresses() {
        assert_eq!(
            resolve("198.18.0.2", 5301, Family::Any)
                .unwrap()
                .to_string(),
            "198.18.0.2:5301"
        );
        assert_eq!(
            resolve("198.18.0.2:9", 5301, Family::Any).unwrap().port(),
            9
        );
        assert_eq!(
            resolve("::1", 7, Family::V6).unwrap().to_string(),
            "[::1]:7"
        );
        assert_eq!(resolve("[::1]:8", 7, Family::Any).unwrap().port(), 8);
    }

    #[test]
    fn family_filter_and_errors() {
        assert!(resolve("::1", 7, Family::V4)
            .unwrap_err()
            .to_string()
            .contains("no IPv4"));
        assert!(resolve("localhost:abc", 7, Family::Any)
            .unwrap_err()
            .to_string()
            .contains("port 'abc'"));
        assert!(resolve("", 7, Family::Any).is_err());
    }
}
