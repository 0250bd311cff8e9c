//! A one-off measurement, not a test: frames per second over a veth pair that already exists,
//! counted at the receiver's XDP counter (count-and-drop).
//!
//! `frame_rate packet|xdp|live|count TX_NS RX_NS SECONDS` sends 64-byte frames from `va` in TX_NS
//! to `vb` in RX_NS for SECONDS (at most 10) and prints the sender's and the counter's rates;
//! `count` only counts, for a peer tool (trafgen) sending meanwhile. Root only; Linux only.

#[cfg(target_os = "linux")]
fn main() -> Result<(), String> {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("frame_rate: AF_PACKET, AF_XDP and XDP are Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use frames::af_xdp::{Mode, XskTx};
    use frames::packet_tx::{PacketTx, RingSize};
    use frames::send::{Control, SendLimit, TxCounts};
    use frames::xdp::{ifindex, Action, PortRange, XdpCounter};
    use frames::xdp_live::LiveTx;
    use frames::{Endpoints, FlowPattern, FrameSpec, Frames, SysError};
    use std::net::{IpAddr, Ipv4Addr};
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T, String> {
        std::thread::scope(|s| {
            s.spawn(|| {
                let file =
                    std::fs::File::open(format!("/run/netns/{ns}")).map_err(|e| e.to_string())?;
                // SAFETY: setns on this thread only, with a namespace file held open.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(format!("setns {ns}: {}", std::io::Error::last_os_error()));
                }
                Ok(f())
            })
            .join()
            .map_err(|_| "thread panicked".to_string())?
        })
    }

    /// `dev`'s MAC in `ns` (through `ip netns exec`, which mounts that namespace's sysfs).
    fn mac(ns: &str, dev: &str) -> Result<[u8; 6], String> {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "cat"])
            .arg(format!("/sys/class/net/{dev}/address"))
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut m = [0u8; 6];
        for (b, h) in m.iter_mut().zip(text.trim().split(':')) {
            *b = u8::from_str_radix(h, 16).map_err(|e| format!("{dev} in {ns}: {e}"))?;
        }
        Ok(m)
    }

    /// Sends with `engine` from `va` in `tx_ns` for `limit`; `None` for `count` (only waits).
    fn send(
        engine: &str,
        tx_ns: &str,
        frames: &Frames,
        limit: SendLimit,
        clock: &(dyn Fn() -> u64 + Sync),
    ) -> Result<Option<(String, TxCounts)>, String> {
        let sent = match engine {
            "packet" => Some(
                in_netns(tx_ns, || -> Result<_, SysError> {
                    let mut tx =
                        PacketTx::open(ifindex("va")?, RingSize::for_frames(frames.built_len()))?;
                    Ok(("packet".to_string(), tx.send(frames, limit, clock)?))
                })?
                .map_err(|e| e.to_string())?,
            ),
            "xdp" => Some(
                in_netns(tx_ns, || -> Result<_, SysError> {
                    let mut tx = XskTx::open(ifindex("va")?, 0, Mode::Auto)?;
                    let c = tx.send(frames, limit, clock)?;
                    Ok((format!("xdp ({:?})", tx.granted()), c))
                })?
                .map_err(|e| e.to_string())?,
            ),
            "live" => Some(
                in_netns(tx_ns, || -> Result<_, SysError> {
                    let tx = LiveTx::open(ifindex("va")?, frames)?;
                    let (c, _) = tx.send(Control::limit(limit), clock)?;
                    Ok(("xdp (live frames)".to_string(), c))
                })?
                .map_err(|e| e.to_string())?,
            ),
            _ => {
                std::thread::sleep(limit.time);
                None
            }
        };
        Ok(sent)
    }

    pub fn main() -> Result<(), String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let [engine, tx_ns, rx_ns, secs] = args.as_slice() else {
            return Err("usage: frame_rate packet|xdp|live|count TX_NS RX_NS SECONDS".into());
        };
        let secs: f64 = secs
            .parse::<f64>()
            .map_err(|e| e.to_string())?
            .clamp(0.1, 10.0);
        let ports = PortRange {
            first: 9000,
            count: 1,
        };
        let counter = in_netns(rx_ns, || XdpCounter::attach("vb", ports, Action::Drop))?
            .map_err(|e| e.to_string())?;
        let frames = Frames::new(&FrameSpec {
            endpoints: Endpoints {
                src_mac: mac(tx_ns, "va")?,
                dst_mac: mac(rx_ns, "vb")?,
                src: IpAddr::V4(Ipv4Addr::new(198, 18, 38, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(198, 18, 38, 2)),
                src_port: 40000,
                dst_port: 9000,
            },
            frame_size: 64,
            mtu: 1500,
            flows: FlowPattern::One,
        })
        .map_err(|e| e.to_string())?;
        let limit = SendLimit {
            frames: u64::MAX,
            time: Duration::from_secs_f64(secs),
        };
        let t0 = Instant::now();
        let clock = move || t0.elapsed().as_nanos() as u64;
        let sent = send(engine, tx_ns, &frames, limit, &clock)?;
        std::thread::sleep(Duration::from_millis(200));
        let got = counter.counts().map_err(|e| e.to_string())?;
        let elapsed = t0.elapsed().as_secs_f64();
        match sent {
        Some((name, c)) => println!(
            "{name}: sent {} in {:.3} s = {:.3} Mpps, refused {}; counted at vb's XDP {} ({:.3} Mpps)",
            c.sent,
            c.elapsed.as_secs_f64(),
            c.sent as f64 / c.elapsed.as_secs_f64() / 1e6,
            c.refused,
            got.frames,
            got.frames as f64 / c.elapsed.as_secs_f64() / 1e6,
        ),
        None => println!("counted at vb's XDP {} in {elapsed:.3} s", got.frames),
    }
        Ok(())
    }
}
