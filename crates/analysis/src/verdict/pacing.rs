//! A CPU verdict's notes on where TCP's sending ran.
//!
//! - **BBR's pacing.** BBR needs its sending paced; where the egress qdisc is not fq, TCP paces
//!   each connection itself with a high-resolution timer per burst, whose arming and firing cost
//!   CPU on whichever core runs them, and in a virtual machine an exit each. Under BBR two
//!   loopback streams on a 2-core guest ran at a third to a quarter of their rate under CUBIC
//!   (linerate) and at about half or less (iperf 2; METHODOLOGY §10), so a CPU verdict under
//!   BBR says so.
//! - **Receivers that send.** On one host, the ACK a receiver sends is processed on its own
//!   core, and that processing sends whatever the sender has queued. Where the receivers'
//!   threads used at least twice the senders' CPU, much of the sending ran in them, and the
//!   verdict's evidence says so: "receiver CPU" then counts sending work too.

use record::{FlowSummary, LimitedBy, Verdict};

/// The congestion control whose sending TCP paces by itself.
const PACED: &str = "bbr";

/// Receivers' threads at this many times the senders' CPU or more did much of the sending.
const RECEIVERS_SENDING_RATIO: f64 = 2.0;

/// ... and at least this much of a core, all streams: a busy reader, not two idle ends.
const RECEIVERS_SENDING_MIN_PCT: f64 = 80.0;

/// Which notes' hints a run has said already: each is said once, on the first direction it
/// applies to (a `--bidir` run's two directions would say the same).
#[derive(Debug, Default)]
pub(super) struct Said {
    paced: bool,
    receivers_sending: bool,
}

fn is_cpu(v: &LimitedBy) -> bool {
    matches!(v.verdict, Verdict::SenderCpu | Verdict::ReceiverCpu)
}

/// Adds the pacing note to a CPU verdict whose senders ran BBR (`congestion`: what they ran,
/// `Hosts::congestion_of`), unless the run has said it.
pub(super) fn note_paced_sending(v: &mut LimitedBy, congestion: Option<&str>, said: &mut Said) {
    if is_cpu(v) && congestion == Some(PACED) && !std::mem::replace(&mut said.paced, true) {
        v.hint.push_str(
            "; the congestion control is bbr, which TCP paces with a timer per burst unless the sender's qdisc is fq: that costs CPU (in a VM, an exit per timer), so -C cubic or an fq qdisc shows what pacing costs here",
        );
    }
}

/// Says so in a CPU verdict of a loopback run (`loopback`) whose receivers' threads did much of
/// the sending; under BBR the hint adds what kept the sending in the senders' threads (once
/// per run).
pub(super) fn note_receivers_sending(
    v: &mut LimitedBy,
    flow: &FlowSummary,
    (loopback, congestion): (bool, Option<&str>),
    said: &mut Said,
) {
    let (snd, rcv) = (flow.sender_cpu_pct, flow.receiver_cpu_pct);
    if !(is_cpu(v)
        && loopback
        && rcv >= RECEIVERS_SENDING_MIN_PCT
        && rcv >= RECEIVERS_SENDING_RATIO * snd)
    {
        return;
    }
    v.evidence.push_str(&format!(
        "; the receivers' threads ({rcv:.0} % of a core) did much of the sending too, against the senders' {snd:.0} %: on one host the ACKs a receiver sends are processed on its core, and that sends the sender's queued data"
    ));
    if congestion == Some(PACED) && !std::mem::replace(&mut said.receivers_sending, true) {
        v.hint.push_str(
            "; with bbr on one host, --notsent-lowat 256K (little left queued for another core to send) kept the sending in the senders' threads",
        );
    }
}
