//! Errors a real path produces: unreachable and refused hosts in namespaces.

use super::*;

#[test]
fn unreachable_host_is_one_clear_error() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("unr");
    // 198.18.0.77 is on the link's subnet but nobody answers ARP for it.
    let out = pair.client(&["tcp", "198.18.0.77", "-t", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("linerate: cannot connect to 198.18.0.77:5301"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}
