//! Setting up a session's data connections: checking the spec against this server, the
//! listener of a connection test, the UDP sockets with their probe handshake, and the TCP (or
//! Unix) data connections attached by cookie. Datagrams only ever go to the control
//! connection's peer address.

use std::net::{SocketAddr, UdpSocket};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Instant;

use engine::udp_socket::{accept_probes, udp_socket};
use engine::{sockopt::SocketOptions, Conn, CrrListener, UdpMulti};
use socket2::{Domain, Protocol, Socket, Type};
use wire::spec::{DataPath, Flow, SpecLimits};
use wire::{ClientMsg, ServerMsg, TestSpec};

use wire::auth::Mac;
use wire::msg::ServerInfo;

use super::registry::Attaching;
use super::{SessionError, Shared};
use crate::control::{recv, send};

/// The sockets a session opens before it accepts: UDP sockets (UDP tests) or a listener
/// (connection tests); none for TCP and Unix streams, whose connections attach by cookie.
pub(super) struct Sockets {
    udp: Vec<(UdpSocket, Vec<UdpSocket>)>,
    crr: Option<CrrListener>,
}

impl Sockets {
    /// Opens what `spec` needs on the address the client reached us at.
    pub(super) fn open(ctrl: &Conn, spec: &TestSpec) -> Result<Self, SessionError> {
        Ok(Self {
            udp: open_udp(ctrl, spec)?,
            crr: open_crr_listener(ctrl, spec)?,
        })
    }

    /// Every UDP port opened, each stream's main port and its further ones.
    pub(super) fn udp_ports(&self) -> Vec<u16> {
        let port = |s: &UdpSocket| s.local_addr().ok().map(|a| a.port());
        (self.udp.iter())
            .flat_map(|(main, extra)| std::iter::once(main).chain(extra))
            .filter_map(port)
            .collect()
    }

    /// The `Accepted` answer: the session's cookie, this server, and the ports opened.
    pub(super) fn accepted(
        &self,
        session: u64,
        server: &ServerInfo,
        auth: Option<Mac>,
    ) -> ServerMsg {
        let port = |s: &UdpSocket| s.local_addr().map(|a| a.port()).unwrap_or(0);
        ServerMsg::Accepted {
            session,
            server: server.clone(),
            udp_ports: self.udp.iter().map(|(main, _)| port(main)).collect(),
            udp_extra_ports: self
                .udp
                .iter()
                .map(|(_, extra)| extra.iter().map(port).collect())
                .collect(),
            crr_port: self
                .crr
                .as_ref()
                .and_then(|l| l.listener.local_addr().ok())
                .map(|a| a.port()),
            auth,
        }
    }
}

/// Every data connection of the session, in stream-index order: the UDP sockets once the
/// client's probes arrived, the connection test's shared listener, or the attached streams.
pub(super) fn data_connections(
    ctrl: &mut Conn,
    spec: &TestSpec,
    sockets: Sockets,
    attached: &Receiver<Attaching>,
    shared: &Shared,
    begin_by: Instant,
) -> Result<Vec<Conn>, SessionError> {
    if spec.kind().row().path == DataPath::Udp {
        connect_udp(ctrl, spec, sockets.udp, shared, begin_by)
    } else if let Some(listener) = sockets.crr {
        let listener = Arc::new(listener);
        Ok(spec
            .flows()
            .iter()
            .map(|_| Conn::CrrListener(Arc::clone(&listener)))
            .collect())
    } else {
        collect_streams(spec, attached, shared, begin_by)
    }
}

/// `tcp_crr` tests: the session's own listener, on the address the client reached us at; its
/// responder threads accept from it in turn, answering only the control connection's peer
/// address (`engine::CrrListener`, which makes it listen once its options are set: a
/// connection takes the listener's options when the kernel makes it).
fn open_crr_listener(ctrl: &Conn, spec: &TestSpec) -> Result<Option<CrrListener>, SessionError> {
    if !spec.kind().row().connects {
        return Ok(None);
    }
    let local = ctrl
        .local_addr()
        .ok_or(SessionError::NotIp { tests: "crr tests" })?;
    let addr = SocketAddr::new(local.ip().to_canonical(), 0);
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .and_then(|sock| sock.bind(&addr.into()).map(|()| sock))
        .map_err(SessionError::CrrListener)?;
    let listener: std::net::TcpListener = sock.into();
    // Every accepted connection inherits the listener's options (window, congestion, TOS...).
    SocketOptions::from_spec(spec).apply_listener(&listener)?;
    // Transactions only from the client's address: anyone else is closed unanswered.
    let only_from = ctrl.peer_addr().map(|a| a.ip().to_canonical());
    let crr = CrrListener::new(listener, only_from, 1024).map_err(SessionError::CrrListener)?;
    if !spec.kind().row().carries_data {
        crr.accept_at_handshake()
            .map_err(SessionError::CrrListener)?;
    }
    Ok(Some(crr))
}

/// UDP tests: one socket per stream on the address the client reached us at, plus
/// `flows_dst - 1` more for each stream the server receives.
fn open_udp(
    ctrl: &Conn,
    spec: &TestSpec,
) -> Result<Vec<(UdpSocket, Vec<UdpSocket>)>, SessionError> {
    if spec.kind().row().path != DataPath::Udp {
        return Ok(Vec::new());
    }
    // Only `udp_stream` spreads over ports; `udp_rr` has one socket each way.
    let flows_dst = spec.udp().map_or(1, |u| u.flows_dst);
    let local = ctrl
        .local_addr()
        .ok_or(SessionError::NotIp { tests: "UDP tests" })?;
    // An IPv4 client on the dual-stack listener appears as ::ffff:a.b.c.d; an IPv4 socket for
    // it gets IPv4's don't-fragment setting (IPv6's does not cover IPv4).
    let ip = local.ip().to_canonical();
    if spec.udp().is_some_and(|u| u.engine.sends_frames()) {
        // One block of consecutive ports, the XDP counter's range (`frames.rs`): a stream's
        // destination ports are its slice of it. Frame tests go client to server only.
        let per_stream = flows_dst as usize;
        let mut block =
            super::frames::port_block(ip, spec.flows().len() * per_stream, spec.window_bytes)?;
        let mut out = Vec::new();
        while !block.is_empty() {
            let rest = block.split_off(per_stream.min(block.len()));
            let mut stream = std::mem::replace(&mut block, rest);
            let main = stream.remove(0);
            out.push((main, stream));
        }
        return Ok(out);
    }
    let open =
        || udp_socket(SocketAddr::new(ip, 0), spec.window_bytes).map_err(SessionError::UdpSocket);
    spec.flows()
        .iter()
        .map(|&(_, flow)| {
            let extra = match flow {
                Flow::ClientToServer => flows_dst.saturating_sub(1),
                Flow::ServerToClient => 0,
            };
            Ok((
                open()?,
                (0..extra)
                    .map(|_| open())
                    .collect::<Result<_, SessionError>>()?,
            ))
        })
        .collect()
}

/// Waits for the client's probe on every UDP socket; only the control connection's peer
/// address is accepted, so the server never sends datagrams anywhere else. With several
/// destination ports, the client's further ports come in `UdpPorts` (at that same address).
fn connect_udp(
    ctrl: &mut Conn,
    spec: &TestSpec,
    socks: Vec<(UdpSocket, Vec<UdpSocket>)>,
    shared: &Shared,
    begin_by: Instant,
) -> Result<Vec<Conn>, SessionError> {
    let wait = shared
        .config
        .handshake_timeout
        .min(begin_by.saturating_duration_since(Instant::now()));
    let peer = ctrl
        .peer_addr()
        .ok_or(SessionError::NotIp { tests: "UDP tests" })?;
    let peer_ip = peer.ip().to_canonical();
    let mains: Vec<UdpSocket> = socks
        .iter()
        .map(|(m, _)| m.try_clone())
        .collect::<std::io::Result<_>>()?;
    let sources = accept_probes(&mains, peer_ip, wait).map_err(SessionError::UdpSetup)?;
    drop(mains);
    let flows = spec.flows();
    let (src_flows, flows_dst) = spec.udp().map_or((1, 1), |u| (u.flows, u.flows_dst));
    let client_ports = if flows_dst > 1 && flows.iter().any(|&(_, f)| f == Flow::ServerToClient) {
        match recv::<ClientMsg>(ctrl, wait)? {
            ClientMsg::UdpPorts { extra } => extra,
            other => {
                return Err(SessionError::Unexpected {
                    expected: "udp_ports",
                    got: Box::new(other),
                })
            }
        }
    } else {
        Vec::new()
    };
    socks
        .into_iter()
        .zip(sources)
        .zip(flows)
        .map(|(((sock, extra_recv), source), (stream, flow))| {
            let multi = flows_dst > 1;
            match flow {
                Flow::ClientToServer if multi => Ok(Conn::UdpMulti(UdpMulti {
                    sock,
                    only_from: Some(peer_ip),
                    extra_recv,
                    extra_dst: Vec::new(),
                })),
                // A multi-flow receiver takes every source port of the client's address.
                Flow::ClientToServer if src_flows > 1 => Ok(Conn::UdpFrom(sock, peer_ip)),
                Flow::ClientToServer => sock.connect(source).map(|_| Conn::Udp(sock)),
                Flow::ServerToClient => {
                    sock.connect(source)?;
                    if !multi {
                        return Ok(Conn::Udp(sock));
                    }
                    let ports = client_ports
                        .get(usize::from(stream))
                        .cloned()
                        .unwrap_or_default();
                    Ok(Conn::UdpMulti(UdpMulti {
                        sock,
                        only_from: None,
                        extra_recv: Vec::new(),
                        extra_dst: ports
                            .into_iter()
                            .map(|p| SocketAddr::new(source.ip(), p))
                            .collect(),
                    }))
                }
            }
        })
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(SessionError::UdpSetup)
}

pub(super) fn check_spec(spec: &TestSpec, limits: &SpecLimits) -> Result<(), SessionError> {
    spec.check(limits)?;
    let opts = SocketOptions::from_spec(spec);
    if spec.is_unix() {
        opts.check_unix()?;
    }
    if let Some(name) = spec.tcp().and_then(|t| t.congestion.as_ref()) {
        engine::sockopt::check_congestion(name).map_err(SessionError::Congestion)?;
    }
    if let Some(cpu) = spec.server_cpu {
        let cpus = engine::affinity::online_cpus();
        if cpu as usize >= cpus {
            return Err(SessionError::NoSuchCpu { cpus, cpu });
        }
    }
    Ok(())
}

/// Waits for every data connection the spec needs, in stream-index order.
fn collect_streams(
    spec: &TestSpec,
    rx: &Receiver<Attaching>,
    shared: &Shared,
    begin_by: Instant,
) -> Result<Vec<Conn>, SessionError> {
    let flows = spec.flows();
    let mut slots: Vec<Option<Conn>> = (0..flows.len()).map(|_| None).collect();
    // The deadline moves with progress: a slow path with many streams is not cut off.
    let mut deadline = Instant::now() + shared.config.handshake_timeout;
    // Each stream its flow's options: a bidirectional test may pace each way at its own rate.
    let opts: Vec<SocketOptions> = flows
        .iter()
        .map(|&(_, flow)| SocketOptions::for_flow(spec, flow))
        .collect();
    while slots.iter().any(Option::is_none) {
        let left = deadline
            .min(begin_by)
            .saturating_duration_since(Instant::now());
        let Attaching {
            stream,
            mut conn,
            answer,
        } = match rx.recv_timeout(left) {
            Ok(x) => x,
            Err(RecvTimeoutError::Timeout) if Instant::now() >= begin_by => {
                return Err(SessionError::NotBegun(shared.config.setup_timeout))
            }
            Err(RecvTimeoutError::Timeout) => {
                let got = slots.iter().filter(|s| s.is_some()).count();
                return Err(SessionError::StreamsMissing {
                    got,
                    want: flows.len(),
                    waited: shared.config.handshake_timeout,
                });
            }
            Err(RecvTimeoutError::Disconnected) => return Err(SessionError::Closed),
        };
        let slot = match slots.get_mut(usize::from(stream)) {
            Some(slot @ None) => slot,
            Some(Some(_)) => {
                let message = format!("stream {stream} is already attached");
                let _ = send(&mut conn, &ServerMsg::Error { message });
                continue;
            }
            None => {
                let _ = send(
                    &mut conn,
                    &ServerMsg::Error {
                        message: format!("no stream {stream} in this test"),
                    },
                );
                continue;
            }
        };
        // In range: `slots` has one slot per flow, and the stream's was found above.
        opts[usize::from(stream)].apply_accepted(&conn)?;
        send(
            &mut conn,
            &ServerMsg::Attached {
                stream,
                auth: answer,
            },
        )?;
        *slot = Some(conn);
        deadline = Instant::now() + shared.config.handshake_timeout;
    }
    Ok(slots.into_iter().flatten().collect())
}
