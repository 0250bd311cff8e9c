//! A UDP direction's frames in words (`record::InterfaceFrames`): what each end's interface
//! counted beside the datagrams at the sockets, and, where the two differ, why: a virtual
//! link carries a GSO buffer of many datagrams as one packet.

use record::{InterfaceFrames, UdpSummary};

/// `408800 sent by va, 408794 received by vb (the interfaces' own counts, all traffic); …`.
pub(crate) fn line(i: &InterfaceFrames, u: &UdpSummary) -> String {
    let mut words = if i.one_interface {
        format!(
            "{} out and {} in on {} (one interface for both ends: each count holds both \
             directions and the control connection)",
            i.sender_tx_frames, i.receiver_rx_frames, i.sender_interface
        )
    } else {
        format!(
            "{} sent by {}, {} received by {} (the interfaces' own counts, all traffic on them)",
            i.sender_tx_frames, i.sender_interface, i.receiver_rx_frames, i.receiver_interface
        )
    };
    // More datagrams than the interface sent frames: they crossed in batches, not one a frame.
    let per_frame = u.packets_sent as f64 / i.sender_tx_frames.max(1) as f64;
    if per_frame > 1.5 {
        let why = if i.virtual_link {
            "UDP GSO buffers cross a virtual link whole, never cut into frames"
        } else {
            "the interface counted GSO buffers, not the frames a NIC cut them into"
        };
        words.push_str(&format!(
            "; {per_frame:.1} datagrams a frame: {why}, so the datagrams are no frame count"
        ));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(tx: u64, rx: u64, one: bool) -> InterfaceFrames {
        InterfaceFrames {
            sender_interface: if one { "lo" } else { "va" }.into(),
            sender_tx_frames: tx,
            sender_tx_bytes: tx * 100,
            receiver_interface: if one { "lo" } else { "vb" }.into(),
            receiver_rx_frames: rx,
            receiver_rx_bytes: rx * 100,
            virtual_link: true,
            one_interface: one,
        }
    }

    fn sent(n: u64) -> UdpSummary {
        UdpSummary {
            packets_sent: n,
            ..UdpSummary::default()
        }
    }

    /// Issue 47: 52,323,328 datagrams where the veth counted 408,794 packets.
    #[test]
    fn issue47_datagrams_in_gso_batches_are_said_to_be_no_frames() {
        let text = line(&frames(408_800, 408_794, false), &sent(52_323_328));
        assert_eq!(
            text,
            "408800 sent by va, 408794 received by vb (the interfaces' own counts, all traffic \
             on them); 128.0 datagrams a frame: UDP GSO buffers cross a virtual link whole, \
             never cut into frames, so the datagrams are no frame count"
        );
        let one_each = line(&frames(1000, 1000, false), &sent(998));
        assert!(!one_each.contains("datagrams a frame"), "{one_each}");
        assert!(line(&frames(10, 10, true), &sent(5)).starts_with("10 out and 10 in on lo"));
    }
}
