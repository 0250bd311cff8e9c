//! The text summary's `lost at` line: where a UDP direction's lost datagrams went
//! (`loss_causes`, the direction's one loss breakdown), its stages in the order a datagram
//! meets them, with a frame engine's count at the receiving driver between the sender's and
//! the receiver's stages; a count as a number, a part that is a range as "at least N" (with
//! the figure attributed to it by elimination), an unknown part as "?".

use record::{LossCauses, LossRange};

/// One part: its figure, and its range when it is one.
fn part(n: Option<u64>, range: Option<LossRange>) -> String {
    match (n, range) {
        (None, _) => "?".to_string(),
        (Some(n), Some(r)) if r.at_least < r.at_most && n > r.at_least => {
            format!("at least {} ({n} by elimination)", r.at_least)
        }
        (Some(n), Some(r)) if r.at_least < r.at_most => format!("at least {n}"),
        (Some(n), _) => n.to_string(),
    }
}

/// The `lost at` line's text, after its label.
pub(crate) fn line(c: &LossCauses) -> String {
    if c.network.is_none() {
        return format!("not split: {}", c.note);
    }
    let words = |name: &str| match name {
        "sender_host" => "sender host",
        "network" => "network",
        "receiver_host" => "receiver host",
        "receiver_ip" => "receiver IP layer (firewall)",
        _ => "receiver socket buffer",
    };
    let mut parts = Vec::new();
    for (name, n, range) in c.stages() {
        if name == "receiver_host" {
            if let Some(d) = c.at_driver {
                parts.push(format!(", then {d} frames at the receiving driver: "));
            }
        }
        let sep = if parts.last().is_some_and(|p| !p.ends_with(": ")) {
            ", "
        } else {
            ""
        };
        parts.push(format!("{sep}{} {}", words(name), part(n, range)));
    }
    format!("{} ({})", parts.concat(), c.note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::LossBounds;

    #[test]
    fn a_range_reads_at_least_and_a_count_reads_as_itself() {
        let c = LossCauses {
            receiver_socket_buffer: Some(2000),
            receiver_ip: Some(0),
            receiver_host: Some(0),
            sender_host: Some(5),
            network: Some(0),
            at_driver: None,
            bounds: LossBounds {
                receiver_socket_buffer: Some(LossRange {
                    at_least: 40,
                    at_most: 2000,
                }),
                network: Some(LossRange {
                    at_least: 0,
                    at_most: 1960,
                }),
                ..LossBounds::default()
            },
            note: "n".into(),
        };
        assert_eq!(
            line(&c),
            "sender host 5, network at least 0, receiver host 0, receiver IP layer (firewall) 0, receiver socket buffer at least 40 (2000 by elimination) (n)"
        );
        let frames = LossCauses {
            at_driver: Some(9_900),
            bounds: LossBounds::default(),
            ..c
        };
        assert_eq!(
            line(&frames),
            "sender host 5, network 0, then 9900 frames at the receiving driver: receiver host 0, receiver IP layer (firewall) 0, receiver socket buffer 2000 (n)"
        );
    }
}
