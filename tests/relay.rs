//! Third-party tests (`--from`) on loopback: a relay (`serve --relay --relay-to 127.0.0.0/8`,
//! which names loopback, refused by default) runs the test towards another server and the
//! controller gets the record; without `--relay`, under a key without the `relay` mark, or
//! towards a destination outside `--relay-to`, it refuses; Ctrl-C at the controller stops the
//! relay's test and brings back what it measured.

use super::*;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;

use session::auth::{ClientKey, KeyTable, Secret};
use session::client::{ClientConfig, Silent};
use session::relay::RelayTo;
use session::server::{AuthKeys, RelayPolicy};
use wire::auth::UserName;

/// A relay that may test towards loopback (`--relay-to 127.0.0.0/8`), where the far servers of
/// these tests listen.
pub fn loopback_policy() -> RelayPolicy {
    RelayPolicy {
        to: vec!["127.0.0.0/8".parse().unwrap()],
        key: None,
    }
}

pub fn relay_server(policy: RelayPolicy) -> TestServer {
    TestServer::start(ServerConfig {
        relay: Some(policy),
        ..ServerConfig::default()
    })
}

/// A test of `spec` from the relay at `relay` towards `to`.
pub fn relayed(relay: SocketAddr, to: SocketAddr, spec: wire::TestSpec) -> ClientConfig {
    ClientConfig {
        relay: Some(RelayTo {
            host: to.ip().to_string(),
            port: to.port(),
            family: session::target::Family::Any,
        }),
        ..config(relay, spec)
    }
}

#[test]
fn a_relayed_test_comes_back_whole_with_both_far_ends_figures() {
    let relay = relay_server(loopback_policy());
    let far = test_server();
    for direction in [Direction::Send, Direction::Reverse] {
        let spec = wire::TestSpec {
            interval_ms: 100,
            ..spec(direction, 2, 600)
        };
        let mut rows = Rows::default();
        let record = session::client::run(&relayed(relay.addr, far.addr, spec), &mut rows).unwrap();
        assert!(record.summary.throughput_bps > 0.0, "{direction:?}");
        assert_eq!(record.target, format!("{} from {}", far.addr, relay.addr));
        // Every interval the controller saw live is in the record, in order, and the far
        // server's facts came through.
        assert!(record.intervals.len() >= 5, "{}", record.intervals.len());
        assert_eq!(rows.0, record.intervals.len());
        assert!(rows.1, "started was reported");
        let hosts = record.hosts.as_ref().unwrap();
        assert!(hosts.server.is_some());
        assert!(
            record.summary.flows.iter().all(|f| f.reconciled),
            "{direction:?}"
        );
    }
    wait_for_log(&relay, "relaying tcp_stream");
    wait_for_log(&relay, "relayed test done");
    wait_for_log(&far, "test done");
}

/// Counts intervals and whether `started` came.
#[derive(Default)]
struct Rows(usize, bool);

impl session::client::Progress for Rows {
    fn started(&mut self, _: &wire::msg::ServerInfo, _: &wire::TestSpec) {
        self.1 = true;
    }
    fn interval(&mut self, _: &record::IntervalSample) {
        self.0 += 1;
    }
}

#[test]
fn a_server_without_relay_refuses_and_says_how_to_allow_it() {
    let plain = test_server();
    let far = test_server();
    let err = session::client::run(
        &relayed(plain.addr, far.addr, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("serve --relay"), "{err}");
    wait_for_log(
        &plain,
        "refused: this server does not run tests towards others",
    );
}

#[test]
fn destinations_outside_relay_to_and_unreachable_ones_are_refused() {
    let relay = relay_server(RelayPolicy {
        to: vec!["198.18.0.0/15".parse().unwrap()],
        key: None,
    });
    let far = test_server();
    let err = session::client::run(
        &relayed(relay.addr, far.addr, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("outside this server's --relay-to"), "{err}");
    // Nothing listens on port 1: the controller hears only "unreachable", no sooner than the
    // relay's connect timeout (5 s), as for a port that never answers.
    let open = relay_server(loopback_policy());
    let nowhere: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let began = std::time::Instant::now();
    let err = session::client::run(
        &relayed(open.addr, nowhere, spec(Direction::Send, 1, 300)),
        &mut Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.ends_with("127.0.0.1 is unreachable from this relay"),
        "{err}"
    );
    assert!(!err.contains("refused"), "{err}");
    assert!(
        began.elapsed() >= Duration::from_millis(4900),
        "{:?}",
        began.elapsed()
    );
    wait_for_log(&open, "Connection refused");
}

#[test]
fn only_keys_marked_relay_may_ask() {
    let dir = std::env::temp_dir().join(format!("lr-relay-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let line = |name: &str| format!("{name} {}", Secret::generate().unwrap().to_base64());
    let (ops, guest) = (line("ops"), line("guest"));
    let path = dir.join("keys");
    std::fs::write(&path, format!("{ops} relay\n{guest}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let relay = TestServer::start(ServerConfig {
        relay: Some(loopback_policy()),
        auth: Some(AuthKeys {
            path: path.clone(),
            table: KeyTable::load(&path).unwrap(),
            reload: engine::Signal::new(),
        }),
        ..ServerConfig::default()
    });
    let far = test_server();
    let key = |l: &str| {
        let (name, secret) = l.split_once(' ').unwrap();
        Some(ClientKey {
            name: UserName::new(name).unwrap(),
            secret: Secret::from_base64(secret).unwrap(),
        })
    };
    let with = |k| ClientConfig {
        key: k,
        ..relayed(relay.addr, far.addr, spec(Direction::Send, 1, 300))
    };
    let record = session::client::run(&with(key(&ops)), &mut Silent).unwrap();
    assert!(record.summary.throughput_bps > 0.0);
    let err = session::client::run(&with(key(&guest)), &mut Silent)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("key guest may not ask") && err.contains("`relay`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_interrupt_at_the_controller_stops_the_relayed_test_early() {
    let relay = relay_server(loopback_policy());
    let far = test_server();
    let config = relayed(relay.addr, far.addr, spec(Direction::Send, 1, 20_000));
    let interrupt = config.interrupt.clone();
    let started = std::time::Instant::now();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        interrupt.raise();
    });
    let record = session::client::run(&config, &mut Silent).unwrap();
    stopper.join().unwrap();
    assert!(record.summary.interrupted, "the partial run says so");
    assert!(record.summary.throughput_bps > 0.0);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    wait_for_log(&far, "test done");
}

#[test]
fn bad_mesh_and_from_input_is_one_line_and_runs_nothing() {
    for (args, needle) in [
        (
            &["mesh", "198.18.0.1"][..],
            "a mesh needs at least two hosts; 1 given",
        ),
        (
            &["mesh", "198.18.0.1", "198.18.0.1"],
            "host 198.18.0.1 is given twice",
        ),
        (
            &["mesh", "198.18.0.1", "no-such-host.invalid"],
            "host no-such-host.invalid: cannot resolve",
        ),
        (
            &["mesh", "198.18.0.1", "198.18.0.2", "--concurrency", "0"],
            "--concurrency 0",
        ),
        (
            &["mesh", "198.18.0.1", "198.18.0.2", "--", "198.18.0.3"],
            "a mesh's hosts are given before --",
        ),
        (
            &["mesh", "198.18.0.1", "198.18.0.2", "--", "--json"],
            "--json after --",
        ),
        (
            &["mesh", "198.18.0.1", "198.18.0.2", "--test", "pps"],
            "invalid value 'pps'",
        ),
        (&["tcp", "--from", "198.18.0.1"], "name HOST"),
        (
            &["tcp", "198.18.0.2", "--from", "198.18.0.1", "--iperf3"],
            "--from with --iperf3",
        ),
        (
            &["udp", "198.18.0.2", "--from", "198.18.0.1", "--latency"],
            "--latency with --from",
        ),
        (&["serve", "--relay-to", "198.18.0.0/15"], "--relay"),
    ] {
        fails_in_one_line(args, needle);
    }
}
