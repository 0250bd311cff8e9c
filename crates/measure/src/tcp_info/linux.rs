//! Reading TCP_INFO with getsockopt on Linux: the kernel's whole struct, however long.

use std::os::fd::RawFd;

use super::{offset, parse, u32_at, TcpInfo, MAX_INFO_BYTES};

/// Reads TCP_INFO from a connected TCP socket.
pub fn read(fd: RawFd) -> std::io::Result<TcpInfo> {
    let mut buf = [0u8; MAX_INFO_BYTES];
    let len = read_into(fd, &mut buf)?;
    Ok(parse(&buf[..len]))
}

/// The receive MSS of a connected TCP socket (`tcpi_rcv_mss`), bytes: the segment size the
/// receiving end sees, which the records' (sender's) [`TcpInfo`] does not carry. `None` where
/// the kernel did not fill it.
pub fn rcv_mss(fd: RawFd) -> std::io::Result<Option<u32>> {
    let mut buf = [0u8; MAX_INFO_BYTES];
    let len = read_into(fd, &mut buf)?;
    Ok(u32_at(&buf[..len], offset::RCV_MSS))
}

/// Fills `buf` with the socket's TCP_INFO; how many bytes the kernel wrote.
fn read_into(fd: RawFd, buf: &mut [u8; MAX_INFO_BYTES]) -> std::io::Result<usize> {
    let mut len = MAX_INFO_BYTES as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `buf` and reports how many.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((len as usize).min(MAX_INFO_BYTES))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn reads_a_loopback_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        client.write_all(&[0u8; 1000]).unwrap();
        let info = super::read(client.as_raw_fd()).unwrap();
        assert!(
            info.snd_mss_bytes > 0 && info.pmtu_bytes >= 1280,
            "{info:?}"
        );
        // This kernel (4.10+) fills the chrono times and the delivery rate.
        assert!(info.info_bytes.unwrap() >= 192, "{info:?}");
        assert!(
            info.busy_us.is_some() && info.min_rtt_us.is_some(),
            "{info:?}"
        );
    }

    #[test]
    fn not_a_socket_is_an_error() {
        assert!(super::read(-1).is_err());
        assert!(super::rcv_mss(-1).is_err());
    }

    #[test]
    fn a_loopback_receiver_knows_its_receive_mss() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mss = super::rcv_mss(server.as_raw_fd()).unwrap();
        assert!(mss.is_some_and(|m| m > 0), "{mss:?}");
    }
}
