//! A frame engine's test checked before the server is asked for it: the path the frames would
//! take (`frames::route`: route, Ethernet link, the next hop's neighbour entry), the frame size
//! against that link's MTU, and the sender's capabilities (`frames::caps`). A test that cannot
//! send a frame so stops with one line naming what is missing, before `Start`: the server never
//! binds its block of ports nor attaches its XDP counter for it.
//!
//! Runs after the control connection is up: its TCP handshake resolved the next hop, so a
//! missing neighbour entry here is a real one (a failed or filtered next hop), not a cold cache.

use std::net::IpAddr;

use super::ClientError;

/// Checks that `spec`'s frame engine (if any) can send to `server`; nothing for a socket test.
pub(super) fn check(spec: &wire::TestSpec, server: IpAddr) -> Result<(), ClientError> {
    let Some(udp) = spec.udp().filter(|u| u.engine.sends_frames()) else {
        return Ok(());
    };
    let engine = udp.engine.name();
    let fail = |why: String| ClientError::Input(format!("--engine {engine}: {why}"));
    let path = frames::route::path_to(server).map_err(|e| fail(e.to_string()))?;
    let ipv6 = server.is_ipv6();
    let payload = udp.payload_len_bytes as usize;
    let overhead = frames::frame::overhead(ipv6);
    let frame = payload + overhead;
    let (min, max) = frames::frame::size_range(ipv6, path.mtu);
    if !(min..=max).contains(&frame) {
        return Err(fail(format!(
            "-l {payload} makes {frame}-byte frames, outside {min}..={max} on {} (MTU {}): pick a payload of {} to {} bytes",
            path.ifname,
            path.mtu,
            min - overhead,
            max - overhead,
        )));
    }
    frames::caps::require_sender(udp.engine).map_err(|e| fail(e.to_string()))?;
    // An AF_XDP sender per stream, each on a transmit queue of its own: certain for `xdp` when
    // the test is paced below live frames' rate; otherwise it may take live frames, which
    // need no queue, so its streams are checked as they open.
    let streams = spec.flows().len() as u32;
    let paced = !engine::udp_frames::live_at(udp.target_pps(wire::spec::Flow::ClientToServer));
    let xdp = udp.engine == wire::spec::UdpEngine::Xdp;
    let queues = frames::xdp_query::queues(&path.ifname).map(|q| q.tx);
    if let Some(queues) = queues.filter(|&q| xdp && paced && streams > q) {
        return Err(ClientError::Input(engine::udp_frames::too_few_queues(
            &path.ifname,
            queues,
        )));
    }
    Ok(())
}
