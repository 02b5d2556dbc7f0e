//! `judge --keep DIR`: besides what the judge keeps of every test it runs (your output, your
//! stderr, the checker's and the manager's words), the test's input, its expected output and
//! its verdict, named by test (docs/debugging.md#kept-files). Files that a test run ahead of
//! an early stop left are removed: the table reports that test SKIPPED.
//!
//! A folder holds one judgement's files: a judgement into a folder `--keep` filled before
//! removes what the last one left (so `07.verdict` of another program never sits beside this
//! one's files), and a folder with files ioi-run did not write is refused, never emptied.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::judge::kept::{self, Kept};
use crate::judge::LoadedProblem;
use crate::score::{SubtaskResult, TestResult, Verdict};

/// The file that marks a folder as `--keep`'s: only such a folder is emptied.
const MARKER: &str = ".ioi-run-kept";

/// Makes `dir` ready for a judgement's files: created when missing, the kept files of an
/// earlier judgement removed (regular files named as kept files only; links and folders are
/// left), and refused when it holds files of someone else's.
pub fn prepare(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the folder {} (--keep)", dir.display()))?;
    let marker = dir.join(MARKER);
    let ours = marker.symlink_metadata().is_ok_and(|m| m.is_file());
    let entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the folder {} (--keep)", dir.display()))?
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot read the folder {} (--keep)", dir.display()))?;
    if !ours {
        if let Some(entry) = entries.first() {
            anyhow::bail!(
                "{} holds files ioi-run did not keep (e.g. {}): give --keep a new or empty \
                 folder, or one --keep filled before (its files are replaced)",
                dir.display(),
                crate::output::printable(&entry.file_name().to_string_lossy(), false)
            );
        }
        kept::create(&marker)?
            .write_all(
                b"This folder holds the files `ioi-run judge --keep` kept of one judgement; \
                  the next judgement into it replaces them.\n",
            )
            .with_context(|| format!("cannot write {}", marker.display()))?;
        return Ok(());
    }
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && Kept::is_kept_name(&name) {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Completes the kept files of every test in `results`.
pub fn write(results: &[SubtaskResult], loaded: &LoadedProblem, dir: &Path) -> Result<()> {
    let all = || results.iter().flat_map(|s| &s.test_results);
    let mut done: Vec<&str> = Vec::new();
    for first in all() {
        if done.contains(&first.test_name.as_str()) {
            continue;
        }
        done.push(&first.test_name);
        // A test shared by subtasks may be SKIPPED in one (its early stop) and judged in
        // another: the table reports it, so its files are kept.
        let reported = all().find(|t| {
            t.test_name == first.test_name
                && !matches!(t.status, Verdict::Skipped | Verdict::CompilationError)
        });
        let Some(t) = reported else {
            let processes = match &loaded.problem.task {
                crate::problem::TaskType::Communication(c) => c.num_processes.max(1),
                crate::problem::TaskType::Batch => 0,
            };
            let per_process = (0..processes)
                .flat_map(|i| [Kept::Sent(i), Kept::Received(i), Kept::UnreadStdout(i)]);
            let kinds = [
                Kept::Output,
                Kept::Stderr,
                Kept::Checker,
                Kept::ManagerOut,
                Kept::ManagerErr,
                Kept::Conversation,
            ];
            for kind in kinds.into_iter().chain(per_process) {
                let _ = std::fs::remove_file(kept::path(dir, &first.test_name, kind));
            }
            continue;
        };
        let Some(case) = loaded.tests.get(&t.test_name) else {
            continue;
        };
        for (from, kind) in [(&case.input, Kept::Input), (&case.output, Kept::Expected)] {
            kept::copy(from, dir, &t.test_name, kind)?;
        }
        let to = kept::path(dir, &t.test_name, Kept::Verdict);
        kept::create(&to)?
            .write_all(verdict_text(t).as_bytes())
            .with_context(|| format!("cannot write {}", to.display()))?;
    }
    Ok(())
}

/// A test's `.verdict` file: one `name value` line per field, then the whole feedback.
fn verdict_text(t: &TestResult) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "test      {}", t.test_name);
    let _ = writeln!(text, "verdict   {}", t.status.as_str());
    let _ = writeln!(text, "score     {}", t.score);
    if let Some(time) = t.time {
        let _ = writeln!(text, "cpu       {time:.3} s");
    }
    if let Some(wall) = t.wall_time {
        let _ = writeln!(text, "wall      {wall:.3} s");
    }
    if let Some(memory) = t.memory {
        let _ = writeln!(
            text,
            "memory    {:.1} MiB",
            memory as f64 / (1 << 20) as f64
        );
    }
    let _ = writeln!(text, "feedback  {}", t.feedback.as_deref().unwrap_or(""));
    text
}
