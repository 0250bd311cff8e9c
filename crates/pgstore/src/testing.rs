//! A real PostgreSQL server for tests: Debian's package, initialised as the `postgres` user in
//! a temporary directory, listening on a free loopback port with a password (scram-sha-256),
//! stopped and removed when dropped. Needs root (to run as `postgres`) and the package
//! (`scripts/test.sh` installs it); [`TestPg::start`] says why when it cannot run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The test server's superuser password.
pub const PASSWORD: &str = "lr-test-secret";

/// A running test server.
pub struct TestPg {
    dir: PathBuf,
    bin: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

/// Servers started by this process, for unique directories.
static STARTED: AtomicU32 = AtomicU32::new(0);

impl TestPg {
    /// Starts a server, or says why it cannot (not root, PostgreSQL not installed).
    pub fn start() -> Result<TestPg, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("needs root to run PostgreSQL as the postgres user".into());
        }
        let bin = server_bin().ok_or("PostgreSQL is not installed (apt-get install postgresql)")?;
        let n = STARTED.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("lr-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("pw"), PASSWORD).map_err(|e| e.to_string())?;
        run("chown", &["-R", "postgres:", path(&dir)])?;
        let port = free_port()?;
        let pg = TestPg { dir, bin, port };
        pg.as_postgres(
            "initdb",
            &[
                "-D",
                &pg.data(),
                "-U",
                "postgres",
                "-A",
                "scram-sha-256",
                "--pwfile",
                &format!("{}/pw", path(&pg.dir)),
                "-N",
            ],
        )?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50",
            path(&pg.dir)
        );
        pg.as_postgres(
            "pg_ctl",
            &[
                "-D",
                &pg.data(),
                "-l",
                &format!("{}/log", path(&pg.dir)),
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ],
        )?;
        Ok(pg)
    }

    fn data(&self) -> String {
        format!("{}/data", path(&self.dir))
    }

    fn as_postgres(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool);
        let mut all = vec!["-u", "postgres", "--", path(&exe)];
        all.extend_from_slice(args);
        run("runuser", &all)
    }

    /// The URL of database `db` as the superuser, TLS off (the test server has none).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgresql://postgres:{PASSWORD}@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// Creates database `db` (empty) and returns its URL.
    pub fn create_db(&self, db: &str) -> Result<String, String> {
        let exe = self.bin.join("createdb");
        let port = self.port.to_string();
        let out = Command::new(exe)
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", db])
            .env("PGPASSWORD", PASSWORD)
            .output()
            .map_err(|e| format!("createdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "createdb {db}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(self.url(db))
    }
}

impl Drop for TestPg {
    fn drop(&mut self) {
        let _ = self.as_postgres("pg_ctl", &["-D", &self.data(), "-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// The newest installed server's `bin` directory.
fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Reports the running test as skipped, with why, on stderr and in the skip log
/// (`LINERATE_SKIP_LOG`, which `scripts/test.sh` counts).
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("(unnamed test)");
    eprintln!("SKIPPED: {name}: {reason}");
    if let Some(log) = std::env::var_os("LINERATE_SKIP_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "{name}: {}", reason.replace('\n', " "));
        }
    }
}
