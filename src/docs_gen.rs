//! Shell completions and the man page, generated from the same clap definition as the help.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// Writes a completion script for `shell` (bash, zsh, fish, elvish, powershell).
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut Cli::command(), "linerate", out);
}

/// Writes the roff man page of `linerate`.
pub fn man_page(out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn completions_and_man_page_render() {
        let mut buf = Vec::new();
        super::completions(clap_complete::Shell::Bash, &mut buf);
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("linerate") && text.contains("--flows-dst"));
        let mut man = Vec::new();
        super::man_page(&mut man).unwrap();
        assert!(String::from_utf8(man).unwrap().contains(".TH linerate"));
    }
}
