//! One vocabulary of flags across commands: docs/FLAGS.md's table, held against every
//! command's clap definition. Every long flag two or more commands take has a row there, with
//! the value it takes and exactly the commands that take it; every command with `--format` has
//! `--json`; every duration takes a unit (`2`, `2s`, `500ms`); `--kind` is always a test kind.

use std::collections::{BTreeMap, BTreeSet};

use clap::CommandFactory;
use linerate::cli::Cli;

/// One row of the table: the flag, the value it takes (`—` for a switch) and its commands.
#[derive(Debug)]
struct Row {
    value: String,
    commands: BTreeSet<String>,
}

/// The rows of docs/FLAGS.md's vocabulary table, by flag (`--time`).
fn table() -> BTreeMap<String, Row> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/FLAGS.md"))
        .expect("docs/FLAGS.md");
    let unquote = |cell: &str| cell.trim().trim_matches('`').to_string();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `--")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        assert_eq!(cells.len(), 4, "flag, value, meaning, commands: {line}");
        let flag = unquote(cells[0].split(',').next().unwrap_or_default());
        let commands = cells[3].split(',').map(unquote).collect();
        let row = Row {
            value: unquote(cells[1]).replace("\\|", "|"),
            commands,
        };
        assert!(rows.insert(flag.clone(), row).is_none(), "{flag} twice");
    }
    assert!(
        rows.len() > 10,
        "the table was not found: {} rows",
        rows.len()
    );
    rows
}

/// Every command (`sweep size` for a nested one) with its long flags, each with its argument.
fn commands() -> BTreeMap<String, BTreeMap<String, clap::Arg>> {
    fn walk(
        cmd: &clap::Command,
        path: &str,
        out: &mut BTreeMap<String, BTreeMap<String, clap::Arg>>,
    ) {
        let mut flags = BTreeMap::new();
        for arg in cmd.get_arguments() {
            // clap's own --help and --version are every command's, and not ours to name.
            let own = !matches!(arg.get_id().as_str(), "help" | "version");
            if let (Some(long), false, true) = (arg.get_long(), arg.is_hide_set(), own) {
                flags.insert(format!("--{long}"), arg.clone());
            }
        }
        if !path.is_empty() && cmd.get_subcommands().next().is_none() {
            out.insert(path.to_string(), flags);
        }
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let name = match path {
                "" => sub.get_name().to_string(),
                p => format!("{p} {}", sub.get_name()),
            };
            walk(sub, &name, out);
        }
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = BTreeMap::new();
    walk(&cmd, "", &mut out);
    out
}

/// The value a flag takes as the table writes it: its value name, `—` for a switch.
fn value_of(arg: &clap::Arg) -> String {
    match arg.get_action().takes_values() {
        true => (arg.get_value_names().unwrap_or_default().iter())
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        false => "—".to_string(),
    }
}

/// Whether `arg`'s parser takes `value` (alone: a command of that one flag parses it).
fn takes(arg: &clap::Arg, value: &str) -> bool {
    let probe = clap::Arg::new("probe")
        .long("probe")
        .action(clap::ArgAction::Set)
        .allow_negative_numbers(true)
        .value_parser(arg.get_value_parser().clone());
    (clap::Command::new("probe").arg(probe))
        .try_get_matches_from(["probe", "--probe", value])
        .is_ok()
}

#[test]
fn every_shared_flag_is_written_down_with_its_commands() {
    let (rows, commands) = (table(), commands());
    let mut taken: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (command, flags) in &commands {
        for flag in flags.keys() {
            taken.entry(flag).or_default().insert(command.clone());
        }
    }
    let mut wrong = Vec::new();
    for (flag, by) in taken.iter().filter(|(_, by)| by.len() > 1) {
        match rows.get(*flag) {
            None => wrong.push(format!(
                "| `{flag}` | {} | ? | {} |: no row",
                by.iter()
                    .map(|c| value_of(&commands[c][*flag]))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join(" or "),
                by.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(row) if row.commands != *by => wrong.push(format!(
                "{flag}: the table says {:?}, the commands are {by:?}",
                row.commands
            )),
            Some(_) => {}
        }
    }
    for (flag, row) in &rows {
        for command in &row.commands {
            let Some(arg) = commands.get(command).and_then(|f| f.get(flag)) else {
                wrong.push(format!("{flag}: {command} has no such flag"));
                continue;
            };
            if !row.value.split(" or ").any(|v| v == value_of(arg)) {
                wrong.push(format!(
                    "{command} {flag} takes {}, the table says {}",
                    value_of(arg),
                    row.value
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "docs/FLAGS.md:\n{}", wrong.join("\n"));
}

#[test]
fn every_format_has_json_beside_it() {
    for (command, flags) in commands() {
        if flags.contains_key("--format") {
            let json = flags.get("--json");
            assert!(json.is_some(), "{command} has --format but no --json");
        }
    }
}

#[test]
fn every_duration_takes_a_unit_and_kind_is_a_test_kind() {
    let mut durations = 0;
    for (command, flags) in commands() {
        for (flag, arg) in flags {
            let value = value_of(&arg);
            assert_ne!(
                value, "SECONDS",
                "{command} {flag}: a duration is a DURATION"
            );
            if value == "DURATION" {
                durations += 1;
                for given in ["2", "2s", "500ms"] {
                    assert!(takes(&arg, given), "{command} {flag} {given} refused");
                }
            }
            if flag == "--kind" {
                assert_eq!(value, "KIND", "{command} --kind is a test kind");
                assert!(takes(&arg, "tcp_stream"), "{command} --kind tcp_stream");
                assert!(!takes(&arg, "throughput"), "{command} --kind throughput");
            }
        }
    }
    assert!(durations >= 10, "{durations} duration flags found");
}

#[test]
fn durations_parse_with_units_on_the_command_line() {
    use clap::Parser;
    let parse = |args: &[&str]| Cli::try_parse_from(args).map_err(|e| e.to_string());
    for t in ["2", "2s", "500ms", "1m"] {
        parse(&["linerate", "tcp", "-t", t, "-i", "500ms", "-O", "0.5s"]).unwrap();
        parse(&["linerate", "udp", "--time", t]).unwrap();
    }
    let err = parse(&["linerate", "tcp", "-t", "2x"]).unwrap_err();
    assert!(err.contains("unknown suffix 'x'"), "{err}");
}
