//! The control-channel handshake shared by client and server: hello both ways, then frames.

use std::io::Write;
use std::time::Duration;

use engine::Conn;
use wire::auth::{Nonce, NONCE_LEN};
use wire::{frame, Hello, WireError, HELLO_LEN};

/// How long either side waits for the peer during setup.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends our hello and reads the server's greeting: its hello (magic and version checked
/// before anything else is read, so an older server's is reported as a version mismatch),
/// then its nonce.
pub fn exchange_hello(conn: &mut Conn, timeout: Duration) -> Result<(Hello, Nonce), WireError> {
    conn.set_read_timeout(Some(timeout))?;
    conn.set_write_timeout(Some(timeout))?;
    conn.write_all(&Hello::ours().emit())?;
    let mut buf = [0u8; HELLO_LEN];
    frame::read_full(conn, &mut buf, false, timeout)?;
    let hello = Hello::parse(&buf)?;
    hello.check_version()?;
    let mut nonce = [0u8; NONCE_LEN];
    frame::read_full(conn, &mut nonce, true, timeout)?;
    Ok((hello, Nonce(nonce)))
}

/// Sends one message.
pub fn send<T: serde::Serialize>(conn: &mut Conn, msg: &T) -> Result<(), WireError> {
    frame::write_frame(conn, msg)
}

/// Receives one message, waiting at most `timeout`.
pub fn recv<T: serde::de::DeserializeOwned>(
    conn: &mut Conn,
    timeout: Duration,
) -> Result<T, WireError> {
    conn.set_read_timeout(Some(timeout))?;
    frame::read_frame(conn, timeout)
}
