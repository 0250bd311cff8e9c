//! Keys: a server with `--auth-keys` runs tests only for clients that prove a key, proves it
//! holds the key in turn, binds every data connection to the session's key, enforces each
//! key's limits, and rereads its keys file on SIGHUP.

use super::*;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use session::auth::{client_proof, ClientKey, KeyTable, Secret};
use session::client::{AuthProblem, ClientError};
use session::server::AuthKeys;
use wire::auth::server_identity;
use wire::auth::{Mac, Nonce, UserName, NONCE_LEN};
use wire::GREETING_LEN;

/// A directory of key files, removed when dropped.
struct KeyDir(PathBuf);

impl KeyDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("lr-auth-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Writes `text` to `name` with mode 600.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    }
}

impl Drop for KeyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A new key's line, as `linerate keygen` prints it.
fn key_line(name: &str) -> String {
    format!("{name} {}", Secret::generate().unwrap().to_base64())
}

fn client_key(line: &str) -> ClientKey {
    let (name, secret) = line.trim().split_once(' ').unwrap();
    ClientKey {
        name: UserName::new(name).unwrap(),
        secret: Secret::from_base64(secret).unwrap(),
    }
}

/// A server asking for the keys in `table`.
fn keyed_server(path: &Path) -> TestServer {
    TestServer::start(ServerConfig {
        auth: Some(AuthKeys {
            path: path.to_path_buf(),
            table: KeyTable::load(path).unwrap(),
            reload: engine::Signal::new(),
        }),
        ..ServerConfig::default()
    })
}

fn run_with(
    addr: SocketAddr,
    spec: wire::TestSpec,
    key: Option<ClientKey>,
) -> Result<record::RunRecord, ClientError> {
    let config = session::client::ClientConfig {
        key,
        ..config(addr, spec)
    };
    session::client::run(&config, &mut session::client::Silent)
}

#[test]
fn a_proven_key_runs_and_names_its_user_everyone_else_is_refused() {
    let dir = KeyDir::new("basic");
    let (alice, bob) = (key_line("alice"), key_line("bob"));
    let server = keyed_server(&dir.write("keys", &format!("{alice}\n")));
    let record = run_with(
        server.addr,
        spec(Direction::Send, 2, 300),
        Some(client_key(&alice)),
    )
    .unwrap();
    assert_eq!(record.user.as_deref(), Some("alice"));
    assert!(record.summary.throughput_bps > 0.0);
    wait_for_log(&server, "(alice): test done: tcp");

    let err = run_with(server.addr, spec(Direction::Send, 1, 300), None).unwrap_err();
    assert!(
        matches!(err, ClientError::Auth(AuthProblem::KeyRequired { .. })),
        "{err}"
    );
    wait_for_log(&server, "no key for this server");

    let err = run_with(
        server.addr,
        spec(Direction::Send, 1, 300),
        Some(client_key(&bob)),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("authentication failed for key bob"),
        "{err}"
    );
    wait_for_log(&server, "unknown key name bob");

    // The right name with another secret: the same answer for the client, the log tells.
    let forged = key_line("alice");
    let err = run_with(
        server.addr,
        spec(Direction::Send, 1, 300),
        Some(client_key(&forged)),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("authentication failed for key alice"),
        "{err}"
    );
    wait_for_log(&server, "wrong secret for key alice");
}

#[test]
fn a_client_with_a_key_insists_the_server_proves_it() {
    // A server without keys cannot prove one.
    let server = test_server();
    let key = client_key(&key_line("alice"));
    let err = run_with(
        server.addr,
        spec(Direction::Send, 1, 300),
        Some(key.clone()),
    )
    .unwrap_err();
    assert!(
        matches!(err, ClientError::Auth(AuthProblem::ServerHasNoKeys { .. })),
        "{err}"
    );

    // A fake server that asks for a key and accepts anything with a made-up proof.
    let fake = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = fake.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = fake.accept().unwrap();
        let greeting = wire::Greeting {
            hello: Hello {
                requires_key: true,
                ..Hello::ours()
            },
            nonce: Nonce([9; NONCE_LEN]),
        };
        s.write_all(&greeting.emit()).unwrap();
        let mut hello = [0u8; 8];
        s.read_exact(&mut hello).unwrap();
        let _: ClientMsg = frame::read_frame(&mut s, Duration::from_secs(5)).unwrap();
        let accepted = ServerMsg::Accepted {
            session: 1,
            server: Default::default(),
            udp_ports: vec![],
            udp_extra_ports: vec![],
            crr_port: None,
            auth: Some(Mac([0; 32])),
        };
        frame::write_frame(&mut s, &accepted).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    });
    let err = run_with(addr, spec(Direction::Send, 1, 300), Some(key)).unwrap_err();
    assert!(
        matches!(err, ClientError::Auth(AuthProblem::ServerUnproven { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains("did not prove it holds key alice"),
        "{err}"
    );
}

/// A raw connection to `addr`: our hello sent, the server's nonce read.
fn greeted(addr: SocketAddr) -> (TcpStream, Nonce) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&Hello::ours().emit()).unwrap();
    let mut g = [0u8; GREETING_LEN];
    c.read_exact(&mut g).unwrap();
    assert_eq!(g[6] & 1, 1, "the greeting says a key is asked for");
    let nonce: [u8; NONCE_LEN] = g[8..].try_into().unwrap();
    (c, Nonce(nonce))
}

fn answer(c: &mut TcpStream) -> ServerMsg {
    frame::read_frame(c, Duration::from_secs(5)).unwrap()
}

#[test]
fn a_recorded_proof_is_worthless_on_a_new_connection() {
    let dir = KeyDir::new("replay");
    let line = key_line("alice");
    let server = keyed_server(&dir.write("keys", &format!("{line}\n")));
    let key = client_key(&line);
    let (mut first, nonce) = greeted(server.addr);
    let proof = client_proof(&key, &nonce, &server_identity(Some(server.addr))).unwrap();
    let start = |auth| ClientMsg::Start {
        spec: spec(Direction::Send, 1, 60_000),
        auth,
    };
    frame::write_frame(&mut first, &start(Some(proof.clone()))).unwrap();
    assert!(matches!(
        answer(&mut first),
        ServerMsg::Accepted { auth: Some(_), .. }
    ));
    // The same bytes replayed on a second connection meet a new nonce.
    let (mut replay, other) = greeted(server.addr);
    assert_ne!(nonce, other);
    frame::write_frame(&mut replay, &start(Some(proof))).unwrap();
    match answer(&mut replay) {
        ServerMsg::Error { message } => {
            assert!(message.contains("authentication failed"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn data_connections_must_prove_the_sessions_key() {
    let dir = KeyDir::new("attach");
    let (alice, bob) = (key_line("alice"), key_line("bob"));
    let server = keyed_server(&dir.write("keys", &format!("{alice}\n{bob}\n")));
    let (alice, bob) = (client_key(&alice), client_key(&bob));
    let (mut ctrl, nonce) = greeted(server.addr);
    let start = ClientMsg::Start {
        spec: spec(Direction::Send, 1, 60_000),
        auth: Some(client_proof(&alice, &nonce, &server_identity(Some(server.addr))).unwrap()),
    };
    frame::write_frame(&mut ctrl, &start).unwrap();
    let ServerMsg::Accepted { session, .. } = answer(&mut ctrl) else {
        panic!("not accepted")
    };
    let attach = |key: Option<&ClientKey>| {
        let (mut data, nonce) = greeted(server.addr);
        let auth =
            key.map(|k| client_proof(k, &nonce, &server_identity(Some(server.addr))).unwrap());
        let msg = ClientMsg::Attach {
            session,
            stream: 0,
            auth,
        };
        frame::write_frame(&mut data, &msg).unwrap();
        answer(&mut data)
    };
    match attach(None) {
        ServerMsg::Error { message } => assert!(message.contains("asks for a key"), "{message}"),
        other => panic!("{other:?}"),
    }
    match attach(Some(&bob)) {
        ServerMsg::Error { message } => {
            assert!(message.contains("belongs to another key"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        attach(Some(&alice)),
        ServerMsg::Attached { auth: Some(_), .. }
    ));
}

/// `spec` paced at 5 Mbit/s, within a key's `max-rate=10M`.
fn paced(spec: wire::TestSpec) -> wire::TestSpec {
    let wire::Params::TcpStream { stream, tcp } = spec.params else {
        unreachable!()
    };
    let tcp = wire::spec::TcpOptions {
        pacing_bps: Some(5_000_000),
        ..tcp
    };
    wire::TestSpec {
        params: wire::Params::TcpStream { stream, tcp },
        ..spec
    }
}

#[test]
fn each_keys_limits_are_enforced_and_named() {
    let dir = KeyDir::new("limits");
    let line = key_line("alice");
    let path = dir.write(
        "keys",
        &format!("{line} max-time=2 max-streams=2 max-sessions=1 max-rate=10M\n"),
    );
    let server = keyed_server(&path);
    let key = || Some(client_key(&line));
    let refused =
        |spec: wire::TestSpec| run_with(server.addr, spec, key()).unwrap_err().to_string();
    let err = refused(spec(Direction::Send, 1, 3000));
    assert!(err.contains("over key alice's max-time"), "{err}");
    let err = refused(spec(Direction::Send, 3, 500));
    assert!(err.contains("over key alice's max-streams"), "{err}");
    let mut udp = wire::TestSpec::new(
        wire::Params::UdpStream {
            udp: wire::spec::UdpParams {
                rate: wire::spec::UdpRate::BitsPerSec(100_000_000),
                ..wire::spec::UdpParams::new(Direction::Send)
            },
        },
        1,
        500,
    );
    let err = refused(udp.clone());
    assert!(err.contains("over key alice's max-rate"), "{err}");
    udp.params = wire::Params::UdpStream {
        udp: wire::spec::UdpParams {
            rate: wire::spec::UdpRate::BitsPerSec(5_000_000),
            ..wire::spec::UdpParams::new(Direction::Send)
        },
    };
    run_with(server.addr, udp, key()).unwrap();

    // max-sessions=1: a second test while one runs is refused, naming the limit. (The test
    // before may still be ending on the server: its slot frees within moments.)
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ctrl = loop {
        let (mut ctrl, nonce) = greeted(server.addr);
        let start = ClientMsg::Start {
            spec: paced(spec(Direction::Send, 1, 2000)),
            auth: Some(
                client_proof(
                    &client_key(&line),
                    &nonce,
                    &server_identity(Some(server.addr)),
                )
                .unwrap(),
            ),
        };
        frame::write_frame(&mut ctrl, &start).unwrap();
        match answer(&mut ctrl) {
            ServerMsg::Accepted { .. } => break ctrl,
            other => assert!(Instant::now() < deadline, "{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = refused(paced(spec(Direction::Send, 1, 300)));
    assert!(err.contains("key alice may run 1 test at once"), "{err}");
    frame::write_frame(&mut ctrl, &ClientMsg::Stop).unwrap();
    drop(ctrl);
    // The slot comes back when that session ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    while run_with(server.addr, paced(spec(Direction::Send, 1, 300)), key()).is_err() {
        assert!(Instant::now() < deadline, "{}", server.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn without_keys_one_address_is_held_to_its_share() {
    let server = TestServer::start(ServerConfig {
        max_sessions_per_address: Some(1),
        ..ServerConfig::default()
    });
    let mut ctrl = TcpStream::connect(server.addr).unwrap();
    ctrl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ctrl.write_all(&Hello::ours().emit()).unwrap();
    let mut g = [0u8; GREETING_LEN];
    ctrl.read_exact(&mut g).unwrap();
    let start = ClientMsg::Start {
        spec: paced(spec(Direction::Send, 1, 2000)),
        auth: None,
    };
    frame::write_frame(&mut ctrl, &start).unwrap();
    assert!(matches!(answer(&mut ctrl), ServerMsg::Accepted { .. }));
    let err = run(server.addr, paced(spec(Direction::Send, 1, 300)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("127.0.0.1 may run 1 test at once"), "{err}");
}

/// A `linerate serve --auth-keys` process on a free port, its stderr in `log`.
fn serve_process(keys: &Path, log: &Path) -> (ServerProcess, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = linerate()
        .args([
            "serve",
            "--bind",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--auth-keys",
        ])
        .arg(keys)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    wait_listening("", port);
    (ServerProcess(child), port)
}

fn tcp_with_key(port: u16, key: &Path) -> std::process::Output {
    linerate()
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "0.3",
            "--no-store",
            "--auth-key",
        ])
        .arg(key)
        .output()
        .unwrap()
}

#[test]
fn sighup_rereads_the_keys_file_and_a_broken_one_keeps_the_old_keys() {
    let dir = KeyDir::new("sighup");
    let out = linerate_ok(&["keygen", "alice"]);
    let alice = dir.write("alice.key", &out);
    let bob = dir.write("bob.key", &linerate_ok(&["keygen", "bob"]));
    let keys = dir.write("keys", &out);
    let log = dir.0.join("serve.log");
    let (server, port) = serve_process(&keys, &log);
    assert!(tcp_with_key(port, &alice).status.success());
    let out = tcp_with_key(port, &bob);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("authentication failed for key bob"),
        "{stderr}"
    );

    let hup = |want: &str| {
        unsafe { libc::kill(server.0.id() as i32, libc::SIGHUP) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string(&log).unwrap().contains(want) {
            assert!(
                Instant::now() < deadline,
                "{}",
                std::fs::read_to_string(&log).unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let both = format!(
        "{}{}",
        std::fs::read_to_string(&alice).unwrap(),
        std::fs::read_to_string(&bob).unwrap()
    );
    dir.write("keys", &both);
    hup("2 keys");
    assert!(tcp_with_key(port, &bob).status.success());
    dir.write("keys", "bob not-a-secret\n");
    hup("keeping the 2 keys read before");
    assert!(tcp_with_key(port, &bob).status.success());
}

#[test]
fn bad_key_files_are_one_line_and_exit_2() {
    let dir = KeyDir::new("bad");
    let good = dir.write("good", &key_line("alice"));
    let open = dir.write("open", &key_line("alice"));
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let malformed = dir.write("malformed", &format!("# ok\n{}\nbob\n", key_line("alice")));
    let limit = dir.write("limit", &format!("{} max-time=soon\n", key_line("alice")));
    let missing = dir.0.join("missing");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    fails_in_one_line(
        &["serve", "-p", "0", "--auth-keys", &s(&open)],
        "(mode 0644); `chmod 600` it",
    );
    fails_in_one_line(
        &["serve", "-p", "0", "--auth-keys", &s(&malformed)],
        "line 3: a name without a secret",
    );
    fails_in_one_line(
        &["serve", "-p", "0", "--auth-keys", &s(&limit)],
        "line 1: max-time=soon: seconds",
    );
    fails_in_one_line(
        &["serve", "-p", "0", "--auth-keys", &s(&missing)],
        "cannot read key file",
    );
    fails_in_one_line(
        &["serve", "--max-sessions-per-address", "0"],
        "--max-sessions-per-address 0",
    );
    fails_in_one_line(&["serve", "--max-streams", "0"], "--max-streams 0");
    fails_in_one_line(
        &["serve", "--max-streams", "129"],
        "--max-streams 129: must be 1 to 128",
    );
    fails_in_one_line(
        &["serve", "--max-time", "86401"],
        "--max-time 86401: must be above 0",
    );
    fails_in_one_line(
        &["tcp", "127.0.0.1", "-p", "1", "--auth-key", &s(&missing)],
        "--auth-key: cannot read key file",
    );
    fails_in_one_line(
        &["tcp", "127.0.0.1", "-p", "1", "--auth-key", &s(&open)],
        "`chmod 600` it",
    );
    fails_in_one_line(&["keygen", "al ice"], "key name \"al ice\"");
    let _ = good;
}

#[test]
fn keygen_prints_a_name_and_32_random_bytes() {
    let a = linerate_ok(&["keygen", "alice"]);
    let b = linerate_ok(&["keygen", "alice"]);
    assert_ne!(a, b);
    let (name, secret) = a.trim().split_once(' ').unwrap();
    assert_eq!(name, "alice");
    assert_eq!(secret.len(), 44, "base64 of 32 bytes: {secret}");
    assert!(Secret::from_base64(secret).is_some());
    assert_eq!(UserName::new(name).unwrap().as_str(), "alice");
}

#[test]
fn a_foreign_probe_proves_its_key_as_a_test_does() {
    let dir = KeyDir::new("probe");
    let (alice, bob) = (key_line("alice"), key_line("bob"));
    let server = keyed_server(&dir.write("keys", &format!("{alice}\n")));
    let probe = |key: Option<ClientKey>| {
        let config = session::client::ClientConfig {
            key,
            ..config(server.addr, spec(Direction::Send, 1, 300))
        };
        session::client::foreign_probe(&config, std::time::Duration::from_secs(2))
    };
    let p = probe(Some(client_key(&alice))).unwrap();
    assert!(p.connect > std::time::Duration::ZERO && p.request > std::time::Duration::ZERO);
    let err = probe(None).unwrap_err();
    assert!(
        matches!(err, ClientError::Auth(AuthProblem::KeyRequired { .. })),
        "{err}"
    );
    let err = probe(Some(client_key(&bob))).unwrap_err();
    assert!(
        err.to_string()
            .contains("authentication failed for key bob"),
        "{err}"
    );
}
