//! Bulk TCP with in-band *self probes* (responsiveness, `linerate rpm`): the stream is cut into
//! records of [`RECORD`] bytes, each opening with a [`Header`]; a probe is a 1-record request
//! answered by a 1-record response, one of the two travelling inside the loaded direction, so
//! it waits behind the data already queued there (the sender's unsent bytes, the network's
//! queues, the receiver's unread bytes), as a request multiplexed on a loaded HTTP/2
//! connection does.
//!
//! The client is always the requester, so both ends of a probe's time are read from the
//! client's clock:
//! - client sending (upload): the client's sender makes its next record a *request*; the
//!   server's receiver, on reading that record's header, writes a [`Header`] *response* back on
//!   the idle reverse path; the client's sender picks it up between writes;
//! - client receiving (download): the client's receiver writes a request header on the idle
//!   reverse path; the server's sender makes its next record the *response*; the client's
//!   receiver finds it in the stream.
//!
//! Records are small (16 KiB) and writes short (64 KiB), so a response waits for at most one
//! write of the application's own, not for a long system call. The receiver reads without a
//! low-water mark for the same reason. Round trips are handed over for the interval figures
//! every 10 ms and kept whole for the summary.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use measure::cpu::CpuTime;
use measure::latency::Latency;

use crate::{is_retry, pattern, Conn, Endpoint, EngineError, Role, StreamControl, StreamReport};

/// Bytes per record.
pub const RECORD: usize = 16 << 10;
/// Bytes per write call at most.
const WRITE_LEN: usize = 64 << 10;
/// How long a read waits before the requester looks at its schedule again.
const READ_WAIT: Duration = Duration::from_millis(2);
/// Round trips are handed over this often.
const HAND_OVER_EVERY: Duration = Duration::from_millis(10);
/// Requests in flight at most; the schedule waits beyond that.
const MAX_OUTSTANDING: usize = 1024;

/// A record's (or a reverse-path message's) first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the record is.
    pub kind: RecordKind,
    /// The probe's id (0 for bulk).
    pub id: u64,
}

/// What a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// Data only.
    Bulk,
    /// A probe's request.
    Request,
    /// A probe's response.
    Response,
}

impl Header {
    /// Encoded length.
    pub const LEN: usize = 16;
    const MAGIC: [u8; 4] = *b"LRSP";

    /// The header's bytes.
    pub fn encode(self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(&Self::MAGIC);
        b[4] = match self.kind {
            RecordKind::Bulk => 0,
            RecordKind::Request => 1,
            RecordKind::Response => 2,
        };
        b[8..].copy_from_slice(&self.id.to_le_bytes());
        b
    }

    /// Reads a header; `None` for bytes that are not one (a broken or foreign peer).
    pub fn decode(b: &[u8; Self::LEN]) -> Option<Self> {
        if b[..4] != Self::MAGIC {
            return None;
        }
        let kind = match b[4] {
            0 => RecordKind::Bulk,
            1 => RecordKind::Request,
            2 => RecordKind::Response,
            _ => return None,
        };
        let id = u64::from_le_bytes(b[8..].try_into().ok()?);
        Some(Header { kind, id })
    }
}

/// The `tcp_stream` engine with self probes.
#[derive(Debug, Clone)]
pub struct SelfProbe {
    /// Probes per second this end requests (0 on the server: it only answers).
    per_s: f64,
}

impl SelfProbe {
    /// An engine whose end requests `per_s` probes a second (the client's), or answers only.
    pub fn new(per_s: f64) -> Self {
        Self {
            per_s: per_s.max(0.0),
        }
    }
}

impl crate::StreamEngine for SelfProbe {
    fn name(&self) -> &'static str {
        "self_probe"
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mut conn = end.into_socket(self.name())?;
        // Short waits both ways: an answer that arrived is picked up within READ_WAIT, not
        // after a write that blocks until its whole buffer is taken.
        conn.set_write_timeout(Some(READ_WAIT))?;
        conn.set_read_timeout(Some(READ_WAIT))?;
        let cpu_start = CpuTime::thread_now();
        let mut probes = Probes::new(self.per_s);
        let mut report = match role {
            Role::Sender => send(&mut conn, &mut probes, ctl)?,
            Role::Receiver => receive(&mut conn, &mut probes, ctl)?,
        };
        probes.hand_over(ctl);
        report.latency = (self.per_s > 0.0).then_some(probes.all);
        report.cpu = CpuTime::thread_now().since(cpu_start);
        Ok(report)
    }
}

/// One end's probes: the requester's schedule and outstanding requests, the responder's
/// requests to answer, and the round trips measured.
struct Probes {
    every: Option<Duration>,
    next_due: Instant,
    next_id: u64,
    outstanding: VecDeque<(u64, Instant)>,
    to_answer: VecDeque<u64>,
    flooded: bool,
    all: Latency,
    recent: Vec<u64>,
    handed: Instant,
}

impl Probes {
    fn new(per_s: f64) -> Self {
        let now = Instant::now();
        let every = (per_s > 0.0).then(|| Duration::from_secs_f64(1.0 / per_s));
        Self {
            every,
            next_due: now + every.unwrap_or_default(),
            next_id: 1,
            outstanding: VecDeque::new(),
            to_answer: VecDeque::new(),
            flooded: false,
            all: Latency::new(),
            recent: Vec::new(),
            handed: now,
        }
    }

    /// A new request's id if one is due now (the schedule moves on, never bunching up).
    fn due(&mut self, now: Instant) -> Option<u64> {
        let every = self.every?;
        if now < self.next_due || self.outstanding.len() >= MAX_OUTSTANDING {
            return None;
        }
        self.next_due = (self.next_due + every).max(now + every);
        let id = self.next_id;
        self.next_id += 1;
        self.outstanding.push_back((id, now));
        Some(id)
    }

    /// A response to request `id` arrived now.
    fn answered(&mut self, id: u64, now: Instant, ctl: StreamControl<'_>) {
        let Some(at) = self.outstanding.iter().position(|(i, _)| *i == id) else {
            return;
        };
        let (_, sent) = self.outstanding.remove(at).unwrap_or((id, now));
        let ns = now.saturating_duration_since(sent).as_nanos() as u64;
        self.all.record_ns(ns);
        self.recent.push(ns);
        self.maybe_hand_over(now, ctl);
    }

    /// Hands the round trips over once [`HAND_OVER_EVERY`] has passed since the last time.
    fn maybe_hand_over(&mut self, now: Instant, ctl: StreamControl<'_>) {
        if !self.recent.is_empty() && now.saturating_duration_since(self.handed) >= HAND_OVER_EVERY
        {
            self.hand_over(ctl);
            self.handed = now;
        }
    }

    fn hand_over(&mut self, ctl: StreamControl<'_>) {
        if !self.recent.is_empty() {
            ctl.counter.hand_over_latency(&mut self.recent);
        }
    }

    /// A peer that sent more requests than are answered in time is broken or hostile.
    fn check_flood(&self) -> Result<(), EngineError> {
        if self.flooded {
            return Err(EngineError::Io(std::io::Error::new(
                ErrorKind::InvalidData,
                format!(
                    "self probes: the peer asked for more than {MAX_OUTSTANDING} answers at once"
                ),
            )));
        }
        Ok(())
    }

    /// Handles a header read from the peer (a record's, or a reverse-path message's).
    fn on_header(&mut self, h: Header, ctl: StreamControl<'_>) {
        match h.kind {
            RecordKind::Bulk => {}
            // A peer asking for more than an honest requester ever has in flight is refused
            // (after the feed), not queued without bound.
            RecordKind::Request if self.to_answer.len() >= MAX_OUTSTANDING => self.flooded = true,
            RecordKind::Request => self.to_answer.push_back(h.id),
            RecordKind::Response => self.answered(h.id, Instant::now(), ctl),
        }
    }
}

/// Collects headers out of a byte stream cut into records of `record` bytes (the reverse path
/// is a stream of bare headers: `record` = [`Header::LEN`]).
struct Deframer {
    record: usize,
    offset: usize,
    header: [u8; Header::LEN],
}

impl Deframer {
    fn new(record: usize) -> Self {
        Self {
            record,
            offset: 0,
            header: [0; Header::LEN],
        }
    }

    /// Walks `bytes`, handing each completed header to `on`; a header that is not one is an
    /// error naming the peer's offset.
    fn feed(&mut self, mut bytes: &[u8], mut on: impl FnMut(Header)) -> Result<(), EngineError> {
        while !bytes.is_empty() {
            let take = if self.offset < Header::LEN {
                let n = (Header::LEN - self.offset).min(bytes.len());
                self.header[self.offset..self.offset + n].copy_from_slice(&bytes[..n]);
                if self.offset + n == Header::LEN {
                    let h = Header::decode(&self.header).ok_or_else(|| {
                        EngineError::Io(std::io::Error::new(
                            ErrorKind::InvalidData,
                            "self probes: the peer's stream is not in records (a linerate peer of another version?)",
                        ))
                    })?;
                    on(h);
                }
                n
            } else {
                (self.record - self.offset).min(bytes.len())
            };
            self.offset = (self.offset + take) % self.record;
            bytes = &bytes[take..];
        }
        Ok(())
    }
}

fn send(
    conn: &mut Conn,
    probes: &mut Probes,
    ctl: StreamControl<'_>,
) -> Result<StreamReport, EngineError> {
    let records = WRITE_LEN / RECORD;
    let mut buf = pattern(WRITE_LEN);
    let mut reverse = Deframer::new(Header::LEN);
    let mut scratch = [0u8; 4096];
    let (mut total, mut pending) = (0u64, 0usize);
    let mut at = 0usize;
    while !ctl.stop.is_raised() {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        if pending == 0 {
            probes.maybe_hand_over(Instant::now(), ctl);
            // A fresh buffer of records: answers first, then a request if one is due.
            for r in 0..records {
                let now = Instant::now();
                let header = match probes.to_answer.pop_front() {
                    Some(id) => Header {
                        kind: RecordKind::Response,
                        id,
                    },
                    None => match probes.due(now) {
                        Some(id) => Header {
                            kind: RecordKind::Request,
                            id,
                        },
                        None => Header {
                            kind: RecordKind::Bulk,
                            id: 0,
                        },
                    },
                };
                buf[r * RECORD..r * RECORD + Header::LEN].copy_from_slice(&header.encode());
            }
            pending = WRITE_LEN;
            at = 0;
        }
        match conn.write(&buf[at..at + pending]) {
            Ok(n) => {
                total += n as u64;
                at += n;
                pending -= n;
                ctl.counter.publish(total);
            }
            Err(e) if is_retry(e.kind()) => {}
            Err(e) => return Err(e.into()),
        }
        loop {
            // Whatever the peer wrote on the reverse path, without waiting.
            match crate::sys_io::recv_with(conn.as_raw_fd(), &mut scratch, libc::MSG_DONTWAIT) {
                Ok(0) => break,
                Ok(n) => {
                    reverse.feed(&scratch[..n], |h| probes.on_header(h, ctl))?;
                    probes.check_flood()?;
                }
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    break
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    crate::tcp_stream::finish_sending(conn, total, ctl)
}

fn receive(
    conn: &mut Conn,
    probes: &mut Probes,
    ctl: StreamControl<'_>,
) -> Result<StreamReport, EngineError> {
    let mut buf = vec![0u8; WRITE_LEN];
    let mut records = Deframer::new(RECORD);
    let mut total = 0u64;
    loop {
        if ctl.abort.is_raised() {
            return Err(EngineError::Aborted);
        }
        // Requests due go out on the reverse path; answers too (the server's receiver).
        while let Some(id) = probes.to_answer.pop_front() {
            write_header(
                conn,
                Header {
                    kind: RecordKind::Response,
                    id,
                },
            )?;
        }
        let now = Instant::now();
        probes.maybe_hand_over(now, ctl);
        if !ctl.stop.is_raised() {
            if let Some(id) = probes.due(now) {
                write_header(
                    conn,
                    Header {
                        kind: RecordKind::Request,
                        id,
                    },
                )?;
            }
        }
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                ctl.counter.publish(total);
                records.feed(&buf[..n], |h| probes.on_header(h, ctl))?;
                probes.check_flood()?;
            }
            Err(e) if is_retry(e.kind()) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(StreamReport {
        bytes_total: total,
        counts: wire::msg::StreamCounts {
            bytes: total,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Writes one bare header on the reverse path (it is idle: this never waits long).
fn write_header(conn: &mut Conn, h: Header) -> Result<(), EngineError> {
    match conn.write_all(&h.encode()) {
        Ok(()) => Ok(()),
        // The sender has closed and gone: nothing more will be answered.
        Err(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests;
