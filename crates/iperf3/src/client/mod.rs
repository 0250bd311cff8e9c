//! linerate as an iperf3 client (`tcp --iperf3`, `udp --iperf3`): iperf3's control protocol to a stock
//! `iperf3 -s`, linerate's own data plane, intervals and summary. The iperf3 server reports
//! only totals, at the end: the interval rows are this end's counts, and the summary's
//! receiver figures for client → server streams are the bytes the iperf3 server counted.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::protocol::{
    cookie, read_json, stream_ids, write_json, Params, Results, State, MAX_RESULTS_LEN,
};
use engine::sockopt::{connect_tcp, ConnectError, SocketOptions};
use engine::{Conn, Endpoint};
use measure::cpu::CpuTime;
use measure::host::HostFacts;
use record::{Hosts, RunRecord};
use wire::msg::{ServerInfo, ServerResults, StreamCounts, StreamEnd};
use wire::spec::{Amount, DataPath, Direction, Flow, Loss, Params as SpecParams, Transport};
use wire::{TestSpec, WireError};

use session::client::measure::measure_streams;
use session::client::remote::{FarCounts, FarEndLost, Remote};
use session::client::{ClientConfig, ClientError, Progress};
use session::target::Target;
use session::HANDSHAKE_TIMEOUT;

mod udp;

/// iperf3's default port, named in the hint when nothing listens.
pub const IPERF3_PORT: u16 = 5201;

/// Runs one test against a stock iperf3 server and returns its record.
pub fn run(config: &ClientConfig, progress: &mut dyn Progress) -> Result<RunRecord, ClientError> {
    let spec = &config.spec;
    check_supported(spec)?;
    let Target::Tcp { addr, bind } = config.target.clone() else {
        return Err(ClientError::Input(
            "--iperf3 speaks to an iperf3 server over TCP, not a Unix socket".into(),
        ));
    };
    let started_at_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let connect = |opts: &SocketOptions| -> Result<TcpStream, ClientError> {
        match connect_tcp(addr, bind, opts, config.connect_timeout) {
            Ok(Conn::Tcp(s)) => Ok(s),
            Ok(_) => unreachable!("connect_tcp opens TCP"),
            Err(reason) => Err(connect_error(addr, reason)),
        }
    };
    let mut ctrl = connect(&SocketOptions::default())?;
    let mut random = [0u8; 36];
    getrandom::fill(&mut random)
        .map_err(|e| ClientError::Protocol(format!("no random source for the cookie: {e}")))?;
    let cookie = cookie(&random);
    ctrl.write_all(&cookie).map_err(io("sending the cookie"))?;
    expect(&mut ctrl, State::ParamExchange, HANDSHAKE_TIMEOUT)?;
    write_json(&mut ctrl, &params(spec)).map_err(wire("sending the parameters"))?;
    expect(&mut ctrl, State::CreateStreams, HANDSHAKE_TIMEOUT)?;
    let opts = SocketOptions::from_spec(spec);
    let mut conns = Vec::new();
    for _ in spec.flows() {
        if spec.kind().row().path == DataPath::Udp {
            conns.push(udp::connect(addr, bind, spec.window_bytes)?);
            continue;
        }
        let mut s = connect(&opts)?;
        s.write_all(&cookie)
            .map_err(io("opening a data connection"))?;
        conns.push(Endpoint::Socket(Conn::Tcp(s)));
    }
    let client_host = HostFacts::collect(ctrl.local_addr().ok().map(|a| a.ip()));
    let server = ServerInfo {
        version: "iperf3".into(),
        hostname: addr.ip().to_string(),
        cores: 0,
        host: None,
    };
    progress.started(&server, spec);
    let mut remote = Iperf3Server {
        ctrl,
        spec: spec.clone(),
        drain_timeout: config.drain_timeout,
    };
    let measured = measure_streams(config, &mut remote, conns, progress)?;
    let hosts = Hosts {
        client: client_host,
        server: None,
    };
    let summary = analysis::summarize(
        &measured.raw,
        &measured.intervals,
        &hosts,
        analysis::Client::Linerate,
    );
    let target = format!("iperf3 server at {addr}");
    let mut record = RunRecord::new(
        spec.clone(),
        target,
        started_at_unix_ms,
        server,
        Some(hosts),
        summary,
    );
    record.intervals = measured.intervals;
    Ok(record)
}

/// TCP and UDP stream tests, one flow per UDP stream; everything else is refused before
/// connecting.
fn check_supported(spec: &TestSpec) -> Result<(), ClientError> {
    let two_rates = spec.tcp().is_some_and(|t| t.reverse_pacing_bps.is_some())
        || spec.udp().is_some_and(|u| u.reverse_rate.is_some());
    match (&spec.params, spec.params.stream()) {
        _ if two_rates => Err(ClientError::Input(
            "--iperf3: iperf3 has one rate for both directions; give one rate, or test \
             against a linerate server for two (-b A,B)"
                .into(),
        )),
        (_, Some(s)) if s.transport == Transport::Tcp => Ok(()),
        (SpecParams::UdpStream { udp }, _) if udp.flows <= 1 && udp.flows_dst <= 1 => Ok(()),
        (SpecParams::UdpStream { .. }, _) => Err(ClientError::Input(
            "--iperf3: an iperf3 stream is one flow; drop --flows and --flows-dst".into(),
        )),
        _ => Err(ClientError::Input(format!(
            "--iperf3 runs TCP and UDP stream tests (linerate tcp|udp HOST --iperf3), not {}",
            spec.kind().as_str()
        ))),
    }
}

fn connect_error(addr: SocketAddr, reason: ConnectError) -> ClientError {
    let hint = match &reason {
        ConnectError::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            "; is `iperf3 -s` running there, on that port (iperf3's default is -p 5201)?"
        }
        _ => "",
    };
    ClientError::Connect {
        target: addr.to_string(),
        reason,
        hint,
    }
}

fn io(context: &'static str) -> impl Fn(std::io::Error) -> ClientError {
    move |e| ClientError::Protocol(format!("iperf3 server: {context}: {e}"))
}

fn wire(context: &'static str) -> impl Fn(WireError) -> ClientError {
    move |e| ClientError::Protocol(format!("iperf3 server: {context}: {e}"))
}

/// The parameters iperf3's client would send for `spec` (`send_parameters`).
fn params(spec: &TestSpec) -> Params {
    let stream = spec.params.stream().copied();
    let tcp = spec.params.tcp().cloned().unwrap_or_default();
    let direction = spec.params.direction();
    // By amount, iperf3's client sends no time (its -n and -t exclude each other).
    let (time, num, blockcount) = match spec.amount {
        None => (spec.duration_ms.div_ceil(1000), 0, 0),
        Some(Amount::Bytes(n)) => (0, n, 0),
        Some(Amount::Blocks(n)) => (0, 0, n),
    };
    let base = Params {
        time,
        num,
        blockcount,
        parallel: u32::from(spec.streams),
        reverse: (direction == Direction::Reverse).then_some(true),
        bidirectional: (direction == Direction::Bidir).then_some(true),
        window: spec.window_bytes,
        client_version: Some(format!("linerate {}", env!("CARGO_PKG_VERSION"))),
        ..Params::default()
    };
    if let SpecParams::UdpStream { udp } = &spec.params {
        return Params {
            udp: Some(true),
            len: Some(udp.payload_len_bytes),
            bandwidth: Some(udp::bandwidth(udp)),
            udp_counters_64bit: Some(1),
            ..base
        };
    }
    Params {
        tcp: Some(true),
        len: stream.map(|s| s.write_len_bytes),
        bandwidth: tcp.pacing_bps,
        mss: tcp.mss_bytes,
        nodelay: tcp.no_delay.then_some(true),
        congestion: tcp.congestion.clone(),
        tos: tcp.tos,
        // iperf3 3.19+ servers discard with MSG_TRUNC when asked; older ones ignore it and copy.
        // iperf3 has no mapping receive: against it only this end's receivers map.
        skip_rx_copy: stream
            .filter(|s| s.rx_mode == wire::spec::RxMode::Trunc)
            .map(|_| 1),
        ..base
    }
}

/// Reads the next state; the ones that end a test early become errors naming why.
fn read_state(ctrl: &mut TcpStream, wait: Duration) -> Result<State, ClientError> {
    ctrl.set_read_timeout(Some(wait))
        .map_err(io("waiting for its next state"))?;
    let mut b = [0u8; 1];
    match ctrl.read(&mut b) {
        Ok(0) => {
            return Err(ClientError::Protocol(
                "the iperf3 server closed the connection".into(),
            ))
        }
        Ok(_) => {}
        Err(e) => return Err(io("waiting for its next state")(e)),
    }
    match State::from_byte(b[0]) {
        Some(State::AccessDenied) => Err(ClientError::Refused(
            "the iperf3 server is busy with another test (iperf3 -s runs one at a time)".into(),
        )),
        Some(State::ServerError) => {
            let mut codes = [0u8; 8];
            ctrl.read_exact(&mut codes)
                .map_err(io("reading its error"))?;
            let code = i32::from_be_bytes(codes[..4].try_into().unwrap_or_default());
            let errno = i32::from_be_bytes(codes[4..].try_into().unwrap_or_default());
            Err(ClientError::Refused(format!(
                "the iperf3 server failed: its error {code}{}",
                if errno > 0 {
                    format!(" ({})", std::io::Error::from_raw_os_error(errno))
                } else {
                    String::new()
                }
            )))
        }
        Some(State::ServerTerminate) => Err(ClientError::Protocol(
            "the iperf3 server was shut down mid-test".into(),
        )),
        Some(s) => Ok(s),
        None => Err(ClientError::Protocol(format!(
            "the iperf3 server sent state {}, which linerate does not know",
            b[0] as i8
        ))),
    }
}

fn expect(ctrl: &mut TcpStream, want: State, wait: Duration) -> Result<(), ClientError> {
    match read_state(ctrl, wait)? {
        s if s == want => Ok(()),
        other => Err(ClientError::Protocol(format!(
            "the iperf3 server sent {other:?} where {want:?} was due"
        ))),
    }
}

fn send_state(ctrl: &mut TcpStream, state: State) -> std::io::Result<()> {
    ctrl.write_all(&[state.to_byte()])
}

/// A stock iperf3 server: it starts the test itself, reports no counters while it runs, and
/// exchanges totals at the end.
struct Iperf3Server {
    ctrl: TcpStream,
    spec: TestSpec,
    drain_timeout: Duration,
}

impl Remote for Iperf3Server {
    fn local_addr(&self) -> Option<SocketAddr> {
        self.ctrl.local_addr().ok()
    }

    /// By amount: an iperf3 server ends its streams only at the test's end, so this end judges
    /// by its own counts, as iperf3's client does.
    fn amount_moved(&self, spec: &TestSpec, workers: &engine::Workers) -> bool {
        session::client::remote::amount_counted(spec, &workers.snapshot())
    }

    fn engine(&self, spec: &TestSpec) -> Box<dyn engine::StreamEngine> {
        match &spec.params {
            SpecParams::UdpStream { udp } => udp::engine(udp),
            _ => engine::engine_for(spec, Flow::ClientToServer),
        }
    }

    /// The server starts the test: no stream sends before `TEST_RUNNING`, as iperf3's own
    /// client does. Data sent earlier can reach a stream the server has not taken yet, with
    /// its cookie: linerate's server, busy, once read a cookie with 8 KiB of data behind it
    /// and dropped the connection as too long a handshake.
    fn begin(&mut self) -> Result<(), ClientError> {
        expect(&mut self.ctrl, State::TestStart, HANDSHAKE_TIMEOUT)?;
        expect(&mut self.ctrl, State::TestRunning, HANDSHAKE_TIMEOUT)
    }

    fn begun(&mut self) -> Result<(), ClientError> {
        Ok(())
    }

    /// None from the server while it runs: this end's counts stand in for its side, and its
    /// CPU is unknown until the end.
    fn counts(
        &mut self,
        _seq: u64,
        local: &[StreamCounts],
    ) -> Result<Result<FarCounts, FarEndLost>, ClientError> {
        Ok(Ok(FarCounts {
            counts: local.to_vec(),
            cpu: None,
            stand_in: true,
        }))
    }

    fn results(
        &mut self,
        local_at_stop: &[StreamCounts],
        cpu: CpuTime,
        wall: Duration,
    ) -> Result<Result<ServerResults, FarEndLost>, ClientError> {
        let ctrl = &mut self.ctrl;
        let udp_sender = self.spec.kind().row().path == DataPath::Udp
            && self
                .spec
                .flows()
                .iter()
                .any(|(_, f)| *f == Flow::ClientToServer);
        if udp_sender {
            std::thread::sleep(udp::settle(ctrl));
        }
        if let Err(e) = send_state(ctrl, State::TestEnd) {
            let lost = FarEndLost::Foreign {
                server: "iperf3 server",
                error: e,
            };
            return Ok(Err(lost));
        }
        let wait = self.drain_timeout + HANDSHAKE_TIMEOUT;
        expect(ctrl, State::ExchangeResults, wait)?;
        let ours = own_results(&self.spec, local_at_stop, cpu, wall);
        write_json(ctrl, &ours).map_err(wire("sending this end's results"))?;
        let theirs: Results =
            read_json(ctrl, MAX_RESULTS_LEN).map_err(wire("reading its results"))?;
        expect(ctrl, State::DisplayResults, HANDSHAKE_TIMEOUT)?;
        send_state(ctrl, State::IperfDone).map_err(io("ending the test"))?;
        let _ = ctrl.shutdown(std::net::Shutdown::Both);
        server_results(&self.spec, &theirs).map(Ok)
    }
}

/// This end's results as iperf3's client sends them: bytes sent by senders, received by
/// receivers, at the stop.
fn own_results(spec: &TestSpec, at_stop: &[StreamCounts], cpu: CpuTime, wall: Duration) -> Results {
    let sends = spec.flows().iter().any(|(_, f)| *f == Flow::ClientToServer);
    Results::of_end(at_stop, cpu, wall, sends)
}

/// The iperf3 server's totals as a linerate server's results: each stream's bytes (received
/// or sent) at the stop and in total, its CPU, its window (the streams' longest end time).
fn server_results(spec: &TestSpec, r: &Results) -> Result<ServerResults, ClientError> {
    let n = spec.flows().len();
    let window = r.window(Duration::from_millis(spec.duration_ms) + Duration::from_secs(60));
    let (process_cpu, per_stream) = r.cpu_shares(window, n);
    let wall_us = window.as_micros() as u64;
    let mut streams = Vec::with_capacity(n);
    for (i, id) in stream_ids(n).enumerate() {
        let s = r.streams.iter().find(|s| s.id == id).ok_or_else(|| {
            ClientError::Protocol(format!("the iperf3 server's results have no stream {id}"))
        })?;
        let counts = match spec.kind().row().loss {
            Loss::Datagrams => udp::counts(s, spec.flows()[i].1 == Flow::ClientToServer),
            Loss::None | Loss::Transactions => StreamCounts {
                bytes: s.bytes,
                ..StreamCounts::default()
            },
        };
        streams.push(StreamEnd {
            stream: i as u16,
            at_stop: counts,
            total: counts,
            cpu: per_stream,
            tcp_info: None,
            error: None,
        });
    }
    Ok(ServerResults {
        streams,
        wall_us,
        window_us: wall_us,
        process_cpu,
        ..ServerResults::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::{Params as SpecParams, StreamParams};

    fn spec(direction: Direction, streams: u16) -> TestSpec {
        TestSpec::new(
            SpecParams::TcpStream {
                stream: StreamParams::new(direction),
                tcp: Default::default(),
            },
            streams,
            2500,
        )
    }

    #[test]
    fn parameters_name_the_mode_and_round_the_time_up() {
        let p = params(&spec(Direction::Reverse, 2));
        assert_eq!((p.tcp, p.time, p.parallel), (Some(true), 3, 2));
        assert_eq!((p.reverse, p.bidirectional), (Some(true), None));
        let p = params(&spec(Direction::Bidir, 1));
        assert_eq!((p.reverse, p.bidirectional), (None, Some(true)));
    }

    #[test]
    fn the_servers_totals_map_onto_streams_by_iperf3s_ids() {
        let s = spec(Direction::Send, 2);
        let r: Results = serde_json::from_str(
            r#"{"cpu_util_total":50,"cpu_util_user":10,"cpu_util_system":40,"sender_has_retransmits":-1,
                "streams":[{"id":3,"bytes":200,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.5},
                           {"id":1,"bytes":100,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.4}]}"#,
        )
        .unwrap();
        let out = server_results(&s, &r).unwrap();
        assert_eq!(out.streams[0].total.bytes, 100);
        assert_eq!(out.streams[1].at_stop.bytes, 200);
        assert_eq!(out.window_us, 2_500_000);
        assert_eq!(out.process_cpu.sys_us, 1_000_000);
        let missing: Results = serde_json::from_str(r#"{"streams":[]}"#).unwrap();
        assert!(server_results(&s, &missing).is_err());
    }
}
