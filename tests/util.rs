//! Helpers for the integration tests: an in-process server, the binary, network namespaces.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::{Listener, Signal};
use record::RunRecord;
use session::client::{self, ClientConfig, ClientError, Silent};
use session::server::{self, ServerConfig, ServerThread};
use session::target::Target;
use wire::spec::{Direction, Params, StreamParams, TcpOptions};
use wire::TestSpec;

pub use crate::skip::skip;

/// A server on 127.0.0.1:0 in this process, with its log captured; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<String>>>,
    _server: ServerThread,
}

impl TestServer {
    /// A server on loopback that also serves iperf3 clients (as `linerate serve` does) unless
    /// `config` names its own dialects.
    pub fn start(mut config: ServerConfig) -> Self {
        if config.dialects.is_empty() {
            config.dialects.push(::iperf3::Dialect::plugged(false));
        }
        let std_listener = listener_with_its_udp_port_free();
        let addr = std_listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let server_log: server::Log = Arc::new(move |line| sink.lock().unwrap().push(line));
        let server = ServerThread::start(Listener::Tcp(std_listener), config, server_log).unwrap();
        Self {
            addr,
            log,
            _server: server,
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

/// A loopback listener on an ephemeral port whose UDP twin is free too, so the server's iperf3
/// UDP door (the same port number) opens: another test's UDP socket may hold the number the
/// TCP listener drew (at most 20 draws).
fn listener_with_its_udp_port_free() -> std::net::TcpListener {
    for _ in 0..20 {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return tcp;
        }
    }
    panic!("no loopback port free for both TCP and UDP in 20 draws")
}

/// A short test spec.
pub fn spec(direction: Direction, streams: u16, duration_ms: u64) -> TestSpec {
    let stream = StreamParams {
        write_len_bytes: 128 << 10,
        ..StreamParams::new(direction)
    };
    let params = Params::TcpStream {
        stream,
        tcp: TcpOptions::default(),
    };
    TestSpec {
        interval_ms: 250,
        ..TestSpec::new(params, streams, duration_ms)
    }
}

pub fn config(addr: SocketAddr, spec: TestSpec) -> ClientConfig {
    ClientConfig {
        target: Target::Tcp { addr, bind: None },
        target_label: addr.to_string(),
        spec,
        interrupt: Signal::new(),
        connect_timeout: Duration::from_secs(2),
        drain_timeout: Duration::from_secs(5),
        key: None,
        relay: None,
        interval_grid: None,
    }
}

pub fn run(addr: SocketAddr, spec: TestSpec) -> Result<RunRecord, ClientError> {
    client::run(&config(addr, spec), &mut Silent)
}

/// The linerate binary.
pub fn linerate() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_linerate"));
    c.env("LINERATE_DB", test_db());
    // Lines whole, as a pipe gets them: a $COLUMNS the tests inherit would fold them.
    c.env_remove("COLUMNS");
    c
}

/// `linerate ARGS --db DB`: (exit code, stdout, stderr).
pub fn linerate_at(db: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = linerate()
        .args(args)
        .args(["--db", &db.display().to_string()])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The results database every run of this test process stores into (never the user's): under
/// `target/tmp`, so `cargo clean` takes the databases of earlier test processes with it.
pub fn test_db() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("linerate-tests-{}.sqlite", std::process::id()))
}

/// Whether this process can make network namespaces; when it cannot, reports the running test
/// as skipped with the reason ([`crate::skip::skip`]), so call it first and return on `false`.
pub fn can_use_netns() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("needs root to create network namespaces");
        return false;
    }
    let runs = |tool: &str| {
        Command::new(tool)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let ok = runs("ip") && runs("tc");
    if !ok {
        skip("`ip` and `tc` (iproute2) are not installed");
    }
    ok
}

/// Waits (at most 10 s) until a TCP socket listens on `port`, as `ss` run after `prefix` (e.g.
/// `ip netns exec NS `) sees it: a server process on a busy machine may take a while to start.
pub fn wait_listening(prefix: &str, port: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let needle = format!(":{port}");
    while !sh(&format!("{prefix}ss -Htln 'sport = :{port}'")).contains(&needle) {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on port {port} after 10 s ({prefix})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// UDP datagrams namespace `ns` dropped for a full socket receive buffer so far
/// (`RcvbufErrors` in its /proc/net/snmp): a receiver that falls behind on a busy machine loses
/// these on top of what a rule or qdisc drops.
pub fn udp_rcvbuf_errors(ns: &str) -> u64 {
    snmp(ns, "Udp", "RcvbufErrors")
}

/// A counter of device `dev` in namespace `ns` from sysfs, e.g. `tx_dropped`.
pub fn dev_stat(ns: &str, dev: &str, name: &str) -> u64 {
    sh(&format!(
        "ip netns exec {ns} cat /sys/class/net/{dev}/statistics/{name}"
    ))
    .trim()
    .parse()
    .unwrap()
}

/// One counter of namespace `ns`'s /proc/net/snmp, e.g. `snmp(ns, "Tcp", "PassiveOpens")`.
pub fn snmp(ns: &str, protocol: &str, name: &str) -> u64 {
    let text = sh(&format!("ip netns exec {ns} cat /proc/net/snmp"));
    let prefix = format!("{protocol}: ");
    let mut rows = text.lines().filter(|l| l.starts_with(&prefix));
    let (names, values) = (rows.next().unwrap(), rows.next().unwrap());
    let at = names.split_whitespace().position(|n| n == name).unwrap();
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

/// Packets the root qdisc of `dev` in namespace `ns` passed and dropped so far, from `tc -s`
/// ("Sent B bytes P pkt (dropped D, ...)").
pub fn qdisc_packets(ns: &str, dev: &str) -> (u64, u64) {
    let stats = sh(&format!("ip netns exec {ns} tc -s qdisc show dev {dev}"));
    let passed = stats
        .split(" pkt")
        .next()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no packet counter in {stats}"));
    let dropped = stats
        .split("dropped ")
        .nth(1)
        .and_then(|t| t.split([',', ' ', ')']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop counter in {stats}"));
    (passed, dropped)
}

/// Packets the rule of [`nft_drop_data`] dropped in `ns` so far.
pub fn nft_drop_counter(ns: &str) -> u64 {
    let text = sh(&format!(
        "ip netns exec {ns} nft list chain inet lrtest input"
    ));
    let at = text.find("counter packets ").expect("counter in rule");
    text[at + 16..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Drops N % of linerate data datagrams (flags byte 0: not probes, not FINs) arriving in `ns`.
pub fn nft_drop_data(ns: &str, percent: u32) {
    sh(&format!(
        "ip netns exec {ns} nft 'add table inet lrtest; \
         add chain inet lrtest input {{ type filter hook input priority 0; }}; \
         add rule inet lrtest input udp dport != 5301 @th,80,8 0 numgen random mod 100 < {percent} counter drop'"
    ));
}

pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two network namespaces joined by a veth pair: `a` 198.18.0.1/24, `b` 198.18.0.2/24.
/// UDP segmentation offload is off on both ends, as on a NIC without it: UDP GSO batches are
/// segmented in software before the "wire", so nft and tbf count one packet per datagram.
/// Removed when dropped.
pub struct VethPair {
    pub a: String,
    pub b: String,
    /// [`VethPair::bridged`]: the namespace between them.
    pub mid: Option<String>,
}

impl VethPair {
    pub fn new(tag: &str) -> Self {
        let id = std::process::id() % 100_000;
        let pair = Self {
            a: format!("lr{tag}a{id}"),
            b: format!("lr{tag}b{id}"),
            mid: None,
        };
        let (a, b) = (&pair.a, &pair.b);
        sh(&format!(
            "ip netns add {a} && ip netns add {b} && \
             ip link add va netns {a} type veth peer name vb netns {b} && \
             ip -n {a} addr add 198.18.0.1/24 dev va && ip -n {b} addr add 198.18.0.2/24 dev vb && \
             ip -n {a} link set va up && ip -n {b} link set vb up && \
             ip -n {a} link set lo up && ip -n {b} link set lo up && \
             ip netns exec {a} ethtool -K va tx-udp-segmentation off && \
             ip netns exec {b} ethtool -K vb tx-udp-segmentation off"
        ));
        pair
    }

    /// Shapes egress of `ns`'s veth end with tbf at `rate` (tc syntax, e.g. `100mbit`).
    /// The 256 KiB bucket lets tbf's dequeue timer run ~20 ms late (steal time on a busy VM)
    /// without losing tokens, which would push the link below its rate; its initial burst adds
    /// at most 256 KiB over a test, under 1.5 % of a 3 s run at 50 Mbit/s.
    pub fn shape(&self, ns: &str, dev: &str, rate: &str) {
        self.tbf(ns, dev, rate, "256kb");
    }

    /// [`VethPair::shape`] with a bucket that holds `hold` of tokens at `rate`
    /// ([`tbf_bucket_bytes`]): a sender or receiver held off the cores, or tbf's own timer
    /// late, for up to `hold` catches up on the tokens saved meanwhile.
    pub fn shape_with_bucket(&self, ns: &str, dev: &str, rate: &str, hold: Duration) {
        self.tbf(ns, dev, rate, &tbf_bucket_bytes(rate, hold).to_string());
    }

    fn tbf(&self, ns: &str, dev: &str, rate: &str, burst: &str) {
        sh(&format!(
            "ip netns exec {ns} tc qdisc replace dev {dev} root tbf rate {rate} burst {burst} latency 100ms"
        ));
    }
}

/// The bytes of a tbf bucket that holds `hold` of tokens at `rate` (tc syntax, `100mbit` or
/// `1gbit`).
pub fn tbf_bucket_bytes(rate: &str, hold: Duration) -> u64 {
    let (digits, unit) = rate.split_at(rate.find(|c: char| !c.is_ascii_digit()).unwrap());
    let scale = match unit {
        "mbit" => 1e6,
        "gbit" => 1e9,
        other => panic!("tbf rate unit {other}: give mbit or gbit"),
    };
    (digits.parse::<f64>().unwrap() * scale / 8.0 * hold.as_secs_f64()) as u64
}

impl VethPair {
    /// Starts `linerate serve` in namespace `b` on 198.18.0.2; killed when the guard drops.
    pub fn serve(&self) -> ServerProcess {
        self.serve_with(&[])
    }

    /// [`VethPair::serve`] with more flags.
    pub fn serve_with(&self, extra: &[&str]) -> ServerProcess {
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.b,
                env!("CARGO_BIN_EXE_linerate"),
                "serve",
                "--bind",
                "198.18.0.2",
            ])
            .args(extra)
            .env("LINERATE_DB", test_db())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_listening(&format!("ip netns exec {} ", self.b), 5301);
        ServerProcess(child)
    }

    /// Runs `linerate ARGS` in namespace `a`.
    pub fn client(&self, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.a, env!("CARGO_BIN_EXE_linerate")])
            .env("LINERATE_DB", test_db())
            .args(args)
            .output()
            .unwrap()
    }

    /// Runs `linerate ARGS 198.18.0.2 --json` in namespace `a` against the server in `b`.
    pub fn client_json(&self, args: &[&str]) -> serde_json::Value {
        let all: Vec<&str> = args
            .iter()
            .copied()
            .chain(["198.18.0.2", "--json"])
            .collect();
        let out = self.client(&all);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// A server process, killed when dropped.
pub struct ServerProcess(pub std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.a]).status();
        let _ = Command::new("ip").args(["netns", "del", &self.b]).status();
        if let Some(mid) = &self.mid {
            let _ = Command::new("ip").args(["netns", "del", mid]).status();
        }
    }
}

impl VethPair {
    /// `a` (198.18.0.1, device `va`) and `b` (198.18.0.2, `vb`) each joined by a veth to a
    /// third namespace `mid`, whose ports are `ma` (towards `a`) and `mb` (towards `b`), up and
    /// without addresses: what joins the ports is the caller's ([`VethPair::bridged`], a
    /// delay line).
    pub fn through_middle(tag: &str) -> Self {
        let id = std::process::id() % 100_000;
        let pair = Self {
            a: format!("lr{tag}a{id}"),
            b: format!("lr{tag}b{id}"),
            mid: Some(format!("lr{tag}m{id}")),
        };
        let (a, b, m) = (&pair.a, &pair.b, pair.mid.as_deref().unwrap_or_default());
        sh(&format!(
            "ip netns add {a} && ip netns add {b} && ip netns add {m} && \
             ip link add va netns {a} type veth peer name ma netns {m} && \
             ip link add vb netns {b} type veth peer name mb netns {m} && \
             ip -n {a} addr add 198.18.0.1/24 dev va && ip -n {b} addr add 198.18.0.2/24 dev vb && \
             ip -n {m} link set dev ma up && ip -n {m} link set dev mb up && \
             ip -n {a} link set va up && ip -n {b} link set vb up && \
             ip -n {a} link set lo up && ip -n {b} link set lo up"
        ));
        pair
    }

    /// [`VethPair::through_middle`] with the ports on a bridge: a queue shaped on a port is a
    /// hop on the path, not in the sender's own host, where TCP small queues would keep it
    /// short.
    pub fn bridged(tag: &str) -> Self {
        let pair = Self::through_middle(tag);
        let m = pair.mid.as_deref().unwrap_or_default();
        sh(&format!(
            "ip -n {m} link add br0 type bridge && \
             ip -n {m} link set dev ma master br0 && ip -n {m} link set dev mb master br0 && \
             ip -n {m} link set dev br0 up"
        ));
        pair
    }
}

/// A JSON number as f64 (panics naming the value when it is not one).
pub fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Runs `linerate ARGS`, checks that it succeeded (else panics with the arguments and its
/// stderr) and returns its stdout.
pub fn linerate_ok(args: &[&str]) -> String {
    let out = linerate().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// [`linerate_ok`], its stdout read as one JSON document.
pub fn linerate_json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&linerate_ok(args)).unwrap()
}

/// Runs `linerate ARGS` and checks it fails as bad input should: exit 2, one stderr line
/// containing `needle`.
pub fn fails_in_one_line(args: &[&str], needle: &str) {
    let out = linerate().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
}

pub fn wait_for_log(server: &TestServer, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.log_text().contains(needle) {
        assert!(
            Instant::now() < deadline,
            "log lacks '{needle}':\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
