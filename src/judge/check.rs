//! Deciding a Batch test from the outputs: CMS's white-diff comparison, and the parsing of a
//! checker's or manager's verdict (score on stdout, message on stderr).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{bail, Context, Result};

pub const CORRECT: &str = "Output is correct";
pub const WRONG: &str = "Output isn't correct";

/// CMS white-diff: lines compared one by one, where any run of whitespace equals any other,
/// whitespace at line ends is ignored, and so are trailing empty lines. Streams both files.
pub fn white_diff(expected: &Path, actual: &Path) -> Result<bool> {
    let open = |p: &Path| {
        File::open(p)
            .map(BufReader::new)
            .with_context(|| format!("cannot open {}", p.display()))
    };
    let (mut a, mut b) = (open(expected)?, open(actual)?);
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    loop {
        let ea = next_line(&mut a, &mut la)?;
        let eb = next_line(&mut b, &mut lb)?;
        match (ea, eb) {
            (false, false) => return Ok(true),
            (true, true) => {
                if !same_tokens(&la, &lb) {
                    return Ok(false);
                }
            }
            // One file ended: the rest of the other must be blank lines.
            (true, false) => return rest_is_blank(&la, &mut a),
            (false, true) => return rest_is_blank(&lb, &mut b),
        }
    }
}

fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> Result<bool> {
    line.clear();
    Ok(reader.read_until(b'\n', line)? > 0)
}

fn is_space(c: &u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

fn same_tokens(a: &[u8], b: &[u8]) -> bool {
    a.split(is_space)
        .filter(|t| !t.is_empty())
        .eq(b.split(is_space).filter(|t| !t.is_empty()))
}

fn rest_is_blank(current: &[u8], reader: &mut impl BufRead) -> Result<bool> {
    let mut line = current.to_vec();
    loop {
        if !line.iter().all(is_space) {
            return Ok(false);
        }
        if !next_line(reader, &mut line)? {
            return Ok(true);
        }
    }
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
    }
}
