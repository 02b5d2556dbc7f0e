//! Why a test failed, from what it left behind (docs/debugging.md#why-a-test-failed): the head
//! of its input, the first line where the output differs from the expected one, the checker's
//! or manager's words, the head of the solution's standard error (or the sanitizer's report),
//! and the signal that ended it with what that signal usually means.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Serialize;

use super::conversation::{self, Conversation};
use super::difference::{at_checker_position, first_difference, Difference};
use crate::judge::kept::{self, Kept};
use crate::problem::{TestCase, UserIo};
use crate::score::{TestResult, Verdict};

/// Lines of the input shown.
const INPUT_LINES: usize = 5;
/// Lines of the solution's standard error shown.
const STDERR_LINES: usize = 10;
/// Characters of one shown line.
const LINE_CHARS: usize = 160;
/// Bytes of the input read for its first lines (each is cut to [`LINE_CHARS`] anyway).
const HEAD_BYTES: u64 = 64 << 10;
/// Bytes of the solution's standard error read to explain a failure: far more than any
/// report or debugging print shown, and a bound on what a flood of it costs the judge.
const STDERR_BYTES: u64 = 1 << 20;

/// Why one test failed, as `judge` shows it and `--json` carries it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The first lines of the input, each cut to a readable length.
    pub input_head: Vec<String>,
    /// Lines and bytes of the whole input.
    pub input_lines: usize,
    pub input_bytes: u64,
    /// Where the output first differs from the expected one: line, token, the tokens around
    /// it (Batch, a program that ended normally).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<Difference>,
    /// The checker's or the manager's message (the test's feedback, every line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The first lines of the solution's standard error, or the telling lines of a sanitizer
    /// report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr_head: Vec<String>,
    /// Lines of the whole standard error.
    #[serde(skip_serializing_if = "is_zero")]
    pub stderr_lines: usize,
    /// The signal that ended the solution (`SIGSEGV`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// The place in the solution's file a sanitizer or an assertion names (`sol.cpp:7 in f`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// What to do next to learn more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// What the verdict or the signal usually means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meaning: Option<String>,
    /// Communication: the end of what the processes said, from a second, relayed run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// Communication: what a process wrote where nobody reads it (a fifo_io process's stdout,
    /// the manager's stdout past its score), named with its first bytes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Where a diagnosis reads from, and how to name the solution's file in what it quotes.
pub struct Sources<'a> {
    /// The folder of the kept files.
    pub kept: &'a Path,
    /// The submission's name in the judge's folder (`graders/<id>.cpp`) and the user's.
    pub judged_as: &'a str,
    pub given: &'a str,
    /// How the solution talks to the manager, for a Communication task (`None`: Batch).
    pub user_io: Option<UserIo>,
    /// The (scaled) time limit, in CPU seconds.
    pub time_limit: f64,
}

/// The diagnosis of a test that ran and did not pass; `None` for AC and SKIPPED.
pub fn diagnose(test: &TestResult, case: &TestCase, from: &Sources) -> Option<Diagnosis> {
    if matches!(test.status, Verdict::Accepted | Verdict::Skipped) {
        return None;
    }
    if test.status == Verdict::CompilationError {
        return None;
    }
    let mut d = Diagnosis::default();
    (d.input_head, d.input_lines) = head(&case.input, INPUT_LINES);
    d.input_bytes = std::fs::metadata(&case.input).map(|m| m.len()).unwrap_or(0);
    let output = kept::path(from.kept, &test.test_name, Kept::Output);
    let feedback = test.feedback.as_deref().unwrap_or("");
    // Where a checker's message names the token it rejected, that token; else white-diff's
    // first difference.
    if matches!(test.status, Verdict::WrongAnswer | Verdict::Partial) && output.is_file() {
        d.first_difference = at_checker_position(feedback, &case.output, &output)
            .or_else(|| first_difference(&case.output, &output));
    }
    if matches!(test.status, Verdict::WrongAnswer | Verdict::Partial) {
        d.message = Some(feedback.trim_end().to_string());
    }
    explain_run(&mut d, test, from);
    if from.user_io.is_some() {
        explain_conversation(&mut d, test, from);
    }
    Some(d)
}

/// What a Communication test's processes said, what they wrote where nobody reads, and, for a
/// wrong answer, whether that points at the solution's standard output.
fn explain_conversation(d: &mut Diagnosis, test: &TestResult, from: &Sources) {
    let name = &test.test_name;
    d.conversation = conversation::read(from.kept, name);
    if let Some(c) = &d.conversation {
        d.unread = conversation::unread_stdouts(c);
    }
    d.unread
        .extend(conversation::unread_manager_stdout(from.kept, name));
    if matches!(test.status, Verdict::WrongAnswer | Verdict::Partial) && d.hint.is_none() {
        let stderr = read_lossy(&kept::path(from.kept, name, Kept::ManagerErr), STDERR_BYTES);
        let message = format!("{}\n{stderr}", test.feedback.as_deref().unwrap_or(""));
        d.hint = conversation::stdout_hint(
            from.user_io,
            &message,
            d.conversation.as_ref(),
            from.kept,
            name,
        );
    }
}

/// What a run's end says, from its standard error and feedback (the part of a diagnosis that
/// `--input` shares with a judged test): stderr's telling lines with the judge's name of the
/// solution's file turned into the user's, the place it names, the signal, what it means, and
/// what to do next.
pub fn explain_run(d: &mut Diagnosis, test: &TestResult, from: &Sources) {
    let feedback = test.feedback.as_deref().unwrap_or("");
    let stderr_file = kept::path(from.kept, &test.test_name, Kept::Stderr);
    let stderr = read_lossy(&stderr_file, STDERR_BYTES).replace(from.judged_as, from.given);
    d.stderr_lines = count_lines(&stderr_file, kept::KEPT_BYTES);
    d.stderr_head = telling_lines(&stderr);
    d.location = location(&stderr, from.given);
    let signal = signal_of(feedback);
    d.signal = signal.map(ioi_sandbox::signal_name);
    d.meaning = meaning(test, signal, &stderr, from);
    let crashed = matches!(
        signal,
        Some(libc::SIGSEGV | libc::SIGFPE | libc::SIGABRT | libc::SIGBUS | libc::SIGILL)
    );
    if crashed && !is_sanitizer_report(&stderr) {
        d.hint = Some("judge again with `--compile-profile debug`: it names the line".into());
    }
}

/// The signal number in a feedback `... killed by signal N ...`.
pub fn signal_of(feedback: &str) -> Option<i32> {
    let rest = feedback.split("killed by signal ").nth(1)?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// What a failure usually means, in a contestant's words.
fn meaning(test: &TestResult, signal: Option<i32>, stderr: &str, from: &Sources) -> Option<String> {
    let communication = from.user_io.is_some();
    let sanitized = is_sanitizer_report(stderr);
    Some(match (test.status, signal) {
        (Verdict::RuntimeError, Some(libc::SIGSEGV)) => "invalid memory access: an index out of \
                                                         bounds, a null or dangling pointer, or \
                                                         a stack overflow"
            .to_string(),
        (Verdict::RuntimeError, Some(libc::SIGFPE)) => {
            "arithmetic error: an integer division or modulo by zero (or INT_MIN / -1)".to_string()
        }
        (Verdict::RuntimeError, Some(libc::SIGABRT)) => {
            let why = assertion(stderr).unwrap_or_else(|| {
                "a failed assert, an uncaught exception (e.g. std::out_of_range from .at(), \
                 std::bad_alloc) or heap corruption the C library noticed"
                    .to_string()
            });
            format!("abort(): {why}")
        }
        (Verdict::RuntimeError, Some(libc::SIGBUS)) => {
            "bus error: a misaligned or unmapped access".to_string()
        }
        (Verdict::RuntimeError, Some(libc::SIGILL)) => "illegal instruction: reached \
                                                        __builtin_unreachable(), or a function \
                                                        that returns a value ended without \
                                                        `return`"
            .to_string(),
        (Verdict::RuntimeError, Some(libc::SIGPIPE)) => {
            "wrote to a closed pipe: the other side (the manager) had stopped reading".to_string()
        }
        (Verdict::RuntimeError, Some(libc::SIGKILL)) => {
            "killed: a limit of the sandbox (processes, files), not the time or memory limit"
                .to_string()
        }
        (Verdict::RuntimeError, Some(_)) => return None,
        (Verdict::RuntimeError, None) if sanitized => match assertion(stderr) {
            Some(why) => format!("the sanitizer stopped the program at a {why}"),
            None => "the sanitizer stopped the program: its report is below".to_string(),
        },
        (Verdict::RuntimeError, None) => "exited with a non-zero status: `main` returned it, or \
             `exit(N)` was called (an uncaught exception is SIGABRT)"
            .to_string(),
        (Verdict::TimeLimit, _) => {
            let wall = test.wall_time.unwrap_or(0.0);
            let cpu = test.time.unwrap_or(0.0);
            // The CPU limit is checked as the program runs: short of it, the wall clock stopped
            // a program that waited.
            match cpu < from.time_limit * 0.9 {
                true => format!(
                    "stopped by the wall clock ({wall:.2} s, {cpu:.2} s of CPU): the program \
                     was not running: it slept, or waited for input that never came{}",
                    match communication {
                        true => " (the manager waits for its answer too, or for a flush)",
                        false => "",
                    }
                ),
                false => "used the whole CPU time: an endless loop, or an algorithm too slow \
                          for this input"
                    .to_string(),
            }
        }
        (Verdict::MemoryLimit, _) => "the memory limit was reached (the stack counts too)".into(),
        (Verdict::WrongAnswer, _) if communication => {
            "the manager did not accept the conversation: what it said is the test's feedback (and \
             the message below, when it said more)"
                .into()
        }
        _ => return None,
    })
}

/// The text of a failed `assert` (glibc: `prog: file.cpp:12: int main(): Assertion `x' failed.`)
/// or an uncaught exception (`terminate called after throwing ... what(): ...`).
fn assertion(stderr: &str) -> Option<String> {
    if let Some(line) = stderr.lines().find(|l| l.contains("Assertion")) {
        return Some(format!(
            "failed assertion: {}",
            cut(&shortened_assertion(without_pid(line)))
        ));
    }
    let mut lines = stderr.lines();
    let thrown = lines.find(|l| l.starts_with("terminate called"))?;
    let what = lines
        .next()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("what()"))
        .map(|l| format!(", {l}"))
        .unwrap_or_default();
    Some(format!("{}{what}", cut(thrown)))
}

pub(super) fn is_sanitizer_report(stderr: &str) -> bool {
    stderr.contains("ERROR: AddressSanitizer")
        || stderr.contains("runtime error: ")
        || stderr.contains("ERROR: UndefinedBehaviorSanitizer")
}

/// The lines of a standard error worth showing: a sanitizer report's error, the access, the
/// frames outside the C and C++ libraries and the summary; else the first lines.
fn telling_lines(stderr: &str) -> Vec<String> {
    if !is_sanitizer_report(stderr) {
        return stderr.lines().take(STDERR_LINES).map(cut).collect();
    }
    let mut shown = Vec::new();
    let mut frames = 0;
    // Only the first stack (where it happened), not those of the allocation or the free.
    let mut stacks = 0;
    let mut in_stack = false;
    for line in stderr.lines() {
        let trimmed = line.trim_start();
        let frame = trimmed.starts_with('#');
        if frame && !in_stack {
            stacks += 1;
        }
        in_stack = frame;
        let keep = line.contains("ERROR:")
            || line.contains("runtime error:")
            || line.contains("Assertion")
            || trimmed.starts_with("READ of size")
            || trimmed.starts_with("WRITE of size")
            || trimmed.starts_with("SUMMARY:")
            || (frame && stacks == 1 && frames < 6 && !in_library(trimmed));
        if frame && keep {
            frames += 1;
        }
        if keep {
            shown.push(cut(&shortened_assertion(without_pid(line))));
        }
        if trimmed.starts_with("SUMMARY:") {
            break;
        }
    }
    shown
}

/// A failed assertion's line with the program's name and the function's signature (long in
/// the C++ library) left out: `stl_vector.h:1123: … Assertion '__n < this->size()' failed.`
/// (glibc writes `prog: file:line: function: Assertion ...`, libstdc++ `file:line: function:
/// Assertion ...`).
fn shortened_assertion(line: &str) -> String {
    let Some(at) = line.find("Assertion") else {
        return line.to_string();
    };
    let is_place = |part: &&str| {
        part.rsplit_once(':')
            .is_some_and(|(file, n)| !file.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    match line[..at].split(": ").find(is_place) {
        Some(place) => format!("{place}: … {}", &line[at..]),
        None => line[at..].to_string(),
    }
}

/// A stack frame of the C library, the C++ library or the sanitizer itself, which says nothing
/// about the solution.
fn in_library(frame: &str) -> bool {
    [
        "libsanitizer",
        "nptl/",
        "sysdeps/",
        "stdlib/",
        "csu/",
        ".so.",
        "/usr/include/",
        " in _start ",
    ]
    .iter()
    .any(|part| frame.contains(part))
}

/// A sanitizer's line without its `==PID==` prefix.
fn without_pid(line: &str) -> &str {
    let Some(rest) = line.strip_prefix("==") else {
        return line;
    };
    match rest.split_once("==") {
        Some((pid, after)) if pid.chars().all(|c| c.is_ascii_digit()) => after,
        _ => line,
    }
}

/// Where in the solution's file it went wrong: the first place a sanitizer's frame or report
/// names in it (`sol.cpp:7`, with the function when a frame gives one).
fn location(stderr: &str, given: &str) -> Option<String> {
    stderr.lines().find_map(|line| {
        let at = line.find(given)?;
        let place: String = line[at..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        let place = place.trim_end_matches(':').to_string();
        let function = line
            .trim_start()
            .starts_with('#')
            .then(|| line.split(" in ").nth(1))
            .flatten()
            .and_then(|f| f.rsplit_once(' ').map(|(name, _)| name.trim().to_string()));
        Some(match function {
            Some(f) => format!("{place} in {f}"),
            None => place,
        })
    })
}

/// The first `n` lines of a file (lossily decoded, cut to a readable length) and its number
/// of lines.
fn head(path: &Path, n: usize) -> (Vec<String>, usize) {
    let count = count_lines(path, u64::MAX);
    let shown = read_lossy(path, HEAD_BYTES)
        .split('\n')
        .take(n.min(count))
        .map(|line| cut(line.trim_end()))
        .collect();
    (shown, count)
}

/// The first `limit` bytes of a file, lossily decoded (a missing file is empty).
pub(super) fn read_lossy(path: &Path, limit: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(file) = File::open(path) {
        let _ = file.take(limit).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The lines of the first `limit` bytes of a file, counted through a buffer (a last line
/// without `\n` counts).
pub(super) fn count_lines(path: &Path, limit: u64) -> usize {
    let Ok(file) = File::open(path) else {
        return 0;
    };
    let mut reader = BufReader::new(file.take(limit));
    let (mut lines, mut last) = (0, b'\n');
    while let Ok(chunk) = reader.fill_buf() {
        let Some(&end) = chunk.last() else {
            break;
        };
        lines += chunk.iter().filter(|&&c| c == b'\n').count();
        last = end;
        let n = chunk.len();
        reader.consume(n);
    }
    lines + usize::from(last != b'\n')
}

/// A line cut to [`LINE_CHARS`] characters, `…` marking the cut.
pub(super) fn cut(line: &str) -> String {
    match line.chars().count() > LINE_CHARS {
        true => format!("{}…", line.chars().take(LINE_CHARS - 1).collect::<String>()),
        false => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checker_naming_a_token_is_shown_that_token_and_white_diff_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let tests = tempfile::tempdir().unwrap();
        let input = tests.path().join("01.in");
        let expected = tests.path().join("01.out");
        std::fs::write(&input, "3\n").unwrap();
        std::fs::write(&expected, "1 2 3\n4 5 6\n").unwrap();
        std::fs::write(kept::path(dir.path(), "01", Kept::Output), "1 2 3\n4 9 6\n").unwrap();
        let case = TestCase {
            name: "01".into(),
            input,
            output: expected,
        };
        let from = Sources {
            kept: dir.path(),
            judged_as: "graders/x.cpp",
            given: "x.cpp",
            user_io: None,
            time_limit: 1.0,
        };
        let wrong = |feedback: &str| TestResult {
            status: Verdict::WrongAnswer,
            feedback: Some(feedback.into()),
            ..TestResult::skipped("01")
        };
        let named = wrong("wrong answer 5th numbers differ - expected: '5', found: '9'");
        let d = diagnose(&named, &case, &from)
            .unwrap()
            .first_difference
            .unwrap();
        assert_eq!((d.line, d.token, d.checker_token), (2, 2, Some(5)));
        assert_eq!(d.yours_token.as_deref(), Some("9"));
        // A message without a position: white-diff's first difference, the same token here.
        let plain = wrong("Output isn't correct");
        let d = diagnose(&plain, &case, &from)
            .unwrap()
            .first_difference
            .unwrap();
        assert_eq!((d.line, d.token, d.checker_token), (2, 2, None));
    }

    #[test]
    fn signals_and_assertions_are_named() {
        assert_eq!(
            signal_of("Runtime error: killed by signal 11 (SIGSEGV)"),
            Some(11)
        );
        assert_eq!(signal_of("Runtime error: exit code 3"), None);
        let stderr = "sol: sol.cpp:7: int main(): Assertion `n > 0' failed.\n";
        assert_eq!(
            assertion(stderr).unwrap(),
            "failed assertion: sol.cpp:7: … Assertion `n > 0' failed."
        );
        let thrown = "terminate called after throwing an instance of 'std::out_of_range'\n  what():  vector::_M_range_check\n";
        assert!(assertion(thrown)
            .unwrap()
            .contains("what():  vector::_M_range_check"));
    }

    #[test]
    fn a_sanitizer_report_is_cut_to_its_telling_lines() {
        let report = "=================\n==2==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6\nREAD of size 4 at 0x6 thread T0\n    #0 0x55 in main /box/sol.cpp:3\n    #1 0x14 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58\n\n0x6 is located 0 bytes to the right\nallocated by thread T0 here:\n    #0 0x14 in operator new(unsigned long) ../libsanitizer/asan/asan_new_delete.cpp:95\nSUMMARY: AddressSanitizer: heap-buffer-overflow /box/sol.cpp:3 in main\nShadow bytes\n";
        let lines = telling_lines(report);
        assert_eq!(
            lines[0],
            "ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6"
        );
        assert!(lines.iter().any(|l| l.contains("in main /box/sol.cpp:3")));
        assert!(
            !lines.iter().any(|l| l.contains("operator new")),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.contains("__libc_start")),
            "{lines:?}"
        );
        assert_eq!(
            location(report, "/box/sol.cpp").as_deref(),
            Some("/box/sol.cpp:3 in main")
        );
        assert!(lines.last().unwrap().starts_with("SUMMARY:"));
    }
}
