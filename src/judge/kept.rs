//! What a test leaves behind for someone debugging a solution (`judge --keep`, and the reasons
//! `judge` shows under its table): the solution's output and standard error, the checker's
//! words, the manager's, copied out of the test's root-only folder once every process of the
//! test has ended (docs/debugging.md#kept-files).
//!
//! Files are named by test, side by side in one folder (`03.out`, `03.err`), so that `diff`
//! and an editor work on them. A test name comes from a dataset, which is untrusted: it is
//! reduced to a safe file name first.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The kinds of file a test leaves, with the suffix of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The test's input.
    Input,
    /// The expected output.
    Expected,
    /// The solution's standard output (Batch).
    Output,
    /// The solution's standard error (every user process, in order, for Communication).
    Stderr,
    /// The checker's standard output and error.
    Checker,
    /// The manager's standard output (Communication: its score, or the output a checker
    /// judges).
    ManagerOut,
    /// The manager's standard error (Communication: its message).
    ManagerErr,
    /// The verdict, score, times and feedback, as `judge` shows them.
    Verdict,
}

impl Kept {
    /// The suffix after the test's name.
    pub fn suffix(self) -> &'static str {
        match self {
            Kept::Input => "in",
            Kept::Expected => "ans",
            Kept::Output => "out",
            Kept::Stderr => "err",
            Kept::Checker => "checker",
            Kept::ManagerOut => "manager.out",
            Kept::ManagerErr => "manager.err",
            Kept::Verdict => "verdict",
        }
    }
}

/// Largest copy of one stream kept per test: enough for any debugging print, a sanitizer
/// report or a wrong answer, and a bound on what a solution can make the judge write.
pub const KEPT_BYTES: u64 = 64 << 20;

/// A test name reduced to a file name: letters, digits, `-`, `_` and `.` kept, anything else
/// `_`, never empty nor starting with `.` (no hidden files, no `..`).
pub fn file_stem(test: &str) -> String {
    let mut stem: String = test
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                true => c,
                false => '_',
            },
        )
        .collect();
    if stem.is_empty() || stem.starts_with('.') {
        stem.insert(0, '_');
    }
    stem
}

/// The path of a test's file of one kind in `dir`.
pub fn path(dir: &Path, test: &str, kind: Kept) -> PathBuf {
    dir.join(format!("{}.{}", file_stem(test), kind.suffix()))
}

/// Copies up to [`KEPT_BYTES`] of `from` (a file of a root-only folder, written by the
/// sandbox) to the test's file of `kind`. Nothing is kept when `from` does not exist (a
/// Communication test has no output of the solution's own unless a checker judges the
/// manager's), and an older file of that kind is removed.
pub fn copy(from: &Path, dir: &Path, test: &str, kind: Kept) -> Result<()> {
    copy_all(&[from], dir, test, kind)
}

/// Like [`copy`], the files one after the other; the stderr of several user processes each
/// after a line `=== process I ===`.
pub fn copy_all(from: &[&Path], dir: &Path, test: &str, kind: Kept) -> Result<()> {
    let to = path(dir, test, kind);
    if !from.iter().any(|p| p.exists()) {
        return match fs::remove_file(&to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", to.display()))
            }
            _ => Ok(()),
        };
    }
    let mut out =
        fs::File::create(&to).with_context(|| format!("cannot write {}", to.display()))?;
    let mut left = KEPT_BYTES;
    for (i, source) in from.iter().enumerate() {
        let Ok(file) = fs::File::open(source) else {
            continue;
        };
        let empty = file.metadata().map(|m| m.len() == 0).unwrap_or(true);
        if kind == Kept::Stderr && from.len() > 1 && !empty {
            writeln!(out, "=== process {i} ===")?;
        }
        let copied = std::io::copy(&mut file.take(left), &mut out)
            .with_context(|| format!("cannot write {}", to.display()))?;
        left -= copied;
    }
    Ok(())
}
