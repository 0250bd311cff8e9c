//! The shell-like word splitter of a step's `run`, `pre` and `post` strings.
//!
//! Words are split as a POSIX shell splits them, and nothing else a shell does happens: no
//! variables, globs, pipes or redirections. Unquoted shell syntax (`|`, `;`, `&`, `<`, `>`, `$`,
//! a backquote) is refused rather than passed on literally, because it would not mean what it
//! means in a shell; these are the rules of `linerate sweep knob --pre`, so a command reads the
//! same in a plan and on the command line.

use thiserror::Error;

/// Why a string could not be split into words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SplitError {
    /// A quote without its closing one.
    #[error("a {quote} is not closed; close it, or escape it with \\ (\\{quote})")]
    Unclosed {
        /// `'` or `"`.
        quote: char,
    },
    /// A backslash at the very end, escaping nothing.
    #[error("a trailing \\ escapes nothing; remove it, or write \\\\ for a backslash")]
    TrailingBackslash,
    /// Unquoted shell syntax.
    #[error(
        "'{c}' is shell syntax, but the command runs without a shell; put it in single quotes \
         to pass it literally, or put the commands in a script and run that"
    )]
    ShellSyntax {
        /// The character.
        c: char,
    },
}

/// Splits `s` into words as a POSIX shell would, without expanding anything.
///
/// Whitespace separates words; `'…'` is taken literally; in `"…"` a backslash escapes `"`, `\`,
/// `$` and a backquote (before any other character it stays); elsewhere a backslash escapes the
/// next character; a backslash before a newline joins the lines. Quotes join what touches them
/// into one word (`a'b c'` is `a b c`), and `''` is an empty word. Unquoted `|`, `;`, `&`, `<`,
/// `>`, `$` and backquotes, and `$` or a backquote inside `"…"`, are refused. A string of
/// whitespace only is no words, not an error.
pub fn split_words(s: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word has started even if it is still empty (after `''`).
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SplitError::Unclosed { quote: '\'' }),
                    }
                }
            }
            '"' => {
                in_word = true;
                double_quoted(&mut chars, &mut word)?;
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return Err(SplitError::TrailingBackslash),
                }
            }
            '|' | ';' | '&' | '<' | '>' | '$' | '`' => return Err(SplitError::ShellSyntax { c }),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The rest of a `"…"` after its opening quote, appended to `word`.
fn double_quoted(chars: &mut std::str::Chars<'_>, word: &mut String) -> Result<(), SplitError> {
    loop {
        match chars.next() {
            Some('"') => return Ok(()),
            Some('\\') => match chars.next() {
                Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                Some('\n') => {}
                Some(other) => {
                    word.push('\\');
                    word.push(other);
                }
                None => return Err(SplitError::Unclosed { quote: '"' }),
            },
            Some(c @ ('$' | '`')) => return Err(SplitError::ShellSyntax { c }),
            Some(c) => word.push(c),
            None => return Err(SplitError::Unclosed { quote: '"' }),
        }
    }
}

/// `words` as one string that [`split_words`] splits back into them, as a user would type it:
/// a word that is empty or holds whitespace, a quote, a backslash or shell syntax goes in single
/// quotes (a `'` within it as `'\''`), every other word as it is.
pub fn join_words(words: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && !w
                .chars()
                .any(|c| c.is_whitespace() || "'\"\\|;&<>$`".contains(c))
    };
    words
        .iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    #[test]
    fn whitespace_separates_words() {
        assert_eq!(
            words("tcp  198.18.0.2\t-t 10\n"),
            ["tcp", "198.18.0.2", "-t", "10"]
        );
        assert_eq!(words(""), Vec::<String>::new());
        assert_eq!(words(" \t\n "), Vec::<String>::new());
    }

    #[test]
    fn joined_words_split_back_into_themselves() {
        let cases: [&[&str]; 4] = [
            &["tcp", "198.18.0.2", "-t", "10"],
            &["set-dma {value}", "", "it's", r#"a "b" \c"#],
            &["a|b", "x;y", "$HOME", "`id`", "<in", "&"],
            &[],
        ];
        for case in cases {
            let words: Vec<String> = case.iter().map(|w| w.to_string()).collect();
            let joined = join_words(&words);
            assert_eq!(split_words(&joined).unwrap(), words, "{joined}");
        }
        assert_eq!(join_words(&words("tcp -t 10")), "tcp -t 10");
        assert_eq!(join_words(&["it's".into()]), r"'it'\''s'");
    }

    #[test]
    fn quotes_group_and_join() {
        assert_eq!(
            words("sweep knob --pre 'set-dma {value}' -- tcp"),
            ["sweep", "knob", "--pre", "set-dma {value}", "--", "tcp"]
        );
        assert_eq!(words(r#"a"b c"d 'e'f"#), ["ab cd", "ef"]);
        assert_eq!(words("x '' \"\""), ["x", "", ""]);
        assert_eq!(words(r#"'a "b" c'"#), [r#"a "b" c"#]);
        assert_eq!(words(r#""it's""#), ["it's"]);
        // Single quotes keep everything, shell syntax and backslashes included.
        assert_eq!(words(r"'a|b;$c \n'"), [r"a|b;$c \n"]);
    }

    #[test]
    fn backslashes_escape_outside_single_quotes() {
        assert_eq!(words(r"a\ b c\'d \\"), ["a b", "c'd", r"\"]);
        assert_eq!(
            words(r#""q\"q" "\\" "\$5" "a\nb""#),
            [r#"q"q"#, r"\", "$5", r"a\nb"]
        );
        assert_eq!(words("one\\\ntwo three"), ["onetwo", "three"]);
        assert_eq!(words(r"\|\;\&"), ["|;&"]);
    }

    #[test]
    fn bad_quoting_is_refused() {
        assert_eq!(
            split_words("tcp 'x"),
            Err(SplitError::Unclosed { quote: '\'' })
        );
        assert_eq!(
            split_words("tcp \"x"),
            Err(SplitError::Unclosed { quote: '"' })
        );
        assert_eq!(
            split_words("tcp \"x\\"),
            Err(SplitError::Unclosed { quote: '"' })
        );
        assert_eq!(split_words("tcp x\\"), Err(SplitError::TrailingBackslash));
    }

    #[test]
    fn shell_syntax_is_refused() {
        for (s, c) in [
            ("a | b", '|'),
            ("a; b", ';'),
            ("a && b", '&'),
            ("a > f", '>'),
            ("a < f", '<'),
            ("echo $HOME", '$'),
            ("echo `id`", '`'),
            ("echo \"$HOME\"", '$'),
        ] {
            assert_eq!(split_words(s), Err(SplitError::ShellSyntax { c }), "{s}");
        }
        let message = split_words("a | b").unwrap_err().to_string();
        assert!(message.contains("without a shell"), "{message}");
    }
}
