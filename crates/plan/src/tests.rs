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
        kind: Measuring::Sweep,
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
        kind: Measuring::Mesh,
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
    assert_eq!(plan.steps[0].kind, Measuring::Tcp);

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
fn a_brace_naming_no_host_is_an_unknown_host_error_naming_it() {
    use crate::step::{substitute, UnknownHost};
    let hosts = [("a".to_string(), "10.0.0.1".to_string())].into();
    assert_eq!(substitute("x{a}y", &hosts), Ok("x10.0.0.1y".to_string()));
    let err = substitute("{a}:{nope}", &hosts).unwrap_err();
    assert_eq!(err, UnknownHost("nope".into()));
    assert_eq!(err.to_string(), "{nope} names no host in [hosts]");
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
    assert_eq!(plan.steps[1].kind, Measuring::Pps);
}

#[test]
fn the_runners_flags_go_before_the_steps_own_words() {
    let text = "name = \"n\"\n[tags]\nlab = \"x\"\n[[step]]\nname = \"s\"\n\
                run = \"sweep knob --values 1,2 --pre 'set {value}' -- tcp h\"\n";
    let plan = parse(text, "n.toml").unwrap();
    let argv = plan.steps[0].command_line(&plan, "r.db");
    let want = "sweep knob --db r.db --tag lab=x --tag plan=n --tag step=s --values 1,2 \
                --pre set {value} -- tcp h";
    assert_eq!(argv.join(" "), want);
}

mod refusals;
