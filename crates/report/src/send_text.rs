//! A direction's send mode in words (`tcp --send-mode`): the mode its senders ran, which the
//! spec alone does not say when it asked for `auto` (each sender picks by its connection's
//! congestion control), or when splice fell back to sendfile.

use record::FlowSummary;
use wire::spec::SendMode;

/// The `send` line of a direction, or `None` where the senders did not say (older records and
/// servers, other kinds).
pub(crate) fn line(f: &FlowSummary) -> Option<String> {
    let words = match f.send_mode? {
        SendMode::Write => "write (copied from a user buffer)",
        SendMode::Splice => "splice (the pattern's pages referenced from a pipe, never copied)",
        SendMode::Sendfile => "sendfile (the pattern's pages referenced from a file, never copied)",
        SendMode::Auto => return None,
    };
    Some(words.to_string())
}

/// How the spec asked senders to send, for the test's header line.
pub(crate) fn asked(mode: SendMode) -> &'static str {
    match mode {
        SendMode::Auto => "send mode auto (write where the congestion control paces, else splice)",
        SendMode::Splice => "send mode splice",
        SendMode::Sendfile => "send mode sendfile",
        SendMode::Write => "send mode write",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_that_ran_is_named_and_an_unknown_one_is_not_guessed() {
        let mut f = crate::receive_text::empty_flow();
        assert_eq!(line(&f), None);
        f.send_mode = Some(SendMode::Write);
        assert!(line(&f).unwrap().starts_with("write"));
        f.send_mode = Some(SendMode::Splice);
        assert!(line(&f).unwrap().starts_with("splice"));
        assert!(asked(SendMode::Auto).contains("auto"));
    }
}
