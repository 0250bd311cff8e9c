use super::*;

fn tbf(rate_bps: u64, drops: u64) -> Qdisc {
    Qdisc {
        kind: "tbf".into(),
        handle: "1:".into(),
        parent: "root".into(),
        rate_bps: Some(rate_bps),
        counts: Some(QdiscCounts {
            drops,
            packets: 10 * drops,
            backlog_bytes: drops,
            ..QdiscCounts::default()
        }),
        ..Qdisc::default()
    }
}

#[test]
fn rates_and_handles_read_as_tc_writes_them() {
    assert_eq!(tc_rate(100_000_000), "100Mbit");
    assert_eq!(tc_rate(1_000_000_000), "1Gbit");
    assert_eq!(tc_rate(1_500_000), "1500Kbit");
    assert_eq!(tc_rate(800), "800bit");
    assert_eq!(handle_words(0x8001_0000), "8001:");
    assert_eq!(handle_words(0x0001_0010), "1:10");
    assert_eq!(parent_words(0xffff_ffff), "root");
    assert_eq!(parent_words(0x0001_0001), "1:1");
}

#[test]
fn a_summary_names_the_queues_that_hold_packets() {
    let noqueue = Qdisc {
        kind: "noqueue".into(),
        ..Qdisc::default()
    };
    assert_eq!(summary(&[]), "none");
    assert_eq!(summary(&[noqueue]), "none");
    let fq = Qdisc {
        kind: "fq_codel".into(),
        ..Qdisc::default()
    };
    let mq = Qdisc {
        kind: "mq".into(),
        ..Qdisc::default()
    };
    assert_eq!(summary(&[mq, fq.clone(), fq]), "2 × fq_codel");
    assert_eq!(summary(&[tbf(100_000_000, 0)]), "tbf 100Mbit");
}

#[test]
fn counters_over_the_test_are_the_same_qdiscs_difference() {
    let before = vec![tbf(100_000_000, 5)];
    let mut later = tbf(100_000_000, 12);
    later.counts.as_mut().unwrap().packets = 200;
    let mut new = tbf(1, 1);
    new.handle = "2:".into();
    let after = over_test(&before, vec![later, new]);
    let d = after[0].during_test.unwrap();
    assert_eq!((d.drops, d.packets, d.backlog_bytes), (7, 150, 12));
    assert_eq!(after[1].during_test, None, "not there at the start");
    // The cumulative counters are not stored or sent.
    let json = serde_json::to_string(&after[0]).unwrap();
    assert!(!json.contains("\"counts\""), "{json}");
}

#[test]
fn a_peers_list_is_cut_to_the_bounds() {
    let mut long = tbf(1, 0);
    long.kind = "é".repeat(40);
    let list = bounded(vec![long; MAX_QDISCS + 10]);
    assert_eq!(list.len(), MAX_QDISCS);
    assert!(list[0].kind.len() <= MAX_NAME_LEN && list[0].kind.starts_with('é'));
}

#[cfg(target_os = "linux")]
mod wire_format {
    use super::super::netlink::{parse_messages, TcObject};
    use super::super::options;
    use super::*;

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(value);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    /// A `RTM_NEWQDISC` message of a tbf at 100 Mbit/s on interface 7, as the kernel dumps it.
    fn tbf_message(seq: u32) -> Vec<u8> {
        // tc_tbf_qopt: rate (cell_log.., rate = 12.5 MB/s), peakrate 0, limit 1 MB, buffer
        // 20 ms in 64 ns ticks, mtu.
        let parms = words(&[0, 0, 12_500_000, 0, 0, 0, 1_000_000, 20_000_000 >> 6, 1514]);
        let mut basic = 123_456u64.to_ne_bytes().to_vec();
        basic.extend(words(&[1000, 0]));
        let queue = words(&[3, 4500, 77, 2, 9000]);
        let mut body = vec![0u8; 4];
        body.extend(words(&[7, 0x0001_0000, 0xffff_ffff, 1]));
        body.extend(attr(1, b"tbf\0"));
        body.extend(attr(2, &attr(1, &parms)));
        body.extend(attr(7, &[attr(1, &basic), attr(3, &queue)].concat()));
        let mut msg = words(&[(16 + body.len()) as u32]);
        msg.extend(36u16.to_ne_bytes());
        msg.extend(2u16.to_ne_bytes());
        msg.extend(words(&[seq, 0]));
        msg.extend(body);
        msg
    }

    #[test]
    fn a_tbf_message_parses_to_its_rate_bucket_and_counters() {
        let mut bytes = tbf_message(9);
        bytes.extend(tbf_message(8)); // another request's: ignored
        let mut done = words(&[20, 0x0003_0002, 9, 0, 0]);
        done.truncate(20);
        bytes.extend(done);
        let mut out: Vec<TcObject> = Vec::new();
        assert!(
            parse_messages(&bytes, 9, &mut out).unwrap(),
            "NLMSG_DONE ends it"
        );
        assert_eq!(out.len(), 1);
        let o = &out[0];
        assert_eq!((o.ifindex, o.kind.as_str()), (7, "tbf"));
        let q = super::super::netlink::qdisc_of(o);
        assert_eq!(q.rate_bps, Some(100_000_000));
        assert_eq!(q.limit_bytes, Some(1_000_000));
        assert_eq!(q.burst_bytes, Some(250_000), "20 ms at 12.5 MB/s");
        assert_eq!(q.latency_us, Some(60_000));
        let c = q.counts.unwrap();
        assert_eq!(
            (c.bytes, c.packets, c.drops, c.overlimits),
            (123_456, 1000, 77, 9000)
        );
        assert_eq!(
            (c.backlog_packets, c.backlog_bytes, c.requeues),
            (3, 4500, 2)
        );
        assert_eq!((q.handle.as_str(), q.parent.as_str()), ("1:", "root"));
    }

    #[test]
    fn truncated_messages_are_refused_not_read_past() {
        let bytes = tbf_message(1);
        for cut in [17, 40, bytes.len() - 1] {
            let mut out = Vec::new();
            assert!(parse_messages(&bytes[..cut], 1, &mut out).is_err() || out.is_empty());
        }
        // Attributes that claim more than they hold end the stream.
        let bad = [200u8, 0, 1, 0, b't'];
        assert_eq!(options::Attrs(&bad).count(), 0);
    }

    #[test]
    fn loopbacks_qdisc_is_read_from_the_kernel() {
        let list = read_qdiscs("lo").unwrap();
        assert!(!list.is_empty(), "lo has a qdisc (noqueue)");
        assert!(list[0].counts.is_some(), "{list:?}");
        assert!(matches!(
            read_qdiscs("no-such-if0"),
            Err(QdiscError::NoInterface(_))
        ));
    }
}
