//! Hostile clients against `serve --metrics` (SECURITY.md, the metrics endpoint): clients that
//! trickle a request they never finish are closed at the endpoint's whole-connection deadline
//! however often they send, a flood of them past the endpoint's slots does not keep a real
//! scrape waiting, and the server's threads and descriptors stay bounded and come back.

use super::*;
use crate::proc::{back_to_baseline, fds, serve_child, threads};
use ui::metrics::{DEADLINE, MAX_SCRAPES};

/// One scrape of `addr` as Prometheus asks for it: the whole answer and how long it took.
fn scrape(addr: &str) -> (String, Duration) {
    let began = Instant::now();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    write!(
        conn,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    (text, began.elapsed())
}

/// Hostile scrapers, `n` connections to `addr` that each send `GET /met`, then one more byte
/// every `every`, never finishing their request, all driven by one thread (nonblocking) for
/// at most `limit`; the thread returns how long the endpoint kept each open (`None`: still
/// open at `limit`), and panics if one gets an answer.
fn tricklers(
    addr: &str,
    n: usize,
    every: Duration,
    limit: Duration,
) -> std::thread::JoinHandle<Vec<Option<Duration>>> {
    let began = Instant::now();
    let mut conns: Vec<(TcpStream, Option<Duration>)> = (0..n)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"GET /met").unwrap();
            c.set_nonblocking(true).unwrap();
            (c, None)
        })
        .collect();
    std::thread::spawn(move || {
        let mut next_byte = began + every;
        while began.elapsed() < limit && conns.iter().any(|(_, closed)| closed.is_none()) {
            let send = Instant::now() >= next_byte;
            if send {
                next_byte += every;
            }
            for (conn, closed) in conns.iter_mut().filter(|(_, c)| c.is_none()) {
                let mut buf = [0u8; 64];
                let gone = match conn.read(&mut buf) {
                    Ok(0) => true,
                    Ok(_) => panic!("a request never finished got an answer"),
                    Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                };
                if gone || (send && conn.write_all(b"r").is_err()) {
                    *closed = Some(began.elapsed());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        conns.into_iter().map(|(_, closed)| closed).collect()
    })
}

#[test]
fn ten_tricklers_do_not_delay_a_real_scrape_and_are_closed_at_their_deadline() {
    let shutdown = engine::Signal::new();
    let metrics = std::sync::Arc::new(session::server::ServerMetrics::default());
    let addr = ui::metrics::start(
        "127.0.0.1:0".parse().unwrap(),
        move |accept| metrics.page(accept),
        shutdown.clone(),
    )
    .unwrap()
    .to_string();
    let limit = DEADLINE + Duration::from_secs(3);
    let flood = tricklers(&addr, 10, Duration::from_millis(300), limit);
    std::thread::sleep(Duration::from_millis(200));
    let (text, took) = scrape(&addr);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(took < Duration::from_secs(1), "the scrape took {took:?}");
    for open in flood.join().unwrap() {
        // The whole connection's deadline, not one per read: closed at 5 s however often a
        // byte comes.
        let open = open.unwrap_or_else(|| panic!("a trickler was open after {limit:?}"));
        assert!(
            open >= DEADLINE - Duration::from_millis(200)
                && open < DEADLINE + Duration::from_secs(1),
            "a trickler stayed open {open:?}"
        );
    }
    shutdown.raise();
}

#[test]
fn two_hundred_tricklers_do_not_keep_a_real_scrape_waiting_and_the_servers_threads_and_descriptors_come_back(
) {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    drop(held);
    let (server, _port) = serve_child(&["--no-store", "--metrics", &addr]);
    let mport = addr.rsplit(':').next().unwrap().parse().unwrap();
    wait_listening("", mport);
    let pid = server.0.id();
    assert!(scrape(&addr).0.starts_with("HTTP/1.1 200"));
    std::thread::sleep(Duration::from_millis(200));
    let base = (threads(pid), fds(pid));
    let limit = DEADLINE + Duration::from_secs(3);
    let flood = tricklers(&addr, 200, Duration::from_secs(1), limit);
    std::thread::sleep(Duration::from_millis(300));
    // No thread per connection, and at most the slots' descriptors (and the one accepted
    // connection waiting for a slot).
    let during = (threads(pid), fds(pid));
    assert_eq!(
        during.0, base.0,
        "threads during the flood (before: {base:?})"
    );
    assert!(
        during.1 <= base.1 + MAX_SCRAPES + 1,
        "{} descriptors during the flood, {} before",
        during.1,
        base.1
    );
    let (text, took) = scrape(&addr);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(took < Duration::from_secs(1), "the scrape took {took:?}");
    let open = flood.join().unwrap();
    let held_longest = open.iter().flatten().max().copied();
    for o in &open {
        let o = o.unwrap_or_else(|| panic!("a trickler was open after {limit:?}"));
        assert!(
            o < DEADLINE + Duration::from_secs(1),
            "a trickler stayed open {o:?}"
        );
    }
    eprintln!(
        "200 tricklers: the scrape took {took:?}; fds {} -> {} during; the longest held {held_longest:?}",
        base.1, during.1
    );
    let after = back_to_baseline(pid, base, Duration::from_secs(2));
    assert_eq!(after, base, "threads and descriptors after the flood");
}
