//! Running one knob command: no shell, a process group of its own, a deadline, and its output
//! read while it runs.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{keep, KnobRun, Phase, OUTPUT_LIMIT_BYTES};

/// How long the output of a command that has exited is still read: a process it left running
/// in the background may hold its stdout open for ever.
const OUTPUT_GRACE: Duration = Duration::from_millis(500);

/// How often a running command is looked at.
const WAIT_STEP: Duration = Duration::from_millis(10);

/// What a reader thread has kept of one pipe so far, and whether the pipe has closed.
type Kept = Arc<(Mutex<(Vec<u8>, bool)>, Condvar)>;

/// Reads `pipe` to its end on a thread of its own, keeping the first [`OUTPUT_LIMIT_BYTES`]
/// and draining the rest (a command blocked on a full pipe would never exit).
fn collect(pipe: Option<impl Read + Send + 'static>) -> Kept {
    let kept: Kept = Arc::default();
    let Some(mut pipe) = pipe else {
        kept.0.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        return kept;
    };
    let shared = Arc::clone(&kept);
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            let n = pipe.read(&mut buf).unwrap_or(0);
            let mut state = shared.0.lock().unwrap_or_else(|e| e.into_inner());
            let room = OUTPUT_LIMIT_BYTES.saturating_sub(state.0.len());
            state.0.extend_from_slice(&buf[..n.min(room)]);
            if n == 0 {
                state.1 = true;
                shared.1.notify_all();
                return;
            }
        }
    });
    kept
}

/// The text kept from a pipe once it has closed, or at `deadline` (what came until then) if a
/// process left running in the background still holds it open.
fn kept_text(kept: &Kept, deadline: Instant) -> String {
    let mut state = kept.0.lock().unwrap_or_else(|e| e.into_inner());
    while !state.1 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        state = match kept.1.wait_timeout(state, left) {
            Ok((s, _)) => s,
            Err(e) => e.into_inner().0,
        };
    }
    keep(&state.0)
}

/// Waits for `child` until `deadline`; past it, kills the child's process group (the child
/// leads one of its own) and reaps the child. `Ok((status, timed_out))`.
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<(ExitStatus, bool)> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status, false));
        }
        if Instant::now() >= deadline {
            let group = child.id() as libc::pid_t;
            // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            return Ok((child.wait()?, true));
        }
        std::thread::sleep(WAIT_STEP);
    }
}

/// Runs `argv` with no shell, stdin from /dev/null, `LINERATE_VALUE=value` in its
/// environment, in a process group of its own, and waits for it at most `timeout`: then it is
/// killed with everything it started in that group, and the run says it timed out.
pub fn run_command(phase: Phase, argv: &[String], value: &str, timeout: Duration) -> KnobRun {
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
    let spawned = Command::new(program)
        .args(args)
        .env("LINERATE_VALUE", value)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            run.spawn_error = Some(e.to_string());
            return run;
        }
    };
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    match wait_until(&mut child, started + timeout) {
        Ok((status, timed_out)) => {
            run.exit_code = status.code();
            run.signal = status.signal();
            run.timed_out = timed_out;
            run.success = status.success() && !timed_out;
        }
        Err(e) => run.spawn_error = Some(format!("waiting for it failed: {e}")),
    }
    run.duration_s = started.elapsed().as_secs_f64();
    let grace = Instant::now() + OUTPUT_GRACE;
    run.stdout = kept_text(&stdout, grace);
    run.stderr = kept_text(&stderr, grace);
    run
}

#[cfg(test)]
mod tests {
    use super::super::DEFAULT_TIMEOUT;
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        ["sh", "-c", script].map(String::from).to_vec()
    }

    #[test]
    fn a_command_past_its_timeout_is_killed_with_its_group() {
        let marker = tempfile::NamedTempFile::new().unwrap();
        let path = marker.path().to_str().unwrap().to_string();
        // The shell and the sleep it starts are both in the command's group.
        let argv = sh(&format!("echo begun; sleep 1; echo late > {path}"));
        let run = run_command(Phase::Pre, &argv, "5", Duration::from_millis(300));
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
        let run = run_command(Phase::Pre, &sh("sleep 3 & echo set"), "1", DEFAULT_TIMEOUT);
        assert!(run.success && !run.timed_out, "{run:?}");
        assert_eq!(run.stdout, "set\n");
        assert!(started.elapsed() < Duration::from_secs(2), "{run:?}");
    }
}
