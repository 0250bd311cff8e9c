use std::time::Duration;

use super::*;
use crate::{Signal, StreamCounters, StreamEngine};

fn tcp_pair() -> (std::net::TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (b, _) = listener.accept().unwrap();
    (a, b)
}

/// The sender on `a` with `sender`, the receiver on `b` with `receiver`, for `run_for`; both
/// reports and the round trips handed over on each side.
fn run(
    sender: &SelfProbe,
    receiver: &SelfProbe,
    a: Conn,
    b: Conn,
    run_for: Duration,
) -> [(StreamReport, Option<Latency>); 2] {
    let (stop, abort) = (Signal::new(), crate::Abort::new());
    let (tx, rx) = (StreamCounters::default(), StreamCounters::default());
    let ctl = |counter| StreamControl {
        stream: 0,
        counter,
        stop: &stop,
        abort: &abort,
        origin: std::time::Instant::now(),
        budget: None,
    };
    let (s, r) = std::thread::scope(|scope| {
        let s = scope.spawn(|| sender.run(a.into(), Role::Sender, ctl(&tx)));
        let r = scope.spawn(|| receiver.run(b.into(), Role::Receiver, ctl(&rx)));
        std::thread::sleep(run_for);
        stop.raise();
        (s.join().unwrap().unwrap(), r.join().unwrap().unwrap())
    });
    [(s, tx.take_latency()), (r, rx.take_latency())]
}

#[test]
fn headers_survive_any_split_of_the_stream() {
    let h = [
        Header {
            kind: RecordKind::Bulk,
            id: 0,
        },
        Header {
            kind: RecordKind::Request,
            id: 7,
        },
        Header {
            kind: RecordKind::Response,
            id: u64::MAX,
        },
    ];
    let record = 40;
    let mut stream = Vec::new();
    for x in h {
        stream.extend_from_slice(&x.encode());
        stream.extend(std::iter::repeat_n(0xAB, record - Header::LEN));
    }
    for chunk in [1, 3, 16, 17, 39, 40, 41, 120] {
        let mut d = Deframer::new(record);
        let mut got = Vec::new();
        for piece in stream.chunks(chunk) {
            d.feed(piece, |x| got.push(x)).unwrap();
        }
        assert_eq!(got, h, "chunks of {chunk}");
    }
    let mut d = Deframer::new(record);
    assert!(
        d.feed(&pattern(64), |_| {}).is_err(),
        "not records: an error"
    );
}

#[test]
fn uploading_client_times_requests_queued_behind_its_own_data() {
    let (a, b) = tcp_pair();
    let client = SelfProbe::new(200.0);
    let server = SelfProbe::new(0.0);
    let [(tx, tx_rt), (rx, rx_rt)] = run(
        &client,
        &server,
        Conn::Tcp(a),
        Conn::Tcp(b),
        Duration::from_millis(400),
    );
    assert_eq!(tx.bytes_total, rx.bytes_total, "every byte delivered");
    assert!(tx.bytes_total > 0);
    let all = tx.latency.expect("the requester keeps its round trips");
    assert!(all.len() >= 10, "{} probes", all.len());
    assert_eq!(tx_rt.map(|l| l.len()), Some(all.len()));
    assert!(
        rx.latency.is_none() && rx_rt.is_none(),
        "the server only answers"
    );
}

#[test]
fn downloading_client_times_responses_found_in_the_stream() {
    let (a, b) = tcp_pair();
    let server = SelfProbe::new(0.0);
    let client = SelfProbe::new(200.0);
    let [(tx, _), (rx, rx_rt)] = run(
        &server,
        &client,
        Conn::Tcp(b),
        Conn::Tcp(a),
        Duration::from_millis(400),
    );
    assert_eq!(tx.bytes_total, rx.bytes_total);
    let all = rx.latency.expect("the requester keeps its round trips");
    assert!(all.len() >= 10, "{} probes", all.len());
    assert_eq!(rx_rt.map(|l| l.len()), Some(all.len()));
    assert!(tx.tcp_info.is_some());
}

#[test]
fn a_peer_flooding_requests_is_refused_not_queued() {
    let (a, mut b) = tcp_pair();
    let flood: Vec<u8> = (0..2000u64)
        .flat_map(|id| {
            Header {
                kind: RecordKind::Request,
                id,
            }
            .encode()
        })
        .collect();
    std::io::Write::write_all(&mut b, &flood).unwrap();
    let (stop, abort) = (Signal::new(), crate::Abort::new());
    let counter = StreamCounters::default();
    let ctl = StreamControl {
        stream: 0,
        counter: &counter,
        stop: &stop,
        abort: &abort,
        origin: std::time::Instant::now(),
        budget: None,
    };
    // Keep reading so the sender is never stuck on a full buffer.
    let reader = std::thread::spawn(move || {
        let mut sink = vec![0u8; 1 << 16];
        while std::io::Read::read(&mut b, &mut sink).is_ok_and(|n| n > 0) {}
    });
    let err = SelfProbe::new(0.0)
        .run(Conn::Tcp(a).into(), Role::Sender, ctl)
        .unwrap_err();
    assert!(err.to_string().contains("more than 1024 answers"), "{err}");
    reader.join().unwrap();
}
