//! A deterministic engine for tests of the orchestration: the sender writes exactly
//! `bytes_per_stream` bytes then waits for `stop`; the receiver reads to end of stream.

use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;

use measure::cpu::CpuTime;

use crate::{
    Endpoint, EngineError, Role, StreamControl, StreamEngine, StreamReport, POLL_INTERVAL,
};

/// The mock engine.
#[derive(Debug, Clone)]
pub struct MockEngine {
    /// Bytes each sender writes in total.
    pub bytes_per_stream: u64,
}

impl StreamEngine for MockEngine {
    fn name(&self) -> &'static str {
        "mock"
    }

    fn run(
        &self,
        end: Endpoint,
        role: Role,
        ctl: StreamControl<'_>,
    ) -> Result<StreamReport, EngineError> {
        let mut conn = end.into_socket(self.name())?;
        conn.set_read_timeout(Some(POLL_INTERVAL))?;
        let mut total = 0u64;
        match role {
            Role::Sender => {
                let chunk = [0x5au8; 1000];
                while total < self.bytes_per_stream {
                    let n = (self.bytes_per_stream - total).min(chunk.len() as u64) as usize;
                    conn.write_all(&chunk[..n])?;
                    total += n as u64;
                    ctl.counter.publish(total);
                }
                while !ctl.stop.is_raised() && !ctl.abort.is_raised() {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                conn.shutdown(Shutdown::Write)?;
            }
            Role::Receiver => {
                let mut buf = [0u8; 4096];
                loop {
                    if ctl.abort.is_raised() {
                        return Err(EngineError::Aborted);
                    }
                    match conn.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            total += n as u64;
                            ctl.counter.publish(total);
                        }
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Ok(StreamReport {
            bytes_total: total,
            cpu: CpuTime::default(),
            tcp_info: None,
            latency: None,
            lost_transactions: 0,
            slots_missed: 0,
            frame_path: None,
            frame_fallback: None,
            counts: wire::msg::StreamCounts {
                bytes: total,
                ..Default::default()
            },
        })
    }
}
