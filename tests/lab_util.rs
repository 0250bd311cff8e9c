//! A lab of namespace "hosts" on one bridge (198.18.1.0/24): host i at 198.18.1.i with its
//! egress shaped by tbf, each running `linerate serve --relay`, and a controller namespace at
//! 198.18.1.100 that only asks and collects. Removed (servers killed, namespaces deleted) when
//! dropped.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::util::{sh, tbf_bucket_bytes, wait_listening, ServerProcess};

/// Full-sized TCP segments' goodput through a tbf rate: 1448 B of each 1514-byte frame.
pub fn tbf_goodput_bps(rate_bps: f64) -> f64 {
    rate_bps * 1448.0 / 1514.0
}

/// What each host's tbf bucket holds: 80 ms of tokens at its rate. tbf's timer firing late
/// (steal time on a VM) or a receiver held off the cores for up to 80 ms loses none of them, so
/// a run through it is the shaped rate however the host is loaded; a sender held off is covered
/// by the 100 ms queue in front. The bucket is full when a test starts and may be left unspent
/// at its end: at most 80 ms of the rate, 2.7 % of a 3 s test either way.
pub const BUCKET_HOLDS: Duration = Duration::from_millis(80);

pub struct Lab {
    /// The controller's namespace.
    pub ctrl: String,
    /// Each host's namespace, host i (from 1) at index i - 1.
    pub hosts: Vec<String>,
    bridge: String,
    /// Each host's server, `None` once stopped.
    servers: Vec<Option<ServerProcess>>,
}

impl Lab {
    /// `rates.len()` hosts, host i's egress shaped to `rates[i - 1]` (tc syntax, `100mbit`).
    pub fn new(tag: &str, rates: &[&str]) -> Self {
        let id = std::process::id() % 100_000;
        let name = |what: String| format!("lr{tag}{what}{id}");
        let mut lab = Self {
            ctrl: name("c".into()),
            hosts: (1..=rates.len()).map(|i| name(format!("h{i}"))).collect(),
            bridge: name("br".into()),
            servers: Vec::new(),
        };
        let br = &lab.bridge;
        sh(&format!(
            "ip netns add {br} && ip -n {br} link add br0 type bridge && \
             ip -n {br} link set br0 up && ip -n {br} link set lo up"
        ));
        let mut members: Vec<(String, u32)> = lab.hosts.iter().cloned().zip(1..).collect();
        members.push((lab.ctrl.clone(), 100));
        for (ns, i) in &members {
            sh(&format!(
                "ip netns add {ns} && \
                 ip link add eth0 netns {ns} type veth peer name p{i} netns {br} && \
                 ip -n {br} link set p{i} master br0 && ip -n {br} link set p{i} up && \
                 ip -n {ns} addr add 198.18.1.{i}/24 dev eth0 && \
                 ip -n {ns} link set eth0 up && ip -n {ns} link set lo up"
            ));
        }
        for (ns, rate) in lab.hosts.iter().zip(rates) {
            let burst = tbf_bucket_bytes(rate, BUCKET_HOLDS);
            sh(&format!(
                "ip netns exec {ns} tc qdisc replace dev eth0 root tbf rate {rate} \
                 burst {burst} latency 100ms"
            ));
        }
        for i in 1..=rates.len() {
            let server = lab.serve(i);
            lab.servers.push(Some(server));
        }
        lab
    }

    /// Host i's address.
    pub fn addr(i: usize) -> String {
        format!("198.18.1.{i}")
    }

    fn serve(&self, i: usize) -> ServerProcess {
        let ns = &self.hosts[i - 1];
        let child = Command::new("ip")
            .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_linerate"), "serve"])
            .args(["--relay", "--no-store", "--bind", &Self::addr(i)])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_listening(&format!("ip netns exec {ns} "), 5301);
        ServerProcess(child)
    }

    /// Stops host i's server (the host stays up: connections to it are refused).
    pub fn stop(&mut self, i: usize) {
        self.servers[i - 1] = None;
    }

    /// Runs `linerate ARGS` in the controller's namespace, storing into `db`.
    pub fn control(&self, db: &str, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.ctrl, env!("CARGO_BIN_EXE_linerate")])
            .env("LINERATE_DB", db)
            .args(args)
            .output()
            .unwrap()
    }

    /// [`Lab::control`] with `--json`, which must succeed; its document.
    pub fn control_json(&self, db: &str, args: &[&str]) -> serde_json::Value {
        let all: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
        let out = self.control(db, &all);
        assert!(
            out.status.success(),
            "{all:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.servers.clear();
        for ns in self.hosts.iter().chain([&self.ctrl, &self.bridge]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
