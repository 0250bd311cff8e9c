//! deploy/kubernetes: the kustomization renders (`kubectl kustomize`), every object validates
//! against the Kubernetes schemas in strict mode (`kubernetes-validate`, which ships them), and
//! every linerate container's arguments are a command line linerate accepts.

use super::*;
use clap::Parser;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/kubernetes");

fn tool(name: &str, arg: &str) -> bool {
    std::process::Command::new(name)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_manifests_render_validate_and_run_linerate_commands() {
    if !tool("kubectl", "version") && !tool("kubectl", "help") {
        return skip("kubectl is not installed (scripts/test.sh installs kubernetes-client)");
    }
    if !tool("kubernetes-validate", "--version") {
        return skip("kubernetes-validate is not installed (scripts/test.sh installs it with pip)");
    }
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", DIR])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let rendered = dir.path().join("all.yaml");
    std::fs::write(&rendered, &out.stdout).unwrap();
    let check = std::process::Command::new("kubernetes-validate")
        .args(["--strict", rendered.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{said}");
    for kind in ["namespace", "daemonset", "service", "job", "cronjob"] {
        assert!(
            said.contains(&format!("passed for resource {kind}/")),
            "{kind}: {said}"
        );
    }
    // Every linerate container's args, parsed as linerate parses its command line.
    let json = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(sys.stdin))))",
        ])
        .stdin(std::fs::File::open(&rendered).unwrap())
        .output()
        .unwrap();
    let docs: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let mut checked = 0;
    for doc in docs.as_array().unwrap() {
        let spec = &doc["spec"];
        let pod = match doc["kind"].as_str() {
            Some("CronJob") => &spec["jobTemplate"]["spec"]["template"]["spec"],
            _ => &spec["template"]["spec"],
        };
        for c in pod["containers"].as_array().into_iter().flatten() {
            if !c["image"]
                .as_str()
                .is_some_and(|i| i.starts_with("linerate"))
            {
                continue;
            }
            let args: Vec<String> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            let argv = std::iter::once("linerate".to_string()).chain(args.clone());
            if let Err(e) = linerate::cli::Cli::try_parse_from(argv) {
                panic!("{} {}: {args:?}: {e}", doc["kind"], c["name"]);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 3, "the server, the job's and the cronjob's mesh");
}
