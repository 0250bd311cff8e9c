//! Running one knob command: no shell, a process group of its own, a deadline, and its output
//! read while it runs.

use std::io::{ErrorKind, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{keep, KnobRun, Phase, OUTPUT_LIMIT_BYTES};
use crate::interrupt::Interrupt;

/// How long the output of a command that has exited is still read: a process it left running
/// in the background may hold its stdout open for ever.
const OUTPUT_GRACE: Duration = Duration::from_millis(500);

/// How often a running command is looked at.
const WAIT_STEP: Duration = Duration::from_millis(10);

/// How long a command may take to end after Ctrl-C was passed on to it before it is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// What a reader thread has kept of one pipe so far.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    /// The reader is done with the pipe.
    done: bool,
}

/// One pipe's [`Output`], shared with its reader, which signals the condition when done.
type Kept = Arc<(Mutex<Output>, Condvar)>;

fn lock(kept: &Kept) -> std::sync::MutexGuard<'_, Output> {
    kept.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks `kept` done, with `note` after what it holds.
fn finish(kept: &Kept, note: &[u8]) {
    let mut out = lock(kept);
    out.bytes.extend_from_slice(note);
    out.done = true;
    kept.1.notify_all();
}

/// Reads `pipe` to its end on a thread of its own, keeping the first [`OUTPUT_LIMIT_BYTES`]
/// and draining the rest (a command blocked on a full pipe would never exit).
fn collect(pipe: Option<impl Read + Send + 'static>) -> Kept {
    let kept: Kept = Arc::default();
    let Some(mut pipe) = pipe else {
        finish(&kept, b"");
        return kept;
    };
    let shared = Arc::clone(&kept);
    let reader = std::thread::Builder::new()
        .name("lr-knob-out".into())
        .spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        finish(
                            &shared,
                            format!("[linerate: reading stopped: {e}]").as_bytes(),
                        );
                        return;
                    }
                };
                if n == 0 {
                    finish(&shared, b"");
                    return;
                }
                let mut out = lock(&shared);
                let room = OUTPUT_LIMIT_BYTES.saturating_sub(out.bytes.len());
                out.bytes.extend_from_slice(&buf[..n.min(room)]);
            }
        });
    if let Err(e) = reader {
        // The pipe was moved into the closure and is closed now: a write gets EPIPE.
        finish(&kept, format!("[linerate: not read: {e}]").as_bytes());
    }
    kept
}

/// The text kept from a pipe once it is done, or at `deadline` (what came until then) if a
/// process left running in the background still holds it open.
fn kept_text(kept: &Kept, deadline: Instant) -> String {
    let left = deadline.saturating_duration_since(Instant::now());
    let out = match kept.1.wait_timeout_while(lock(kept), left, |out| !out.done) {
        Ok((out, _)) => out,
        Err(e) => e.into_inner().0,
    };
    keep(&out.bytes)
}

/// Sends `signal` to the process group `child` leads. The group cannot be another's: the child
/// is not reaped yet, so its id is not free for reuse.
fn signal_group(child: &Child, signal: libc::c_int) {
    let group = child.id() as libc::pid_t;
    // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
    unsafe { libc::kill(-group, signal) };
}

/// How a command ended.
struct Ended {
    status: ExitStatus,
    /// Killed for running past the timeout.
    timed_out: bool,
}

/// Waits for `child` until `deadline`, then kills its process group. Ctrl-C (`interrupt`
/// raised while it runs, not before: a `--post` after Ctrl-C must still restore its setting)
/// is passed on to the group as SIGINT, as the terminal would have, and the group is killed if
/// it is still there [`INTERRUPT_GRACE`] later. The child is reaped on every path.
fn wait_for(
    child: &mut Child,
    deadline: Instant,
    interrupt: &dyn Interrupt,
) -> std::io::Result<Ended> {
    let already = interrupt.is_raised();
    let mut kill_at = deadline;
    let mut passed_on = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Ok(Ended {
                    status,
                    timed_out: false,
                })
            }
            Ok(None) => {}
            Err(e) => {
                signal_group(child, libc::SIGKILL);
                let _ = child.wait();
                return Err(e);
            }
        }
        let now = Instant::now();
        if !already && !passed_on && interrupt.is_raised() {
            signal_group(child, libc::SIGINT);
            passed_on = true;
            kill_at = kill_at.min(now + INTERRUPT_GRACE);
        }
        if now >= kill_at {
            signal_group(child, libc::SIGKILL);
            let status = child.wait()?;
            // It may have exited on its own just before the kill.
            let killed = status.signal() == Some(libc::SIGKILL);
            return Ok(Ended {
                status,
                timed_out: killed && now >= deadline,
            });
        }
        std::thread::sleep(WAIT_STEP);
    }
}

/// Runs `argv` with no shell, stdin from /dev/null, `LINERATE_VALUE=value` in its
/// environment, in a process group of its own, and waits for it at most `timeout`: then it is
/// killed with everything it started in that group, and the run says it timed out.
pub fn run_command(
    phase: Phase,
    argv: &[String],
    value: &str,
    timeout: Duration,
    interrupt: &dyn Interrupt,
) -> KnobRun {
    let started = Instant::now();
    let mut run = KnobRun {
        phase,
        argv: argv.to_vec(),
        exit_code: None,
        signal: None,
        spawn_error: None,
        success: false,
        timed_out: false,
        stdout: String::new(),
        stderr: String::new(),
        duration_s: 0.0,
    };
    let Some((program, args)) = argv.split_first() else {
        run.spawn_error = Some("empty command".into());
        return run;
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .env("LINERATE_VALUE", value)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // Ctrl-C is passed on as SIGINT, so the command must not inherit it ignored (as a sweep
    // started in the background by a non-interactive shell would hand it on: a shell cannot
    // even trap a signal ignored at its start).
    // SAFETY: between fork and exec the closure calls only signal(2), async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        })
    };
    let spawned = command.spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            run.spawn_error = Some(e.to_string());
            return run;
        }
    };
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    match wait_for(&mut child, started + timeout, interrupt) {
        Ok(ended) => {
            run.exit_code = ended.status.code();
            run.signal = ended.status.signal();
            run.timed_out = ended.timed_out;
            run.success = ended.status.success();
        }
        // Killed and reaped; what wait said goes with the signal.
        Err(e) => {
            run.signal = Some(libc::SIGKILL);
            run.stderr = format!("[linerate: waiting for it failed: {e}]");
        }
    }
    run.duration_s = started.elapsed().as_secs_f64();
    let grace = Instant::now() + OUTPUT_GRACE;
    run.stdout = kept_text(&stdout, grace);
    run.stderr.insert_str(0, &kept_text(&stderr, grace));
    run
}

#[cfg(test)]
mod tests {
    use super::super::DEFAULT_TIMEOUT;
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn sh(script: &str) -> Vec<String> {
        ["sh", "-c", script].map(String::from).to_vec()
    }

    #[test]
    fn a_command_past_its_timeout_is_killed_with_its_group() {
        let marker = tempfile::NamedTempFile::new().unwrap();
        let path = marker.path().to_str().unwrap().to_string();
        // The shell and the sleep it starts are both in the command's group.
        let argv = sh(&format!("echo begun; sleep 1; echo late > {path}"));
        let run = run_command(
            Phase::Pre,
            &argv,
            "5",
            Duration::from_millis(300),
            &AtomicBool::new(false),
        );
        assert!(run.timed_out && !run.success, "{run:?}");
        assert_eq!(run.signal, Some(libc::SIGKILL));
        assert!(run.duration_s < 0.9, "{run:?}");
        assert_eq!(run.stdout, "begun\n");
        let why = run.failure("5").unwrap();
        assert!(
            why.contains("was still running after 0.3 s and was killed"),
            "{why}"
        );
        std::thread::sleep(Duration::from_millis(1300));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "",
            "the group lived on"
        );
    }

    #[test]
    fn a_background_process_holding_the_output_does_not_hold_the_sweep() {
        let started = Instant::now();
        let run = run_command(
            Phase::Pre,
            &sh("sleep 3 & echo set"),
            "1",
            DEFAULT_TIMEOUT,
            &AtomicBool::new(false),
        );
        assert!(run.success && !run.timed_out, "{run:?}");
        assert_eq!(run.stdout, "set\n");
        assert!(started.elapsed() < Duration::from_secs(2), "{run:?}");
    }

    #[test]
    fn ctrl_c_during_a_command_is_passed_on_but_not_one_from_before() {
        let interrupt = Arc::new(AtomicBool::new(false));
        let raiser = Arc::clone(&interrupt);
        let later = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            raiser.store(true, Ordering::Release);
        });
        let argv = sh("trap 'echo got-int; exit 7' INT; sleep 5 & wait");
        let run = run_command(Phase::Pre, &argv, "1", DEFAULT_TIMEOUT, &interrupt);
        later.join().unwrap();
        assert_eq!((run.exit_code, run.timed_out), (Some(7), false), "{run:?}");
        assert!(run.stdout.starts_with("got-int"), "{run:?}");
        assert!(run.duration_s < 2.0, "{run:?}");
        // Raised before it started (a --post after Ctrl-C): it runs to its end.
        let run = run_command(
            Phase::Post,
            &sh("sleep 0.3; echo restored"),
            "1",
            DEFAULT_TIMEOUT,
            &interrupt,
        );
        assert!(run.success, "{run:?}");
        assert_eq!(run.stdout, "restored\n");
    }
}
