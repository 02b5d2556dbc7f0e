//! Deciding a Batch test from the outputs: CMS's white-diff comparison, and the parsing of a
//! checker's or manager's verdict (score on stdout, message on stderr).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{bail, Context, Result};

pub const CORRECT: &str = "Output is correct";
pub const WRONG: &str = "Output isn't correct";

/// CMS white-diff: lines compared one by one, where any run of whitespace equals any other,
/// whitespace at line ends is ignored, and so are trailing empty lines. Both files are
/// streamed through a normaliser and compared byte by byte, so memory stays bounded whatever
/// the output (a single 1 GiB line included).
pub fn white_diff(expected: &Path, actual: &Path) -> Result<bool> {
    let open = |p: &Path| {
        File::open(p)
            .map(BufReader::new)
            .with_context(|| format!("cannot open {}", p.display()))
    };
    let mut a = Normalised::new(open(expected)?);
    let mut b = Normalised::new(open(actual)?);
    loop {
        let (x, y) = (a.next_byte()?, b.next_byte()?);
        if x != y {
            return Ok(false);
        }
        if x.is_none() {
            return Ok(true);
        }
    }
}

/// A file as its canonical text: tokens separated by one space, lines ended by `\n`,
/// leading/trailing whitespace of lines dropped, trailing empty lines dropped.
struct Normalised<R> {
    input: std::io::Bytes<R>,
    /// Bytes ready to hand out (a separator before the next token).
    pending: std::collections::VecDeque<u8>,
    /// Whether the current line has had a token.
    in_line: bool,
    /// Whether whitespace was seen since the last token of this line.
    space: bool,
    /// Empty lines seen but not yet emitted (they only count if a non-empty line follows).
    empty_lines: usize,
    done: bool,
}

impl<R: BufRead> Normalised<R> {
    fn new(input: R) -> Self {
        Normalised {
            input: input.bytes(),
            pending: Default::default(),
            in_line: false,
            space: false,
            empty_lines: 0,
            done: false,
        }
    }

    fn next_byte(&mut self) -> Result<Option<u8>> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(b));
            }
            if self.done {
                return Ok(None);
            }
            match self.input.next().transpose()? {
                None => {
                    self.done = true;
                    if self.in_line {
                        self.pending.push_back(b'\n');
                    }
                }
                Some(b'\n') => {
                    if self.in_line {
                        self.pending.push_back(b'\n');
                    } else {
                        self.empty_lines += 1;
                    }
                    self.in_line = false;
                    self.space = false;
                }
                Some(c) if is_space(&c) => self.space = true,
                Some(c) => {
                    if !self.in_line {
                        self.pending
                            .extend(std::iter::repeat_n(b'\n', self.empty_lines));
                        self.empty_lines = 0;
                        self.in_line = true;
                    } else if self.space {
                        self.pending.push_back(b' ');
                    }
                    self.space = false;
                    self.pending.push_back(c);
                }
            }
        }
    }
}

/// Blanks inside a line, as white-diff skips them (a newline ends the line).
pub(crate) fn is_space(c: &u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// A checker's or manager's verdict: the score is the first token of stdout, in [0, 1]; the
/// feedback is stderr (trimmed). An unparsable score is the tool's failure, not the program's.
pub fn parse_verdict(stdout: &str, stderr: &str, tool: &str) -> Result<(f64, String)> {
    let Some(first) = stdout.split_whitespace().next() else {
        bail!(
            "the {tool} printed no score on stdout (stderr: {:?})",
            truncate(stderr, 200)
        );
    };
    let score: f64 = first.parse().with_context(|| {
        format!(
            "the {tool} printed {:?} instead of a score",
            truncate(first, 50)
        )
    })?;
    if !(0.0..=1.0).contains(&score) {
        bail!("the {tool} printed the score {score}, outside [0, 1]");
    }
    // `-0` is in the range and equals 0, but would be shown and summed as `-0`.
    let score = if score == 0.0 { 0.0 } else { score };
    Ok((score, stderr.trim().to_string()))
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(expected: &str, actual: &str) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let (e, a) = (dir.path().join("e"), dir.path().join("a"));
        std::fs::write(&e, expected).unwrap();
        std::fs::write(&a, actual).unwrap();
        white_diff(&e, &a).unwrap()
    }

    #[test]
    fn white_diff_ignores_whitespace_amounts_and_trailing_blank_lines() {
        assert!(diff("1 2\n3\n", "1 2\n3\n"));
        assert!(diff("1 2\n3\n", "1   2\t\n3"));
        assert!(diff("1 2\n3\n", "  1 2\r\n3\n\n\n  \n"));
        assert!(diff("1 2\n3\n\n", "1 2\n3"));
        assert!(diff("", "\n\n"));
    }

    #[test]
    fn white_diff_keeps_line_structure_and_tokens() {
        assert!(!diff("1 2\n3\n", "1\n2 3\n"));
        assert!(!diff("1 2\n3\n", "1 2\n\n3\n"));
        assert!(!diff("1 2\n3\n", "1 2\n3\n4\n"));
        assert!(!diff("12\n", "1 2\n"));
        assert!(!diff("1\n", ""));
    }

    #[test]
    fn verdicts_parse_scores_in_range() {
        assert_eq!(
            parse_verdict("0.5\n", "partially\n", "checker").unwrap(),
            (0.5, "partially".into())
        );
        assert_eq!(
            parse_verdict("1", "Output is correct", "checker")
                .unwrap()
                .0,
            1.0
        );
        assert!(parse_verdict("", "boom", "checker")
            .unwrap_err()
            .to_string()
            .contains("no score"));
        assert!(parse_verdict("1.5", "", "manager")
            .unwrap_err()
            .to_string()
            .contains("outside"));
        assert!(parse_verdict("abc", "", "manager").is_err());
        // A negative zero is zero: shown and summed as `0`.
        let zero = parse_verdict("-0", "", "checker").unwrap().0;
        assert!(zero == 0.0 && zero.is_sign_positive(), "{zero}");
    }
}
