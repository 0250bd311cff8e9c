//! Connection tests (`crr`) across network namespaces.

use super::*;

/// The server's kernel counts every connection it accepts (PassiveOpens): one for the control
/// connection, one per transaction. Segments per connection (both ends' OutSegs) show the
/// request's ACK and the responder's FIN riding on its response: SYN, SYN-ACK, ACK, request,
/// response+ACK+FIN, the client's FIN+ACK and the last ACK.
#[test]
fn transactions_equal_the_kernels_accepted_connections() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("crr");
    let _server = pair.serve();
    let opens = snmp(&pair.b, "Tcp", "PassiveOpens");
    let segs = snmp(&pair.a, "Tcp", "OutSegs") + snmp(&pair.b, "Tcp", "OutSegs");
    let v = pair.client_json(&["crr", "-t", "1", "--omit", "0", "-i", "0"]);
    let opened = snmp(&pair.b, "Tcp", "PassiveOpens") - opens;
    let sent = snmp(&pair.a, "Tcp", "OutSegs") + snmp(&pair.b, "Tcp", "OutSegs") - segs;
    let n = v["summary"]["transactions"].as_u64().unwrap();
    eprintln!("crr: {n} transactions, {opened} accepted, {sent} segments");
    assert!(n > 0);
    assert_eq!(
        opened,
        n + 1,
        "one control connection plus one per transaction"
    );
    // 7 per connection (10 with a separate ACK of the request and a separate FIN); the control
    // connection adds well under 100, and a delayed ACK that fires before the client's close
    // (a stalled client on a busy machine) adds one: allow half a segment per connection.
    assert!(
        sent <= 7 * n + n / 2 + 100,
        "{} segments per connection",
        sent as f64 / n as f64
    );
}

/// `cc` (netperf's TCP_CC): every connection the client counts is one the server's kernel
/// accepted, plus the control connection, and none carries data: SYN, SYN-ACK, ACK, the
/// server's FIN, its ACK, the client's FIN and the last ACK, seven segments a connection (no
/// request or response among them: crr's carry its data in the same seven).
#[test]
fn cc_connections_equal_the_kernels_accepted_connections_and_carry_no_data() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("cc");
    let _server = pair.serve();
    let opens = snmp(&pair.b, "Tcp", "PassiveOpens");
    let segs = snmp(&pair.a, "Tcp", "OutSegs") + snmp(&pair.b, "Tcp", "OutSegs");
    let v = pair.client_json(&["cc", "-t", "1", "--omit", "0", "-i", "0"]);
    let opened = snmp(&pair.b, "Tcp", "PassiveOpens") - opens;
    let sent = snmp(&pair.a, "Tcp", "OutSegs") + snmp(&pair.b, "Tcp", "OutSegs") - segs;
    let n = v["summary"]["transactions"].as_u64().unwrap();
    eprintln!("cc: {n} connections, {opened} accepted, {sent} segments");
    assert_eq!(v["kind"], "tcp_cc");
    assert!(n > 0);
    assert_eq!(
        opened,
        n + 1,
        "one control connection plus one per connection"
    );
    assert!(
        sent <= 7 * n + n / 2 + 100,
        "{} segments per connection",
        sent as f64 / n as f64
    );
    let s = &v["summary"];
    let per_s = s["connections_per_s"].as_f64().unwrap();
    let p50 = s["latency_us"]["p50"].as_f64().unwrap();
    assert!(per_s > 0.0 && p50 > 0.0, "{s}");
}
