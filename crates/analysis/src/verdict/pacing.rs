//! A CPU verdict's note on the sender's congestion control. BBR needs its sending paced; where
//! the egress qdisc is not fq, TCP paces each connection itself with a high-resolution timer
//! per burst, whose arming and firing cost CPU on whichever core runs them, and in a virtual
//! machine an exit each. Under BBR two loopback streams on a 2-core guest ran at a quarter of
//! their rate under CUBIC (linerate) or at about half (iperf 2; METHODOLOGY §10), so a CPU
//! verdict under BBR says so.

use results::{LimitedBy, Verdict};

/// The congestion control whose sending TCP paces by itself.
const PACED: &str = "bbr";

/// Adds the pacing note to a CPU verdict whose senders ran BBR (`congestion`: what they ran,
/// `Hosts::congestion_of`).
pub(super) fn note_paced_sending(v: &mut LimitedBy, congestion: Option<&str>) {
    let cpu = matches!(v.verdict, Verdict::SenderCpu | Verdict::ReceiverCpu);
    if cpu && congestion == Some(PACED) {
        v.hint.push_str(
            "; the congestion control is bbr, which TCP paces with a timer per burst unless the sender's qdisc is fq: that costs CPU (in a VM, an exit per timer), so -C cubic or an fq qdisc shows what pacing costs here",
        );
    }
}
