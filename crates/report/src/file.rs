//! Output files written whole or not at all: the bytes go to a temporary file in the same
//! directory, are synced, then renamed over the target. A reader (a browser reloading a
//! report, a script watching a chart) never sees half a file, and a failure leaves any
//! previous file as it was. Every file a command writes by name (`--out`, `--chart`) goes
//! through [`write_whole`].

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// The temporary file beside `path`: `.NAME.PID.tmp` in the same directory, so the rename
/// stays on one file system.
fn temp_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(dir.join(format!(".{name}.{}.tmp", std::process::id())))
}

/// Writes `bytes` to `path` whole (see the module docs). A path with no file name (`/`,
/// `..`) is `InvalidInput`; on any failure the temporary file is removed.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_path(path).ok_or_else(|| {
        std::io::Error::new(
            ErrorKind::InvalidInput,
            "not a file name; give a path such as out.html",
        )
    })?;
    let written = (|| -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        std::fs::write(&path, b"old").unwrap();
        write_whole(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_failure_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_whole(&dir.path().join("no/such/dir/x.svg"), b"x").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(
            write_whole(Path::new("/"), b"x").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        // A directory in the way: the rename fails, the temporary is removed.
        let sub = dir.path().join("d.html");
        std::fs::create_dir(&sub).unwrap();
        assert!(write_whole(&sub, b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
