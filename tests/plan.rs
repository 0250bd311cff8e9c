//! `linerate plan`: steps run in order against in-process servers, a failing step does not
//! stop the others, `--resume` runs only what is missing, `--check` runs nothing, and a bad
//! plan is one line naming its line, exit 2, with nothing run.

use super::*;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs stored with `tags` (K=V each) in `db`.
fn runs(db: &str, tags: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["runs", "--db", db, "--json"];
    for t in tags {
        args.extend(["--tag", t]);
    }
    let v = linerate_json(&args);
    v.as_array().cloned().unwrap_or_default()
}

const PLAN: &str = r#"
name = "smoke"
[tags]
lab = "ci"

[[step]]
name = "send"
run = "tcp -t 0.3 -i 0"
tags = { direction = "send" }

[[step]]
name = "nowhere"
run = "tcp 127.0.0.1 -p 1 -t 0.3"

[[step]]
name = "pre-fails"
run = "tcp -t 0.3"
pre = "false"
post = ["sh", "-c", "echo post-ran > post.txt"]

[[step]]
name = "reverse"
run = ["tcp", "-t", "0.3", "-R", "-i", "0"]
tags = { direction = "reverse" }
"#;

#[test]
fn a_failing_step_does_not_stop_the_plan_and_every_run_is_tagged() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "smoke.toml", PLAN);
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let report = dir.path().join("r.html");
    let out = linerate()
        .current_dir(dir.path())
        .args([
            "plan",
            &plan,
            "--db",
            db,
            "--report",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "failed steps: exit 3: {stderr}");
    assert!(stderr.contains("2 of 4 steps failed"), "{stderr}");
    assert!(
        stderr.contains("nowhere") && stderr.contains("cannot connect"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pre `false` exited with status 1"),
        "{stderr}"
    );
    assert!(
        dir.path().join("post.txt").exists(),
        "post runs after a failed pre"
    );
    let send = runs(db, &["plan=smoke", "step=send", "lab=ci", "direction=send"]);
    let reverse = runs(db, &["plan=smoke", "step=reverse", "direction=reverse"]);
    assert_eq!((send.len(), reverse.len()), (1, 1), "{stderr}");
    assert_eq!(runs(db, &["plan=smoke"]).len(), 2);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("linerate plan smoke"),
        "the report is the plan's"
    );
}

#[test]
fn resume_runs_only_the_steps_without_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let first = "name = \"nightly\"\n[[step]]\nname = \"a\"\nrun = \"tcp -t 0.2 -i 0\"\n";
    let both = format!("{first}[[step]]\nname = \"b\"\nrun = \"rr -t 0.2 -i 0\"\n");
    linerate_ok(&["plan", &write(dir.path(), "one.toml", first), "--db", db]);
    let out = linerate()
        .args([
            "plan",
            &write(dir.path(), "two.toml", &both),
            "--db",
            db,
            "--resume",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("step a already has stored runs"),
        "{stderr}"
    );
    assert_eq!(runs(db, &["plan=nightly", "step=a"]).len(), 1, "a ran once");
    assert_eq!(runs(db, &["plan=nightly", "step=b"]).len(), 1, "b ran");
}

#[test]
fn an_rpm_step_stores_its_direction_tagged_and_a_bad_one_is_caught_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let plan = "name = \"resp\"\n[[step]]\nname = \"up\"\nrun = \"rpm -P 2 -t 2 --direction up\"\n";
    linerate_ok(&["plan", &write(dir.path(), "rpm.toml", plan), "--db", db]);
    let stored = runs(db, &["plan=resp", "step=up", "rpm_direction=up"]);
    assert_eq!(stored.len(), 1, "{stored:?}");
    let bad = plan.replace("-P 2", "-P 0");
    let out = linerate()
        .args(["plan", &write(dir.path(), "bad.toml", &bad), "--check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("step up") && stderr.contains("-P 0"),
        "{stderr}"
    );
}

#[test]
fn check_lists_every_program_a_plan_would_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let plan = format!(
        "name = \"code\"\n\n[[step]]\nname = \"dma\"\nrun = \"tcp -t 0.3\"\npre = [\"touch\", \"{}\"]\npost = \"./put back\"\n\n\
         [[step]]\nname = \"knob\"\nrun = \"sweep knob --values 1,2 --pre 'true {{value}}' -- tcp -t 0.2\"\n\n\
         [[step]]\nname = \"plain\"\nrun = \"tcp -t 0.2\"\n",
        ran.display()
    );
    let ok = linerate_ok(&["plan", &write(dir.path(), "code.toml", &plan), "--check"]);
    assert!(ok.contains("plan code is valid: 3 steps"), "{ok}");
    assert!(ok.contains("a plan file is code"), "{ok}");
    assert!(
        ok.contains(&format!("  step dma: pre: touch {}\n", ran.display())),
        "{ok}"
    );
    assert!(ok.contains("  step dma: post: ./put back\n"), "{ok}");
    assert!(
        ok.contains("  step knob: sweep knob --pre: true {value}\n"),
        "{ok}"
    );
    assert!(!ok.contains("step plain"), "{ok}");
    assert!(!ran.exists(), "--check runs no pre");

    let none = "name = \"n\"\n[[step]]\nname = \"s\"\nrun = \"tcp -t 0.2\"\n";
    let ok = linerate_ok(&["plan", &write(dir.path(), "n.toml", none), "--check"]);
    assert!(ok.contains("it runs no program but linerate"), "{ok}");
}

#[test]
fn check_validates_every_step_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let ok = linerate_ok(&[
        "plan",
        &write(dir.path(), "p.toml", PLAN),
        "--check",
        "--db",
        db,
    ]);
    assert!(ok.contains("plan smoke is valid: 4 steps"), "{ok}");
    assert!(
        !std::path::Path::new(db).exists(),
        "--check opens no database"
    );
}

#[test]
fn a_bad_plan_is_one_line_naming_its_line_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let step = |run: &str| {
        format!("[[step]]\nname = \"s\"\nrun = \"tcp -t 0.2\"\n\n[[step]]\nname = \"t\"\nrun = \"{run}\"\n")
    };
    let cases = [
        (
            "syntax.toml",
            "[[step]\nname = \"s\"\n".to_string(),
            "syntax.toml line 1, column",
        ),
        (
            "kind.toml",
            step("ping 198.18.0.1"),
            "unknown step kind `ping`",
        ),
        (
            "flag.toml",
            step("tcp -P x"),
            "flag.toml line 5: step t: invalid value 'x'",
        ),
        (
            "check.toml",
            step("tcp -t 0"),
            "flag.toml line 5: step t: -t 0 runs until Ctrl-C",
        ),
        ("db.toml", step("tcp --db x.db"), "--db"),
        (
            "key.toml",
            "[[step]]\nname = \"s\"\nrn = \"tcp\"\n".to_string(),
            "unknown key \"rn\"",
        ),
    ];
    for (file, text, needle) in cases {
        let path = write(dir.path(), file, &text);
        let needle = needle.replace("flag.toml", file);
        fails_in_one_line(&["plan", &path, "--db", db], &needle);
    }
    fails_in_one_line(&["plan", "/nonexistent/p.toml"], "/nonexistent/p.toml");
    assert!(
        !std::path::Path::new(db).exists(),
        "nothing ran, nothing stored"
    );
}
