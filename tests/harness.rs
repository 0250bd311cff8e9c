//! scripts/test.sh's closing lines (scripts/test-counts.sh) over a synthetic cargo log and a
//! skip log written by the skip helper: self-skipped tests move from passed to skipped.

use std::process::Command;

use crate::skip;

#[test]
fn self_skipped_tests_count_as_skipped_not_passed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cargo.log");
    std::fs::write(
        &log,
        "running 3 tests\n\
         test netns::tbf ... ok\n\
         test store::child_writer ... ignored, run by a parent test\n\
         test loopback::send ... ok\n\
         test result: ok. 9 passed; 1 failed; 1 ignored; 0 measured; 4 filtered out; finished in 1.00s\n\
         test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s\n\
         test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
    )
    .unwrap();
    let skips = dir.path().join("skips");
    skip::record(
        &skips,
        "netns::tbf",
        "needs root to create network namespaces",
    );
    skip::record(&skips, "browser::console", "chromium is not\ninstalled");
    // The same line twice (one test reporting twice) is one skipped test.
    skip::record(
        &skips,
        "netns::tbf",
        "needs root to create network namespaces",
    );
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/test-counts.sh"
        ))
        .args([&log, &skips])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "skipped: browser::console: chromium is not installed\n\
         skipped: netns::tbf: needs root to create network namespaces\n\
         skipped: store::child_writer: run by a parent test (ignored)\n\
         tests: 10 passed, 1 failed, 3 skipped\n"
    );
}
