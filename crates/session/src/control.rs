//! The control-channel handshake shared by client and server: hello both ways, then frames.
//!
//! The server writes with [`send_within`]: one deadline for the whole message, however slowly
//! the peer reads, so a client that stops reading its control connection cannot hold a
//! session thread (and its slot) in a write.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use engine::Conn;
use wire::auth::{Nonce, NONCE_LEN};
use wire::{frame, Hello, WireError, HELLO_LEN};

/// How long either side waits for the peer during setup.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a server may say nothing before the client is told what it may be: a linerate
/// server greets at once, a stock iperf3 server waits for a cookie it is never sent. The wait
/// itself goes on to the handshake's timeout (a loaded server may be slow to greet).
pub const SILENCE_NOTICE_AFTER: Duration = Duration::from_secs(1);

/// Sends our hello and reads the server's greeting: its hello (magic and version checked
/// before anything else is read, so an older server's is reported as a version mismatch),
/// then its nonce. A server silent for [`SILENCE_NOTICE_AFTER`] is told to `on_silence`, once.
pub fn exchange_hello(
    conn: &mut Conn,
    timeout: Duration,
    on_silence: &mut dyn FnMut(Duration),
) -> Result<(Hello, Nonce), WireError> {
    conn.set_write_timeout(Some(timeout))?;
    conn.write_all(&Hello::ours().emit())?;
    let mut buf = [0u8; HELLO_LEN];
    first_byte(conn, &mut buf[..1], timeout, on_silence)?;
    frame::read_full(conn, &mut buf[1..], true, timeout)?;
    let hello = Hello::parse(&buf)?;
    hello.check_version()?;
    let mut nonce = [0u8; NONCE_LEN];
    frame::read_full(conn, &mut nonce, true, timeout)?;
    Ok((hello, Nonce(nonce)))
}

/// The greeting's first byte, within `timeout` (else [`WireError::Silent`]); after
/// [`SILENCE_NOTICE_AFTER`] without it, `on_silence` is told and the wait goes on. Leaves the
/// read timeout at `timeout`.
fn first_byte(
    conn: &mut Conn,
    byte: &mut [u8],
    timeout: Duration,
    on_silence: &mut dyn FnMut(Duration),
) -> Result<(), WireError> {
    let notice = SILENCE_NOTICE_AFTER.min(timeout);
    conn.set_read_timeout(Some(notice))?;
    let first = frame::read_full(conn, byte, false, notice);
    conn.set_read_timeout(Some(timeout))?;
    match first {
        Err(WireError::Timeout(_)) if notice < timeout => {
            on_silence(notice);
            frame::read_full(conn, byte, false, timeout - notice)
        }
        other => other,
    }
    .map_err(|e| match e {
        WireError::Timeout(_) => WireError::Silent(timeout),
        e => e,
    })
}

/// Sends one message, waiting as long as the socket's write timeout allows per write.
pub fn send<T: serde::Serialize>(conn: &mut Conn, msg: &T) -> Result<(), WireError> {
    frame::write_frame(conn, msg)
}

/// Sends one message, giving the peer at most `timeout` to take all of it: a peer that reads
/// slowly or not at all fails the send with an error naming the wait, instead of blocking the
/// caller. Each write waits only for what is left of the deadline (SO_SNDTIMEO, one
/// setsockopt per write: control messages are few).
pub fn send_within<T: serde::Serialize>(
    conn: &mut Conn,
    msg: &T,
    timeout: Duration,
) -> Result<(), WireError> {
    let mut buf = Vec::with_capacity(256);
    frame::encode(msg, &mut buf)?;
    let deadline = Instant::now() + timeout;
    let mut sent = 0;
    while sent < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(not_read(timeout));
        }
        conn.set_write_timeout(Some(left))?;
        match conn.write(&buf[sent..]) {
            Ok(0) => return Err(std::io::Error::from(ErrorKind::WriteZero).into()),
            Ok(n) => sent += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(not_read(timeout))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn not_read(timeout: Duration) -> WireError {
    WireError::Io(std::io::Error::new(
        ErrorKind::TimedOut,
        format!("the peer did not read a control message within {timeout:?} (it stopped reading its control connection)"),
    ))
}

/// Receives one message, waiting at most `timeout` for all of it: a peer that trickles a
/// frame a byte at a time runs out of time as one that sends nothing does.
pub fn recv<T: serde::de::DeserializeOwned>(
    conn: &mut Conn,
    timeout: Duration,
) -> Result<T, WireError> {
    let mut reader = ReadBy {
        conn,
        until: Instant::now() + timeout,
    };
    frame::read_frame(&mut reader, timeout)
}

/// A connection read and written with one deadline for everything that goes through it:
/// each call waits only for what is left (SO_RCVTIMEO or SO_SNDTIMEO set before it), and
/// fails with `TimedOut` once nothing is.
pub struct ReadBy<'a> {
    pub conn: &'a mut Conn,
    pub until: Instant,
}

impl ReadBy<'_> {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for ReadBy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.conn.set_read_timeout(Some(self.left()?))?;
        self.conn.read(buf)
    }
}

impl Write for ReadBy<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.conn.set_write_timeout(Some(self.left()?))?;
        self.conn.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_peer_that_never_reads_fails_the_send_at_its_deadline() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut conn = Conn::Unix(a);
        let big = "x".repeat(64 << 10);
        let t0 = Instant::now();
        let err = (0..1000)
            .find_map(|_| send_within(&mut conn, &big, Duration::from_millis(200)).err())
            .expect("the socket buffer fills");
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert!(err.to_string().contains("did not read"), "{err}");
    }

    #[test]
    fn a_trickled_frame_runs_out_of_time_as_a_whole() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut conn = Conn::Unix(a);
        let t0 = Instant::now();
        let trickler = std::thread::spawn(move || {
            // A frame of 100 bytes, one byte every 50 ms: each read is quick, the whole is not.
            let mut frame = vec![0, 0, 0, 100];
            frame.extend_from_slice(&[b' '; 100]);
            for byte in frame {
                if b.write_all(&[byte]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let err = recv::<wire::ClientMsg>(&mut conn, Duration::from_millis(300)).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert!(matches!(err, WireError::Timeout(_)), "{err}");
        drop(conn);
        trickler.join().unwrap();
    }
}
