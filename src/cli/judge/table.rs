//! How `judge` shows a result: the table of tests, the reasons of the tests that failed,
//! the subtasks and the total, or the `--json` document (docs/debugging.md#why-a-test-failed).

use std::collections::HashMap;
use std::io::IsTerminal;

use anyhow::Result;

use super::conversation;
use super::diagnosis::Diagnosis;
use super::difference::Difference;
use crate::cli::output::outln;
use crate::problem::Problem;
use crate::score::{SubtaskResult, TestResult, Verdict};

/// The first line of a test's feedback (tables show one line per test).
pub(super) fn first_feedback_line(t: &TestResult) -> &str {
    t.feedback
        .as_deref()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
}

/// Why each test that failed did, by test name.
pub type Diagnoses = HashMap<String, Diagnosis>;

/// The `--json` document. A compile error is given once, as `compile_error`: every test
/// would otherwise repeat the compiler's messages. A test that failed carries its
/// `diagnosis`.
pub fn json_report(
    problem: &Problem,
    results: &[SubtaskResult],
    diagnoses: &Diagnoses,
) -> serde_json::Value {
    let total: f64 = results.iter().map(|s| s.weighted_score()).sum();
    let compile_error = results
        .iter()
        .flat_map(|s| &s.test_results)
        .find(|t| t.status == Verdict::CompilationError)
        .and_then(|t| t.feedback.clone());
    let tests = |s: &SubtaskResult| -> Vec<serde_json::Value> {
        s.test_results
            .iter()
            .map(|t| {
                let mut test = serde_json::json!(t);
                if t.status == Verdict::CompilationError {
                    test["feedback"] = serde_json::Value::Null;
                }
                if let Some(d) = diagnoses.get(&t.test_name) {
                    test["diagnosis"] = serde_json::json!(d);
                }
                test
            })
            .collect()
    };
    serde_json::json!({
        "problem": problem.id,
        "total": crate::score::round_like_python(total, 2),
        "compile_error": compile_error,
        "subtasks": results.iter().map(|s| serde_json::json!({
            "subtask": s.subtask,
            "points": s.points,
            "score": s.score(),
            "weighted_score": s.weighted_score(),
            "status": s.status(),
            "tests": tests(s),
        })).collect::<Vec<_>>(),
    })
}

/// What the human-readable result shows besides the results.
pub struct Shown<'a> {
    pub time_scale: f64,
    pub diagnoses: &'a Diagnoses,
    /// Every failing test gets its reasons (tests chosen with `--test`), not only the first
    /// of each subtask.
    pub every_failure: bool,
    /// Only some tests of a subtask ran: its score is over those.
    pub partial: bool,
    /// Where the tests' files are kept (`--keep`).
    pub kept: Option<&'a std::path::Path>,
}

pub fn print_human(problem: &Problem, results: &[SubtaskResult], shown: &Shown) -> Result<()> {
    let time_scale = shown.time_scale;
    let color = crate::cli::output::color_stdout();
    let paint = |text: String, code: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text
        }
    };
    // The id only when the name does not already say it (`sumpairs (sumpairs)` says it twice).
    let title = crate::output::printable(
        &match problem.name.eq_ignore_ascii_case(&problem.id) {
            true => problem.name.clone(),
            false => format!("{} ({})", problem.name, problem.id),
        },
        false,
    );
    // The problem's limit is the scaled one: show the factor with it.
    let scaled = match time_scale == 1.0 {
        true => String::new(),
        false => format!(" (--time-scale {time_scale})"),
    };
    outln!(
        "{title}, time limit {} s{scaled}, memory limit {} MiB",
        problem.time_limit,
        problem.memory_limit >> 20
    );
    outln!();
    let compile_error = results
        .iter()
        .flat_map(|s| &s.test_results)
        .find(|t| t.status == Verdict::CompilationError);
    match compile_error {
        // Every test has the same feedback: show the compiler's messages once instead.
        Some(t) => {
            let feedback = t.feedback.as_deref().unwrap_or("");
            let (first, messages) = feedback.split_once('\n').unwrap_or((feedback, ""));
            let exit = first.trim_start_matches("Compilation error ");
            outln!(
                "{} ({exit}); the compiler says:",
                paint("compilation failed".into(), "31")
            );
            outln!("{}", crate::output::printable(messages.trim_end(), true));
        }
        None => {
            print_tests(problem, results, &paint)?;
            print_reasons(results, shown, &paint)?;
        }
    }
    outln!();
    match shown.partial {
        true => outln!(
            "{:<22} {:>10} {:>8}  (over the tests chosen only)",
            "subtask",
            "points",
            "status"
        ),
        false => outln!("{:<22} {:>10} {:>8}", "subtask", "points", "status"),
    }
    let mut total = 0.0;
    for s in results {
        total += s.weighted_score();
        let status = paint(
            format!("{:>8}", s.status().as_str()),
            status_color(s.status()),
        );
        outln!(
            "{:<22} {:>10} {status}",
            crate::output::printable(&s.subtask, false),
            format!("{}/{}", s.weighted_score(), s.points)
        );
    }
    let max: f64 = results.iter().map(|s| s.points).sum();
    outln!();
    outln!(
        "total {}/{}",
        crate::score::round_like_python(total, 2),
        max
    );
    Ok(())
}

/// The tests whose reasons are shown: every failing test, or the first of each subtask.
pub(super) fn explained(results: &[SubtaskResult], every: bool) -> Vec<&TestResult> {
    let mut shown: Vec<&TestResult> = Vec::new();
    for s in results {
        let failing = s
            .test_results
            .iter()
            .filter(|t| !matches!(t.status, Verdict::Accepted | Verdict::Skipped));
        let chosen: Vec<&TestResult> = match every {
            true => failing.collect(),
            false => failing.take(1).collect(),
        };
        for t in chosen {
            if !shown.iter().any(|s| s.test_name == t.test_name) {
                shown.push(t);
            }
        }
    }
    shown
}

/// Why each explained test failed, after the table (docs/debugging.md#why-a-test-failed),
/// fitted to the terminal: prose wrapped, quoted lines cut.
fn print_reasons(
    results: &[SubtaskResult],
    shown: &Shown,
    paint: &dyn Fn(String, &str) -> String,
) -> Result<()> {
    let width = terminal_width();
    for t in explained(results, shown.every_failure) {
        let Some(d) = shown.diagnoses.get(&t.test_name) else {
            continue;
        };
        outln!();
        let title = format!(
            "why test {} ({}: {})",
            t.test_name,
            t.status.as_str(),
            first_feedback_line(t)
        );
        outln!("{}", paint(fit(&title, width), "1"));
        let mut prose: Vec<(&str, String)> = Vec::new();
        let mut quoted: Vec<String> = Vec::new();
        if let Some(meaning) = &d.meaning {
            let signal = d
                .signal
                .as_ref()
                .map(|s| format!("{s}: "))
                .unwrap_or_default();
            prose.push(("cause", format!("{signal}{meaning}")));
        }
        if let Some(location) = &d.location {
            prose.push(("where", location.clone()));
        }
        if let Some(hint) = &d.hint {
            prose.push(("hint", hint.clone()));
        }
        for (heading, text) in prose.drain(..) {
            print_wrapped(heading, &text, width)?;
        }
        let input = format!(
            "{} line{}, {} byte{}",
            d.input_lines,
            plural(d.input_lines),
            d.input_bytes,
            plural(d.input_bytes as usize)
        );
        print_wrapped("input", &input, width)?;
        quoted.extend(d.input_head.iter().cloned());
        print_quoted(&quoted, d.input_lines, width)?;
        if let Some(diff) = &d.first_difference {
            show_difference(diff, width)?;
        }
        // The message only when it says more than the table's feedback line.
        if let Some(message) = d
            .message
            .as_ref()
            .filter(|m| m.trim() != first_feedback_line(t))
        {
            for (n, line) in message.lines().take(10).enumerate() {
                print_wrapped(if n == 0 { "message" } else { "" }, line, width)?;
            }
        }
        if d.stderr_lines > 0 {
            let heading = format!(
                "{} line{}{}",
                d.stderr_lines,
                plural(d.stderr_lines),
                match d.stderr_head.len() < d.stderr_lines {
                    true => format!(", {} shown", d.stderr_head.len()),
                    false => String::new(),
                }
            );
            print_wrapped("stderr", &heading, width)?;
            print_quoted(&d.stderr_head, d.stderr_head.len(), width)?;
        }
        if let Some(c) = &d.conversation {
            print_wrapped("messages", &conversation::summary(c, true), width)?;
            let lines: Vec<String> = c.lines.iter().map(conversation::shown_line).collect();
            if c.earlier {
                outln!("  {:<9} | … (earlier lines left out)", "");
            }
            print_quoted(&lines, lines.len(), width)?;
        }
        for (n, unread) in d.unread.iter().enumerate() {
            print_wrapped(if n == 0 { "unread" } else { "" }, unread, width)?;
        }
        if let Some(dir) = shown.kept {
            use crate::judge::kept::{self, Kept};
            let stem = kept::file_stem(&t.test_name);
            let exists = |kind| kept::path(dir, &t.test_name, kind).exists();
            // The files this test left: a Communication test has no `out`, a checker's words
            // are in `checker`, a manager's in `manager.out` and `manager.err`.
            let per_process = (0..)
                .map(|i| [Kept::Sent(i), Kept::Received(i), Kept::UnreadStdout(i)])
                .take_while(|kinds| kinds[..2].iter().any(|&k| exists(k)))
                .flatten();
            let suffixes: Vec<String> = Kept::ALL
                .into_iter()
                .chain(per_process)
                .filter(|&kind| exists(kind))
                .map(|kind| kind.suffix())
                .collect();
            if !suffixes.is_empty() {
                let files = format!("{}/{stem}.{{{}}}", dir.display(), suffixes.join(","));
                print_wrapped("kept", &files, width)?;
            }
        }
    }
    Ok(())
}

/// `text` under a heading, its words wrapped to `width` (one line when there is none).
fn print_wrapped(heading: &str, text: &str, width: Option<usize>) -> Result<()> {
    let indent = 2 + 9 + 1;
    let room = width
        .map(|w| w.saturating_sub(indent).max(20))
        .unwrap_or(usize::MAX);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    for (n, line) in lines.iter().enumerate() {
        let heading = if n == 0 { heading } else { "" };
        outln!("{}", fit(&format!("  {heading:<9} {line}"), width));
    }
    Ok(())
}

/// A line cut to the terminal's width, when there is one.
fn fit(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) => truncate(line, w),
        None => crate::output::printable(line, false),
    }
}

/// Lines quoted under a heading, with how many more there are, cut to the terminal's width.
fn print_quoted(lines: &[String], total: usize, width: Option<usize>) -> Result<()> {
    for line in lines {
        outln!("{}", fit(&format!("  {:<9} | {line}", ""), width));
    }
    if total > lines.len() {
        outln!("  {:<9} | … ({} more)", "", total - lines.len());
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    match n == 1 {
        true => "",
        false => "s",
    }
}

/// Columns of the test table besides the test name, the subtasks and the feedback.
const FIXED_COLUMNS: usize = 1 + 1 + 7 + 1 + 6 + 1 + 8 + 1 + 8 + 1 + 9 + 2;

/// The table of tests, each once with every subtask it belongs to, fitted to the terminal.
fn print_tests(
    problem: &Problem,
    results: &[SubtaskResult],
    paint: &dyn Fn(String, &str) -> String,
) -> Result<()> {
    let mut rows: Vec<(&TestResult, Vec<&str>)> = Vec::new();
    for s in results {
        for t in &s.test_results {
            match rows.iter_mut().find(|(r, _)| r.test_name == t.test_name) {
                Some((r, subtasks)) => {
                    subtasks.push(&s.subtask);
                    if r.status == Verdict::Skipped && t.status != Verdict::Skipped {
                        *r = t;
                    }
                }
                None => rows.push((t, vec![&s.subtask])),
            }
        }
    }
    let labels: Vec<String> = rows
        .iter()
        .map(|(_, subtasks)| subtask_label(subtasks, results.len()))
        .collect();
    let width = terminal_width();
    // Column widths from the content (test names and subtask lists vary a lot), the subtask
    // column shrunk when the terminal is narrow.
    let name_width = rows
        .iter()
        .map(|(t, _)| t.test_name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut subtasks_width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    if let Some(width) = width {
        // Leave the feedback at least a few columns.
        let room = width.saturating_sub(name_width + FIXED_COLUMNS + 8).max(8);
        subtasks_width = subtasks_width.min(room);
    }
    let feedback_width = width
        .map(|w| w.saturating_sub(name_width + subtasks_width + FIXED_COLUMNS))
        .unwrap_or(usize::MAX);
    outln!(
        "{:<name_width$} {:<subtasks_width$} {:<7} {:>6} {:>8} {:>8} {:>9}  {}",
        "test",
        "subtasks",
        "verdict",
        "score",
        "cpu s",
        "wall s",
        "mem MiB",
        truncate("feedback", feedback_width)
    );
    for ((t, _), label) in rows.iter().zip(&labels) {
        let near = t.time.is_some_and(|time| time >= problem.time_limit * 0.8);
        let time = t
            .time
            .map(|v| format!("{v:.3}"))
            .unwrap_or_else(|| "-".into());
        let time = if near {
            paint(format!("{time:>8}"), "33")
        } else {
            format!("{time:>8}")
        };
        let wall = t
            .wall_time
            .map(|v| format!("{v:.3}"))
            .unwrap_or_else(|| "-".into());
        let mem = t
            .memory
            .map(|v| format!("{:.1}", v as f64 / (1 << 20) as f64))
            .unwrap_or_else(|| "-".into());
        let feedback = first_feedback_line(t);
        let status = paint(format!("{:<7}", t.status.as_str()), status_color(t.status));
        outln!(
            "{:<name_width$} {:<subtasks_width$} {status} {:>6} {time} {wall:>8} {mem:>9}  {}",
            crate::output::printable(&t.test_name, false),
            truncate(label, subtasks_width),
            format!("{:.2}", t.score),
            truncate(feedback, feedback_width)
        );
    }
    Ok(())
}

/// The subtasks of a test, short: `all` when it belongs to every subtask, else their numbers
/// (`01,02` for `01-small,02-medium`) or names.
fn subtask_label(subtasks: &[&str], total: usize) -> String {
    if total > 1 && subtasks.len() == total {
        return "all".into();
    }
    subtasks
        .iter()
        .map(|name| match name.split_once('-') {
            Some((number, _)) if number.chars().all(|c| c.is_ascii_digit()) => number,
            _ => name,
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `text` cut to `width` characters, with `…` marking the cut, made [`printable`].
fn truncate(text: &str, width: usize) -> String {
    let text = crate::output::printable(text, false);
    if text.chars().count() <= width {
        return text;
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Columns available: the terminal's width, else `$COLUMNS`, else no limit (output to a file
/// keeps everything).
fn terminal_width() -> Option<usize> {
    if std::io::stdout().is_terminal() {
        if let Some((_, cols)) = console::Term::stdout().size_checked() {
            return Some(cols as usize);
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&c: &usize| c > 0)
}

fn status_color(status: Verdict) -> &'static str {
    match status {
        Verdict::Accepted => "32",
        Verdict::Partial => "33",
        Verdict::Skipped => "2",
        _ => "31",
    }
}

/// Where the output first differs: line and token, each side's token there, and each side's
/// line around it (a line of one token needs no second showing).
fn show_difference(diff: &Difference, width: Option<usize>) -> Result<()> {
    let token = |token: &Option<String>, line: &Option<String>| match (token, line) {
        (Some(token), _) => format!("{token:?}"),
        (None, Some(_)) => "(end of line)".to_string(),
        (None, None) => "(end of output)".to_string(),
    };
    let named = match diff.checker_token {
        Some(n) => format!(" (the checker's token {n} of the output)"),
        None => String::new(),
    };
    let differs = format!(
        "  {:<9} line {}, token {}{named}: expected {}, yours {}",
        "differs",
        diff.line,
        diff.token,
        token(&diff.expected_token, &diff.expected),
        token(&diff.yours_token, &diff.yours),
    );
    outln!("{}", fit(&differs, width));
    for (heading, line) in [("expected", &diff.expected), ("yours", &diff.yours)] {
        let shown = match line {
            Some(line) => format!("{line:?}"),
            None => "(end of output)".to_string(),
        };
        outln!("{}", fit(&format!("  {heading:<9} {shown}"), width));
    }
    Ok(())
}
