//! `linerate pps`: the packet-rate matrix's flags and their validation into one UDP test plan
//! per (frame size, flow count) cell, each validated as `linerate udp` would validate it.

use clap::Args;

use crate::latency_args::LatencyArgs;
use crate::test_args::{CommonArgs, RunPlan, UdpArgs};

/// `linerate pps`.
#[derive(Debug, Args)]
pub struct PpsArgs {
    /// Flags every test takes (-t is per cell).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Ethernet frame sizes in bytes, FCS included (UDP payload = frame - 46 for IPv4).
    #[arg(
        long,
        value_name = "BYTES,...",
        default_value = "64,128,256,512,1024,1280,1518"
    )]
    pub frame: String,
    /// Flows per stream: N source ports (100s alike), or Nd destination ports (pkt-gen's
    /// 1, 100, 100d, 10000; frame engines: 10000 is 100 × 100 ports).
    #[arg(long, value_name = "N,...", default_value = "1,100,10000")]
    pub flows: String,
    /// Offered rate per stream in bits/s, or max.
    #[arg(long, short = 'b', value_name = "BITS_PER_SEC", default_value = "max")]
    pub rate: String,
    /// Datagrams per sendmmsg/recvmmsg call.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub batch: u16,
    /// Accepted from older scripts and ignored: a cell always sends each frame as a datagram
    /// of its own (no UDP GSO), so every datagram counted is one frame on the wire.
    #[arg(long, hide = true)]
    pub no_gso: bool,
    /// Do not use UDP GRO.
    #[arg(long)]
    pub no_gro: bool,
    /// How frames are sent, as `udp --engine`: with packet or xdp each cell's frames are
    /// built here and also counted at the server's driver (serve --frames; 10000 flows are 100
    /// source × 100 destination ports).
    #[arg(long, value_name = "ENGINE", default_value = "socket")]
    pub engine: wire::spec::UdpEngine,
}

/// A validated `pps` invocation: one plan per cell, in order.
#[derive(Debug, Clone)]
pub struct PpsPlan {
    /// (frame bytes, payload bytes, flows, plan) per cell.
    pub cells: Vec<(u32, u32, wire::spec::PpsFlows, RunPlan)>,
}

fn list(flag: &str, value: &str) -> anyhow::Result<Vec<u32>> {
    let items: anyhow::Result<Vec<u32>> = value
        .split(',')
        .map(|v| {
            v.trim().parse::<u32>().map_err(|_| {
                anyhow::anyhow!("{flag} {value}: '{}' is not a whole number", v.trim())
            })
        })
        .collect();
    let items = items?;
    if items.is_empty() {
        return Err(anyhow::anyhow!("{flag}: give at least one value"));
    }
    Ok(items)
}

impl PpsArgs {
    /// Validates the flags into one plan per (frame, flows) cell.
    pub fn plan(&self) -> anyhow::Result<PpsPlan> {
        let frames = list("--frame", &self.frame)?;
        if self.common.bidir {
            return Err(anyhow::anyhow!(
                "--bidir: the line rate is per direction; run pps in one direction (default or -R)"
            ));
        }
        let flows = (self.flows.split(','))
            .map(str::parse)
            .collect::<Result<Vec<wire::spec::PpsFlows>, _>>()?;
        let ipv6 = self.common.conn.ipv6;
        let mut cells = Vec::new();
        for &frame in &frames {
            let payload = sweep::plan::frame_payload(frame, ipv6)?;
            for &f in &flows {
                let (src, dst) = wire::spec::pps_flows(self.engine, f)?;
                let udp = UdpArgs {
                    common: self.common.clone(),
                    length: payload.to_string(),
                    rate: Some(self.rate.clone()),
                    pps: None,
                    burst: None,
                    batch: self.batch,
                    no_batch: false,
                    flows: src,
                    flows_dst: dst,
                    engine: self.engine,
                    // One datagram per frame, as pkt-gen sends: with GSO a virtual link
                    // (veth, lo) carries a batch of datagrams as one packet, never as frames.
                    no_gso: true,
                    no_gro: self.no_gro,
                    iperf3: false,
                    amount: Default::default(),
                    latency: LatencyArgs {
                        latency: None,
                        latency_rate: 100,
                        latency_idle: 2.0,
                    },
                    repeat: Default::default(),
                };
                cells.push((frame, payload, f, udp.plan()?));
            }
        }
        Ok(PpsPlan { cells })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `linerate pps` on its own.
    #[derive(Parser)]
    struct Pps {
        #[command(flatten)]
        args: PpsArgs,
    }

    fn pps(args: &[&str]) -> PpsArgs {
        Pps::try_parse_from(std::iter::once("pps").chain(args.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn pps_matrix_plan() {
        let plan = pps(&[
            "--frame",
            "64,1518",
            "--flows",
            "1,100",
            "--link-speed",
            "10G",
        ])
        .plan()
        .unwrap();
        let cells: Vec<_> = plan
            .cells
            .iter()
            .map(|(f, p, n, _)| (*f, *p, n.count()))
            .collect();
        assert_eq!(
            cells,
            vec![
                (64, 18, 1),
                (64, 18, 100),
                (1518, 1472, 1),
                (1518, 1472, 100)
            ]
        );
        assert_eq!(
            plan.cells[0].3.spec.udp().map(|u| u.rate),
            Some(wire::spec::UdpRate::Max),
            "max rate by default"
        );
        assert!(pps(&["--frame", "40"])
            .plan()
            .unwrap_err()
            .to_string()
            .contains("--frame 40: Ethernet frames are at least 64 bytes"));
        assert!(pps(&["--flows", "1,x"])
            .plan()
            .unwrap_err()
            .to_string()
            .contains("`100d`"));
    }
}
