//! iperf3 as a dialect of `linerate serve`'s gate (`session::server::Dialect`): what the gate
//! asks about a connection whose first byte is from iperf3's cookie alphabet, and the thread
//! of a test it opens.
//!
//! An opening is the 37-byte cookie; a cookie a test waits for makes the connection that
//! test's next data connection ([`Opening::Joins`]); any other is asked for its parameters
//! (`PARAM_EXCHANGE`, [`Opening::Ask`]), and the cookie with whole parameters (a big-endian
//! length of at most [`MAX_PARAMS_LEN`], then the JSON) opens a test. The gate holds the bytes
//! (at most [`DialectServer::max_opening`]) and the deadline; nothing here blocks or reads a
//! socket but the UDP door's, nonblocking.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::Arc;

use engine::Conn;
use session::server::{DialectServer, KeylessRefusal, Log, Opening, Server, ServerConfig};
use wire::{WireError, MAGIC};

use super::udp::UdpDoor;
use super::{code, Cookie, Waiting};
use crate::protocol::{
    decode_params, is_cookie, is_cookie_char, server_error, State, COOKIE_LEN, MAX_PARAMS_LEN,
};

/// The length prefix of the parameters.
const LEN_PREFIX: usize = 4;

/// iperf3 clients at a linerate server, for `ServerConfig::dialects`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dialect {
    /// `serve --iperf3-open`: serve iperf3 clients on a server with keys (they cannot prove
    /// one, so they run unauthenticated); without it such a server refuses them.
    pub open: bool,
}

impl Dialect {
    /// The dialect as `ServerConfig::dialects` holds it.
    pub fn plugged(open: bool) -> Arc<dyn session::server::Dialect> {
        Arc::new(Self { open })
    }

    /// `config` serving iperf3 clients too (an in-process server's, which has no keys).
    pub fn plug_into(self, mut config: ServerConfig) -> ServerConfig {
        config.dialects.push(Arc::new(self));
        config
    }
}

impl session::server::Dialect for Dialect {
    fn start(&self, addr: Option<SocketAddr>, log: &Log) -> Arc<dyn DialectServer> {
        let (udp, why) = UdpDoor::open(addr);
        if let Some(why) = why {
            log(why);
        }
        Arc::new(Served {
            open: self.open,
            waiting: Waiting::default(),
            udp,
        })
    }
}

/// iperf3 on one server: its tests waiting for data connections, and its UDP door.
pub(super) struct Served {
    open: bool,
    /// iperf3 tests waiting for their data connections.
    pub(super) waiting: Waiting,
    /// iperf3 UDP tests' connect datagrams, on the server's port.
    pub(super) udp: UdpDoor,
}

impl DialectServer for Served {
    fn name(&self) -> &'static str {
        "iperf3"
    }

    fn claims(&self, first: u8) -> bool {
        is_cookie_char(first)
    }

    fn max_opening(&self) -> usize {
        COOKIE_LEN + LEN_PREFIX + MAX_PARAMS_LEN as usize
    }

    fn opening(&self, buf: &[u8], asked: bool) -> Opening {
        let Some(cookie) = buf.get(..COOKIE_LEN) else {
            return Opening::More;
        };
        if !is_cookie(cookie) {
            return Opening::Failed(WireError::BadMagic {
                found: [buf[0], buf[1], buf[2], buf[3]],
                expected: MAGIC,
            });
        }
        if !asked {
            if self.waiting.waits_for(cookie) {
                return Opening::Joins;
            }
            return Opening::Ask(vec![State::ParamExchange.to_byte()]);
        }
        params_whole(&buf[COOKIE_LEN..])
    }

    fn join(&self, opening: &[u8], accepted: u64, conn: Conn) -> Result<(), &'static str> {
        self.waiting.hand(&cookie_of(opening), accepted, conn)
    }

    fn keyless_refusal(&self) -> Option<KeylessRefusal> {
        (!self.open).then(|| KeylessRefusal {
            bytes: server_error(code::AUTH).to_vec(),
            why: "this server asks for keys (--auth-keys), which iperf3 clients cannot prove \
                  (--iperf3-open serves them unauthenticated)",
        })
    }

    fn run(&self, conn: Conn, opening: &[u8], server: &Server<'_>, peer: &str) {
        let params = decode_params(opening.get(COOKIE_LEN + LEN_PREFIX..).unwrap_or_default());
        super::run(conn, cookie_of(opening), params, (self, server), peer)
    }

    fn door(&self) -> Option<RawFd> {
        self.udp.fd()
    }

    fn door_ready(&self, admit: &dyn Fn(IpAddr) -> bool) -> Vec<String> {
        self.udp.read(admit)
    }
}

fn cookie_of(opening: &[u8]) -> Cookie {
    (opening.get(..COOKIE_LEN))
        .and_then(|c| c.try_into().ok())
        .unwrap_or([0; COOKIE_LEN])
}

/// The parameters after the cookie: a big-endian length, then the JSON.
fn params_whole(body: &[u8]) -> Opening {
    let Some(prefix) = body.get(..LEN_PREFIX) else {
        return Opening::More;
    };
    let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    if len == 0 {
        return Opening::Failed(WireError::EmptyMessage);
    }
    if len > MAX_PARAMS_LEN {
        return Opening::Failed(WireError::FrameTooLarge {
            len: len as usize,
            max: MAX_PARAMS_LEN as usize,
        });
    }
    if body.len() < LEN_PREFIX + len as usize {
        return Opening::More;
    }
    Opening::Opens
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::cookie;

    fn served() -> Served {
        Served {
            open: false,
            waiting: Waiting::default(),
            udp: UdpDoor::open(None).0,
        }
    }

    #[test]
    fn an_opening_is_a_cookie_then_after_the_question_whole_parameters() {
        let d = served();
        let c = cookie(&[b'a'; 36]);
        assert!(matches!(d.opening(&c[..10], false), Opening::More));
        let Opening::Ask(q) = d.opening(&c, false) else {
            panic!("an unknown cookie is asked for its parameters")
        };
        assert_eq!(q, [State::ParamExchange.to_byte()]);
        let json = br#"{"tcp":true,"time":1,"parallel":1}"#;
        let mut buf = c.to_vec();
        buf.extend_from_slice(&(json.len() as u32).to_be_bytes());
        assert!(matches!(d.opening(&buf, true), Opening::More));
        buf.extend_from_slice(&json[..5]);
        assert!(matches!(d.opening(&buf, true), Opening::More));
        buf.extend_from_slice(&json[5..]);
        assert!(matches!(d.opening(&buf, true), Opening::Opens));
        assert!(buf.len() <= d.max_opening());
    }

    #[test]
    fn a_broken_cookie_and_parameters_out_of_bounds_fail_before_their_bytes_are_read() {
        let d = served();
        let mut bad = cookie(&[b'a'; 36]);
        bad[36] = b'x';
        assert!(matches!(d.opening(&bad, false), Opening::Failed(_)));
        let c = cookie(&[b'b'; 36]);
        for len in [0, MAX_PARAMS_LEN + 1] {
            let mut buf = c.to_vec();
            buf.extend_from_slice(&len.to_be_bytes());
            assert!(matches!(d.opening(&buf, true), Opening::Failed(_)), "{len}");
        }
    }

    #[test]
    fn a_cookie_a_test_waits_for_joins_it_and_keys_refuse_unless_open() {
        let d = served();
        let c = cookie(&[b'c'; 36]);
        let _arrivals = d.waiting.open(c, 1);
        assert!(matches!(d.opening(&c, false), Opening::Joins));
        assert!(d.keyless_refusal().is_some());
        let open = Served {
            open: true,
            ..served()
        };
        assert!(open.keyless_refusal().is_none());
        assert!(d.claims(b'a') && !d.claims(wire::MAGIC[0]));
    }
}
