//! Opening a test's data connections once the server accepted it: the TCP (or Unix) streams,
//! attached to the session by cookie; the UDP sockets with their probe handshake (and the
//! client's extra receiving ports announced); or the connection test's target.

use std::net::SocketAddr;

use engine::sockopt::SocketOptions;
use engine::udp_socket::{max_payload_to, probe, udp_socket};
use engine::{Conn, CrrTarget, Endpoint, UdpMulti};
use wire::spec::{DataPath, Flow};
use wire::{ClientMsg, ServerMsg, TestSpec};

use super::{connect, protocol, unexpected, ClientConfig, ClientError};
use crate::control::{recv, send, HANDSHAKE_TIMEOUT};
use crate::target::Target;

/// What the server's `Accepted` offered for the data connections.
pub(super) struct Offered {
    /// The session's cookie, which data connections attach with.
    pub session: u64,
    /// The server's UDP port for each stream.
    pub udp_ports: Vec<u16>,
    /// The server's further UDP ports for each stream (several destination ports).
    pub udp_extra_ports: Vec<Vec<u16>>,
    /// The connection test's listening port.
    pub crr_port: Option<u16>,
}

/// One endpoint per stream for the test's kind, in stream-index order.
pub(super) fn endpoints(
    config: &ClientConfig,
    ctrl: &mut Conn,
    offered: &Offered,
) -> Result<Vec<Endpoint>, ClientError> {
    let spec = &config.spec;
    if let Some(port) = offered.crr_port {
        let Target::Tcp { addr, .. } = &config.target else {
            return Err(ClientError::Input(
                "crr tests need an IP address, not --unix".into(),
            ));
        };
        let target = CrrTarget {
            addr: SocketAddr::new(addr.ip(), port),
            options: SocketOptions::from_spec(spec),
        };
        Ok(spec
            .flows()
            .iter()
            .map(|_| Endpoint::Connect(target.clone()))
            .collect())
    } else if spec.kind().row().path == DataPath::Udp {
        let conns = open_udp(config, &offered.udp_ports, &offered.udp_extra_ports)?;
        announce_udp_ports(ctrl, spec, &conns)?;
        Ok(conns.into_iter().map(Endpoint::Socket).collect())
    } else {
        Ok(open_tcp(config, offered.session)?
            .into_iter()
            .map(Endpoint::Socket)
            .collect())
    }
}

/// Opens data connection `stream` of `session` and waits for the server to confirm it.
fn open_stream(
    config: &ClientConfig,
    opts: &SocketOptions,
    session: u64,
    stream: u16,
) -> Result<Conn, ClientError> {
    // The control connection has said what a silent server may be; a data connection's
    // server is the same one.
    let (mut conn, auth) = connect(config, opts, &mut |_| {})?;
    let attach = ClientMsg::Attach {
        session,
        stream,
        auth: auth.proof().cloned(),
    };
    send(&mut conn, &attach).map_err(protocol("attaching a stream"))?;
    match recv::<ServerMsg>(&mut conn, HANDSHAKE_TIMEOUT).map_err(protocol("attaching a stream"))? {
        ServerMsg::Attached { auth: answer, .. } => {
            auth.check_answer(answer.as_ref())?;
            Ok(conn)
        }
        ServerMsg::Error { message } => Err(ClientError::Refused(message)),
        other => Err(unexpected(&other)),
    }
}

/// Opens every TCP (or Unix) data connection at once, so a long path costs one round of
/// handshakes.
fn open_tcp(config: &ClientConfig, session: u64) -> Result<Vec<Conn>, ClientError> {
    std::thread::scope(|scope| {
        let pending: Vec<_> = config
            .spec
            .flows()
            .into_iter()
            .map(|(stream, flow)| {
                // Each flow's own pacing: a bidirectional test's may differ each way.
                let opts = SocketOptions::for_flow(&config.spec, flow);
                scope.spawn(move || open_stream(config, &opts, session, stream))
            })
            .collect();
        join_all(pending)
    })
}

fn join_all(
    pending: Vec<std::thread::ScopedJoinHandle<'_, Result<Conn, ClientError>>>,
) -> Result<Vec<Conn>, ClientError> {
    pending
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(ClientError::Protocol("stream setup thread panicked".into()))
            })
        })
        .collect()
}

/// Opens one UDP socket per stream, connected to the server's port for it, checks the payload
/// fits the path, and completes the probe handshake.
fn open_udp(
    config: &ClientConfig,
    ports: &[u16],
    extra_ports: &[Vec<u16>],
) -> Result<Vec<Conn>, ClientError> {
    let Target::Tcp { addr, bind } = &config.target else {
        return Err(ClientError::Protocol(
            "UDP tests need an IP address, not --unix".into(),
        ));
    };
    let flows = config.spec.flows();
    if ports.len() != flows.len() {
        return Err(ClientError::Protocol(format!(
            "server offered {} UDP ports for {} streams",
            ports.len(),
            flows.len()
        )));
    }
    let local = bind
        .map(|b| SocketAddr::new(b.ip(), 0))
        .unwrap_or(match addr {
            SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
            SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
        });
    let server_ip = addr.ip();
    std::thread::scope(|scope| {
        let pending: Vec<_> = flows
            .iter()
            .zip(ports)
            .map(|(&(stream, _), &port)| {
                let extra: Vec<SocketAddr> = extra_ports
                    .get(usize::from(stream))
                    .map(|ps| ps.iter().map(|&p| SocketAddr::new(server_ip, p)).collect())
                    .unwrap_or_default();
                scope.spawn(move || {
                    open_udp_stream(
                        config,
                        local,
                        SocketAddr::new(server_ip, port),
                        extra,
                        stream,
                    )
                })
            })
            .collect();
        join_all(pending)
    })
}

fn open_udp_stream(
    config: &ClientConfig,
    local: SocketAddr,
    server: SocketAddr,
    extra_dst: Vec<SocketAddr>,
    stream: u16,
) -> Result<Conn, ClientError> {
    let setup = |e: std::io::Error| ClientError::Protocol(format!("UDP setup: {e}"));
    let spec = &config.spec;
    let payload = spec.message_len_bytes() as usize;
    let max = max_payload_to(server).map_err(setup)?;
    if payload > max {
        return Err(ClientError::Input(format!(
            "-l {payload}: larger than the path allows; its MTU leaves {max} bytes of UDP payload"
        )));
    }
    let open = || {
        udp_socket(local, spec.window_bytes)
            .map_err(|e| ClientError::Protocol(format!("UDP setup: {e}")))
    };
    let sock = open()?;
    probe(&sock, server, stream, HANDSHAKE_TIMEOUT).map_err(setup)?;
    // Only `udp_stream` spreads over ports; `udp_rr` has one socket each way.
    let (flows, flows_dst) = spec.udp().map_or((1, 1), |u| (u.flows, u.flows_dst));
    let receiving = spec
        .flows()
        .iter()
        .any(|&(s, flow)| s == stream && flow == Flow::ServerToClient);
    if receiving && flows_dst > 1 {
        let extra_recv = (1..flows_dst).map(|_| open()).collect::<Result<_, _>>()?;
        return Ok(Conn::UdpMulti(UdpMulti {
            sock,
            only_from: Some(server.ip()),
            extra_recv,
            extra_dst: Vec::new(),
        }));
    }
    // A multi-flow receiver takes every source port of the server's address.
    if receiving && flows > 1 {
        return Ok(Conn::UdpFrom(sock, server.ip()));
    }
    sock.connect(server).map_err(setup)?;
    if !receiving && flows_dst > 1 {
        return Ok(Conn::UdpMulti(UdpMulti {
            sock,
            only_from: None,
            extra_recv: Vec::new(),
            extra_dst,
        }));
    }
    Ok(Conn::Udp(sock))
}

/// With several destination ports and streams the client receives, tells the server the
/// client's further receiving ports (the server sends only to the control peer's address).
fn announce_udp_ports(ctrl: &mut Conn, spec: &TestSpec, conns: &[Conn]) -> Result<(), ClientError> {
    let flows_dst = spec.udp().map_or(1, |u| u.flows_dst);
    if flows_dst <= 1 || !spec.flows().iter().any(|&(_, f)| f == Flow::ServerToClient) {
        return Ok(());
    }
    let extra = conns
        .iter()
        .map(|c| match c {
            Conn::UdpMulti(m) => m
                .extra_recv
                .iter()
                .filter_map(|s| s.local_addr().ok().map(|a| a.port()))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    send(ctrl, &ClientMsg::UdpPorts { extra }).map_err(protocol("announcing UDP ports"))
}
