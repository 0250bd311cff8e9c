//! A UDP direction's frames as the interfaces at its two ends counted them
//! (`record::InterfaceFrames`, issue 47): the sending end's interface's transmitted packets
//! and the receiving end's received ones over the test, from each end's `LinkCounts`. The
//! datagrams at the sockets stay where they are; these are the frames, so a text can say which
//! is which.

use measure::link_counts::LinkCounts;
use record::{FlowSummary, InterfaceFrames};
use wire::spec::Flow;
use wire::spec::Loss;

use crate::RawRun;

/// The direction whose sender counted `sender` and whose receiver counted `receiver`.
pub fn of(sender: &LinkCounts, receiver: &LinkCounts) -> InterfaceFrames {
    InterfaceFrames {
        sender_interface: sender.interface.clone(),
        sender_tx_frames: sender.tx_packets,
        sender_tx_bytes: sender.tx_bytes,
        receiver_interface: receiver.interface.clone(),
        receiver_rx_frames: receiver.rx_packets,
        receiver_rx_bytes: receiver.rx_bytes,
        virtual_link: sender.virtual_link || receiver.virtual_link,
        // Two ends on loopback share its one pair of counters (a loopback address is
        // reachable only through this host's own `lo`).
        one_interface: sender.interface == "lo" && receiver.interface == "lo",
    }
}

/// Sets `interface_frames` on every flow of a UDP stream test whose two ends both read their
/// interface's counters.
pub(crate) fn add_interface_frames(raw: &RawRun, flows: &mut [FlowSummary]) {
    if raw.spec.kind().row().loss != Loss::Datagrams {
        return;
    }
    let (Some(client), Some(server)) = (&raw.local_link, &raw.server.link) else {
        return;
    };
    for f in flows {
        f.interface_frames = Some(match f.flow {
            Flow::ClientToServer => of(client, server),
            Flow::ServerToClient => of(server, client),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(interface: &str, rx: u64, tx: u64) -> LinkCounts {
        LinkCounts {
            interface: interface.into(),
            virtual_link: true,
            rx_packets: rx,
            tx_packets: tx,
            rx_bytes: rx * 100,
            tx_bytes: tx * 100,
        }
    }

    #[test]
    fn each_direction_takes_its_senders_tx_and_its_receivers_rx() {
        let (client, server) = (link("va", 5, 408_800), link("vb", 408_794, 6));
        let up = of(&client, &server);
        assert_eq!(
            (up.sender_tx_frames, up.receiver_rx_frames),
            (408_800, 408_794)
        );
        assert_eq!(
            (up.sender_interface.as_str(), up.receiver_interface.as_str()),
            ("va", "vb")
        );
        assert!(up.virtual_link && !up.one_interface);
        let down = of(&server, &client);
        assert_eq!((down.sender_tx_frames, down.receiver_rx_frames), (6, 5));
        assert!(of(&link("lo", 9, 9), &link("lo", 9, 9)).one_interface);
    }
}
