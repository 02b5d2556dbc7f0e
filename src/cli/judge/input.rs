//! `judge --input FILE`: the solution run on an input of your own through the problem's grader
//! (and, for a Communication task, its manager and stubs), with its output and standard error
//! shown; nothing is judged (docs/debugging.md#your-own-input).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::conversation;
use super::diagnosis::{
    count_lines, explain_run, is_sanitizer_report, read_lossy, Diagnosis, Sources,
};
use crate::cli::output::outln;
use crate::judge::kept::{self, Kept};
use crate::judge::native::{failure, InputRun, INPUT_RUN};
use crate::judge::{Build, Judge, Language, LoadedProblem};
use crate::output::printable;
use crate::problem::TaskType;
use crate::score::{TestResult, Verdict};

/// Lines of the output shown (the whole output is in the kept folder).
const SHOWN_LINES: usize = 200;
/// Bytes of a kept output read to show its first lines (its lines are counted in full).
const SHOWN_BYTES: u64 = 1 << 20;
/// The largest input read from standard input, a pipe or a device: far more than any IOI
/// test, and a bound on the disk a stream that never ends (`/dev/zero`) takes.
const STREAMED_INPUT_BYTES: u64 = 256 << 20;

/// Compiles the solution, runs it on `input` and prints what happened; exit status 1 when a
/// process of the solution did not end normally or the solution did not compile.
pub fn run(
    judge: &Judge,
    loaded: &LoadedProblem,
    code: Vec<u8>,
    language: Language,
    input: &Path,
    solution: &Path,
    kept: &Path,
) -> Result<i32> {
    let shown_as = match input == Path::new("-") {
        true => "your input (stdin)".to_string(),
        false => input.display().to_string(),
    };
    let input = input_file(input, kept)?;
    let judged_as = format!("graders/{}{}", loaded.problem.id, language.extension());
    let given = solution.display().to_string();
    let program = match judge.compile(loaded, &code, language)? {
        Build::Program(program) => program,
        Build::Error(error) => {
            let messages = error.to_string().replace(&judged_as, &given);
            eprintln!("{} does not compile: {messages}", solution.display());
            return Ok(crate::error::NO);
        }
    };
    let run = judge.run_input(loaded, &program, &input)?;
    let sources = Sources {
        kept,
        judged_as: &judged_as,
        given: &given,
        user_io: match &loaded.problem.task {
            TaskType::Communication(params) => Some(params.user_io),
            TaskType::Batch => None,
        },
        time_limit: loaded.problem.time_limit,
    };
    show(&shown_as, &run, &sources)
}

/// The input as a file: a regular file is used where it is; standard input (`-`), a pipe or a
/// device is copied into the kept folder as it streams, up to [`STREAMED_INPUT_BYTES`].
fn input_file(input: &Path, kept: &Path) -> Result<PathBuf> {
    if input == Path::new("-") {
        return copy_bounded(std::io::stdin().lock(), "standard input (--input -)", kept);
    }
    let usage = |what: String| crate::error::usage(anyhow::anyhow!("{what}"));
    match std::fs::metadata(input) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(usage(format!(
            "{}: no such input file (--input)",
            input.display()
        ))),
        Err(e) => Err(usage(format!(
            "{}: cannot read (--input): {e}",
            input.display()
        ))),
        Ok(meta) if meta.is_file() => Ok(input.to_path_buf()),
        Ok(meta) if meta.is_dir() => Err(usage(format!(
            "{}: a folder, not an input file (--input)",
            input.display()
        ))),
        Ok(_) => {
            let file = std::fs::File::open(input)
                .with_context(|| format!("cannot open {} (--input)", input.display()))?;
            copy_bounded(file, &format!("{} (--input)", input.display()), kept)
        }
    }
}

/// Copies a stream into the kept folder's input file, refusing one longer than
/// [`STREAMED_INPUT_BYTES`] (nothing of it is kept then).
fn copy_bounded(stream: impl Read, what: &str, kept: &Path) -> Result<PathBuf> {
    let path = kept::path(kept, INPUT_RUN, Kept::Input);
    let mut file =
        std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    let copied = std::io::copy(&mut stream.take(STREAMED_INPUT_BYTES + 1), &mut file)
        .with_context(|| format!("cannot read the input from {what}"))?;
    if copied > STREAMED_INPUT_BYTES {
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(crate::error::bad_input(anyhow::anyhow!(
            "{what}: more than {} MiB of input, the most read from a stream; write it to a \
             file and pass its path (a regular file is used where it is, whatever its size)",
            STREAMED_INPUT_BYTES >> 20
        )));
    }
    Ok(path)
}

fn show(input: &str, run: &InputRun, from: &Sources) -> Result<i32> {
    let kept = from.kept;
    let mut first_failure = None;
    for (i, outcome) in run.users.iter().enumerate() {
        let who = match run.users.len() {
            1 => "your program".to_string(),
            _ => format!("your process {i}"),
        };
        let ended = match failure(outcome, &run.limits)? {
            None => "ended normally".to_string(),
            Some((verdict, feedback)) => {
                let shown = format!("{verdict}: {feedback}");
                first_failure.get_or_insert(TestResult {
                    test_name: INPUT_RUN.to_string(),
                    score: 0.0,
                    status: verdict,
                    feedback: Some(feedback),
                    time: Some(outcome.cpu_time),
                    wall_time: Some(outcome.wall_time),
                    memory: Some(outcome.memory),
                });
                shown
            }
        };
        outln!(
            "{who} on {input}: {ended} ({:.3} s CPU, {:.1} MiB)",
            outcome.cpu_time,
            outcome.memory as f64 / (1 << 20) as f64
        );
    }
    let failed = first_failure.is_some();
    let (stderr, lines) = read_kept(kept, Kept::Stderr);
    if let Some(test) = &first_failure {
        explain(test, from, &stderr)?;
    }
    if let Some(manager) = &run.manager {
        let (stdout, stderr) = (
            read_kept(kept, Kept::ManagerOut).0,
            read_kept(kept, Kept::ManagerErr).0,
        );
        match crate::judge::check::parse_verdict(&stdout, &stderr, "manager") {
            Ok((score, message)) => outln!("the manager's verdict: score {score}, {message}"),
            Err(_) => outln!(
                "the manager gave no verdict ({}); it wrote:\n{}{}",
                manager.message,
                stdout,
                stderr.trim_end()
            ),
        }
        show_conversation(kept)?;
    } else {
        section("your output", &read_kept(kept, Kept::Output))?;
    }
    section(
        "your stderr",
        &(stderr.replace(from.judged_as, from.given), lines),
    )?;
    Ok(match failed {
        true => crate::error::NO,
        false => 0,
    })
}

/// The cause of a failed run, the place in the user's file it names and what to do next, as
/// a judged test's reasons give them.
fn explain(test: &TestResult, from: &Sources, stderr: &str) -> Result<()> {
    let mut d = Diagnosis::default();
    explain_run(&mut d, test, from);
    let exited =
        test.status == Verdict::RuntimeError && d.signal.is_none() && !is_sanitizer_report(stderr);
    if exited && d.hint.is_none() {
        // Graders read the input before the solution runs and return non-zero on what they
        // cannot read: on an input of the user's, that is as likely as the solution's exit.
        d.hint = Some(
            "an input the grader cannot read (a missing number, a wrong count) makes it \
             return non-zero before your code runs: check the input against the statement's \
             format"
                .to_string(),
        );
    }
    for (heading, text) in [
        ("cause", &d.meaning),
        ("where", &d.location),
        ("hint", &d.hint),
    ] {
        if let Some(text) = text {
            outln!("  {heading:<9} {}", printable(text, false));
        }
    }
    Ok(())
}

/// What the processes and the manager said (the run is relayed), and what a process wrote
/// where nobody reads it.
fn show_conversation(kept: &Path) -> Result<()> {
    let Some(c) = conversation::read(kept, INPUT_RUN) else {
        return Ok(());
    };
    let summary = conversation::summary(&c, false);
    outln!("--- the conversation: {} ---", printable(&summary, false));
    if c.earlier {
        outln!("… (earlier lines left out)");
    }
    for said in &c.lines {
        outln!("{}", printable(&conversation::shown_line(said), false));
    }
    for unread in conversation::unread_stdouts(&c)
        .into_iter()
        .chain(conversation::unread_manager_stdout(kept, INPUT_RUN))
    {
        outln!("{}", printable(&unread, false));
    }
    Ok(())
}

/// The head of a kept file of the input run ([`SHOWN_BYTES`]), lossily decoded, and its lines.
fn read_kept(kept: &Path, kind: Kept) -> (String, usize) {
    let path = kept::path(kept, INPUT_RUN, kind);
    (
        read_lossy(&path, SHOWN_BYTES),
        count_lines(&path, kept::KEPT_BYTES),
    )
}

/// A heading with the line count, then up to [`SHOWN_LINES`] lines.
fn section(title: &str, (text, lines): &(String, usize)) -> Result<()> {
    let lines = *lines;
    outln!(
        "--- {title} ({lines} line{}) ---",
        if lines == 1 { "" } else { "s" }
    );
    let mut shown = 0;
    for line in text.lines().take(SHOWN_LINES.min(lines)) {
        outln!("{line}");
        shown += 1;
    }
    if lines > shown {
        outln!("… ({} more lines)", lines - shown);
    }
    Ok(())
}
