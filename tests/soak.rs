//! Soak: 2,000 short tests of every kind, four at a time, against one `linerate serve` process:
//! none fails, and the server's threads and descriptors return to their baseline and its
//! resident memory returns within 4 MiB of its idle size (the figures are printed).

use super::*;
use crate::proc::{back_to_baseline, fds, rss_kib, serve_child, threads};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use wire::spec::{Params, StreamParams, TcpOptions, TestKind, UdpParams, UdpRate};

const TESTS: usize = 2000;
const AT_ONCE: usize = 4;
/// Tests after which the allocator's arenas for concurrent sessions are in place: resident
/// memory is compared from here on.
const WARM: usize = 250;

/// Test `n` of the soak: every kind and direction in turn, 1 or 2 streams, 40 ms.
fn nth_spec(n: usize) -> wire::TestSpec {
    let direction = [Direction::Send, Direction::Reverse, Direction::Bidir][n % 3];
    let params = match n % 6 {
        0 | 1 => Params::TcpStream {
            stream: StreamParams {
                write_len_bytes: 64 << 10,
                ..StreamParams::new(direction)
            },
            tcp: TcpOptions::default(),
        },
        2 => Params::UdpStream {
            udp: UdpParams {
                rate: UdpRate::BitsPerSec(20_000_000),
                ..UdpParams::new(direction)
            },
        },
        3 => Params::defaults(TestKind::TcpRr),
        4 => Params::defaults(TestKind::UdpRr),
        _ => Params::defaults(TestKind::TcpCrr),
    };
    wire::TestSpec {
        interval_ms: 50,
        ..wire::TestSpec::new(params, 1 + (n % 2) as u16, 40)
    }
}

/// Alone (scripts/test.sh runs `quiet::` tests one at a time): this load would disturb the
/// accuracy tests beside it.
mod quiet {
    use super::*;

    #[test]
    fn two_thousand_short_tests_leave_the_server_as_they_found_it() {
        let (server, port) = serve_child(&[]);
        let pid = server.0.id();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        // A round of every kind first, so the baseline includes what the first tests allocate
        // for good; then the server idle again (its accepting thread alone).
        for n in 0..6 {
            run(addr, nth_spec(n)).unwrap();
        }
        let idle = back_to_baseline(pid, (1, fds(pid).min(6)), Duration::from_secs(10));
        let base = (threads(pid), fds(pid));
        assert_eq!(base.0, 1, "idle server: one thread ({idle:?})");
        let base_rss = rss_kib(pid);
        let next = AtomicUsize::new(0);
        let warm_rss = AtomicU64::new(0);
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..AT_ONCE {
                scope.spawn(|| loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= TESTS {
                        return;
                    }
                    if n == WARM {
                        warm_rss.store(rss_kib(pid), Ordering::Relaxed);
                    }
                    let spec = nth_spec(n);
                    let kind = spec.kind();
                    if let Err(e) = run(addr, spec) {
                        panic!("soak test {n} ({}): {e}", kind.as_str());
                    }
                });
            }
        });
        let took = started.elapsed();
        let after = back_to_baseline(pid, base, Duration::from_secs(15));
        let rss = rss_kib(pid);
        let warm = warm_rss.load(Ordering::Relaxed);
        println!(
            "soak: {TESTS} tests ({AT_ONCE} at a time) in {took:.1?}; server threads/fds {base:?} -> \
             {after:?}; resident memory {base_rss} KiB idle, {warm} KiB after {WARM} tests, {rss} KiB \
             after {TESTS}"
        );
        assert_eq!(after, base, "threads and descriptors back at the baseline");
        // The allocator's thresholds are fixed and the last test to end hands free memory back
        // (`engine::sys_io`), so the idle server is near its idle size again, however many
        // arenas its busiest moment used.
        assert!(
            rss < base_rss + 4 * 1024,
            "resident memory of the idle server grew from {base_rss} KiB to {rss} KiB after \
             {TESTS} tests"
        );
    }
}
