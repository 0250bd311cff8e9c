//! Every refusal of a plan with its message, line and column.

use super::*;

#[test]
fn toml_syntax_errors_name_line_and_column() {
    let e = parse(
        "name = \"n\"\n[[step]]\nname = \"s\nrun = \"tcp\"\n",
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(
        e.position(),
        Some(Position {
            line: 3,
            column: 10
        })
    );
    assert!(matches!(e.problem(), Some(Problem::Syntax { .. })), "{e}");
    assert!(
        e.to_string()
            .starts_with("p.toml line 3, column 10: not valid TOML: "),
        "{e}"
    );

    let e = refused("name = \"n\"\nname = \"m\"\n");
    assert!(
        e.starts_with("p.toml line 2, column 1: not valid TOML: duplicate key"),
        "{e}"
    );
}

#[test]
fn unknown_keys_are_refused_with_the_keys_there() {
    assert_eq!(
        refused("[[step]]\nname = \"s\"\nrn = \"tcp x\"\n"),
        "p.toml line 3, column 1: unknown key \"rn\" in a step (keys: name, run, tags, hosts, \
         pre, post)"
    );
    assert_eq!(
        refused("titel = \"x\"\n[[step]]\nname = \"s\"\nrun = \"tcp x\"\n"),
        "p.toml line 1, column 1: unknown key \"titel\" at the top of the plan (keys: name, \
         hosts, tags, step)"
    );
    assert_eq!(
        refused("[[steps]]\nname = \"s\"\nrun = \"tcp x\"\n"),
        "p.toml line 1, column 3: unknown key \"steps\" at the top of the plan (keys: name, \
         hosts, tags, step)"
    );
}

#[test]
fn values_of_the_wrong_type_are_refused() {
    let cases = [
        (
            "name = 5\n[[step]]\nname = \"s\"\nrun = \"tcp\"\n",
            "line 1, column 8: name must be a string, not an integer",
        ),
        (
            "hosts = \"x\"\n",
            "line 1, column 9: hosts must be a table, not a string",
        ),
        (
            "[hosts]\nx = 1\n",
            "line 2, column 5: host \"x\" must be a string, not an integer",
        ),
        (
            "[tags]\nmtu = 9000\n",
            "line 2, column 7: tag \"mtu\" must be a string, not an integer",
        ),
        (
            "[step]\nname = \"s\"\n",
            "line 1, column 1: step must be an array of tables, not a table; write each step as \
             [[step]]",
        ),
        (
            "step = [\"tcp x\"]\n",
            "line 1, column 9: a step must be a table, not a string",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(refused(text), format!("p.toml {expected}"), "{text}");
    }
    let steps = [
        (
            "run = 5",
            "line 3, column 7: run must be a string or an array of strings, not an integer",
        ),
        (
            "run = [\"tcp\", 5]",
            "line 3, column 15: word 2 of run must be a string, not an integer",
        ),
        (
            "run = \"tcp\"\npre = true",
            "line 4, column 7: pre must be a string or an array of strings, not a boolean",
        ),
        (
            "run = \"tcp\"\ntags = [\"a=b\"]",
            "line 4, column 8: tags must be a table, not an array",
        ),
        (
            "run = \"tcp\"\ntags = { mtu = 1.5 }",
            "line 4, column 16: tag \"mtu\" must be a string, not a float",
        ),
        (
            "run = \"tcp\"\nhosts = { a = [] }",
            "line 4, column 15: host \"a\" must be a string, not an array",
        ),
    ];
    for (step, expected) in steps {
        assert_eq!(
            refused(&one_step("", step)),
            format!("p.toml {expected}"),
            "{step}"
        );
    }
}

#[test]
fn step_names_are_required_valid_and_unique() {
    assert_eq!(
        refused("[[step]]\nrun = \"tcp x\"\n"),
        "p.toml line 1, column 1: this step has no name; add one, e.g. name = \"tcp-send\" \
         (1 to 64 of A-Z a-z 0-9 . _ -)"
    );
    for bad in ["", "a b", "ü", &"x".repeat(65)] {
        assert_eq!(
            refused(&format!("[[step]]\nname = \"{bad}\"\nrun = \"tcp x\"\n")),
            format!(
                "p.toml line 2, column 8: step name {bad:?} is not valid; use 1 to 64 of A-Z \
                 a-z 0-9 . _ -"
            )
        );
    }
    let text =
        "[[step]]\nname = \"a\"\nrun = \"tcp x\"\n\n[[step]]\nname = \"b\"\nrun = \"tcp x\"\n\
                \n[[step]]\nname = \"a\"\nrun = \"udp x\"\n";
    assert_eq!(
        refused(text),
        "p.toml line 10, column 8: step name \"a\" is already the name of the step on line 1; \
         give each step its own name"
    );
    assert_eq!(
        refused("name = \"my plan\"\n[[step]]\nname = \"s\"\nrun = \"tcp\"\n"),
        "p.toml line 1, column 8: plan name \"my plan\" is not valid; use 1 to 64 of A-Z a-z \
         0-9 . _ -"
    );
}

#[test]
fn a_plan_needs_steps_and_a_step_needs_run() {
    let no_steps =
        "p.toml: the plan has no steps; add one with [[step]], name = \"…\" and run = \"…\"";
    assert_eq!(refused("name = \"n\"\n[hosts]\na = \"x\"\n"), no_steps);
    assert_eq!(refused(""), no_steps);
    assert_eq!(refused("step = []\n"), no_steps);
    let e = parse("", "p.toml").unwrap_err();
    assert_eq!((e.position(), e.problem()), (None, Some(&Problem::NoSteps)));
    assert_eq!(
        refused("[[step]]\nname = \"s\"\npre = \"true\"\n"),
        "p.toml line 1, column 1: step s has no run; add the linerate command without \
         `linerate`, e.g. run = \"tcp {target}\""
    );
}

#[test]
fn empty_commands_are_refused() {
    for (step, line, column, key) in [
        ("run = \"\"", 3, 7, "run"),
        ("run = \"  \"", 3, 7, "run"),
        ("run = []", 3, 7, "run"),
        ("run = \"tcp x\"\npost = \"\"", 4, 8, "post"),
    ] {
        let hint = if key == "run" {
            "give the linerate command without `linerate`, e.g. \"tcp {target}\""
        } else {
            "give a command, or remove the key"
        };
        assert_eq!(
            refused(&one_step("", step)),
            format!("p.toml line {line}, column {column}: step s: {key} is empty; {hint}")
        );
    }
}

#[test]
fn unterminated_quotes_and_shell_syntax_name_the_step_and_line() {
    assert_eq!(
        refused(&one_step(
            "",
            "run = \"sweep knob --pre 'set-dma {value} -- tcp x\""
        )),
        "p.toml line 3, column 7: step s: run cannot be split into words: a ' is not closed; \
         close it, or escape it with \\ (\\')"
    );
    assert_eq!(
        refused(&one_step("", "run = 'tcp \"x'")),
        "p.toml line 3, column 7: step s: run cannot be split into words: a \" is not closed; \
         close it, or escape it with \\ (\\\")"
    );
    let e = refused(&one_step(
        "",
        "run = \"tcp x\"\npre = \"ethtool -K eth0 gro off | tee\"",
    ));
    assert!(
        e.starts_with(
            "p.toml line 4, column 7: step s: pre cannot be split into words: '|' is shell syntax"
        ),
        "{e}"
    );
}

#[test]
fn unknown_kinds_are_refused() {
    let kinds = "(kinds: tcp, udp, rr, crr, cc, pps, sweep, rfc2544, mesh, rpm)";
    assert_eq!(
        refused(&one_step("", "run = \"linerate tcp x\"")),
        format!("p.toml line 3, column 7: step s: unknown step kind `linerate` {kinds}")
    );
    assert_eq!(
        refused(&one_step("", "run = [\"TCP\", \"x\"]")),
        format!("p.toml line 3, column 8: step s: unknown step kind `TCP` {kinds}")
    );
}

#[test]
fn flags_the_plan_provides_are_refused() {
    let why_db = "the plan stores every run in one database, the plan's; remove it";
    let why_tag = "put tags in the step's tags = { KEY = \"VALUE\" } or in the plan's [tags]";
    let cases = [
        (
            "run = \"tcp x --db r.sqlite\"",
            "column 7: step s: `--db` in run: ",
            why_db,
        ),
        (
            "run = [\"tcp\", \"x\", \"--db=r.sqlite\"]",
            "column 20: step s: `--db=r.sqlite` in run: ",
            why_db,
        ),
        (
            "run = \"udp x --no-store\"",
            "column 7: step s: `--no-store` in run: ",
            "the plan stores every run (--resume and --report read them); remove it",
        ),
        (
            "run = \"sweep size -- tcp x --tag a=b\"",
            "column 7: step s: `--tag` in run: ",
            why_tag,
        ),
        (
            "run = \"tcp x --tag=a=b\"",
            "column 7: step s: `--tag=a=b` in run: ",
            why_tag,
        ),
    ];
    for (step, at, why) in cases {
        assert_eq!(
            refused(&one_step("", step)),
            format!("p.toml line 3, {at}{why}"),
            "{step}"
        );
    }
    // Inside another word (a --pre command's text) they are that word's business.
    let text = one_step(
        "",
        "run = \"sweep knob --values 1,2 --pre 'x --db {value}' -- tcp h\"",
    );
    assert!(parse(&text, "p.toml").is_ok());
}

#[test]
fn unknown_hosts_are_refused_with_the_known_ones() {
    let hosts = "[hosts]\ntarget = \"t\"\nrelay = \"r\"\n";
    assert_eq!(
        refused(&one_step(hosts, "run = \"tcp {targte}\"")),
        "p.toml line 6, column 7: step s: {targte} is not a host in [hosts] or the step's \
         hosts; known: relay, target"
    );
    assert_eq!(
        refused(&one_step(
            "",
            "run = [\"tcp\", \"{b}\", \"--from\", \"{a}\"]\nhosts = { b = \"B\" }"
        )),
        "p.toml line 3, column 32: step s: {a} is not a host in [hosts] or the step's hosts; \
         known: b"
    );
    assert_eq!(
        refused(&one_step("", "run = \"tcp x\"\npost = \"ssh {box} true\"")),
        "p.toml line 4, column 8: step s: {box} is not a host in [hosts] or the step's hosts; \
         known: none"
    );
}

#[test]
fn host_names_and_hosts_are_checked() {
    let name_rule = "use a letter or _ then letters, digits, _ or -";
    for (key, column) in [("\"1a\"", 1), ("\"a b\"", 1), ("\"a.b\"", 1), ("\"\"", 1)] {
        let e = refused(&format!("[hosts]\n{key} = \"x\"\n"));
        assert!(
            e.starts_with(&format!(
                "p.toml line 2, column {column}: host name {key} is not valid; {name_rule}"
            )),
            "{e}"
        );
    }
    assert_eq!(
        refused("[hosts]\nvalue = \"x\"\n"),
        "p.toml line 2, column 1: host name \"value\" is reserved: {value} is the value of \
         `sweep knob --pre`; use another name"
    );
    assert_eq!(
        refused("[hosts]\na = \"\"\n"),
        "p.toml line 2, column 5: host \"a\" = \"\": give a host name or address, without \
         whitespace"
    );
    assert_eq!(
        refused(&one_step("", "run = \"tcp\"\nhosts = { b = \"x y\" }")),
        "p.toml line 4, column 15: host \"b\" = \"x y\": give a host name or address, without \
         whitespace"
    );
}

#[test]
fn tag_keys_are_checked_and_plan_and_step_are_the_runners() {
    let rule = "a key is not empty and has no whitespace and no =";
    for key in ["\"a b\"", "\"a=b\"", "\"\"", "\"a\\tb\""] {
        assert_eq!(
            refused(&format!("[tags]\n{key} = \"x\"\n")),
            format!("p.toml line 2, column 1: tag key {key} is not valid; {rule}"),
        );
    }
    let runner = "is set by the runner (plan=NAME and step=NAME on every run); use another key";
    assert_eq!(
        refused("[tags]\nplan = \"x\"\n"),
        format!("p.toml line 2, column 1: tag \"plan\" {runner}")
    );
    assert_eq!(
        refused(&one_step("", "run = \"tcp x\"\ntags = { step = \"x\" }")),
        format!("p.toml line 4, column 10: tag \"step\" {runner}")
    );
}

#[test]
fn load_reads_a_file_and_names_an_unreadable_one() {
    let dir = std::env::temp_dir().join(format!("linerate-plan-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("nightly.toml");
    std::fs::write(&path, NIGHTLY.replace("name = \"dma-sweep\"\n", "")).unwrap();
    let plan = load(&path).unwrap();
    assert_eq!(plan.name, "nightly");
    assert_eq!(plan.steps.len(), 2);

    std::fs::write(&path, "[[step]]\nname = \"s\"\nrn = \"tcp\"\n").unwrap();
    let e = load(&path).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{} line 3, column 1: unknown key", path.display())),
        "{e}"
    );

    let missing = dir.join("missing.toml");
    let e = load(&missing).unwrap_err();
    assert!(matches!(e, PlanError::Read { .. }));
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read it: ", missing.display())),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_plans_in_the_docs_are_valid() {
    let docs = include_str!("../../../../docs/PLANS.md");
    let plans: Vec<&str> = docs
        .split("```toml\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .filter(|block| block.contains("[[step]]"))
        .collect();
    assert_eq!(
        plans.len(),
        3,
        "the first plan, the host example and the worked example"
    );
    for text in &plans {
        if let Err(e) = parse(text, "docs.toml") {
            panic!("{e}\n{text}");
        }
    }
    let worked = parse(plans[2], "velocity-dma.toml").unwrap();
    let names: Vec<&str> = worked.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dma-send", "dma-reverse", "mesh", "a-to-b"]);
    let reverse = &worked.steps[1];
    assert_eq!(reverse.words[5], "./set-dma {value}");
    assert_eq!(
        reverse.words[8..],
        ["--", "tcp", "198.18.0.2", "-t", "10", "-R"]
    );
    assert_eq!(
        reverse.tags,
        tags(&[
            ("driver", "velocity"),
            ("lab", "rack4"),
            ("direction", "reverse")
        ])
    );
    assert_eq!(
        worked.steps[3].words[..4],
        ["tcp", "198.18.1.12", "--from", "198.18.1.11"]
    );
}
