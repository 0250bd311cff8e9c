//! iperf3's command line at linerate's top level (`linerate -c HOST -u -b 10M`): the linerate
//! command that does the same, for an error message. linerate has subcommands where iperf3 has
//! mode flags (`-c`, `-s`, `-u`), so a user's iperf3 habit otherwise gets only clap's
//! "unexpected argument '-c'".
//!
//! Invariant: this only reads the words; it answers `None` when the first word is not one of
//! iperf3's flags (or is linerate's own `-h`/`-V`), so every linerate command line parses as
//! before.

/// iperf3's mode flags and the flags that change the linerate command; the rest are
/// carried over as written (linerate spells `-p -t -P -R -b -l -w -i -O -C -M -N -S -4 -6 -B
/// -A` as iperf3 does) or dropped with a note.
const MODE_FLAGS: &[&str] = &[
    "-c",
    "--client",
    "-s",
    "--server",
    "-u",
    "--udp",
    "-R",
    "--reverse",
    "--bidir",
    "-P",
    "--parallel",
    "-t",
    "--time",
    "-b",
    "--bitrate",
    "-J",
    "--json",
    "-Z",
    "--zerocopy",
    "-O",
    "--omit",
    "-n",
    "--bytes",
    "-k",
    "--blockcount",
];

/// Flags that take a value in iperf3, so the word after them is not a host or a flag.
const TAKES_VALUE: &[&str] = &[
    "-c",
    "--client",
    "-p",
    "--port",
    "-t",
    "--time",
    "-P",
    "--parallel",
    "-b",
    "--bitrate",
    "-l",
    "--length",
    "-w",
    "--window",
    "-i",
    "--interval",
    "-O",
    "--omit",
    "-C",
    "--congestion",
    "-M",
    "--set-mss",
    "-S",
    "--tos",
    "-B",
    "--bind",
    "-A",
    "--affinity",
    "-n",
    "--bytes",
    "-k",
    "--blockcount",
    "--logfile",
    "-T",
    "--title",
];

/// The linerate command for an iperf3-style command line `args` (without the program name),
/// as one error line; `None` when `args` does not start with one of iperf3's flags.
pub fn suggestion(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<String> {
    let args: Vec<String> = (args.into_iter())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let first = args.first()?;
    if !MODE_FLAGS.contains(&first.as_str()) {
        return None;
    }
    let mut words = args.iter().map(String::as_str).peekable();
    let (mut host, mut server, mut udp) = (None, false, false);
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    while let Some(w) = words.next() {
        let value = TAKES_VALUE.contains(&w).then(|| words.next()).flatten();
        match (w, value) {
            ("-c" | "--client", Some(h)) => host = Some(h),
            ("-s" | "--server", _) => server = true,
            ("-u" | "--udp", _) => udp = true,
            ("-J", _) => kept.push("--json".to_string()),
            ("--bitrate", Some(v)) => kept.push(format!("-b {v}")),
            ("--set-mss", Some(v)) => kept.push(format!("-M {v}")),
            ("-Z" | "--zerocopy", _) => kept.push("--send-mode sendfile".to_string()),
            ("--skip-rx-copy", _) => kept.push("--rx-mode trunc".to_string()),
            ("-D" | "--daemon" | "-n" | "--bytes" | "-k" | "--blockcount", _)
            | ("--logfile" | "-T" | "--title", _) => dropped.push(w.to_string()),
            (flag, Some(v)) => kept.push(format!("{flag} {v}")),
            (flag, None) => kept.push(flag.to_string()),
        }
    }
    let (command, iperf3) = if server {
        // The server's flags linerate shares: the port, the bind address, one-off.
        kept.retain(|w| {
            ["-p ", "-B ", "--port ", "--bind "]
                .iter()
                .any(|p| w.starts_with(p))
                || w == "-1"
        });
        ("serve".to_string(), "-s")
    } else {
        let kind = if udp { "udp" } else { "tcp" };
        let to = host.map_or(String::new(), |h| format!(" {h}"));
        (format!("{kind}{to}"), "-c")
    };
    let rest: String = kept.iter().map(|w| format!(" {w}")).collect();
    let original = args.join(" ");
    let mut line =
        format!("linerate has no {iperf3}: run `linerate {command}{rest}` (iperf3 {original})");
    if !dropped.is_empty() {
        line += &format!("; linerate has no {} (left out)", dropped.join(", "));
    }
    if server {
        line += "; it listens on port 5301 and serves iperf3 clients too (iperf3 -c HOST -p 5301)";
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(line: &str) -> Option<String> {
        suggestion(line.split_whitespace().map(std::ffi::OsString::from))
    }

    #[test]
    fn a_client_line_becomes_the_test_command() {
        let s = say("-c 10.0.0.2 -t 5 -P 4").unwrap();
        assert!(
            s.starts_with("linerate has no -c: run `linerate tcp 10.0.0.2 -t 5 -P 4` (iperf3 -c 10.0.0.2 -t 5 -P 4)"),
            "{s}"
        );
        let s = say("-c h -u -b 100M --bidir").unwrap();
        assert!(s.contains("`linerate udp h -b 100M --bidir`"), "{s}");
        let s = say("-u -c h --bitrate 1G -Z -J").unwrap();
        assert!(
            s.contains("`linerate udp h -b 1G --send-mode sendfile --json`"),
            "{s}"
        );
        let s = say("-R").unwrap();
        assert!(s.contains("`linerate tcp -R`"), "{s}");
    }

    #[test]
    fn a_server_line_becomes_serve() {
        let s = say("-s -p 5201 -D -1").unwrap();
        assert!(
            s.contains("linerate has no -s: run `linerate serve -p 5201 -1`"),
            "{s}"
        );
        assert!(s.contains("linerate has no -D (left out)"), "{s}");
    }

    #[test]
    fn linerate_command_lines_are_left_alone() {
        for line in ["tcp -c x", "--help", "-h", "-V", "--version", "serve", ""] {
            assert_eq!(say(line), None, "{line}");
        }
    }
}
