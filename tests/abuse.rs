//! A server under abuse on loopback: ten thousand idle and trickling connections cost it no
//! threads and little memory, and a real client still gets its test within seconds.

use super::*;
use crate::proc::{rss_kib, serve_child, threads};
use std::net::SocketAddr;

/// Lets this process open `want` descriptors, as far as the hard limit allows.
fn raise_fd_limit(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit on a valid struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_cur.max(want.min(lim.rlim_max));
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        lim.rlim_cur
    }
}

#[test]
fn idle_and_trickling_connections_cost_no_threads() {
    let limit = raise_fd_limit(10_400);
    let idle_count = 10_000.min(limit.saturating_sub(200) as usize);
    let (server, port) = serve_child(&[]);
    let pid = server.0.id();
    let base = threads(pid);
    let base_rss = rss_kib(pid);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let idle: Vec<TcpStream> = (0..idle_count)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    // Trickling peers: the hello one byte at a time, then a frame that never completes.
    let mut trickling: Vec<TcpStream> = (0..20)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    let mut bytes = Hello::ours().emit().to_vec();
    bytes.extend_from_slice(&[0, 0, 0, 100, b'{']);
    for b in &bytes[..4] {
        for t in &mut trickling {
            let _ = t.write_all(&[*b]);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let during = threads(pid);
    let rss = rss_kib(pid);
    let started = Instant::now();
    let out = linerate()
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-i",
            "0",
            "--no-store",
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        took < Duration::from_secs(3),
        "a 1 s test took {took:?} beside {idle_count} idle connections"
    );
    assert!(
        during <= base + 2,
        "{idle_count} idle and 20 trickling connections grew the server from {base} to {during} threads"
    );
    println!(
        "{} idle + {} trickling connections: server threads {base} -> {during}, resident memory \
         {base_rss} -> {rss} KiB; a 1 s test beside them took {took:?}",
        idle.len(),
        trickling.len()
    );
    assert!(
        rss < base_rss + 64 * 1024,
        "{idle_count} idle connections grew the server from {base_rss} to {rss} KiB"
    );
    drop(idle);
}

#[test]
fn starts_that_never_begin_free_their_slots() {
    let server = TestServer::start(ServerConfig {
        setup_timeout: Duration::from_secs(3),
        ..ServerConfig::default()
    });
    // More starts than slots: once one is refused, every slot is held by the flood.
    let flood: Vec<TcpStream> = (0..ServerConfig::default().max_sessions + 4)
        .map(|_| {
            let mut c = TcpStream::connect(server.addr).unwrap();
            c.write_all(&Hello::ours().emit()).unwrap();
            frame::write_frame(
                &mut c,
                &ClientMsg::Start {
                    spec: spec(Direction::Send, 1, 1000),
                    auth: None,
                },
            )
            .unwrap();
            c
        })
        .collect();
    wait_for_log(&server, "server busy");
    let busy = run(server.addr, spec(Direction::Send, 1, 300));
    assert!(
        busy.as_ref()
            .is_err_and(|e| e.to_string().contains("server busy")),
        "{busy:?}\n{}",
        server.log_text()
    );
    std::thread::sleep(Duration::from_millis(3200));
    let after = run(server.addr, spec(Direction::Send, 1, 300));
    assert!(after.is_ok(), "{after:?}\n{}", server.log_text());
    assert!(server.log_text().contains("did not begin within"));
    drop(flood);
}

#[test]
fn clients_outside_the_allow_list_are_closed_before_a_byte() {
    let outside = TestServer::start(ServerConfig {
        allow: vec!["198.18.0.0/15".parse().unwrap()],
        ..ServerConfig::default()
    });
    let mut c = TcpStream::connect(outside.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut byte = [0u8; 1];
    // Closed without our hello: the peer reads end of stream (or a reset), never a byte.
    assert!(
        !matches!(c.read(&mut byte), Ok(1)),
        "an outsider got a byte"
    );
    assert!(run(outside.addr, spec(Direction::Send, 1, 300)).is_err());
    wait_for_log(&outside, "from outside --allow");
    let inside = TestServer::start(ServerConfig {
        allow: vec!["127.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()],
        ..ServerConfig::default()
    });
    assert!(run(inside.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn bad_server_limits_and_prefixes_are_one_line() {
    for (args, needle) in [
        (
            &["serve", "-p", "0", "--allow", "nonsense"][..],
            "--allow nonsense: not an address prefix",
        ),
        (
            &["serve", "-p", "0", "--allow", "10.0.0.0/33"],
            "--allow 10.0.0.0/33",
        ),
        (&["serve", "-p", "0", "--max-time", "x"], "--max-time"),
        (&["serve", "-p", "0", "--max-rate", "abc"], "--max-rate abc"),
        (
            &["serve", "-p", "0", "--max-sessions", "0"],
            "--max-sessions 0",
        ),
    ] {
        fails_in_one_line(args, needle);
    }
}

#[test]
fn a_flood_of_bad_connections_is_summed_in_the_log() {
    let server = fast_server();
    for _ in 0..200 {
        let mut c = TcpStream::connect(server.addr).unwrap();
        c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    }
    wait_for_log(
        &server,
        "dropped or refused during handshake in the last second",
    );
    let one_by_one = server
        .log_text()
        .lines()
        .filter(|l| l.contains("not a linerate endpoint"))
        .count();
    assert!(one_by_one <= 40, "{one_by_one} lines, one per connection");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn a_flood_of_attaches_to_unknown_sessions_is_summed_in_the_log() {
    let server = fast_server();
    for session in 0..200u64 {
        let mut c = TcpStream::connect(server.addr).unwrap();
        c.write_all(&Hello::ours().emit()).unwrap();
        let attach = ClientMsg::Attach {
            session,
            stream: 0,
            auth: None,
        };
        frame::write_frame(&mut c, &attach).unwrap();
    }
    wait_for_log(
        &server,
        "dropped or refused during handshake in the last second",
    );
    let one_by_one = server
        .log_text()
        .lines()
        .filter(|l| l.contains("unknown session"))
        .count();
    assert!(one_by_one <= 40, "{one_by_one} lines, one per connection");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}
