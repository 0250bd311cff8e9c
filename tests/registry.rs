//! The registry of measuring commands (`plan::Measuring`) and what is derived from it: the
//! command line's subcommands, a mesh's `--test`, and the web UI's table of commands and
//! flags, which a test walks argument by argument: nothing that takes a path, a file, a socket
//! or a command is reachable from the UI.

use clap::{Arg, CommandFactory, Parser};
use linerate::cli::Cli;
use linerate::measuring::MeasuringCli;
use linerate::ui_accepts::accepts;
use plan::Measuring;
use ui::accept::is_local;
use ui::{CommandRule, FlagRule};

/// Each command's name with the fewest words it parses with.
fn minimal(kind: Measuring) -> Vec<&'static str> {
    match kind {
        Measuring::Sweep => vec!["sweep", "size"],
        Measuring::Mesh => vec!["mesh", "h"],
        other => vec![other.as_str()],
    }
}

/// Every registry entry is a subcommand of its name, on the command line and alone, and the
/// command parsed from that name is the entry's (`kind` is an exhaustive match, so every
/// variant has one).
#[test]
fn the_subcommands_are_the_registry() {
    let alone = MeasuringCli::command();
    let names: Vec<&str> = alone.get_subcommands().map(|c| c.get_name()).collect();
    assert_eq!(names, Measuring::ALL.map(Measuring::as_str));
    let cli = Cli::command();
    for kind in Measuring::ALL {
        assert!(cli.find_subcommand(kind.as_str()).is_some(), "{kind}");
        let words = std::iter::once("linerate").chain(minimal(kind));
        let parsed = MeasuringCli::try_parse_from(words).unwrap();
        assert_eq!(parsed.command.kind(), kind);
    }
    let mesh = cli.find_subcommand("mesh").unwrap();
    let test = mesh.get_arguments().find(|a| a.get_id() == "test").unwrap();
    let values: Vec<String> = test
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_string())
        .collect();
    assert_eq!(
        values,
        Measuring::tests()
            .map(Measuring::as_str)
            .collect::<Vec<_>>()
    );
}

/// What a flag's definition says of a local thing, whatever its hint: a value of type
/// `PathBuf`, or a value name with a word such as FILE or CMD in it.
fn looks_local(arg: &Arg) -> bool {
    if !arg.get_action().takes_values() {
        return false;
    }
    let path_type =
        arg.get_value_parser().type_id() == std::any::TypeId::of::<std::path::PathBuf>();
    let local_words = [
        "PATH", "FILE", "DIR", "SOCKET", "CMD", "COMMAND", "SCRIPT", "PROGRAM",
    ];
    path_type
        || arg.get_value_names().unwrap_or_default().iter().any(|n| {
            n.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| local_words.contains(&w.to_ascii_uppercase().as_str()))
        })
}

fn walk<'a>(command: &'a clap::Command, into: &mut Vec<(String, &'a Arg)>) {
    for arg in command.get_arguments() {
        into.push((command.get_name().to_string(), arg));
    }
    for sub in command.get_subcommands() {
        walk(sub, into);
    }
}

/// Every argument of every measuring command (and subcommand): one that takes a path, a
/// file, a socket or a command carries its value hint and is refused from the UI, as words
/// and, where the command has it, as an option.
#[test]
fn no_path_or_command_is_reachable_from_the_ui() {
    let table = accepts();
    let mut cli = MeasuringCli::command();
    cli.build();
    let mut args = Vec::new();
    walk(&cli, &mut args);
    assert!(args.len() > 100, "walked {} arguments", args.len());
    let mut local = Vec::new();
    for (command, arg) in args {
        let Some(long) = arg.get_long() else { continue };
        let flag = format!("--{long}");
        if !looks_local(arg) {
            continue;
        }
        assert!(
            is_local(arg),
            "{command} {flag}: a path or command without its value hint"
        );
        assert_eq!(
            table.anywhere(&flag),
            Some(FlagRule::Local),
            "{command} {flag}"
        );
        let raw = format!(r#"{{"args":["tcp","{flag}=x"]}}"#);
        assert!(ui::words(raw.as_bytes(), &table).is_err(), "{raw}");
        let having = |c: &&CommandRule| c.options && c.flags.contains_key(&flag);
        for rule in table.commands.iter().filter(having) {
            let key = long.replace('-', "_");
            let json = format!(r#"{{"kind":"{}","{key}":"x"}}"#, rule.names[0]);
            assert!(ui::words(json.as_bytes(), &table).is_err(), "{json}");
        }
        local.push(flag);
    }
    local.sort();
    local.dedup();
    for known in ["--auth-key", "--chart", "--db", "--post", "--pre", "--unix"] {
        assert!(
            local.iter().any(|f| f == known),
            "{known} not found in {local:?}"
        );
    }
}

/// The table has every measuring command, its record kinds and each flag's spellings.
#[test]
fn the_ui_table_holds_every_measuring_command_and_its_flags() {
    let table = accepts();
    let names: Vec<&str> = table.commands.iter().map(|c| c.names[0].as_str()).collect();
    assert_eq!(names, Measuring::ALL.map(Measuring::as_str));
    let tcp = table.command("tcp").unwrap();
    assert_eq!(tcp.flags["-t"], FlagRule::Allowed { takes_value: true });
    assert_eq!(tcp.flags["-R"], FlagRule::Allowed { takes_value: false });
    assert_eq!(tcp.flags["--unix"], FlagRule::Local);
    let rr = table.command("rr").unwrap();
    assert_eq!(rr.flags["--mps"], FlagRule::Allowed { takes_value: true });
    assert_eq!(
        table.command("sweep").unwrap().refused_subcommands,
        ["knob"]
    );
    assert!(table.by_kind("tcp_stream").is_some() && table.by_kind("sweep").is_none());
    let refused = ui::words(br#"{"args":["sweep","knob","--values","1"]}"#, &table);
    assert!(refused
        .unwrap_err()
        .to_string()
        .starts_with("sweep knob: not from the UI"));
}

/// The page's choice of test is `GET /api/kinds` (form.js builds it; `ui_browser` holds the
/// page's choices to the registry): every measuring command, in the registry's order, each with
/// its few words, and the page lists none of its own.
#[test]
fn the_pages_test_choice_is_the_registry() {
    let page = include_str!("../crates/ui/src/assets/index.html");
    let start = page.find("<select name=\"kind\">").unwrap();
    let end = start + page[start..].find("</select>").unwrap();
    assert!(!page[start..end].contains("<option"), "a hand-kept choice");
    let table = accepts();
    let listed: Vec<(&str, &str)> = (table.commands.iter())
        .map(|c| (c.names[0].as_str(), c.summary.as_str()))
        .collect();
    let registry = Measuring::ALL.map(|k| (k.as_str(), k.summary()));
    assert_eq!(listed, registry);
}
