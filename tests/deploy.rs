//! The deployment files: the systemd unit in contrib/ is one systemd accepts.

use super::*;

#[test]
fn the_systemd_unit_verifies() {
    if std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("systemd-analyze is not installed");
    }
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contrib/linerate.service"
    ))
    .unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/linerate serve"));
    // Verify a copy whose ExecStart names the binary under test (verify checks it exists).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("linerate.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/linerate", env!("CARGO_BIN_EXE_linerate")),
    )
    .unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "{stderr}");
}
