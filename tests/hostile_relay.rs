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

/// What a short relayed test towards `to` through `relay` fails with.
fn relay_refusal(relay: SocketAddr, to: SocketAddr) -> String {
    session::client::run(
        &relayed(relay, to, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string()
}

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
    let err = relay_refusal(relay.addr, banner);
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
    let err = relay_refusal(relay.addr, SocketAddr::new(own, far.addr.port()));
    assert!(
        err.contains(&format!("{own} is an address of this relay's own")),
        "{err}"
    );
}

#[test]
fn where_relay_to_allows_it_a_banner_is_only_not_a_linerate_server() {
    let relay = relay_server(loopback_policy());
    let (banner, taken) = banner_server();
    let err = relay_refusal(relay.addr, banner);
    assert!(err.ends_with("127.0.0.1 is not a linerate server"), "{err}");
    no_banner(&err);
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    // The relay's own log says what it met, as numbers, never the raw bytes.
    wait_for_log(&relay, "not a linerate endpoint");
    let log = relay.log_text();
    assert!(
        !log.contains("SSH-2.0") && !log.contains("secret-banner"),
        "{log}"
    );
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

/// A keys file holding one key (`relay`-marked `ops`) in a fresh directory, and that key.
fn one_key(tag: &str) -> (std::path::PathBuf, session::auth::ClientKey) {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("lr-hostile-relay-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = session::auth::Secret::generate().unwrap();
    let path = dir.join("keys");
    std::fs::write(&path, format!("ops {} relay\n", secret.to_base64())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = session::auth::ClientKey {
        name: wire::auth::UserName::new("ops").unwrap(),
        secret,
    };
    (path, key)
}

/// A server asking for the key in `path`, proofs passing also under `aliases`.
fn keyed(path: &std::path::Path, aliases: Vec<String>) -> TestServer {
    TestServer::start(ServerConfig {
        auth: Some(session::server::AuthKeys {
            path: path.to_path_buf(),
            table: session::auth::KeyTable::load(path).unwrap(),
            reload: engine::Signal::new(),
        }),
        auth_addresses: aliases,
        ..ServerConfig::default()
    })
}

/// A hostile far "server" X: a TCP forwarder on loopback that hands every connection on to
/// `to` byte for byte, both ways (at most 4 connections, each for at most 10 s).
fn forwarder(to: SocketAddr) -> SocketAddr {
    forward_from(TcpListener::bind("127.0.0.1:0").unwrap(), to)
}

/// [`forwarder`] on a listener already bound.
fn forward_from(listener: TcpListener, to: SocketAddr) -> SocketAddr {
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..4 {
            let Ok((inbound, _)) = listener.accept() else {
                return;
            };
            let Ok(outbound) = TcpStream::connect(to) else {
                return;
            };
            for (mut from, mut into) in [
                (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                (outbound, inbound),
            ] {
                from.set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut into);
                    let _ = into.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    addr
}

#[test]
fn a_relays_proof_handed_on_by_the_server_it_was_for_is_refused_by_another() {
    let (path, key) = one_key("forward");
    let y = keyed(&path, Vec::new());
    let x = forwarder(y.addr);
    let relay = relay_server(RelayPolicy {
        key: Some(key.clone()),
        ..loopback_policy()
    });
    // The controller names X; X passes Y's greeting to the relay and the relay's proof to Y.
    let err = session::client::run(
        &relayed(relay.addr, x, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    let x_id = wire::auth::server_identity(Some(x));
    assert!(
        err.contains("authentication failed for key ops")
            && err.contains(&format!("the proof is for server {x_id}")),
        "{err}"
    );
    wait_for_log(&y, &format!("key ops's proof is for server \"{x_id}\""));
    // Straight to Y the same relay's proof passes.
    let record = session::client::run(
        &relayed(relay.addr, y.addr, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap();
    assert!(record.summary.throughput_bps > 0.0);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_proof_made_for_server_x_is_refused_by_server_y_on_the_wire() {
    let (path, key) = one_key("wire");
    let (x, y) = (keyed(&path, Vec::new()), keyed(&path, Vec::new()));
    // A hostile client with a proof for X's identity over Y's nonce (what a relay that
    // connected to X, which passed on Y's greeting, would have made).
    let mut conn = TcpStream::connect(y.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(&Hello::ours().emit()).unwrap();
    let mut greeting = [0u8; wire::GREETING_LEN];
    conn.read_exact(&mut greeting).unwrap();
    let nonce = wire::auth::Nonce(greeting[8..].try_into().unwrap());
    let x_id = wire::auth::server_identity(Some(x.addr));
    let proof = session::auth::client_proof(&key, &nonce, &x_id).unwrap();
    let start = ClientMsg::Start {
        spec: spec(Direction::Send, 1, 300),
        auth: Some(proof),
    };
    frame::write_frame(&mut conn, &start).unwrap();
    match frame::read_frame::<_, ServerMsg>(&mut conn, Duration::from_secs(5)).unwrap() {
        ServerMsg::Error { message } => assert!(
            message.contains(&format!("the proof is for server {x_id}"))
                && message.contains("--auth-address"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    // A real client reaching a server through a forwarder (NAT, a proxy) is refused, naming
    // the flag, until the server is told of that address.
    let hidden = keyed(&path, Vec::new());
    let mut client = config(forwarder(hidden.addr), spec(Direction::Send, 1, 300));
    client.key = Some(key.clone());
    let err = session::client::run(&client, &mut Silent)
        .unwrap_err()
        .to_string();
    assert!(err.contains("serve --auth-address"), "{err}");
    let front = TcpListener::bind("127.0.0.1:0").unwrap();
    let front_id = wire::auth::server_identity(Some(front.local_addr().unwrap()));
    let told = keyed(&path, vec![front_id]);
    let mut client = config(
        forward_from(front, told.addr),
        spec(Direction::Send, 1, 300),
    );
    client.key = Some(key);
    let record = session::client::run(&client, &mut Silent).unwrap();
    assert!(record.summary.throughput_bps > 0.0);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
