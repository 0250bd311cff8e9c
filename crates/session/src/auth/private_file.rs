//! Reading a key file the way ssh reads a private key, without a window between the check and
//! the read: the path is opened once, not following a symbolic link at its end (`O_NOFOLLOW`)
//! and without blocking on a FIFO (`O_NONBLOCK`); the checks run on the open descriptor
//! (`fstat`): a regular file, owned by this process's effective user or by root, with no
//! permission for group or others; the text is read from that same descriptor, at most
//! [`MAX_KEY_FILE_BYTES`]. A file swapped after the open is not the one read; one swapped
//! before it is checked as what it is.

use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use super::keys::KeyError;

/// Largest key file read (a table of thousands of keys is well under it).
pub const MAX_KEY_FILE_BYTES: u64 = 1 << 20;

/// The file's text, if it passes every check above; each refusal names the file and the fix.
pub(super) fn read_private(path: &Path) -> Result<String, KeyError> {
    let refuse = |why: String| KeyError::Unsafe {
        path: path.to_path_buf(),
        why,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => refuse(
                "is a symbolic link; name the file itself (a link could be turned to another \
                 file)"
                    .into(),
            ),
            _ => KeyError::Read {
                path: path.to_path_buf(),
                source,
            },
        })?;
    check_open_file(&file, path)?;
    let mut text = String::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if text.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(refuse(format!(
            "is larger than {MAX_KEY_FILE_BYTES} bytes; a key file holds a line per key"
        )));
    }
    Ok(text)
}

/// The checks on the open descriptor: kind, owner, mode.
fn check_open_file(file: &File, path: &Path) -> Result<(), KeyError> {
    let refuse = |why: String| KeyError::Unsafe {
        path: path.to_path_buf(),
        why,
    };
    let meta = file.metadata().map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Err(refuse(format!("is {what}, not a regular file")));
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid && meta.uid() != 0 {
        return Err(refuse(format!(
            "is owned by user {}, not by this process's user ({euid}) or root; `chown` it",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("lr-private-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn private(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn a_symlink_a_fifo_a_directory_and_an_open_file_are_refused() {
        let dir = dir("kinds");
        let real = dir.join("real.key");
        private(&real, "alice x\n");
        assert_eq!(read_private(&real).unwrap(), "alice x\n");
        let link = dir.join("link.key");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let err = read_private(&link).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        let fifo = dir.join("fifo.key");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_private(&fifo).unwrap_err().to_string();
        assert!(err.contains("is a FIFO, not a regular file"), "{err}");
        let err = read_private(&dir).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        for mode in [0o640, 0o604, 0o620] {
            std::fs::set_permissions(&real, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = read_private(&real).unwrap_err().to_string();
            assert!(err.contains("open to group or others"), "{mode:o}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_owned_by_another_user_is_refused() {
        // SAFETY: no arguments, cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            crate::skip::skip("chown to another user needs root");
            return;
        }
        let dir = dir("owner");
        let path = dir.join("nobody.key");
        private(&path, "alice x\n");
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let err = read_private(&path).unwrap_err().to_string();
        assert!(err.contains("is owned by user 65534"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
