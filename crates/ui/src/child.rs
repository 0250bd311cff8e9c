//! The linerate child processes the UI runs: a measuring command whose `--json-stream` events
//! it reads ([`spawn`], [`Proc`]), or a short command whose output it answers with
//! ([`capture`]: `compare`, `report`).
//!
//! Invariants: every child is reaped (no zombies); a signal is only ever sent to a child not
//! yet reaped (its pid cannot have been reused), because [`Proc::wait`] waits for the exit
//! without reaping (`waitid(WNOWAIT)`) and reaps under the lock the signals take; a child gets
//! at most one SIGINT from the UI (a second one makes linerate exit at once, without storing
//! its partial run); what is read from a child is bounded (lines by [`for_each_line`]'s cap,
//! stderr to its last [`STDERR_LINES`] lines, captured output by its cap). Children run in a
//! process group of their own, so a Ctrl-C at the UI's terminal reaches them once, through
//! the UI, not twice.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines of a child's stderr kept for its error message.
pub const STDERR_LINES: usize = 20;

/// Longest stderr line kept (the rest of it is cut).
const STDERR_LINE_BYTES: usize = 4096;

/// The environment variable that names the database (`--db`'s default): the UI hands its
/// database to the child this way, so a URL's password is not on the command line for `ps`.
pub const DB_ENV: &str = "LINERATE_DB";

/// The environment variable that names the key file for servers with keys (`--auth-key`'s
/// default): the UI's own `--auth-key`, chosen when the UI started, never by a request.
pub const KEY_ENV: &str = "LINERATE_AUTH_KEY";

/// Starts `exe words…` with the database `db`: stdin empty, stdout and stderr piped. Should
/// the thread that calls this end (or the UI die, even by SIGKILL) while the child runs, the
/// child gets SIGHUP: linerate then stops, stores what it measured and exits, however many
/// come (the kernel sends one each time the child is handed to another of the dying UI's
/// threads; a second SIGINT would make it exit without storing). So the calling thread must
/// outlive the child (it waits for it).
pub fn spawn(exe: &Path, words: &[String], db: &str, key: Option<&Path>) -> io::Result<Child> {
    let parent = std::process::id() as libc::pid_t;
    let mut command = Command::new(exe);
    match key {
        Some(key) => command.env(KEY_ENV, key),
        None => command.env_remove(KEY_ENV),
    };
    command
        .args(words)
        .env(DB_ENV, db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and calls only signal(2),
    // prctl(2), getppid(2) and raise(3), which are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            // The UI's Stop is a SIGINT: the child must not inherit it ignored (as everything
            // started in the background by a non-interactive shell does, `linerate ui &`).
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The UI died before the signal was set: act on it now.
            if libc::getppid() != parent {
                libc::raise(libc::SIGHUP);
            }
            Ok(())
        })
    };
    command.spawn()
}

/// A running child: its pid, and whether it was interrupted or reaped.
#[derive(Debug)]
pub struct Proc {
    pid: libc::pid_t,
    state: Mutex<ProcState>,
}

#[derive(Debug, Default)]
struct ProcState {
    interrupted: bool,
    reaped: bool,
}

impl Proc {
    /// The child `child`, not reaped yet.
    pub fn of(child: &Child) -> Proc {
        Proc::of_pid(child.id() as libc::pid_t)
    }

    /// The child with process id `pid`, not reaped yet.
    pub fn of_pid(pid: libc::pid_t) -> Proc {
        Proc {
            pid,
            state: Mutex::new(ProcState::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ProcState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends SIGINT once, as Ctrl-C would: the command stops, stores what it measured and
    /// writes its end. Later calls do nothing.
    pub fn interrupt(&self) {
        let mut state = self.state();
        if !state.reaped && !state.interrupted {
            // SAFETY: kill(2) on our own child's pid, which cannot be reused before it is reaped
            // (we hold the lock that reaping takes).
            unsafe { libc::kill(self.pid, libc::SIGINT) };
        }
        state.interrupted = true;
    }

    /// Whether [`Proc::interrupt`] was called.
    pub fn interrupted(&self) -> bool {
        self.state().interrupted
    }

    /// Sends SIGKILL to the child and all it started (its process group): a child that did
    /// not end after its SIGINT.
    pub fn kill(&self) {
        let state = self.state();
        if !state.reaped {
            // SAFETY: as in `interrupt`; the child leads its own process group.
            unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        }
    }

    /// Waits for `child` (this [`Proc`]'s) to exit and reaps it.
    pub fn wait(&self, child: &mut Child) -> io::Result<ExitStatus> {
        loop {
            // SAFETY: waitid on our child's pid into a zeroed siginfo_t; WNOWAIT leaves it a
            // zombie, so its pid stays ours until the reaping below.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break;
            }
        }
        let mut state = self.state();
        let status = child.wait();
        state.reaped = true;
        status
    }
}

/// Calls `f` with each line of `reader` (without its newline), or with `None` for a line
/// longer than `cap` bytes, which is skipped to its end without being held.
pub fn for_each_line(
    reader: impl Read,
    cap: usize,
    mut f: impl FnMut(Option<&[u8]>),
) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if buf.capacity() > 1 << 20 {
            buf = Vec::new();
        }
        let n = (&mut reader)
            .take(cap as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            f(Some(&buf));
        } else if buf.len() > cap {
            skip_line(&mut reader)?;
            f(None);
        } else {
            f(Some(&buf));
        }
    }
}

/// Reads up to and including the next newline, keeping nothing.
fn skip_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = available.len();
                reader.consume(n);
            }
        }
    }
}

/// A child's stderr to its end: its last [`STDERR_LINES`] lines that are not blank.
pub fn stderr_tail(stderr: ChildStderr) -> Vec<String> {
    let mut tail = VecDeque::new();
    let _ = for_each_line(stderr, STDERR_LINE_BYTES, |line| {
        let text = match line {
            Some(bytes) => String::from_utf8_lossy(bytes).trim_end().to_string(),
            None => "(a line too long to keep)".to_string(),
        };
        if !text.trim().is_empty() {
            if tail.len() == STDERR_LINES {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    });
    tail.into()
}

/// A failed command's message, as the command line put it: its last `linerate: error: …`
/// line without that prefix (or `linerate: …`), else its last stderr line, else its status.
pub fn error_message(stderr: &[String], status: Option<ExitStatus>) -> String {
    let marked = stderr
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("linerate: error: "));
    if let Some(message) = marked {
        return message.to_string();
    }
    if let Some(last) = stderr.last() {
        return last.strip_prefix("linerate: ").unwrap_or(last).to_string();
    }
    match status {
        Some(status) => describe(status),
        None => "the command could not be run".to_string(),
    }
}

/// `exit status 2`, or `killed by signal 9`.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => format!("{status}"),
    }
}

/// What a short command left: how it ended, its stdout, its stderr's last lines.
#[derive(Debug)]
pub struct Captured {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output (at most the cap).
    pub stdout: Vec<u8>,
    /// Its stderr's last lines.
    pub stderr: Vec<String>,
}

/// Why a short command gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// It could not be started.
    #[error("cannot run {exe}: {source}")]
    Spawn {
        /// The executable.
        exe: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// It ran longer than allowed and was killed.
    #[error("the command took longer than {0} s and was stopped")]
    Timeout(u64),
    /// It wrote more than allowed.
    #[error("the command's output is larger than {0} MiB")]
    TooLarge(usize),
}

/// Runs `exe words…` with the database `db` to its end (killed after `timeout`), keeping at
/// most `cap` bytes of its stdout.
pub fn capture(
    exe: &Path,
    words: &[String],
    db: &str,
    timeout: Duration,
    cap: usize,
) -> Result<Captured, CaptureError> {
    let mut child = spawn(exe, words, db, None).map_err(|source| CaptureError::Spawn {
        exe: exe.display().to_string(),
        source,
    })?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let errors = std::thread::spawn(move || stderr.map(stderr_tail).unwrap_or_default());
    let output = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(stdout) = stdout {
            let mut stdout = stdout.take(cap as u64 + 1);
            let _ = stdout.read_to_end(&mut out);
            // Whatever is beyond the cap is read and dropped, so the child is never blocked.
            let _ = io::copy(&mut stdout.into_inner(), &mut io::sink());
        }
        out
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                // SAFETY: kill(2) on the process group our unreaped child leads: it and all it
                // started, which may hold its pipes open.
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
        }
    };
    let (stdout, stderr) = (output.join().unwrap_or_default(), errors.join());
    let status = status.ok_or(CaptureError::Timeout(timeout.as_secs()))?;
    if stdout.len() > cap {
        return Err(CaptureError::TooLarge(cap >> 20));
    }
    Ok(Captured {
        status,
        stdout,
        stderr: stderr.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &str, cap: usize) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for_each_line(input.as_bytes(), cap, |l| {
            out.push(l.map(|b| String::from_utf8_lossy(b).into_owned()))
        })
        .unwrap();
        out
    }

    #[test]
    fn lines_longer_than_the_cap_are_skipped_whole() {
        assert_eq!(
            lines("ab\n0123456789\ncd", 5),
            [Some("ab".into()), None, Some("cd".into())]
        );
        assert_eq!(lines("abcde\n", 5), [Some("abcde".into())]);
        assert_eq!(lines("abcdef", 5), [None]);
        assert!(lines("", 5).is_empty());
    }

    #[test]
    fn the_error_is_the_last_marked_line() {
        let tail = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            error_message(
                &tail(&[
                    "linerate: error: first",
                    "linerate: error: -C nosuchcc: no",
                    "x"
                ]),
                None
            ),
            "-C nosuchcc: no"
        );
        assert_eq!(
            error_message(&tail(&["note", "linerate: bad host"]), None),
            "bad host"
        );
        assert_eq!(error_message(&tail(&["panicked"]), None), "panicked");
        let status = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
        assert_eq!(error_message(&[], Some(status)), "exit status 3");
    }

    #[test]
    fn a_signal_reaches_a_child_until_it_is_reaped() {
        // Through `spawn`, so the child takes SIGINT however this process was started.
        let mut child = spawn(Path::new("sleep"), &["30".into()], "db", None).unwrap();
        let proc = Proc::of(&child);
        proc.interrupt();
        assert!(proc.interrupted());
        let status = proc.wait(&mut child).unwrap();
        assert_eq!(describe(status), "killed by signal 2");
        // Reaped: no more signals (the pid may be someone else's now).
        proc.kill();
        proc.interrupt();
    }

    #[test]
    fn a_capture_keeps_stdout_and_the_stderr_tail_and_stops_at_its_timeout() {
        let sh = Path::new("/bin/sh");
        let words = |s: &str| vec!["-c".to_string(), s.to_string()];
        let out = capture(
            sh,
            &words("echo out; echo err >&2; exit 4"),
            "db",
            Duration::from_secs(5),
            100,
        )
        .unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, ["err"]);
        assert_eq!(out.status.code(), Some(4));
        let big = capture(
            sh,
            &words("head -c 1000 /dev/zero"),
            "db",
            Duration::from_secs(5),
            100,
        );
        assert!(matches!(big, Err(CaptureError::TooLarge(_))), "{big:?}");
        let slow = capture(sh, &words("sleep 5"), "db", Duration::from_millis(100), 100);
        assert!(matches!(slow, Err(CaptureError::Timeout(_))), "{slow:?}");
        let env = capture(
            sh,
            &words("echo $LINERATE_DB"),
            "/x.sqlite",
            Duration::from_secs(5),
            100,
        );
        assert_eq!(env.unwrap().stdout, b"/x.sqlite\n");
    }
}
