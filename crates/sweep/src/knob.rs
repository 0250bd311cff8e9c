//! `linerate sweep knob`: a user command run before (`--pre`) and after (`--post`) each point,
//! with `{value}` replaced by the point's value, to set a driver parameter, an MTU or a sysctl
//! with tools the user already has.
//!
//! Invariants, so a value can never do more than be one argument:
//! - the template is split into words once, with POSIX-shell quoting (`'…'`, `"…"`, `\`), before
//!   any value is known; `{value}` is then replaced inside each word, so `1; rm -rf /` stays
//!   one argument;
//! - the command runs with [`std::process::Command`], never through a shell; unquoted shell
//!   syntax in a template (`|`, `;`, `&`, `<`, `>`, `$`, a backquote) is refused instead of
//!   being passed on literally as a surprise;
//! - everything is checked before the first point: `{value}` present in `--pre`, and the
//!   program found on `PATH` (or at the path given).
//!
//! The value is also in the command's environment as `LINERATE_VALUE`, for scripts.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod exec;
pub use exec::run_command;

/// The placeholder replaced by each value.
pub const PLACEHOLDER: &str = "{value}";

/// Most bytes of a command's stdout (and of its stderr) kept in the results.
pub const OUTPUT_LIMIT_BYTES: usize = 64 << 10;

/// How long a knob command may run before it is killed, unless `--knob-timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a command could not be split into words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WordsError {
    /// Quoting or shell syntax: the rules of plan files' commands (`plan::split_words`), so a
    /// command reads the same in a plan and after `--pre`.
    #[error(transparent)]
    Split(#[from] plan::SplitError),
    /// Nothing but whitespace.
    #[error("the command is empty")]
    Empty,
}

/// A `--pre`/`--post` command that cannot be run for every value; the message names the flag
/// and the command as given.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KnobError {
    /// It could not be split into words.
    #[error("{flag} '{text}': {reason}")]
    Words {
        /// `--pre` or `--post`.
        flag: String,
        /// The command as given.
        text: String,
        /// Why not.
        reason: WordsError,
    },
    /// A `--pre` without `{value}`.
    #[error(
        "{flag} '{text}': no {p} in it; write {p} where each value goes, e.g. {flag} \
         'ethtool -C eth0 rx-usecs {p}'",
        p = PLACEHOLDER
    )]
    NoPlaceholder {
        /// The flag.
        flag: String,
        /// The command as given.
        text: String,
    },
    /// A program given by its path that is not an executable file.
    #[error("{flag} '{text}': {program}: no executable file there; give the program's full path or install it")]
    NotExecutable {
        /// The flag.
        flag: String,
        /// The command as given.
        text: String,
        /// The program, with the value in place.
        program: String,
    },
    /// A program name not found on `PATH`.
    #[error(
        "{flag} '{text}': {program}: not found on PATH; give the program's full path or install it"
    )]
    NotOnPath {
        /// The flag.
        flag: String,
        /// The command as given.
        text: String,
        /// The program, with the value in place.
        program: String,
    },
}

/// Splits `text` into words as a POSIX shell would, without expanding anything
/// (`plan::split_words`); nothing but whitespace is [`WordsError::Empty`].
pub fn split_words(text: &str) -> Result<Vec<String>, WordsError> {
    let words = plan::split_words(text)?;
    if words.is_empty() {
        return Err(WordsError::Empty);
    }
    Ok(words)
}

/// A `--pre`/`--post` command, split into words, with `{value}` still in them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandTemplate {
    /// The flag it came from (`--pre`, `--post`), for messages.
    pub flag: String,
    /// As given.
    pub text: String,
    /// Its words.
    pub words: Vec<String>,
}

impl CommandTemplate {
    /// Splits `text`; with `need_placeholder`, refuses a template without `{value}`.
    pub fn parse(flag: &str, text: &str, need_placeholder: bool) -> Result<Self, KnobError> {
        let words = split_words(text).map_err(|reason| KnobError::Words {
            flag: flag.to_string(),
            text: text.to_string(),
            reason,
        })?;
        if need_placeholder && !words.iter().any(|w| w.contains(PLACEHOLDER)) {
            return Err(KnobError::NoPlaceholder {
                flag: flag.to_string(),
                text: text.to_string(),
            });
        }
        Ok(Self {
            flag: flag.to_string(),
            text: text.to_string(),
            words,
        })
    }

    /// The argument vector for `value`: `{value}` replaced inside each word.
    pub fn render(&self, value: &str) -> Vec<String> {
        self.words
            .iter()
            .map(|w| w.replace(PLACEHOLDER, value))
            .collect()
    }

    /// Checks that the program exists for every value (it may contain `{value}` too).
    pub fn check_program<'a>(
        &self,
        values: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), KnobError> {
        let mut checked = Vec::new();
        for value in values {
            let program = self.words[0].replace(PLACEHOLDER, value);
            if checked.contains(&program) {
                continue;
            }
            if find_program(&program, std::env::var_os("PATH").as_deref()).is_none() {
                let (flag, text) = (self.flag.clone(), self.text.clone());
                return Err(if program.contains('/') {
                    KnobError::NotExecutable {
                        flag,
                        text,
                        program,
                    }
                } else {
                    KnobError::NotOnPath {
                        flag,
                        text,
                        program,
                    }
                });
            }
            checked.push(program);
        }
        Ok(())
    }
}

/// Where `program` would be run from: itself when it holds a `/`, else the first executable
/// file of that name in `path` (colon-separated; an empty entry is the current directory).
pub fn find_program(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                PathBuf::from(".").join(program)
            } else {
                dir.join(program)
            }
        })
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// When a knob command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the point's test (`--pre`).
    Pre,
    /// After it (`--post`).
    Post,
}

/// One run of a knob command, as stored with its point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnobRun {
    /// Before or after the point.
    pub phase: Phase,
    /// The arguments it ran with (program first).
    pub argv: Vec<String>,
    /// Exit status; `None` when it did not exit normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Why it could not be started, if it could not.
    pub spawn_error: Option<String>,
    /// Whether it started and exited with status 0 (before the timeout).
    pub success: bool,
    /// Whether it was killed (with its process group) for running past the timeout.
    #[serde(default)]
    pub timed_out: bool,
    /// Its standard output (lossy UTF-8, at most [`OUTPUT_LIMIT_BYTES`]).
    pub stdout: String,
    /// Its standard error, likewise.
    pub stderr: String,
    /// How long it ran, seconds.
    pub duration_s: f64,
}

fn keep(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(OUTPUT_LIMIT_BYTES)];
    String::from_utf8_lossy(cut).into_owned()
}

/// `argv` as one line a user could paste into a shell: words with anything but
/// `[A-Za-z0-9_./=:,+-]` in single quotes.
pub fn display_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./=:,+-".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl KnobRun {
    /// Why it failed, in one line, e.g. "--pre for value 3: `ethtool -C eth0 rx-usecs 3`
    /// exited with status 1: Operation not supported"; `None` when it succeeded.
    pub fn failure(&self, value: &str) -> Option<String> {
        let flag = match self.phase {
            Phase::Pre => "--pre",
            Phase::Post => "--post",
        };
        Some(format!("{flag} for value {value}: {}", self.why()?))
    }

    /// What went wrong, e.g. "`false` exited with status 1" with the last line it printed;
    /// `None` when it succeeded.
    pub fn why(&self) -> Option<String> {
        if self.success {
            return None;
        }
        let how = match (&self.spawn_error, self.exit_code, self.signal) {
            _ if self.timed_out => format!(
                "was still running after {:.1} s and was killed (raise --knob-timeout if it \
                 needs longer)",
                self.duration_s
            ),
            (Some(e), _, _) => format!("could not start: {e}"),
            (None, Some(code), _) => format!("exited with status {code}"),
            (None, None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None, None) => "failed".to_string(),
        };
        let last = |text: &str| {
            text.lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .map(String::from)
        };
        let said = last(&self.stderr)
            .or_else(|| last(&self.stdout))
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        Some(format!("`{}` {how}{said}", display_argv(&self.argv)))
    }
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT.as_millis() as u64
}

/// The validated `--pre`/`--post` of a knob sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobPlan {
    /// Run before each point (holds `{value}`).
    pub pre: CommandTemplate,
    /// Run after each point, if given.
    pub post: Option<CommandTemplate>,
    /// How long each may run before it is killed, ms.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

impl KnobPlan {
    /// Parses and checks both commands for `values`: everything a user can get wrong here is
    /// found before anything runs.
    pub fn new(
        pre: &str,
        post: Option<&str>,
        values: &[String],
        timeout: Duration,
    ) -> Result<Self, KnobError> {
        let pre = CommandTemplate::parse("--pre", pre, true)?;
        let post = post
            .map(|p| CommandTemplate::parse("--post", p, false))
            .transpose()?;
        pre.check_program(values.iter().map(String::as_str))?;
        if let Some(post) = &post {
            post.check_program(values.iter().map(String::as_str))?;
        }
        Ok(Self {
            pre,
            post,
            timeout_ms: timeout.as_millis().try_into().unwrap_or(u64::MAX),
        })
    }

    /// How long each command may run.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn words(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    #[test]
    fn splits_like_a_shell_without_expanding() {
        assert_eq!(
            words("ethtool -C eth0  rx-usecs {value}"),
            ["ethtool", "-C", "eth0", "rx-usecs", "{value}"]
        );
        assert_eq!(
            words(r#"echo 'a b' "c \"d\"" e\ f ''"#),
            ["echo", "a b", r#"c "d""#, "e f", ""]
        );
        assert_eq!(words(r#"x "a\nb" 'it''s'"#), ["x", r"a\nb", "its"]);
        assert_eq!(
            words(r#"x '$HOME' "a;b" "\$5""#),
            ["x", "$HOME", "a;b", "$5"]
        );
    }

    #[test]
    fn shell_syntax_and_bad_quoting_are_refused() {
        for (text, needle) in [
            (
                "ip link set dev eth0 mtu {value} && sleep 1",
                "'&' is shell syntax",
            ),
            ("echo {value} | tee x", "'|' is shell syntax"),
            ("echo $IFACE", "'$' is shell syntax"),
            ("echo \"$IFACE\"", "'$' is shell syntax"),
            ("echo 'open", "a ' is not closed"),
            ("echo \"open", "a \" is not closed"),
            ("   ", "the command is empty"),
            ("echo x\\", "a trailing \\ escapes nothing"),
        ] {
            let err = split_words(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn a_value_stays_one_argument() {
        let t = CommandTemplate::parse("--pre", "echo rx-usecs={value} {value}", true).unwrap();
        let argv = t.render("1; rm -rf /");
        assert_eq!(argv, ["echo", "rx-usecs=1; rm -rf /", "1; rm -rf /"]);
        let run = run_command(
            Phase::Pre,
            &argv,
            "1; rm -rf /",
            DEFAULT_TIMEOUT,
            &AtomicBool::new(false),
        );
        assert!(run.success, "{run:?}");
        assert_eq!(run.stdout, "rx-usecs=1; rm -rf / 1; rm -rf /\n");
        let run = run_command(
            Phase::Pre,
            &t.render("$(id)"),
            "$(id)",
            DEFAULT_TIMEOUT,
            &AtomicBool::new(false),
        );
        assert_eq!(run.stdout, "rx-usecs=$(id) $(id)\n");
    }

    #[test]
    fn placeholder_is_required_in_pre() {
        let err = CommandTemplate::parse("--pre", "ethtool -C eth0 rx-usecs 3", true)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--pre 'ethtool -C eth0 rx-usecs 3': no {value} in it"),
            "{err}"
        );
        assert!(CommandTemplate::parse("--post", "true", false).is_ok());
    }

    #[test]
    fn programs_are_looked_up_before_anything_runs() {
        let path = std::ffi::OsString::from("/nonexistent:/usr/bin:/bin");
        assert!(find_program("sh", Some(&path)).is_some());
        assert!(find_program("linerate-no-such-tool", Some(&path)).is_none());
        assert!(find_program("/bin/sh", None).is_some());
        let plain = tempfile::NamedTempFile::new().unwrap();
        std::fs::set_permissions(plain.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let plain = plain.path().to_str().unwrap();
        assert!(find_program(plain, None).is_none(), "not executable");
        assert!(find_program("/", None).is_none(), "a directory");
        let values = ["1".to_string()];
        let err = KnobPlan::new(
            "linerate-no-such-tool {value}",
            None,
            &values,
            DEFAULT_TIMEOUT,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "--pre 'linerate-no-such-tool {value}': linerate-no-such-tool: not found on PATH; \
             give the program's full path or install it"
        );
        let err = KnobPlan::new(
            "echo {value}",
            Some("/no/such/post"),
            &values,
            DEFAULT_TIMEOUT,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("--post '/no/such/post': /no/such/post: no executable file there"));
        assert!(KnobPlan::new("echo {value}", Some("true"), &values, DEFAULT_TIMEOUT).is_ok());
    }

    #[test]
    fn output_and_status_are_kept() {
        let argv: Vec<String> = ["sh", "-c", "echo out; echo oops >&2; exit 3"]
            .map(String::from)
            .to_vec();
        let run = run_command(
            Phase::Post,
            &argv,
            "7",
            DEFAULT_TIMEOUT,
            &AtomicBool::new(false),
        );
        assert_eq!((run.exit_code, run.success), (Some(3), false));
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("out\n", "oops\n")
        );
        assert_eq!(
            run.failure("7").unwrap(),
            "--post for value 7: `sh -c 'echo out; echo oops >&2; exit 3'` exited with status 3: oops"
        );
        let argv: Vec<String> = ["sh", "-c", "printf %s \"$LINERATE_VALUE\""]
            .map(String::from)
            .to_vec();
        assert_eq!(
            run_command(
                Phase::Pre,
                &argv,
                "9000",
                DEFAULT_TIMEOUT,
                &AtomicBool::new(false)
            )
            .stdout,
            "9000"
        );
        let missing = run_command(
            Phase::Pre,
            &["/no/such/tool".to_string()],
            "1",
            DEFAULT_TIMEOUT,
            &AtomicBool::new(false),
        );
        assert!(missing.failure("1").unwrap().contains("could not start"));
    }
}
