//! A direction's receive mode in words (`tcp --rx-mode`): how the receiver's bytes left the
//! kernel, from the summed receive figures of its streams. Plain copying, the default, has no
//! line; a zerocopy run says what share the kernel mapped and why the rest was copied.

use record::FlowSummary;
use wire::msg::{ReceiveCounts, ZerocopyRefusal};
use wire::spec::RxMode;

/// The page size the MSS is judged against: every Linux platform linerate runs on uses 4 KiB.
const PAGE_BYTES: u32 = 4096;

/// The `receive` line of a direction, or `None` where it copied as asked (the default).
pub(crate) fn line(f: &FlowSummary) -> Option<String> {
    let r = f.receive.as_ref()?;
    if let Some(refused) = r.refused {
        return Some(format!(
            "copy: zerocopy refused by the receiver's kernel ({}), so every byte was copied",
            refusal_words(refused)
        ));
    }
    match r.mode {
        RxMode::Copy => None,
        RxMode::Trunc => {
            Some("trunc (discarded in the kernel with MSG_TRUNC, never copied)".into())
        }
        RxMode::Zerocopy => Some(zerocopy_words(r)),
    }
}

fn zerocopy_words(r: &ReceiveCounts) -> String {
    let total = r.total_bytes();
    let mapped_pct = if total == 0 {
        0.0
    } else {
        r.mapped_bytes as f64 * 100.0 / total as f64
    };
    let rest = match r.rcv_mss_bytes {
        Some(mss) if mss % PAGE_BYTES != 0 => format!(
            "recv_skip_hint: receive MSS {mss} B is not a multiple of the {PAGE_BYTES} B page"
        ),
        _ => "recv_skip_hint: data not in whole pages".into(),
    };
    if r.copied_bytes == 0 {
        format!("zerocopy, {mapped_pct:.1} % of bytes mapped")
    } else {
        format!("zerocopy, {mapped_pct:.1} % of bytes mapped, the rest copied ({rest})")
    }
}

fn refusal_words(r: ZerocopyRefusal) -> String {
    let (call, errno) = match r {
        ZerocopyRefusal::Mmap { errno } => ("mmap of the socket", errno),
        ZerocopyRefusal::Getsockopt { errno } => ("getsockopt TCP_ZEROCOPY_RECEIVE", errno),
    };
    format!("{call}: {}", std::io::Error::from_raw_os_error(errno))
}

/// A direction with nothing in it, for the tests of the lines written from one.
#[cfg(test)]
pub(crate) fn empty_flow() -> FlowSummary {
    serde_json::from_str(
        r#"{"flow":"client_to_server","sender":"client","bytes_sent":0,"bytes_received":0,
        "bytes_in_flight":0,"bytes_received_after_drain":0,"reconciled":true,
        "throughput_bps":0,"sender_throughput_bps":0,
        "interval_throughput_bps":{"cur":0,"avg":0,"min":0,"max":0},
        "sender_cpu_pct":0,"receiver_cpu_pct":0,"retransmits":null,"rtt_us":null,"streams":[]}"#,
    )
    .expect("a valid FlowSummary")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(r: ReceiveCounts) -> Option<String> {
        let mut f = empty_flow();
        f.receive = Some(r);
        line(&f)
    }

    #[test]
    fn each_mode_says_what_ran() {
        let copy = ReceiveCounts {
            copied_bytes: 10,
            ..Default::default()
        };
        assert_eq!(words(copy), None);
        let trunc = ReceiveCounts {
            mode: RxMode::Trunc,
            discarded_bytes: 10,
            ..Default::default()
        };
        assert!(words(trunc)
            .unwrap()
            .starts_with("trunc (discarded in the kernel"));
        let zc = ReceiveCounts {
            mode: RxMode::Zerocopy,
            mapped_bytes: 12,
            copied_bytes: 88,
            rcv_mss_bytes: Some(65483),
            ..Default::default()
        };
        assert_eq!(
            words(zc).unwrap(),
            "zerocopy, 12.0 % of bytes mapped, the rest copied (recv_skip_hint: receive MSS 65483 B is not a multiple of the 4096 B page)"
        );
        let refused = ReceiveCounts {
            copied_bytes: 10,
            refused: Some(ZerocopyRefusal::Mmap {
                errno: libc::ENODEV,
            }),
            ..Default::default()
        };
        let text = words(refused).unwrap();
        assert!(
            text.starts_with(
                "copy: zerocopy refused by the receiver's kernel (mmap of the socket: "
            ),
            "{text}"
        );
    }
}
