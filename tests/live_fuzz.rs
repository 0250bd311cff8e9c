//! A live server under fuzzing: for 20 s, hostile clients (from other loopback addresses) send
//! mutated hellos, frames, specs and attaches while real clients run every test kind, which
//! must all pass; afterwards the server's threads and descriptors are back at their baseline.

use super::*;
use crate::proc::{back_to_baseline, fds, serve_child, threads};
use socket2::{Domain, Socket, Type};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const FUZZ_FOR: Duration = Duration::from_secs(20);

/// One hostile client: connects from `source`, sends an opening made from random bytes, reads
/// what comes back for a moment, and keeps up to 32 connections open at a time.
fn hostile(port: u16, source: [u8; 4], seed: u64, stop: &AtomicBool, sent: &AtomicU64) {
    let server = SocketAddr::from(([127, 0, 0, 1], port));
    let mut rng = seed | 1;
    let mut held: std::collections::VecDeque<std::net::TcpStream> = Default::default();
    let mut data = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        data.clear();
        let len = (rng % 512) as usize;
        let mut x = rng;
        data.extend((0..len).map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        }));
        let opening = wire::fuzzing::hostile_opening(&data);
        let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        sock.bind(&SocketAddr::from((source, 0)).into()).unwrap();
        if sock.connect(&server.into()).is_err() {
            continue;
        }
        let mut conn: std::net::TcpStream = sock.into();
        let _ = conn.write_all(&opening);
        sent.fetch_add(1, Ordering::Relaxed);
        if rng % 4 == 0 {
            let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
            let _ = conn.read(&mut [0u8; 4096]);
        }
        held.push_back(conn);
        if held.len() > 32 {
            held.pop_front();
        }
    }
}

/// Real clients, one kind after another, until `until`; each must pass.
fn real_clients(port: u16, until: Instant) -> usize {
    let kinds: [&[&str]; 5] = [
        &["tcp", "-t", "0.3"],
        &["tcp", "-t", "0.3", "-R", "-P", "2"],
        &["udp", "-t", "0.3", "-b", "50M"],
        &["rr", "-t", "0.3"],
        &["crr", "-t", "0.3"],
    ];
    let mut ran = 0;
    while Instant::now() < until {
        let kind = kinds[ran % kinds.len()];
        let out = linerate()
            .args(kind)
            .args(["127.0.0.1", "-p", &port.to_string(), "--no-store"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind:?} beside the fuzzers: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    ran
}

/// Alone (scripts/test.sh runs `quiet::` tests one at a time): this load would disturb the
/// accuracy tests beside it.
mod quiet {
    use super::*;

    #[test]
    fn a_fuzzed_server_serves_real_clients_and_returns_to_its_baseline() {
        let (server, port) =
            serve_child(&["--max-sessions", "64", "--max-sessions-per-address", "8"]);
        let pid = server.0.id();
        let base = (threads(pid), fds(pid));
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let fuzzers: Vec<_> = (2..6u8)
            .map(|n| {
                let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
                std::thread::spawn(move || {
                    hostile(port, [127, 0, 0, n], u64::from(n) * 0x9e37, &stop, &sent)
                })
            })
            .collect();
        let ran = real_clients(port, Instant::now() + FUZZ_FOR);
        stop.store(true, Ordering::Relaxed);
        for f in fuzzers {
            f.join().unwrap();
        }
        let during = (threads(pid), fds(pid));
        // Sessions the fuzzers started end within the setup timeout (5 s), handshakes within 10 s.
        let after = back_to_baseline(pid, base, Duration::from_secs(20));
        println!(
            "live fuzz: {} hostile openings, {ran} real tests passed; threads/fds: baseline {base:?}, \
             at the end {during:?}, after {after:?}",
            sent.load(Ordering::Relaxed)
        );
        assert!(ran >= 10, "only {ran} real tests in {FUZZ_FOR:?}");
        assert_eq!(after, base, "threads and descriptors back at the baseline");
    }
}
