//! Plans read whole: the example of docs/PLANS.md's format, and every refusal with its message,
//! line and column.

use super::*;

const NIGHTLY: &str = r#"# nightly.toml
name = "dma-sweep"

[hosts]
target = "198.18.0.2"
relay = "198.18.0.1"
a = "198.18.1.1"
b = "198.18.1.2"
c = "198.18.1.3"

[tags]
lab = "rack4"

[[step]]
name = "dma-send"
run = "sweep knob --values 16,32,64,128,256,512,1024,2048 --pre 'set-dma {value}' --repeat 3 -- tcp {target} -t 10"
tags = { direction = "send" }
hosts = { target = "198.18.0.3" }
pre = "ethtool -K eth0 gro off"
post = "ethtool -K eth0 gro on"

[[step]]
name = "mesh"
run = ["mesh", "{a}", "{b}", "{c}", "--test", "tcp", "-t", "5"]
"#;

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The message of the refusal of `text` (as `p.toml`).
fn refused(text: &str) -> String {
    match parse(text, "p.toml") {
        Ok(plan) => panic!("accepted: {plan:?}"),
        Err(e) => e.to_string(),
    }
}

/// A plan of one step `run = RUN` (line 3), after `before` (which must end in a newline).
fn one_step(before: &str, step: &str) -> String {
    format!("{before}[[step]]\nname = \"s\"\n{step}\n")
}

#[test]
fn the_example_plan_reads_whole() {
    let plan = parse(NIGHTLY, "nightly.toml").unwrap();
    let dma = Step {
        name: "dma-send".into(),
        line: 14,
        kind: StepKind::Sweep,
        words: strings(&[
            "sweep",
            "knob",
            "--values",
            "16,32,64,128,256,512,1024,2048",
            "--pre",
            "set-dma {value}",
            "--repeat",
            "3",
            "--",
            "tcp",
            "198.18.0.3",
            "-t",
            "10",
        ]),
        tags: tags(&[("lab", "rack4"), ("direction", "send")]),
        pre: Some(strings(&["ethtool", "-K", "eth0", "gro", "off"])),
        post: Some(strings(&["ethtool", "-K", "eth0", "gro", "on"])),
    };
    let mesh = Step {
        name: "mesh".into(),
        line: 22,
        kind: StepKind::Mesh,
        words: strings(&[
            "mesh",
            "198.18.1.1",
            "198.18.1.2",
            "198.18.1.3",
            "--test",
            "tcp",
            "-t",
            "5",
        ]),
        tags: tags(&[("lab", "rack4")]),
        pre: None,
        post: None,
    };
    let expected = Plan {
        name: "dma-sweep".into(),
        tags: tags(&[("lab", "rack4")]),
        steps: vec![dma, mesh],
    };
    assert_eq!(plan, expected);
}

#[test]
fn the_name_defaults_to_the_file_stem() {
    let text = "[[step]]\nname = \"s\"\nrun = \"tcp x\"\n";
    assert_eq!(parse(text, "plans/nightly.toml").unwrap().name, "nightly");
    assert_eq!(parse(text, "nightly.v2.toml").unwrap().name, "nightly.v2");
    assert_eq!(parse(text, "nightly").unwrap().name, "nightly");
    assert_eq!(
        parse(text, "my plan.toml").unwrap_err().to_string(),
        "my plan.toml: the file's stem \"my plan\" cannot be the plan's name (1 to 64 of \
         A-Z a-z 0-9 . _ -); set one with name = \"…\" at the top of the plan"
    );
    let named = format!("name = \"n\"\n{text}");
    assert_eq!(parse(&named, "my plan.toml").unwrap().name, "n");
}

#[test]
fn run_may_be_a_string_or_an_array_of_words() {
    let text = one_step("", r#"run = "tcp 'a b' c\\ d""#);
    let plan = parse(&text, "p.toml").unwrap();
    assert_eq!(plan.steps[0].words, ["tcp", "a b", "c d"]);
    assert_eq!(plan.steps[0].kind, StepKind::Tcp);

    // Array words are taken as they are: no splitting, quotes stay.
    let text = one_step("", r#"run = ["udp", "a b", "'c'", "-b", "1G"]"#);
    let plan = parse(&text, "p.toml").unwrap();
    assert_eq!(plan.steps[0].words, ["udp", "a b", "'c'", "-b", "1G"]);
    assert!(plan.steps[0].kind.is_test());

    let text = one_step("", "run = '''\nrr x\n  -t 5\n'''");
    assert_eq!(
        parse(&text, "p.toml").unwrap().steps[0].words,
        ["rr", "x", "-t", "5"]
    );
}

#[test]
fn hosts_are_substituted_inside_words_and_value_is_left() {
    let hosts = "[hosts]\na = \"10.0.0.1\"\nrelay_2 = \"r2\"\n";
    let run = r#"run = "tcp {a} --from={relay_2} -x {a}:{a} {value} {1} '{a b}' { {{a}} {""#;
    let plan = parse(&one_step(hosts, run), "p.toml").unwrap();
    assert_eq!(
        plan.steps[0].words,
        [
            "tcp",
            "10.0.0.1",
            "--from=r2",
            "-x",
            "10.0.0.1:10.0.0.1",
            "{value}",
            "{1}",
            "{a b}",
            "{",
            "{10.0.0.1}",
            "{",
        ]
    );
    // A step's hosts extend and override the plan's, for that step only; pre and post too.
    let text = format!(
        "{hosts}[[step]]\nname = \"s\"\nrun = \"tcp {{a}} --from {{b}}\"\n\
         hosts = {{ a = \"A\", b = \"B\" }}\npre = [\"ping\", \"-c1\", \"{{a}}\"]\n\
         post = \"ssh {{relay_2}} true\"\n\
         [[step]]\nname = \"t\"\nrun = \"tcp {{a}}\"\n"
    );
    let plan = parse(&text, "p.toml").unwrap();
    assert_eq!(plan.steps[0].words, ["tcp", "A", "--from", "B"]);
    assert_eq!(plan.steps[0].pre, Some(strings(&["ping", "-c1", "A"])));
    assert_eq!(plan.steps[0].post, Some(strings(&["ssh", "r2", "true"])));
    assert_eq!(plan.steps[1].words, ["tcp", "10.0.0.1"]);
}

#[test]
fn a_steps_tags_override_the_plans_in_place() {
    let text = "[tags]\nlab = \"r4\"\nmtu = \"1500\"\n\n[[step]]\nname = \"s\"\nrun = \"tcp x\"\n\
                tags = { mtu = \"9000\", driver = \"velocity\" }\n";
    let plan = parse(text, "p.toml").unwrap();
    assert_eq!(plan.tags, tags(&[("lab", "r4"), ("mtu", "1500")]));
    assert_eq!(
        plan.steps[0].tags,
        tags(&[("lab", "r4"), ("mtu", "9000"), ("driver", "velocity")])
    );
}

#[test]
fn steps_may_be_an_inline_array_of_tables() {
    let text = "name = \"n\"\nstep = [\n  { name = \"a\", run = \"tcp x\" },\n  \
                { name = \"b\", run = \"pps x\" },\n]\n";
    let plan = parse(text, "p.toml").unwrap();
    let lines: Vec<usize> = plan.steps.iter().map(|s| s.line).collect();
    assert_eq!(lines, [3, 4]);
    assert_eq!(plan.steps[1].kind, StepKind::Pps);
}

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
    let kinds = "(kinds: tcp, udp, rr, crr, pps, sweep, rfc2544, mesh)";
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
    let docs = include_str!("../../../docs/PLANS.md");
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
