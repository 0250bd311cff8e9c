//! What a test's socket buffers got from this host, in words: the kernel caps them at
//! net.core.rmem_max / wmem_max whatever a test asks for.

use measure::units::format_bytes;

/// The line that says this host grants `granted` bytes of socket buffer where `want` were
/// asked for: a warning when `--window` asked (`asked`), a note when it is linerate's own UDP
/// default, which high packet rates need (stock kernels allow 208 KiB); `None` when granted.
pub fn line(granted: u32, want: u32, asked: bool) -> Option<String> {
    let (granted, want) = (granted as u64, want as u64);
    if granted >= want {
        return None;
    }
    let (granted, want) = (format_bytes(granted), format_bytes(want));
    Some(match asked {
        true => format!(
            "warning: --window: this host grants {granted} of the {want} asked for \
             (net.core.rmem_max / wmem_max cap it; raise them with sysctl)"
        ),
        false => format!(
            "note: UDP socket buffers are capped at {granted} (net.core.rmem_max / wmem_max); at \
             high packet rates datagrams may be dropped at the receiving socket (counted as lost)"
        ),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_buffer_smaller_than_asked_is_said() {
        assert_eq!(super::line(4 << 20, 4 << 20, true), None);
        let w = super::line(212_992, 4 << 20, true).unwrap();
        assert!(
            w.starts_with("warning: --window: this host grants 208 KiB of the 4.00 MiB"),
            "{w}"
        );
        assert!(super::line(212_992, 4 << 20, false)
            .unwrap()
            .starts_with("note: UDP"));
    }
}
