//! A results database on a disk that fills up during the test: the run is printed, the error
//! says it was not stored and where its record went, and that record is the printed one.

use super::*;
use std::process::Command;

/// A 1 MiB tmpfs mounted on a new directory; unmounted when dropped.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Self(dir))
    }

    /// Writes zeros until the disk is full.
    fn fill(&self) {
        let _ = Command::new("dd")
            .args(["if=/dev/zero", "bs=4k"])
            .arg(format!("of={}", self.0.path().join("fill").display()))
            .stderr(std::process::Stdio::null())
            .status();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_after_the_test_keeps_the_record_and_says_where() {
    let Some(disk) = SmallDisk::mount() else {
        return skip("cannot mount a tmpfs here (needs root)");
    };
    let db = disk.0.path().join("runs.db");
    let db = db.to_str().unwrap();
    linerate_ok(&["tcp", "-t", "0.2", "--db", db]);
    let child = linerate()
        .args(["tcp", "-t", "2", "--json", "--db", db])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    disk.fill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("the run was printed but not stored"),
        "{stderr}"
    );
    let kept = stderr
        .split("its record (JSON) is in ")
        .nth(1)
        .unwrap_or_else(|| panic!("{stderr}"))
        .trim();
    let mut printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The printed record says it was not stored; past that, it is the record kept.
    let id = printed.as_object_mut().unwrap().remove("stored_run_id");
    assert_eq!(id, Some(serde_json::Value::Null), "{}", printed);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kept).unwrap()).unwrap();
    assert_eq!(printed, saved);
    let _ = std::fs::remove_file(kept);
}
