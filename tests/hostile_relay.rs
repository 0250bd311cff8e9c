//! Issue 33, rows 6 (the relay) against a hostile controller: a relay is no port scanner and
//! no banner grabber. Without `--relay-to` it refuses loopback and its own addresses before
//! connecting anywhere; where `--relay-to` lets it connect, a far end that is not a linerate
//! server comes back as "not a linerate server" and a closed port as "unreachable", never
//! with the far end's bytes; `--relay-key` alone is refused at start; a relay's proof for one
//! far server does not pass at another.

use super::*;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use session::client::Silent;
use session::server::RelayPolicy;

use crate::relay::{loopback_policy, relay_server, relayed};

/// An SSH-like service on loopback that greets every connection with its banner; counts the
/// connections it took. Serves at most 8 connections or 20 s.
fn banner_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let taken = Arc::new(AtomicUsize::new(0));
    let count = taken.clone();
    std::thread::spawn(move || {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(20) && count.load(Ordering::SeqCst) < 8 {
            match listener.accept() {
                Ok((mut conn, _)) => {
                    count.fetch_add(1, Ordering::SeqCst);
                    let _ = conn.write_all(b"SSH-2.0-OpenSSH_9.6 secret-banner\r\n");
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    (addr, taken)
}

/// Fails the test if `text` carries any of the banner: its words, or its bytes as numbers.
fn no_banner(text: &str) {
    for leak in ["SSH", "secret-banner", "53, 53, 48", "[53,", "0x53"] {
        assert!(!text.contains(leak), "the banner leaked ({leak}): {text}");
    }
}

#[test]
fn a_relay_without_relay_to_refuses_loopback_before_connecting_and_names_the_flag() {
    let relay = relay_server(RelayPolicy::default());
    let (banner, taken) = banner_server();
    let err = session::client::run(
        &relayed(relay.addr, banner, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("127.0.0.1 is a loopback address") && err.contains("--relay-to"),
        "{err}"
    );
    no_banner(&err);
    // The same for the other spellings of this host: unspecified, IPv6 loopback.
    for to in ["0.0.0.0", "::1", "::ffff:127.0.0.1"] {
        let config = session::client::ClientConfig {
            relay: Some(session::relay::RelayTo {
                host: to.into(),
                port: banner.port(),
                family: session::target::Family::Any,
            }),
            ..config(relay.addr, spec(Direction::Send, 1, 300))
        };
        let err = session::client::run(&config, &mut Silent)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--relay-to"), "{to}: {err}");
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(taken.load(Ordering::SeqCst), 0, "the relay connected");
    wait_for_log(&relay, "refused: 127.0.0.1 is a loopback address");
}

#[test]
fn a_relay_without_relay_to_refuses_its_own_addresses() {
    let Some(own) = measure::host::host_addresses()
        .unwrap()
        .into_iter()
        .find(|ip| !ip.is_loopback() && !ip.is_unspecified() && ip.is_ipv4())
    else {
        return skip("this host has no IPv4 address besides loopback");
    };
    let relay = relay_server(RelayPolicy::default());
    let far = TestServer::start(ServerConfig::default());
    let err = session::client::run(
        &relayed(
            relay.addr,
            SocketAddr::new(own, far.addr.port()),
            spec(Direction::Send, 1, 300),
        ),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&format!("{own} is an address of this relay's own")),
        "{err}"
    );
}

#[test]
fn where_relay_to_allows_it_a_banner_is_only_not_a_linerate_server() {
    let relay = relay_server(loopback_policy());
    let (banner, taken) = banner_server();
    let err = session::client::run(
        &relayed(relay.addr, banner, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(err.ends_with("127.0.0.1 is not a linerate server"), "{err}");
    no_banner(&err);
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    // The relay's own log says what it met, as numbers, never the raw bytes.
    wait_for_log(&relay, "not a linerate endpoint");
    let log = relay.log_text();
    assert!(!log.contains("SSH-2.0") && !log.contains("secret-banner"), "{log}");
    // A real test through the same relay still runs.
    let far = TestServer::start(ServerConfig::default());
    let record = session::client::run(
        &relayed(relay.addr, far.addr, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap();
    assert!(record.summary.throughput_bps > 0.0);
}

#[test]
fn relay_key_without_relay_to_or_auth_keys_is_refused_at_start_naming_both() {
    fails_in_one_line(
        &["serve", "--relay", "--relay-key", "/nonexistent/relay.key"],
        "--relay-key without --relay-to or --auth-keys",
    );
    let out = linerate()
        .args(["serve", "--relay", "--relay-key", "/nonexistent/relay.key"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--relay-to PREFIX") && stderr.contains("--auth-keys FILE"),
        "{stderr}"
    );
}
