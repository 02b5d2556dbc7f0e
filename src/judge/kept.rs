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
    /// Communication: what every user process said and heard, counted, and the end of the
    /// conversation in the order it passed ([`crate::judge::relay::Transcript`], JSON).
    Conversation,
    /// Communication: the last bytes user process I sent the manager (`u{I}_to_m`).
    Sent(usize),
    /// Communication: the last bytes the manager sent user process I (`m_to_u{I}`).
    Received(usize),
    /// Communication, fifo_io: the first bytes user process I wrote to its standard output,
    /// which nobody reads.
    UnreadStdout(usize),
}

impl Kept {
    /// Every kind of one file a test, in the order `judge` lists them.
    pub const ALL: [Kept; 9] = [
        Kept::Input,
        Kept::Expected,
        Kept::Output,
        Kept::Stderr,
        Kept::Checker,
        Kept::ManagerOut,
        Kept::ManagerErr,
        Kept::Verdict,
        Kept::Conversation,
    ];

    /// The suffix after the test's name.
    pub fn suffix(self) -> String {
        match self {
            Kept::Input => "in".into(),
            Kept::Expected => "ans".into(),
            Kept::Output => "out".into(),
            Kept::Stderr => "err".into(),
            Kept::Checker => "checker".into(),
            Kept::ManagerOut => "manager.out".into(),
            Kept::ManagerErr => "manager.err".into(),
            Kept::Verdict => "verdict".into(),
            Kept::Conversation => "conversation.json".into(),
            Kept::Sent(i) => format!("u{i}_to_m"),
            Kept::Received(i) => format!("m_to_u{i}"),
            Kept::UnreadStdout(i) => format!("u{i}.stdout"),
        }
    }

    /// Whether a file's name is that of a kept file (of any test and process).
    pub fn is_kept_name(name: &str) -> bool {
        let numbered = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let mut parts = name.rsplit('.');
        let (last, before) = (parts.next().unwrap_or(""), parts.next());
        let Some(before) = before else {
            return false;
        };
        Kept::ALL
            .iter()
            .any(|kind| name.ends_with(&format!(".{}", kind.suffix())))
            || last
                .strip_prefix('u')
                .and_then(|r| r.strip_suffix("_to_m"))
                .is_some_and(numbered)
            || last.strip_prefix("m_to_u").is_some_and(numbered)
            || (last == "stdout" && before.strip_prefix('u').is_some_and(numbered))
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

/// A new file at `to`, replacing what was there. It is created afresh (`O_EXCL`), never
/// opened through whatever holds its name: ioi-run runs as root, and a symbolic link left in
/// the folder must not make it write elsewhere.
pub fn create(to: &Path) -> Result<fs::File> {
    match fs::remove_file(to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot replace {}", to.display()));
        }
        _ => {}
    }
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .with_context(|| format!("cannot write {}", to.display()))
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
    let mut out = create(&to)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_names_become_safe_file_names() {
        assert_eq!(file_stem("05"), "05");
        assert_eq!(file_stem("../../etc/passwd"), "_.._.._etc_passwd");
        assert_eq!(file_stem(".hidden"), "_.hidden");
        assert_eq!(file_stem(""), "_");
        let dir = Path::new("/k");
        assert_eq!(path(dir, "a/b", Kept::Output), Path::new("/k/a_b.out"));
        assert_eq!(path(dir, "05", Kept::Sent(1)), Path::new("/k/05.u1_to_m"));
        for name in [
            "05.u1_to_m",
            "05.m_to_u12",
            "05.u0.stdout",
            "a.conversation.json",
            "7.in",
        ] {
            assert!(Kept::is_kept_name(name), "{name}");
        }
        for name in [
            "05.u_to_m",
            "05.m_to_ux",
            "notes.txt",
            "05.stdout",
            "u0_to_m",
        ] {
            assert!(!Kept::is_kept_name(name), "{name}");
        }
    }

    #[test]
    fn a_link_in_the_folder_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep me").unwrap();
        let source = dir.path().join("stderr");
        fs::write(&source, "debug line\n").unwrap();
        std::os::unix::fs::symlink(&victim, path(dir.path(), "05", Kept::Stderr)).unwrap();
        copy(&source, dir.path(), "05", Kept::Stderr).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me");
        let kept = path(dir.path(), "05", Kept::Stderr);
        assert!(!kept.is_symlink());
        assert_eq!(fs::read_to_string(kept).unwrap(), "debug line\n");
    }

    #[test]
    fn nothing_is_kept_of_a_stream_that_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let stale = path(dir.path(), "05", Kept::Output);
        fs::write(&stale, "an older run").unwrap();
        copy(&dir.path().join("missing"), dir.path(), "05", Kept::Output).unwrap();
        assert!(!stale.exists());
    }
}
