//! Row 11 of issue 33: on a server with keys, the host's facts go only to a proven client.

use super::*;

/// What the server says about its host that an unproven client must not learn: its kernel
/// release, and its host name when it is long enough not to turn up by chance.
fn host_secrets() -> Vec<String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let mut secrets = vec![read("/proc/sys/kernel/osrelease")];
    let hostname = read("/proc/sys/kernel/hostname");
    if hostname.len() >= 6 {
        secrets.push(hostname);
    }
    secrets.retain(|s| !s.is_empty());
    secrets
}

/// Everything the server sends on `c` until it closes (or 3 s pass).
fn all_it_says(mut c: TcpStream) -> String {
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

/// A keys file with one new key, and the key: (its directory, removed when dropped; the key).
struct OneKey(std::path::PathBuf, session::auth::ClientKey);

impl OneKey {
    fn new(tag: &str) -> Self {
        use session::auth::Secret;
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("lr-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let secret = Secret::generate().unwrap();
        let path = dir.join("keys");
        std::fs::write(&path, format!("alice {}\n", secret.to_base64())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let key = session::auth::ClientKey {
            name: wire::auth::UserName::new("alice").unwrap(),
            secret,
        };
        Self(dir, key)
    }

    fn server(&self) -> TestServer {
        let path = self.0.join("keys");
        TestServer::start(ServerConfig {
            auth: Some(session::server::AuthKeys {
                table: session::auth::KeyTable::load(&path).unwrap(),
                path,
                reload: engine::Signal::new(),
            }),
            ..ServerConfig::default()
        })
    }
}

impl Drop for OneKey {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A greeted connection and the nonce its proof must cover.
fn greeted_nonce(addr: SocketAddr) -> (TcpStream, wire::auth::Nonce) {
    let mut c = connect_from(addr, [127, 0, 0, 1], None);
    c.write_all(&Hello::ours().emit()).unwrap();
    let mut g = [0u8; wire::GREETING_LEN];
    c.read_exact(&mut g).unwrap();
    let nonce: [u8; wire::auth::NONCE_LEN] =
        g[g.len() - wire::auth::NONCE_LEN..].try_into().unwrap();
    (c, wire::auth::Nonce(nonce))
}

/// Row 11: on a server with keys, no first message without a valid proof (a `start`, a
/// `start` under a wrong secret, a `probe`, a `relay`, an `attach`, an iperf3 client's
/// parameters) brings back a byte of the host's facts; a proven `start` does, and so does
/// any `start` on a server without keys (unchanged).
#[test]
fn an_unproven_client_learns_nothing_about_the_host() {
    let secrets = host_secrets();
    assert!(!secrets.is_empty(), "no kernel release to look for");
    let keys = OneKey::new("facts");
    let server = keys.server();
    let addr = server.addr;
    let reverse = spec(Direction::Reverse, 1, 1_000);
    let wrong = session::auth::ClientKey {
        name: keys.1.name.clone(),
        secret: session::auth::Secret::generate().unwrap(),
    };
    let mut said: Vec<(&str, String)> = Vec::new();
    let mut ask = |what: &'static str, msg: &dyn Fn(&wire::auth::Nonce) -> ClientMsg| {
        let (mut c, nonce) = greeted_nonce(addr);
        frame::write_frame(&mut c, &msg(&nonce)).unwrap();
        said.push((what, all_it_says(c)));
    };
    ask("start", &|_| ClientMsg::Start {
        spec: reverse.clone(),
        auth: None,
    });
    ask("start under a wrong secret", &|n| ClientMsg::Start {
        spec: reverse.clone(),
        auth: Some(
            session::auth::client_proof(&wrong, n, &wire::auth::server_identity(Some(addr)))
                .unwrap(),
        ),
    });
    ask("probe", &|_| ClientMsg::Probe { auth: None });
    ask("relay", &|_| ClientMsg::Relay {
        to: "127.0.0.1".into(),
        port: addr.port(),
        family: Default::default(),
        spec: reverse.clone(),
        auth: None,
    });
    ask("attach", &|_| ClientMsg::Attach {
        session: 1,
        stream: 0,
        auth: None,
    });
    // An iperf3 client: its cookie, then its parameters.
    let mut ip3 = connect_from(addr, [127, 0, 0, 1], None);
    let mut hello = vec![b'a'; ::iperf3::protocol::COOKIE_LEN - 1];
    hello.push(0);
    let params = br#"{"tcp":true,"omit":0,"time":1,"parallel":1,"len":131072}"#;
    hello.extend_from_slice(&(params.len() as u32).to_be_bytes());
    hello.extend_from_slice(params);
    ip3.write_all(&hello).unwrap();
    said.push(("iperf3 parameters", all_it_says(ip3)));
    for (what, text) in &said {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "an unproven {what} was told '{secret}': {text}"
            );
        }
    }
    // The check can see them: a proven start is told, as is any start without keys.
    let (mut c, nonce) = greeted_nonce(addr);
    let start = ClientMsg::Start {
        spec: reverse.clone(),
        auth: Some(
            session::auth::client_proof(&keys.1, &nonce, &wire::auth::server_identity(Some(addr)))
                .unwrap(),
        ),
    };
    frame::write_frame(&mut c, &start).unwrap();
    let proven = format!("{:?}", answer(&mut c));
    assert!(proven.contains(&secrets[0]), "a proven start: {proven}");
    let open = TestServer::start(ServerConfig::default());
    let (mut c, _) = greeted_nonce(open.addr);
    frame::write_frame(
        &mut c,
        &ClientMsg::Start {
            spec: reverse,
            auth: None,
        },
    )
    .unwrap();
    let told = format!("{:?}", answer(&mut c));
    assert!(told.contains(&secrets[0]), "a start without keys: {told}");
}
