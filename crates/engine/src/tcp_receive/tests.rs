use super::*;
use crate::tcp_stream::TcpStream;
use crate::testing::run_pair;
use std::os::unix::net::UnixStream;
use wire::spec::SendMode;

/// A connected loopback TCP pair.
fn tcp_pair() -> (Conn, Conn) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (b, _) = listener.accept().unwrap();
    (Conn::Tcp(a), Conn::Tcp(b))
}

/// Runs a sender and a receiver in `rx_mode` over loopback TCP; the receiver's counts.
fn run_tcp(rx_mode: RxMode, send_mode: SendMode) -> (u64, u64, ReceiveCounts) {
    let (a, b) = tcp_pair();
    let engine = TcpStream::new(128 << 10, send_mode).with_rx_mode(rx_mode);
    let run = run_pair(&engine, a, b, Duration::from_millis(100));
    let counts = run.receiver.counts.receive.expect("a receiver's counts");
    assert_eq!(run.receiver_published, run.receiver.bytes_total);
    (run.sender.bytes_total, run.receiver.bytes_total, counts)
}

#[test]
fn a_copying_receiver_counts_every_byte_as_copied() {
    let (sent, received, counts) = run_tcp(RxMode::Copy, SendMode::Splice);
    assert!(sent > 0);
    assert_eq!(sent, received);
    assert_eq!(counts.mode, RxMode::Copy);
    assert_eq!(counts.copied_bytes, received);
    assert_eq!(counts.discarded_bytes + counts.mapped_bytes, 0);
    assert!(counts.rcv_mss_bytes.is_some_and(|m| m > 0));
}

#[test]
fn a_trunc_receiver_counts_every_byte_the_sender_wrote() {
    for send_mode in [SendMode::Splice, SendMode::Write] {
        let (sent, received, counts) = run_tcp(RxMode::Trunc, send_mode);
        assert!(sent > 0);
        assert_eq!(sent, received, "{send_mode:?}");
        assert_eq!(counts.mode, RxMode::Trunc);
        assert_eq!(counts.discarded_bytes, received);
        assert_eq!(counts.copied_bytes + counts.mapped_bytes, 0);
    }
}

#[test]
fn a_zerocopy_receiver_maps_or_copies_every_byte_exactly_once() {
    for send_mode in [SendMode::Splice, SendMode::Write] {
        let (sent, received, counts) = run_tcp(RxMode::Zerocopy, send_mode);
        assert!(sent > 0);
        assert_eq!(sent, received, "{send_mode:?}");
        assert_eq!(
            counts.mapped_bytes + counts.copied_bytes,
            received,
            "{counts:?}"
        );
        assert_eq!(counts.discarded_bytes, 0);
        // This kernel takes the option on loopback; what it maps depends on the MSS.
        assert_eq!(counts.mode, RxMode::Zerocopy, "{counts:?}");
        assert_eq!(counts.refused, None);
    }
}

#[test]
fn a_refused_zerocopy_receiver_copies_and_says_why() {
    let (a, b) = tcp_pair();
    let mut b = b;
    let sender = std::thread::spawn(move || {
        let mut a = a;
        std::io::Write::write_all(&mut a, &[7u8; 300_000]).unwrap();
    });
    let refused = ZerocopyRefusal::Mmap {
        errno: libc::ENODEV,
    };
    let (stop, abort) = (crate::Signal::new(), crate::Abort::new());
    let counter = crate::StreamCounters::default();
    let ctl = StreamControl {
        stream: 0,
        counter: &counter,
        stop: &stop,
        abort: &abort,
        origin: std::time::Instant::now(),
        budget: None,
    };
    let mut counts = ReceiveCounts {
        mode: RxMode::Zerocopy,
        ..Default::default()
    };
    let mut buf = vec![0u8; 64 << 10];
    zerocopy_or_copy(Err(refused), &mut b, &mut buf, ctl, &mut counts).unwrap();
    sender.join().unwrap();
    assert_eq!(counts.mode, RxMode::Copy);
    assert_eq!(counts.refused, Some(refused));
    assert_eq!(counts.copied_bytes, 300_000);
    assert_eq!(counts.mapped_bytes, 0);
}

#[test]
fn a_socket_without_mmap_refuses_zerocopy_at_the_mmap() {
    let (a, _b) = UnixStream::pair().unwrap();
    let refused = ZeroCopy::new(a.as_raw_fd(), 4096).unwrap_err();
    assert!(
        matches!(refused, ZerocopyRefusal::Mmap { errno } if errno != 0),
        "{refused:?}"
    );
}

#[test]
fn over_a_unix_socket_every_mode_copies() {
    let (a, b) = UnixStream::pair().unwrap();
    let engine = TcpStream::new(4096, SendMode::Write).with_rx_mode(RxMode::Trunc);
    let run = run_pair(
        &engine,
        Conn::Unix(a),
        Conn::Unix(b),
        Duration::from_millis(30),
    );
    let counts = run.receiver.counts.receive.unwrap();
    assert_eq!(counts.mode, RxMode::Copy);
    assert_eq!(counts.copied_bytes, run.sender.bytes_total);
    assert_eq!(counts.rcv_mss_bytes, None);
}

#[test]
fn the_request_struct_has_the_kernels_layout() {
    assert_eq!(std::mem::size_of::<TcpZerocopyReceive>(), 64);
    assert_eq!(
        std::mem::offset_of!(TcpZerocopyReceive, copybuf_address),
        24
    );
    assert_eq!(std::mem::offset_of!(TcpZerocopyReceive, msg_flags), 56);
}

#[test]
fn low_water_switches_on_at_high_rate_and_off_at_low_rate() {
    let (a, _b) = UnixStream::pair().unwrap();
    let fd = a.as_raw_fd();
    let mut lw = LowWater::new(1 << 20);
    assert_eq!(lw.mark, LowWater::MAX_MARK as i32);
    lw.window_start = Instant::now() - LowWater::WINDOW;
    lw.after_read(fd, 100 << 20); // ~16 Gbit/s over 50 ms
    assert!(lw.on);
    lw.window_start = Instant::now() - LowWater::WINDOW;
    lw.after_read(fd, 1000); // ~160 kbit/s
    assert!(!lw.on);
}
