//! What the processes of a failing Communication test said (docs/debugging.md#the-conversation):
//! the tests `judge` explains run a second time with their conversation relayed
//! ([`crate::judge::native::replay`]: the verdict stays the direct run's), and their
//! explanation shows its end, marked by process and direction, what each process sent and
//! received, what a process wrote where nobody reads it, and whether the bytes say that a
//! debugging print broke the protocol.

use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::judge::kept::{self, Kept};
use crate::judge::relay::{Direction, ProcessTalk, Transcript};
use crate::judge::{Build, Judge, Language, LoadedProblem};
use crate::problem::{TaskType, UserIo};
use crate::score::{TestResult, Verdict};

/// Lines of the conversation shown (its last ones).
const SHOWN_LINES: usize = 12;
/// Characters of the first bytes of an unread stdout shown.
const UNREAD_CHARS: usize = 120;
/// The largest kept transcript read: the relay keeps 64 KiB of turns, lossily decoded and
/// escaped as JSON.
const TRANSCRIPT_BYTES: u64 = 1 << 20;

/// Runs every failing test of `explained` again with its conversation relayed, when the problem
/// is a Communication task; a test whose second run fails is left without a conversation, with
/// a warning (an interruption stops everything).
pub fn replay_explained(
    judge: &Judge,
    loaded: &LoadedProblem,
    code: &[u8],
    language: Language,
    explained: &[&TestResult],
    quiet: bool,
) -> Result<()> {
    if !matches!(loaded.problem.task, TaskType::Communication(_)) {
        return Ok(());
    }
    let failing: Vec<&&TestResult> = explained
        .iter()
        .filter(|t| !matches!(t.status, Verdict::CompilationError))
        .collect();
    if failing.is_empty() {
        return Ok(());
    }
    let Build::Program(program) = judge.compile(loaded, code, language)? else {
        return Ok(());
    };
    for t in failing {
        let Some(case) = loaded.tests.get(&t.test_name) else {
            continue;
        };
        if !quiet {
            let _ = writeln!(
                std::io::stderr().lock(),
                "  test {} again, its conversation relayed",
                crate::output::printable(&t.test_name, false)
            );
        }
        if let Err(e) = judge.replay(loaded, &program, case) {
            if crate::judge::stop::is_aborted(&e) {
                return Err(e);
            }
            eprintln!(
                "warning: test {}: its conversation could not be relayed: {e:#}",
                crate::output::printable(&t.test_name, false)
            );
        }
    }
    Ok(())
}

/// A line of the conversation: who wrote it to whom.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Said {
    pub process: usize,
    pub direction: Direction,
    pub line: String,
}

/// The conversation of a failing test as `judge` shows it and `--json` carries it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Conversation {
    /// Every user process: bytes sent and received, what it wrote where nobody reads.
    pub processes: Vec<ProcessTalk>,
    /// The last lines, oldest first.
    pub lines: Vec<Said>,
    /// Lines of the conversation before these were left out.
    pub earlier: bool,
}

/// The conversation kept for `test`, when its second run was relayed.
pub fn read(kept_dir: &Path, test: &str) -> Option<Conversation> {
    let path = kept::path(kept_dir, test, Kept::Conversation);
    let text = super::diagnosis::read_lossy(&path, TRANSCRIPT_BYTES);
    let transcript: Transcript = serde_json::from_str(&text).ok()?;
    let mut lines: Vec<Said> = Vec::new();
    for turn in &transcript.turns {
        let text = turn.text.strip_suffix('\n').unwrap_or(&turn.text);
        lines.extend(text.split('\n').map(|line| Said {
            process: turn.process,
            direction: turn.direction,
            line: super::diagnosis::cut(line),
        }));
    }
    let earlier = transcript.cut || lines.len() > SHOWN_LINES;
    let lines = lines.split_off(lines.len().saturating_sub(SHOWN_LINES));
    Some(Conversation {
        processes: transcript.processes,
        lines,
        earlier,
    })
}

/// A line as shown: `0 → ? 5` (process 0 to the manager), `0 ← 1` (the manager to it).
pub fn shown_line(said: &Said) -> String {
    let arrow = match said.direction {
        Direction::ToManager => '→',
        Direction::ToProcess => '←',
    };
    format!("{} {arrow} {}", said.process, said.line)
}

/// The summary of what each process sent and received, and how the lines read; `replayed`:
/// from a second run of a judged test.
pub fn summary(c: &Conversation, replayed: bool) -> String {
    let each: Vec<String> = c
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "process {i} sent {} byte{}, received {}",
                p.sent_bytes,
                plural(p.sent_bytes),
                p.received_bytes
            )
        })
        .collect();
    let run = match replayed {
        true => "a second run, relayed; ",
        false => "",
    };
    format!("{} ({run}→ to the manager, ← from it)", each.join("; "))
}

/// "process 0 wrote 1234 bytes to its stdout, which nobody reads: "…"", for each process that
/// did.
pub fn unread_stdouts(c: &Conversation) -> Vec<String> {
    c.processes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.unread_stdout_bytes > 0)
        .map(|(i, p)| {
            format!(
                "process {i} wrote {} byte{} to its stdout, which nobody reads (fifo_io: the \
                 manager reads the FIFOs): {}",
                p.unread_stdout_bytes,
                plural(p.unread_stdout_bytes),
                quoted_head(&p.unread_stdout_head)
            )
        })
        .collect()
}

/// What the manager wrote to its stdout past its score (the only thing of it the judge reads),
/// from its kept stdout; `None` when nothing, or when a checker judges that output.
pub fn unread_manager_stdout(kept_dir: &Path, test: &str) -> Option<String> {
    if kept::path(kept_dir, test, Kept::Output).exists() {
        return None;
    }
    let path = kept::path(kept_dir, test, Kept::ManagerOut);
    let total = std::fs::metadata(&path).ok()?.len();
    let text = super::diagnosis::read_lossy(&path, 64 << 10);
    let start = text.trim_start();
    let score_end = start.find(char::is_whitespace).unwrap_or(start.len());
    let rest = start[score_end..].trim();
    if rest.is_empty() {
        return None;
    }
    let rest_at = text.len() - start[score_end..].trim_start().len();
    let beyond = total.saturating_sub(rest_at as u64);
    Some(format!(
        "the manager wrote {beyond} byte{} to its stdout after its score, which nobody reads: {}",
        plural(beyond),
        quoted_head(rest)
    ))
}

fn quoted_head(text: &str) -> String {
    let mut head: String = text.chars().take(UNREAD_CHARS).collect();
    if head.len() < text.len() {
        head.push('…');
    }
    format!("{:?}", head)
}

fn plural(n: u64) -> &'static str {
    match n == 1 {
        true => "",
        false => "s",
    }
}

/// Whether a WA of a std_io task points at the solution's standard output, and why: the
/// manager says it could not read what it got, or a line the solution sent reads like a
/// debugging print. The hint that says so, or `None` for a plain wrong answer.
pub fn stdout_hint(
    user_io: Option<UserIo>,
    message: &str,
    conversation: Option<&Conversation>,
    kept_dir: &Path,
    test: &str,
) -> Option<String> {
    if user_io != Some(UserIo::StdIo) {
        return None;
    }
    let advice = "your standard output is the pipe to the manager: anything else written there \
                  (a debugging printf, a prompt) breaks the protocol; print debugging to stderr";
    if let Some(words) = unreadable(message) {
        return Some(format!(
            "the manager could not read what it got (\"{words}\"): {advice}"
        ));
    }
    let sent = (0..conversation.map_or(0, |c| c.processes.len())).find_map(|i| {
        let bytes = std::fs::read(kept::path(kept_dir, test, Kept::Sent(i))).ok()?;
        debugging_line(&String::from_utf8_lossy(&bytes)).map(|line| (i, line))
    });
    let (i, line) = sent?;
    Some(format!(
        "process {i} sent the manager {}, which reads like a debugging print: {advice}",
        quoted_head(&line)
    ))
}

/// The words of a manager's message that say it could not read its input (a malformed or
/// unknown message), not that the conversation ended early or the answer was wrong.
fn unreadable(message: &str) -> Option<&str> {
    const SIGNS: [&str; 10] = [
        "protocol",
        "invalid",
        "malformed",
        "could not parse",
        "cannot parse",
        "can't parse",
        "failed to parse",
        "garbage",
        "unknown",
        "wrong format",
    ];
    message.lines().find(|line| {
        let lower = line.to_lowercase();
        SIGNS.iter().any(|sign| lower.contains(sign))
            || (lower.contains("unexpected") && !lower.contains("end of"))
    })
}

/// A line the solution sent that reads like a debugging print: one with a word of three
/// letters or more, when not every line has one (a protocol of words is no sign).
fn debugging_line(sent: &str) -> Option<String> {
    let wordy = |line: &str| {
        line.split(|c: char| !c.is_ascii_alphabetic())
            .any(|word| word.len() >= 3)
    };
    let lines: Vec<&str> = sent.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.iter().all(|l| wordy(l)) {
        return None;
    }
    lines.into_iter().find(|l| wordy(l)).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_about_what_the_manager_read_is_evidence_and_a_plain_verdict_is_not() {
        assert!(unreadable("Output isn't correct: protocol violation").is_some());
        assert!(unreadable("Wrong answer: invalid query").is_some());
        assert!(unreadable("unexpected token 'x'").is_some());
        assert!(unreadable("Output isn't correct: wrong answer").is_none());
        assert!(unreadable("Output isn't correct: unexpected end of communication").is_none());
        assert!(unreadable("Output isn't correct: too many queries").is_none());
    }

    #[test]
    fn what_the_manager_wrote_past_its_score_is_named_and_its_score_alone_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let out = kept::path(dir.path(), "05", Kept::ManagerOut);
        std::fs::write(&out, "1\n").unwrap();
        assert_eq!(unread_manager_stdout(dir.path(), "05"), None);
        std::fs::write(&out, "0\nqueries: 12\n").unwrap();
        assert_eq!(
            unread_manager_stdout(dir.path(), "05").as_deref(),
            Some(
                "the manager wrote 12 bytes to its stdout after its score, which nobody reads: \
                 \"queries: 12\""
            )
        );
        // With a checker, the manager's stdout is the output it judges.
        std::fs::write(kept::path(dir.path(), "05", Kept::Output), "0\n").unwrap();
        assert_eq!(unread_manager_stdout(dir.path(), "05"), None);
    }

    #[test]
    fn a_wordy_line_among_numbers_reads_like_debugging_and_a_protocol_of_words_does_not() {
        assert_eq!(
            debugging_line("? 5\nmid=5 lo=1\n? 7\n! 6\n").as_deref(),
            Some("mid=5 lo=1")
        );
        assert_eq!(debugging_line("? 5\n? 7\n! 6\n"), None);
        assert_eq!(debugging_line("query 5\nquery 7\nanswer 6\n"), None);
    }
}
