//! `judge --input FILE`: the solution run on an input of your own through the problem's grader
//! (and, for a Communication task, its manager and stubs), with its output and standard error
//! shown; nothing is judged (docs/debugging.md#your-own-input).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::output::outln;
use crate::judge::kept::{self, Kept};
use crate::judge::native::{failure, InputRun, INPUT_RUN};
use crate::judge::{Build, Judge, Language, LoadedProblem};

/// Lines of the output shown (the whole output is in the kept folder).
const SHOWN_LINES: usize = 200;

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
    let program = match judge.compile(loaded, &code, language)? {
        Build::Program(program) => program,
        Build::Error(error) => {
            let judged_as = format!("graders/{}{}", loaded.problem.id, language.extension());
            let messages = error
                .to_string()
                .replace(&judged_as, &solution.display().to_string());
            eprintln!("{} does not compile: {messages}", solution.display());
            return Ok(crate::error::NO);
        }
    };
    let run = judge.run_input(loaded, &program, &input)?;
    show(&shown_as, &run, kept)
}

/// The input as a file: `-` reads standard input into the kept folder.
fn input_file(input: &Path, kept: &Path) -> Result<PathBuf> {
    if input != Path::new("-") {
        if !input.is_file() {
            return Err(crate::error::usage(anyhow::anyhow!(
                "{}: no such input file (--input)",
                input.display()
            )));
        }
        return Ok(input.to_path_buf());
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .context("cannot read the input from stdin (--input -)")?;
    let path = kept::path(kept, INPUT_RUN, Kept::Input);
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

fn show(input: &str, run: &InputRun, kept: &Path) -> Result<i32> {
    let mut failed = false;
    for (i, outcome) in run.users.iter().enumerate() {
        let who = match run.users.len() {
            1 => "your program".to_string(),
            _ => format!("your process {i}"),
        };
        let ended = match failure(outcome, &run.limits)? {
            None => "ended normally".to_string(),
            Some((verdict, feedback)) => {
                failed = true;
                format!("{verdict}: {feedback}")
            }
        };
        outln!(
            "{who} on {input}: {ended} ({:.3} s CPU, {:.1} MiB)",
            outcome.cpu_time,
            outcome.memory as f64 / (1 << 20) as f64
        );
    }
    if let Some(manager) = &run.manager {
        let (stdout, stderr) = (
            read_kept(kept, Kept::ManagerOut),
            read_kept(kept, Kept::ManagerErr),
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
    } else {
        section("your output", &read_kept(kept, Kept::Output))?;
    }
    section("your stderr", &read_kept(kept, Kept::Stderr))?;
    Ok(match failed {
        true => crate::error::NO,
        false => 0,
    })
}

/// A kept file of the input run, lossily decoded.
fn read_kept(kept: &Path, kind: Kept) -> String {
    let bytes = std::fs::read(kept::path(kept, INPUT_RUN, kind)).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A heading with the line count, then up to [`SHOWN_LINES`] lines.
fn section(title: &str, text: &str) -> Result<()> {
    let lines = text.lines().count();
    outln!(
        "--- {title} ({lines} line{}) ---",
        if lines == 1 { "" } else { "s" }
    );
    for line in text.lines().take(SHOWN_LINES) {
        outln!("{line}");
    }
    if lines > SHOWN_LINES {
        outln!("… ({} more lines)", lines - SHOWN_LINES);
    }
    Ok(())
}
