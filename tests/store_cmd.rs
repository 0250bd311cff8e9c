//! Tests of the store subcommands, and of the store flags as wired, over a temporary database.

use std::path::PathBuf;

use linerate::store_args::{store_run, StoreArgs};
use linerate::store_cmd::*;
use report::stored::{write_csv, write_stored, write_table};
use results::store::RunId;
use results::store::{Filter, RunRow, Store, Tags};
use results::RunRecord;

#[test]
fn flags_parse_as_wired() {
    use clap::Parser;
    use linerate::cli::{Cli, Command};
    let cli = Cli::try_parse_from([
        "linerate",
        "tcp",
        "--tag",
        "driver=velocityget",
        "--tag",
        "mtu=9000",
        "--db",
        "/x",
    ])
    .unwrap();
    let Command::Tcp(tcp) = cli.command else {
        panic!("not tcp")
    };
    let store = &tcp.common.store;
    assert_eq!(store.tag, ["driver=velocityget", "mtu=9000"]);
    assert_eq!(store.db, Some(PathBuf::from("/x")));
    assert!(Cli::try_parse_from(["linerate", "tcp", "--no-store", "--tag", "a=b"]).is_err());
    assert!(Cli::try_parse_from(["linerate", "runs", "--json", "--csv"]).is_err());
    let cli = Cli::try_parse_from(["linerate", "show", "#12", "--json"]).unwrap();
    let Command::Show(show) = cli.command else {
        panic!("not show")
    };
    assert_eq!((show.run.as_str(), show.json), ("#12", true));
}

fn row(id: i64) -> RunRow {
    RunRow {
        id: RunId(id),
        started_at_unix_ms: 1_779_235_200_000,
        kind: wire::TestKind::TcpRr,
        target: "127.0.0.1:5301".into(),
        tags: Tags::parse(["mtu=9000", "driver=x"]).unwrap(),
        interrupted: id == 2,
        hostname: "lab-a".into(),
        duration_s: Some(10.0),
        throughput_bps: Some(9.41e9),
        local_cpu_pct: Some(51.7),
        remote_cpu_pct: Some(54.6),
        retransmits: None,
        rtt_us: None,
        transactions_per_s: Some(38_678.5),
        p50_us: Some(25.567),
        p99_us: None,
        loss_pct: None,
        pps_received: None,
    }
}

#[test]
fn table_and_csv() {
    let mut out = Vec::new();
    write_table(&mut out, &[row(1), row(2)]).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("RUN  STARTED "), "{text}");
    assert!(
        lines[0].contains("TRANS/S") && lines[0].contains("P50 us"),
        "{text}"
    );
    assert!(
        !lines[0].contains("LOSS") && !lines[0].contains("RETR") && !lines[0].contains("P99"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("#1 ") && lines[1].ends_with("driver=x,mtu=9000"),
        "{text}"
    );
    assert!(
        lines[1].contains("9.41 Gbit/s") && lines[1].contains("52/55"),
        "{text}"
    );
    assert!(lines[2].starts_with("#2*"), "{text}");
    assert_eq!(lines[3], "* interrupted: the figures cover what ran");

    let mut out = Vec::new();
    write_csv(&mut out, &[row(1)]).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("id,started_at_unix_ms,kind,target,tags,"));
    assert_eq!(
        lines[1],
        "1,1779235200000,tcp_rr,127.0.0.1:5301,\"driver=x,mtu=9000\",false,lab-a,10,9410000000,51.7,54.6,,,38678.5,25.567,,,"
    );
    let mut out = Vec::new();
    write_table(&mut out, &[]).unwrap();
    assert_eq!(out, b"no runs\n");
}

#[test]
fn stores_and_lists_through_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub/results.sqlite");
    let record: RunRecord =
        serde_json::from_str(include_str!("../crates/results/tests/fixtures/rr.json")).unwrap();
    let args = StoreArgs {
        db: Some(db.clone()),
        no_store: false,
        tag: vec!["mtu=9000".into()],
    };
    let id = store_run(&args, &record).unwrap();
    assert_eq!(id, Some(RunId(1)));
    let none = StoreArgs {
        no_store: true,
        ..args.clone()
    };
    assert_eq!(store_run(&none, &record).unwrap(), None);
    let store = Store::open_existing(&db).unwrap();
    let rows = store.list(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 1);
    let mut out = Vec::new();
    write_stored(&mut out, &store.get(RunId(1)).unwrap()).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("run #1: tcp_rr to "), "{text}");
    assert!(text.contains("tags      mtu=9000"), "{text}");
    assert!(text.contains("--- summary: tcp_rr"), "{text}");

    // `linerate runs` and `linerate show` over it.
    let list = |f: fn(&mut RunsArgs)| {
        let mut a = RunsArgs {
            db: Some(db.clone()),
            ..RunsArgs::default()
        };
        f(&mut a);
        let mut out = Vec::new();
        runs_to(&a, &mut out).map(|()| String::from_utf8(out).unwrap())
    };
    assert!(list(|_| {}).unwrap().contains("#1 "));
    assert!(list(|a| a.filter.tag = vec!["mtu=9000".into()])
        .unwrap()
        .contains("#1 "));
    assert_eq!(
        list(|a| a.filter.tag = vec!["mtu=1500".into()]).unwrap(),
        "no runs\n"
    );
    assert_eq!(
        list(|a| a.filter.kind = Some("udp_rr".into())).unwrap(),
        "no runs\n"
    );
    assert!(list(|a| a.filter.since = Some("2020-01-01".into()))
        .unwrap()
        .contains("#1 "));
    let json: serde_json::Value = serde_json::from_str(&list(|a| a.json = true).unwrap()).unwrap();
    assert_eq!(json[0]["id"], 1);
    assert_eq!(json[0]["tags"]["mtu"], "9000");
    assert_eq!(list(|a| a.csv = true).unwrap().lines().count(), 2);
    let err = list(|a| a.filter.kind = Some("tcp".into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--kind tcp: not a test kind; expected one of"),
        "{err}"
    );
    let err = list(|a| a.filter.since = Some("May 20".into()))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--since May 20: not a date"), "{err}");
    let show = |run: &str, json: bool| {
        let a = ShowArgs {
            run: run.into(),
            json,
            db: Some(db.clone()),
        };
        let mut out = Vec::new();
        show_to(&a, &mut out).map(|()| String::from_utf8(out).unwrap())
    };
    assert!(show("#1", false).unwrap().starts_with("run #1: tcp_rr"));
    let json: serde_json::Value = serde_json::from_str(&show("1", true).unwrap()).unwrap();
    assert_eq!(json["record"]["kind"], "tcp_rr");
    let err = show("#7", false).unwrap_err().to_string();
    assert!(err.starts_with("run #7: no such run in "), "{err}");
    let err = show("seven", false).unwrap_err().to_string();
    assert_eq!(
        err,
        "linerate show seven: a run id is a positive number such as 12 or #12; \
         `linerate runs` lists them"
    );

    // A bad tag is refused before anything is opened.
    let bad = StoreArgs {
        db: Some(dir.path().join("never.sqlite")),
        no_store: false,
        tag: vec!["mtu".into()],
    };
    assert!(bad.open().is_err());
    assert!(!dir.path().join("never.sqlite").exists());
    // A read-only database: one line, says how to go on, file untouched.
    use std::os::unix::fs::PermissionsExt;
    drop(store);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = std::fs::read(&db).unwrap();
    let err = store_run(&args, &record).unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("read-only") && msg.contains("--no-store"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    assert_eq!(std::fs::read(&db).unwrap(), before);
}
