//! Reading TCP_INFO with getsockopt on Linux.

use std::os::fd::RawFd;

use super::TcpInfo;

/// Reads TCP_INFO from a connected TCP socket.
pub fn read(fd: RawFd) -> std::io::Result<TcpInfo> {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes into it and reports
    // how many; fields beyond what an older kernel fills stay zero.
    let info = unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        info
    };
    Ok(TcpInfo {
        retransmits: info.tcpi_total_retrans,
        rtt_us: info.tcpi_rtt,
        rttvar_us: info.tcpi_rttvar,
        snd_cwnd_segments: info.tcpi_snd_cwnd,
        snd_mss_bytes: info.tcpi_snd_mss,
        pmtu_bytes: info.tcpi_pmtu,
    })
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
    }

    #[test]
    fn not_a_socket_is_an_error() {
        assert!(super::read(-1).is_err());
    }
}
