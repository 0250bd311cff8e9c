//! `linerate rpm`'s goodput against the veth's own counters (issue 47): each interval's reading
//! is the bytes the load connections read in that second of the direction's grid, the stored
//! goodput the bytes read in its window over the window's length, and `show` says so. Before
//! the grid, the first reading was a false 0 and the stored goodput 0.71x the bytes over the
//! window.
//!
//! The ground truth is the receiving veth's rx counters, read every 10 ms from
//! /proc/PID/net/dev of a process in its namespace: payload = bytes − packets × 66 (Ethernet
//! 14 + IPv4 20 + TCP with timestamps 32), right whether a packet is one segment or a GSO
//! train (its headers count once either way). A tbf on each sending end keeps the rate steady,
//! so a few milliseconds' misalignment between the two clocks costs well under 1 %; up's is
//! halved after its second second, so a reading a second late would be off by half.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use measure::units::format_bits_per_sec as bps;
use serde_json::Value;

use super::*;

/// Each packet's headers on this veth: Ethernet, IPv4, TCP with timestamps.
const HEADERS: u64 = 14 + 20 + 32;

/// Payload bytes device `dev` received so far, as the namespace of process `pid` sees it.
fn payload(pid: u32, dev: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/dev")).ok()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{dev}:")))?;
    let mut v = line.split(':').nth(1)?.split_whitespace();
    let bytes: u64 = v.next()?.parse().ok()?;
    let packets: u64 = v.next()?.parse().ok()?;
    Some(bytes.saturating_sub(packets * HEADERS))
}

/// A receiving interface's payload count over time.
struct Samples(Vec<(Instant, u64)>);

impl Samples {
    /// The count at `t`, interpolated between the samples around it.
    fn at(&self, t: Instant) -> f64 {
        let after = self.0.partition_point(|(s, _)| *s <= t);
        let i = after.clamp(1, self.0.len() - 1);
        let ((t0, b0), (t1, b1)) = (self.0[i - 1], self.0[i]);
        let span = t1.duration_since(t0).as_secs_f64();
        let into = t.saturating_duration_since(t0).as_secs_f64().min(span);
        b0 as f64 + (b1 - b0) as f64 * into / span.max(1e-9)
    }

    /// Bits a second received between `from` and `to`.
    fn bps(&self, from: Instant, to: Instant) -> f64 {
        (self.at(to) - self.at(from)) * 8.0 / to.duration_since(from).as_secs_f64()
    }
}

/// Samples `dev`'s payload in `pid`'s namespace every 10 ms until `stop` (at most 60 s).
fn sample(pid: u32, dev: &'static str, stop: Arc<AtomicBool>) -> thread::JoinHandle<Samples> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let until = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            if let Some(b) = payload(pid, dev) {
                v.push((Instant::now(), b));
            }
            thread::sleep(Duration::from_millis(10));
        }
        Samples(v)
    })
}

/// The direction's start on this process's clock: each tick closes at its grid point (its
/// end, `t_s` after the start) or a little after, so the earliest of arrival − `t_s`.
fn start_of(ticks: &[(Instant, f64)]) -> Instant {
    (ticks.iter())
        .map(|(at, t_s)| *at - Duration::from_secs_f64(*t_s))
        .min()
        .unwrap()
}

/// Checks one direction's readings and stored goodput against the receiving veth.
fn check(way: &str, d: &Value, ticks: &[(Instant, f64)], veth: &Samples) {
    let t0 = start_of(ticks);
    let secs = |s: f64| t0 + Duration::from_secs_f64(s);
    let timeline = d["timeline"].as_array().unwrap();
    assert!(timeline.len() >= 3, "{way}: {d}");
    for t in timeline {
        let (end, reading) = (num(&t["t_s"]), num(&t["goodput_bps"]));
        let counted = veth.bps(secs(end - 1.0), secs(end));
        let off = reading / counted - 1.0;
        eprintln!(
            "{way} {end:.0} s: {:.2} Mbit/s read, {:.2} counted ({:+.2} %)",
            reading / 1e6,
            counted / 1e6,
            off * 100.0
        );
        assert!(
            off.abs() <= 0.05,
            "{way} second {end}: {reading} against {counted}"
        );
        let bytes = t["received_bytes"].as_u64().unwrap();
        assert_eq!(reading, bytes as f64 * 8.0, "{way}: bytes over 1 s");
    }
    // The stored goodput: the bytes read in the window over its length, and the veth's.
    let (goodput, window) = (num(&d["goodput_bps"]), num(&d["window_s"]));
    let bytes = d["received_bytes"].as_u64().unwrap() as f64;
    assert!((goodput - bytes * 8.0 / window).abs() < 1.0, "{way}: {d}");
    let end = num(&timeline.last().unwrap()["t_s"]);
    let counted = veth.bps(secs(end - window), secs(end));
    eprintln!(
        "{way}: goodput {:.2} Mbit/s over {window} s, counted {:.2} ({:+.2} %)",
        goodput / 1e6,
        counted / 1e6,
        (goodput / counted - 1.0) * 100.0
    );
    assert!((goodput / counted - 1.0).abs() <= 0.02, "{way}: {d}");
}

#[test]
fn each_second_and_the_stored_goodput_are_the_bytes_the_veth_carried() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("rpg");
    // A short queue (20 ms at most behind the bucket): data that waits on a lost segment's
    // retransmission is read a round trip after it crossed the veth, so a deep queue would
    // move bytes from one second into the next (3 % was seen with tbf's 100 ms).
    let shape = |ns: &str, dev: &str, rate: &str| {
        sh(&format!(
            "ip netns exec {ns} tc qdisc replace dev {dev} root tbf rate {rate} burst 256kb latency 20ms"
        ))
    };
    shape(&pair.a, "va", "300mbit");
    shape(&pair.b, "vb", "300mbit");
    let server = pair.serve();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rpm.sqlite").display().to_string();
    let mut client = Command::new("ip")
        .args(["netns", "exec", &pair.a, env!("CARGO_BIN_EXE_linerate")])
        .args(["rpm", "198.18.0.2", "-t", "14", "-P", "4", "--json-stream"])
        .args(["--db", &db])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Up is received in b (the server's namespace), down in a (the client's).
    let up = sample(server.0.id(), "vb", stop.clone());
    let down = sample(client.id(), "va", stop.clone());
    let (mut ticks, mut doc) = (Vec::new(), Value::Null);
    for line in BufReader::new(client.stdout.take().unwrap()).lines() {
        let e: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match e["event"].as_str() {
            Some("tick") => {
                let (way, t_s) = (e["direction"].as_str().unwrap(), num(&e["data"]["t_s"]));
                ticks.push((Instant::now(), way.to_string(), t_s));
                // Up's rate halves in its third second: a reading a second late would be
                // off by half in the seconds after.
                if (way, t_s) == ("up", 2.0) {
                    shape(&pair.a, "va", "150mbit");
                }
            }
            Some("end") => doc = e["data"].clone(),
            _ => {}
        }
    }
    assert!(client.wait().unwrap().success());
    stop.store(true, Ordering::Relaxed);
    let (up, down) = (up.join().unwrap(), down.join().unwrap());
    let of = |way: &str| -> Vec<(Instant, f64)> {
        (ticks.iter())
            .filter(|(_, w, _)| w == way)
            .map(|(at, _, t)| (*at, *t))
            .collect()
    };
    let ds = doc["directions"].as_array().unwrap();
    check("up", &ds[0], &of("up"), &up);
    let up_seconds: Vec<f64> = (ds[0]["timeline"].as_array().unwrap().iter())
        .map(|t| num(&t["goodput_bps"]))
        .collect();
    assert!(
        up_seconds[up_seconds.len() - 1] < up_seconds[0] * 0.6,
        "the halved rate is in the readings: {up_seconds:?}"
    );
    check("down", &ds[1], &of("down"), &down);
    // Stored and shown as measured: the record's goodput is the direction's, its bytes those
    // over the window, and `show` says what each rate is over.
    for (i, d) in ds.iter().enumerate() {
        let id = doc["run_ids"][i].as_u64().unwrap().to_string();
        let out = pair.client(&["show", &id, "--json", "--db", &db]);
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = &shown["record"];
        let f = &r["summary"]["flows"][0];
        assert_eq!(num(&r["summary"]["throughput_bps"]), num(&d["goodput_bps"]));
        assert_eq!(f["bytes_received"], d["received_bytes"]);
        assert_eq!(f["window_s"], d["window_s"]);
        let out = pair.client(&["show", &id, "--db", &db]);
        let text = String::from_utf8(out.stdout).unwrap();
        let received = text.lines().find(|l| l.contains("  received ")).unwrap();
        let goodput = format!(
            "{} goodput over the same window",
            bps(num(&d["goodput_bps"]))
        );
        assert!(received.contains(&goodput), "{received}\n{text}");
        assert!(text.contains("over the goodput's"), "{text}");
        assert!(!text.contains("not kept by the sender's kernel"), "{text}");
    }
}
