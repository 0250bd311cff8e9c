//! Tests of the store subcommands, and of the store flags as wired, over a temporary database.

use std::path::PathBuf;

use linerate::store_args::{store_run, StoreArgs};
use linerate::store_cmd::*;
use record::{RunId, RunRecord, RunRow, Tags};
use report::stored::{write_csv, write_stored, write_table};
use results::store::{Filter, Store};

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
    let Command::Measuring(linerate::measuring::MeasuringArgs::Tcp(tcp)) = cli.command else {
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
        direction: None,
        streams: 1,
        status: if id == 2 {
            record::RunStatus::Interrupted
        } else {
            record::RunStatus::Ok
        },
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
        lines[0].contains("TARGET") && lines[0].contains("STATUS") && lines[0].contains("RESULT"),
        "{text}"
    );
    assert!(lines[0].contains("P50 us"), "{text}");
    assert!(
        !lines[0].contains("LOSS") && !lines[0].contains("RETR") && !lines[0].contains("P99"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("#1 ") && lines[1].ends_with("driver=x,mtu=9000"),
        "{text}"
    );
    // A request/response run heads with its transactions, not its throughput.
    assert!(
        lines[1].contains("38678 trans/s") && lines[1].contains("52/55"),
        "{text}"
    );
    assert!(lines[1].contains(" ok "), "{text}");
    assert!(lines[2].contains(" interrupted "), "{text}");
    assert_eq!(
        lines[3],
        "interrupted: stopped with Ctrl-C; the figures cover what ran"
    );
    assert!(lines[4].contains("--include-incomplete"), "{text}");

    let mut out = Vec::new();
    write_csv(&mut out, &[row(1)]).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("id,started_at_unix_ms,kind,target,tags,"));
    assert_eq!(
        lines[1],
        "1,1779235200000,tcp_rr,127.0.0.1:5301,\"driver=x,mtu=9000\",false,lab-a,10,9410000000,51.7,54.6,,,38678.5,25.567,,,,,1,ok,38678.5,transactions/s"
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
    let rows = store.list(&Filter::default()).unwrap().rows;
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
    assert!(list(|a| a.filter.tags.tag = vec!["mtu=9000".into()])
        .unwrap()
        .contains("#1 "));
    // A tag set given as compare names one (`runs mtu=9000`) selects as --tag does.
    assert!(list(|a| a.tagsets = vec!["mtu=9000".into()])
        .unwrap()
        .contains("#1 "));
    assert!(!list(|a| a.tagsets = vec!["mtu=1500".into()])
        .unwrap()
        .contains("#1 "));
    assert!(list(|a| a.format = linerate::output::TableFormat::Json)
        .unwrap()
        .starts_with('['));
    assert_eq!(
        list(|a| a.filter.tags.tag = vec!["mtu=1500".into()]).unwrap(),
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

/// Stores a mix as `linerate runs` meets it in a lab: tcp send, -R, --bidir, -P 2, one against
/// a far server, udp, rr, one stopped with Ctrl-C and one whose server was killed; returns the
/// database.
fn mixed_store(dir: &std::path::Path) -> PathBuf {
    use wire::spec::Direction;
    let fixture = |name: &str| -> RunRecord {
        let path = format!(
            "{}/crates/results/tests/fixtures/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let tcp = |direction: Direction, streams: u16, target: &str| {
        let mut r = fixture("tcp");
        r.spec.stream_mut().unwrap().direction = direction;
        r.spec.streams = streams;
        r.target = target.into();
        r
    };
    let loopback = "127.0.0.1:40123 (in-process server)";
    let mut interrupted = tcp(Direction::Send, 1, loopback);
    interrupted.summary.interrupted = true;
    let mut incomplete = tcp(Direction::Send, 1, "198.18.0.2:5301");
    incomplete.summary.incomplete = Some("the server went away".into());
    incomplete.summary.throughput_bps = 0.0;
    let runs = [
        tcp(Direction::Send, 1, loopback),
        tcp(Direction::Reverse, 1, loopback),
        tcp(Direction::Bidir, 1, loopback),
        tcp(Direction::Send, 2, loopback),
        tcp(Direction::Send, 4, "198.18.0.2:5301"),
        fixture("udp"),
        fixture("rr"),
        interrupted,
        incomplete,
    ];
    let db = dir.join("mixed.sqlite");
    let mut store = Store::open(&db).unwrap();
    for (i, mut r) in runs.into_iter().enumerate() {
        r.started_at_unix_ms = 1_779_235_200_000 + 1000 * i as u64;
        store
            .insert(&r, &Tags::new(), &record::HostFacts::default())
            .unwrap();
    }
    db
}

fn runs_text(db: &std::path::Path, f: fn(&mut RunsArgs)) -> String {
    let mut a = RunsArgs {
        db: Some(db.to_path_buf()),
        ..RunsArgs::default()
    };
    f(&mut a);
    let mut out = Vec::new();
    runs_to(&a, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The cell of `column` in each line of a plain table (cells are split on two or more
/// spaces, as the table pads them).
fn column_cells(text: &str, column: &str) -> Vec<String> {
    let split = |l: &str| -> Vec<String> {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let mut lines = text.lines();
    let header = split(lines.next().unwrap());
    let at = header.iter().position(|h| h == column).unwrap();
    lines
        .take_while(|l| l.starts_with('#'))
        .map(|l| split(l)[at].clone())
        .collect()
}

#[test]
fn runs_tells_apart_target_direction_streams_kind_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let db = mixed_store(dir.path());
    let text = runs_text(&db, |_| {});
    let col = |c| column_cells(&text, c);
    assert_eq!(
        col("TARGET"),
        [
            "loopback",
            "loopback",
            "loopback",
            "loopback",
            "198.18.0.2:5301",
            "loopback",
            "loopback",
            "loopback",
            "198.18.0.2:5301"
        ],
        "{text}"
    );
    assert_eq!(
        col("DIR"),
        ["send", "reverse", "bidir", "send", "send", "send", "-", "send", "send"],
        "{text}"
    );
    assert_eq!(
        col("STREAMS"),
        ["1", "1", "1", "2", "4", "1", "1", "1", "1"]
    );
    assert_eq!(
        col("KIND"),
        [
            "tcp_stream",
            "tcp_stream",
            "tcp_stream",
            "tcp_stream",
            "tcp_stream",
            "udp_stream",
            "tcp_rr",
            "tcp_stream",
            "tcp_stream"
        ]
    );
    assert_eq!(
        col("STATUS"),
        [
            "ok",
            "ok",
            "ok",
            "ok",
            "ok",
            "ok",
            "ok",
            "interrupted",
            "incomplete"
        ],
        "{text}"
    );
    let result = col("RESULT");
    assert!(result[0].ends_with("bit/s"), "{text}");
    assert!(result[6].ends_with("trans/s"), "{text}");
    assert_eq!(result[8], "0.00 bit/s", "{text}");
    assert!(
        text.contains("\nincomplete: the server went away mid-test"),
        "{text}"
    );
    assert!(
        text.contains("\ninterrupted: stopped with Ctrl-C"),
        "{text}"
    );

    // The same fields in JSON and CSV.
    let json: serde_json::Value = serde_json::from_str(&runs_text(&db, |a| a.json = true)).unwrap();
    assert_eq!(json[1]["direction"], "reverse");
    assert_eq!(json[3]["streams"], 2);
    assert_eq!(json[8]["status"], "incomplete");
    assert_eq!(json[7]["status"], "interrupted");
    assert_eq!(json[6]["headline"]["unit"], "transactions/s");
    assert_eq!(json[0]["headline"]["unit"], "bit/s");
    let csv = runs_text(&db, |a| a.csv = true);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",direction,streams,status,headline_value,headline_unit"),
        "{csv}"
    );
    assert!(
        csv.lines().nth(3).unwrap().contains(",bidir,1,ok,"),
        "{csv}"
    );
}

#[test]
fn limit_lists_the_newest_runs_oldest_first() {
    use clap::Parser;
    let dir = tempfile::tempdir().unwrap();
    let db = mixed_store(dir.path());
    let text = runs_text(&db, |a| a.limit = Some(3));
    assert_eq!(column_cells(&text, "RUN"), ["#7", "#8", "#9"], "{text}");
    let text = runs_text(&db, |a| {
        a.limit = Some(2);
        a.filter.kind = Some("tcp_stream".into());
    });
    assert_eq!(column_cells(&text, "RUN"), ["#8", "#9"], "{text}");
    // --last is the same flag.
    let cli = linerate::cli::Cli::try_parse_from(["linerate", "runs", "--last", "4"]).unwrap();
    let linerate::cli::Command::Runs(runs) = cli.command else {
        panic!("not runs")
    };
    assert_eq!(runs.limit, Some(4));
}
