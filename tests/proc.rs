//! A `linerate serve` process on loopback and what /proc says about it: threads, open
//! descriptors, resident memory, for the tests that check a server returns to its baseline.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::{linerate, ServerProcess};

/// A `linerate serve --bind 127.0.0.1` process with `args` on the port the kernel hands it
/// (`-p 0`, read from its first log line: a port picked free beforehand can be taken by another
/// test's server before this one binds it), its log kept in [`serve_log`]'s file.
pub fn serve_child(args: &[&str]) -> (ServerProcess, u16) {
    serve_child_at("127.0.0.1", args)
}

/// [`serve_child`] bound to `bind` (`::` for both families).
pub fn serve_child_at(bind: &str, args: &[&str]) -> (ServerProcess, u16) {
    let mut child = linerate()
        .args(["serve", "--bind", bind, "-p", "0"])
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = std::io::BufReader::new(child.stderr.take().unwrap());
    let server = ServerProcess(child);
    // Its lines up to `listening on 127.0.0.1:PORT`, or all of them if it ended first (its
    // exit ends the read).
    let mut head = String::new();
    let port = loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut log, &mut line).unwrap() == 0 {
            panic!("the server ended before it listened: {head}");
        }
        head.push_str(&line);
        let listening = (line.split_whitespace())
            .skip_while(|&w| w != "on")
            .find_map(|w| w.trim_end_matches([',', ';']).parse::<SocketAddr>().ok())
            .map(|a| a.port());
        if let Some(port) = listening {
            break port;
        }
    };
    let mut file = std::fs::File::create(log_path(port)).unwrap();
    std::io::Write::write_all(&mut file, head.as_bytes()).unwrap();
    // The rest of the log, copied as it comes, so the server never waits on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut log, &mut file));
    (server, port)
}

fn log_path(port: u16) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("serve-{port}.log"))
}

/// What the [`serve_child`] on `port` has logged so far.
pub fn serve_log(port: u16) -> String {
    std::fs::read_to_string(log_path(port)).unwrap_or_default()
}

/// A field of `/proc/PID/status` as a number (`Threads`, `VmRSS` in kB).
fn status_field(pid: u32, name: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
}

/// The threads of process `pid`.
pub fn threads(pid: u32) -> usize {
    status_field(pid, "Threads") as usize
}

/// The open descriptors of process `pid`.
pub fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// The resident memory of process `pid`, KiB.
pub fn rss_kib(pid: u32) -> u64 {
    status_field(pid, "VmRSS")
}

/// Waits (at most `within`) until `pid` has `base` threads and descriptors again; returns the
/// last figures seen.
pub fn back_to_baseline(pid: u32, base: (usize, usize), within: Duration) -> (usize, usize) {
    let deadline = Instant::now() + within;
    loop {
        let now = (threads(pid), fds(pid));
        if now == base || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The highest figure `sample` reads for a process while a test loads it, sampled on a thread
/// of its own every `every` (zero: back to back, for short-lived threads) for at most `limit`.
pub struct PeakSampler {
    peak: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl PeakSampler {
    /// Starts sampling `pid`, the peak starting at `base`.
    pub fn start(
        pid: u32,
        base: u64,
        sample: fn(u32) -> u64,
        every: Duration,
        limit: Duration,
    ) -> Self {
        let peak = Arc::new(AtomicU64::new(base));
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
            std::thread::spawn(move || {
                let until = Instant::now() + limit;
                while !done.load(Ordering::Relaxed) && Instant::now() < until {
                    peak.fetch_max(sample(pid), Ordering::Relaxed);
                    if !every.is_zero() {
                        std::thread::sleep(every);
                    }
                }
            })
        };
        Self { peak, done, thread }
    }

    /// Stops sampling; the highest figure seen.
    pub fn stop(self) -> u64 {
        self.done.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        self.peak.load(Ordering::Relaxed)
    }
}
