//! The text summary's `lost at` line: where a UDP direction's lost datagrams went
//! (`loss_causes`), a count as a number, a part that is a range as "at least N" (with the
//! figure attributed to it by elimination), an unknown part as "?".

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
    let b = &c.bounds;
    format!(
        "receiver socket buffer {}, receiver host {}, sender host {}, network {} ({})",
        part(c.receiver_socket_buffer, b.receiver_socket_buffer),
        part(c.receiver_host, None),
        part(c.sender_host, b.sender_host),
        part(c.network, b.network),
        c.note
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::LossBounds;

    #[test]
    fn a_range_reads_at_least_and_a_count_reads_as_itself() {
        let c = LossCauses {
            receiver_socket_buffer: Some(2000),
            receiver_host: Some(0),
            sender_host: Some(5),
            network: Some(0),
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
            "receiver socket buffer at least 40 (2000 by elimination), receiver host 0, sender host 5, network at least 0 (n)"
        );
    }
}
