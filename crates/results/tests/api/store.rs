//! The results store through its public API: round trips, filters, refusals that leave the
//! file as it was, two writers at once (threads and processes), and the fixture database of
//! every past schema version.

use std::path::{Path, PathBuf};
use std::process::Command;

use record::{HostFacts, RunId, Tags};
use results::store::{Filter, Store, StoreError, APPLICATION_ID, STORE_VERSION};
use wire::TestKind;

use crate::common::{fixture_dir, listed_ids as ids, record};

fn tags(items: &[&str]) -> Tags {
    Tags::parse(items).unwrap()
}

fn host(interface: &str, mtu: u32, driver: Option<&str>) -> HostFacts {
    HostFacts {
        hostname: "lab-a".into(),
        kernel_release: Some("6.8.0-45-generic".into()),
        cpu_model: Some("Intel(R) Xeon(R) Gold 6338".into()),
        cores: 8,
        interface: Some(interface.into()),
        mtu_bytes: Some(mtu),
        driver: driver.map(Into::into),
        nic: None,
        tcp_congestion: Some("cubic".into()),
        qdiscs: None,
    }
}

/// Stores the three sample runs: tcp (velocityget, 9000), udp (1500), rr (velocityget, 1500).
fn store_samples(store: &mut Store) -> [RunId; 3] {
    [
        store
            .insert(
                &record("tcp"),
                &tags(&["driver=velocityget", "mtu=9000"]),
                &host("eth0", 9000, Some("velocityget")),
            )
            .unwrap(),
        store
            .insert(
                &record("udp"),
                &tags(&["mtu=1500"]),
                &host("lo", 65536, None),
            )
            .unwrap(),
        store
            .insert(
                &record("rr"),
                &tags(&["driver=velocityget", "mtu=1500"]),
                &host("eth0", 1500, Some("velocityget")),
            )
            .unwrap(),
    ]
}

/// The file's bytes, and which files SQLite keeps beside it exist.
#[derive(PartialEq)]
struct Snapshot {
    bytes: Vec<u8>,
    wal: bool,
    journal: bool,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sum = self.bytes.iter().fold(0u64, |h, &b| {
            h.wrapping_mul(1_000_003).wrapping_add(b as u64)
        });
        write!(
            f,
            "{} bytes (hash {sum:x}), -wal {}, -journal {}",
            self.bytes.len(),
            self.wal,
            self.journal
        )
    }
}

fn snapshot(path: &Path) -> Snapshot {
    let side = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        Path::new(&p).exists()
    };
    Snapshot {
        bytes: std::fs::read(path).unwrap(),
        wal: side("-wal"),
        journal: side("-journal"),
    }
}

#[test]
fn round_trip_insert_get_list() {
    let dir = tempfile::tempdir().unwrap();
    // The directory is created on first use.
    let path = dir.path().join("deep/er/results.sqlite");
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.version().unwrap(), STORE_VERSION);
    let [tcp, udp, rr] = store_samples(&mut store);
    assert!(tcp < udp && udp < rr);

    let got = store.get(tcp).unwrap();
    assert_eq!(got.record, record("tcp"));
    assert_eq!(got.tags, tags(&["driver=velocityget", "mtu=9000"]));
    assert_eq!(got.host, host("eth0", 9000, Some("velocityget")));
    assert_eq!(store.get(udp).unwrap().record, record("udp"));
    assert_eq!(store.get(rr).unwrap().record, record("rr"));

    let rows = store.list(&Filter::default()).unwrap().rows;
    assert_eq!(rows.len(), 3);
    let t = &rows.iter().find(|r| r.id == tcp).unwrap();
    let rec = record("tcp");
    assert_eq!(t.kind, wire::TestKind::TcpStream);
    assert_eq!(t.started_at_unix_ms, rec.started_at_unix_ms);
    assert_eq!(t.target, rec.target);
    assert_eq!(t.hostname, "lab-a");
    assert_eq!(t.throughput_bps, Some(rec.summary.throughput_bps));
    assert_eq!(t.local_cpu_pct, Some(rec.summary.local_cpu_pct));
    assert_eq!(t.remote_cpu_pct, Some(rec.summary.remote_cpu_pct));
    assert_eq!((t.transactions_per_s, t.loss_pct), (None, None));
    assert!(!t.interrupted);
    let u = rows.iter().find(|r| r.id == udp).unwrap();
    let udp_summary = *record("udp").summary.udp().unwrap();
    assert_eq!(u.loss_pct, Some(udp_summary.loss_pct));
    assert_eq!(u.pps_received, Some(udp_summary.pps_received));
    let r = rows.iter().find(|r| r.id == rr).unwrap();
    let rr_summary = *record("rr").summary.rr().unwrap();
    assert_eq!(r.transactions_per_s, Some(rr_summary.transactions_per_s));
    assert_eq!(r.p50_us, Some(rr_summary.latency_us.unwrap().p50));
    assert_eq!(r.p99_us, Some(rr_summary.latency_us.unwrap().p99));
    assert_eq!(r.tags.to_string(), "driver=velocityget,mtu=1500");

    // Filters: tags (all must match), kind, since.
    let by_tags = |items: &[&str]| Filter {
        tags: tags(items),
        ..Filter::default()
    };
    assert_eq!(ids(&store, by_tags(&["mtu=9000"])), vec![tcp]);
    let mut velocity = ids(&store, by_tags(&["driver=velocityget"]));
    velocity.sort();
    assert_eq!(velocity, vec![tcp, rr]);
    assert_eq!(
        ids(&store, by_tags(&["driver=velocityget", "mtu=1500"])),
        vec![rr]
    );
    assert_eq!(ids(&store, by_tags(&["mtu=64000"])), vec![]);
    let kind = |k| Filter {
        kind: Some(k),
        ..Filter::default()
    };
    assert_eq!(ids(&store, kind(TestKind::UdpStream)), vec![udp]);
    assert_eq!(ids(&store, kind(TestKind::TcpCrr)), vec![]);
    let latest = rows.iter().map(|r| r.started_at_unix_ms).max().unwrap();
    let since = |ms| Filter {
        since_unix_ms: Some(ms),
        ..Filter::default()
    };
    assert_eq!(ids(&store, since(0)).len(), 3);
    assert_eq!(ids(&store, since(latest)).len(), 1);
    assert_eq!(ids(&store, since(latest + 1)), vec![]);
    // Rows come oldest first.
    let starts: Vec<u64> = rows.iter().map(|r| r.started_at_unix_ms).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");

    // find: the full records of a tag group.
    let group = store.find(&tags(&["driver=velocityget"])).unwrap().rows;
    assert_eq!(group.len(), 2);
    assert!(group
        .iter()
        .all(|s| s.tags.get("driver") == Some("velocityget")));

    // Reopened, everything is still there.
    drop(store);
    let store = Store::open_existing(&path).unwrap();
    assert_eq!(store.list(&Filter::default()).unwrap().rows.len(), 3);
    assert_eq!(store.get(rr).unwrap().record, record("rr"));
}

#[test]
fn interrupted_runs_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.sqlite")).unwrap();
    let mut rec = record("tcp");
    rec.summary.interrupted = true;
    let id = store
        .insert(&rec, &Tags::new(), &HostFacts::default())
        .unwrap();
    let rows = store.list(&Filter::default()).unwrap().rows;
    assert!(rows[0].interrupted);
    assert!(rows[0].tags.is_empty());
    assert!(store.get(id).unwrap().record.summary.interrupted);
}

#[test]
fn unknown_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut store = Store::open(&path).unwrap();
    store_samples(&mut store);
    let err = store.get(RunId(99)).unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownRun { id: RunId(99), .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "run #99: no such run in {}; `linerate runs` lists the stored runs",
            path.display()
        )
    );
}

#[test]
fn missing_database_for_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sqlite");
    let err = Store::open_existing(&path).unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err:?}");
    assert!(!path.exists(), "reading must not create the database");
}

/// A store holding the samples, closed.
fn sample_db(dir: &Path) -> PathBuf {
    let path = dir.join("results.sqlite");
    let mut store = Store::open(&path).unwrap();
    store_samples(&mut store);
    path
}

#[test]
fn newer_schema_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample_db(dir.path());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", STORE_VERSION + 1)
            .unwrap();
    }
    let before = snapshot(&path);
    for err in [
        Store::open(&path).unwrap_err(),
        Store::open_existing(&path).unwrap_err(),
    ] {
        match &err {
            StoreError::NewerSchema {
                found, supported, ..
            } => assert_eq!((*found, *supported), (STORE_VERSION + 1, STORE_VERSION)),
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "database schema version {} is newer than this linerate supports (version {})",
                STORE_VERSION + 1,
                STORE_VERSION
            )),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
    }
    assert_eq!(snapshot(&path), before);
}

#[test]
fn not_a_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    std::fs::write(
        &path,
        "interval  throughput\n0-1 s  9.41 Gbit/s\n".repeat(200),
    )
    .unwrap();
    let before = snapshot(&path);
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    assert!(
        err.to_string().contains("not a linerate results database"),
        "{err}"
    );
    let err = Store::open_existing(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    assert_eq!(snapshot(&path), before);
}

#[test]
fn damaged_pages_are_reported_and_left_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample_db(dir.path());
    // Overwrite every page after the first (the header and catalogue) with garbage.
    let mut bytes = std::fs::read(&path).unwrap();
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    for (i, b) in bytes.iter_mut().enumerate().skip(page) {
        *b = (i * 7 + 13) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let before = snapshot(&path);
    let err = Store::open(&path)
        .and_then(|s| s.list(&Filter::default()).map(|_| ()))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt { .. } | StoreError::NotADatabase { .. }
        ),
        "{err:?}"
    );
    assert_eq!(snapshot(&path), before);
}

#[test]
fn foreign_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi');")
            .unwrap();
    }
    let before = snapshot(&path);
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
    assert_eq!(snapshot(&path), before);
}

#[test]
fn read_only_file_is_refused_for_writing_and_read_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = sample_db(dir.path());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = snapshot(&path);
    // Refused by its permission bits even as root, who could write it anyway.
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    assert!(err.to_string().contains("read-only"), "{err}");
    // Reading still works, and writing through a reader is refused.
    let mut reader = Store::open_existing(&path).unwrap();
    assert_eq!(reader.list(&Filter::default()).unwrap().rows.len(), 3);
    assert_eq!(reader.get(RunId(1)).unwrap().record, record("tcp"));
    let err = reader
        .insert(&record("tcp"), &Tags::new(), &HostFacts::default())
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    drop(reader);
    assert_eq!(snapshot(&path).bytes, before.bytes);
}

const WRITES: usize = 30;

/// Inserts `WRITES` runs tagged `writer=NAME`.
fn write_many(path: &Path, name: &str) {
    let mut store = Store::open(path).unwrap();
    let rec = record("tcp");
    for i in 0..WRITES {
        let t = tags(&[&format!("writer={name}"), &format!("i={i}")]);
        store.insert(&rec, &t, &HostFacts::default()).unwrap();
    }
}

fn assert_all_written(path: &Path, writers: &[&str]) {
    let store = Store::open_existing(path).unwrap();
    let rows = store.list(&Filter::default()).unwrap().rows;
    assert_eq!(rows.len(), WRITES * writers.len());
    let mut ids: Vec<RunId> = rows.iter().map(|r| r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), rows.len(), "ids are unique");
    for w in writers {
        let mine = store
            .list(&Filter {
                tags: tags(&[&format!("writer={w}")]),
                ..Filter::default()
            })
            .unwrap()
            .rows;
        assert_eq!(mine.len(), WRITES, "writer {w}");
        for row in &mine {
            assert_eq!(store.get(row.id).unwrap().record, record("tcp"));
        }
    }
}

#[test]
fn two_writer_threads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // A fresh path: both also race to create the file and its schema.
    let path = dir.path().join("results.sqlite");
    std::thread::scope(|s| {
        for name in ["a", "b"] {
            let path = &path;
            s.spawn(move || write_many(path, name));
        }
    });
    assert_all_written(&path, &["a", "b"]);
}

/// Not a test on its own: the body of one writer process in `two_writer_processes_at_once`.
#[test]
#[ignore = "run by two_writer_processes_at_once in a child process"]
fn child_writer() {
    let (Ok(path), Ok(name)) = (
        std::env::var("LINERATE_TEST_STORE"),
        std::env::var("LINERATE_TEST_WRITER"),
    ) else {
        return;
    };
    write_many(Path::new(&path), &name);
}

#[test]
fn two_writer_processes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["p", "q"]
        .iter()
        .map(|name| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "store::child_writer",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("LINERATE_TEST_STORE", &path)
                .env("LINERATE_TEST_WRITER", name)
                .output_spawn()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "writer failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "the child ran no writer: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert_all_written(&path, &["p", "q"]);
}

trait SpawnCaptured {
    fn output_spawn(&mut self) -> std::process::Child;
}

impl SpawnCaptured for Command {
    fn output_spawn(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Every past schema version has a fixture database that the current code must open, upgrade
/// and read. The fixtures hold the three sample runs as stored by that version.
#[test]
fn fixture_of_every_version_loads() {
    for version in 1..=STORE_VERSION {
        let fixture = fixture_dir().join(format!("store-v{version}.sqlite"));
        assert!(
            fixture.exists(),
            "{} is missing: run `cargo test -p linerate-results --test store -- --ignored write_fixture` \
             (after releasing version {version}, before adding version {})",
            fixture.display(),
            version + 1
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy.sqlite");
        std::fs::copy(&fixture, &path).unwrap();
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            let found: u32 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap();
            let app: i32 = conn
                .query_row("PRAGMA application_id", [], |r| r.get(0))
                .unwrap();
            assert_eq!((found, app), (version, APPLICATION_ID), "{fixture:?}");
        }
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.version().unwrap(), STORE_VERSION);
        let rows = store.list(&Filter::default()).unwrap().rows;
        assert_eq!(rows.len(), 3, "v{version}");
        let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
        for kind in ["tcp_stream", "udp_stream", "tcp_rr"] {
            assert!(kinds.contains(&kind), "v{version}: {kinds:?}");
        }
        let velocity = store.find(&tags(&["driver=velocityget"])).unwrap().rows;
        assert_eq!(velocity.len(), 2, "v{version}");
        for name in ["tcp", "udp", "rr"] {
            let want = record(name);
            let got = rows
                .iter()
                .find(|r| r.started_at_unix_ms == want.started_at_unix_ms)
                .unwrap();
            assert_eq!(store.get(got.id).unwrap().record, want, "v{version} {name}");
        }
        // Still writable after the upgrade.
        store
            .insert(&record("tcp"), &Tags::new(), &HostFacts::default())
            .unwrap();
    }
}

/// Writes `tests/fixtures/store-vN.sqlite` for the current version N, once. Never overwrites:
/// a released version's fixture is what older linerates left on users' disks.
#[test]
#[ignore = "writes the fixture of the current schema version; run by hand once per version"]
fn write_fixture() {
    let path = fixture_dir().join(format!("store-v{STORE_VERSION}.sqlite"));
    if path.exists() {
        eprintln!("{} exists; not overwritten", path.display());
        return;
    }
    let mut store = Store::open(&path).unwrap();
    store_samples(&mut store);
    drop(store);
    // One self-contained file: rollback journal, no free pages.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA journal_mode = DELETE; VACUUM;")
        .unwrap();
}
