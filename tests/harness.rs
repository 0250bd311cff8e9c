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

/// One way to skip: a test that prints that it skips and returns, without the skip log,
/// would count as passed. Every `.rs` file of the workspace is read; an `eprintln!` or
/// `println!` whose text says "skip" followed within three lines by a `return` fails here,
/// naming the file and line.
#[test]
fn no_test_skips_without_the_skip_log() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests", "bench", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut bare = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let prints = line.contains("eprintln!(") || line.contains("println!(");
            if !(prints && line.to_lowercase().contains("skip")) || line.contains("SKIPPED: {name}")
            {
                continue;
            }
            if lines[i + 1..]
                .iter()
                .take(3)
                .any(|l| l.trim_start().starts_with("return"))
            {
                let shown = file.strip_prefix(root).unwrap_or(file).display();
                bare.push(format!("{shown}:{}", i + 1));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "skips without the skip log (call tests/skip.rs's skip(reason) instead): {bare:?}"
    );
}

/// Every `.rs` file under `dir`, `target` directories left out.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name() != Some("target".as_ref()) {
            rust_files(&path, out);
        } else if path.extension() == Some("rs".as_ref()) {
            out.push(path);
        }
    }
}
