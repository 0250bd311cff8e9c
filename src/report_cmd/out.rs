//! Writing `--out` files whole or not at all: the bytes go to a temporary file in the same
//! directory, are synced, then renamed over the target. A reader (a browser reloading a
//! report, a script watching a chart) never sees half a file, and a failure leaves any
//! previous file as it was.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

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

/// Writes `bytes` to `path` atomically (see the module docs); errors name `--out PATH`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let shown = path.display();
    let tmp = temp_path(path)
        .ok_or_else(|| anyhow!("--out {shown}: not a file name; give a path such as out.html"))?;
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
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow!("--out {shown}: cannot write it: {e}")
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
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_failure_names_the_flag_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomically(&dir.path().join("no/such/dir/x.svg"), b"x")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--out ") && err.contains("cannot write"),
            "{err}"
        );
        // A directory in the way: the rename fails, the temporary is removed.
        let sub = dir.path().join("d.html");
        std::fs::create_dir(&sub).unwrap();
        assert!(write_atomically(&sub, b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
