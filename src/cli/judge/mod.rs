//! `ioi-run judge`: judge one solution on one problem and show every test.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

use super::output::outln;
use crate::error::usage;
use crate::judge::schedule::{
    self, Preloaded, Progress, ScheduleOptions, SubmissionJob, TestObserver,
};
use crate::judge::{Judge, Language};
use crate::problem::{Problem, TestSet};
use crate::score::{SubtaskResult, TestResult, Verdict};

#[derive(Debug, clap::Args)]
#[command(allow_missing_positional = true)]
pub struct Args {
    /// The CMS or TPS task folder; leave it out with --problems and --problem-id (open-r1/ioi
    /// rows).
    #[arg(value_name = "PROBLEM")]
    problem: Option<PathBuf>,
    /// The solution to judge: C++, or C when its name ends in `.c`.
    #[arg(value_name = "SOLUTION.cpp")]
    solution: PathBuf,
    /// open-r1/ioi problem rows, as in `evaluate`: parquet or jsonl, a file, a folder or a
    /// Hugging Face id (`open-r1/ioi`).
    #[arg(long, requires = "problem_id")]
    problems: Vec<String>,
    /// Test cases, as in `evaluate`: open-r1/ioi-test-cases (parquet or jsonl, a file, a
    /// folder or a Hugging Face id) or a folder of <name>.in/.out [default with --problems:
    /// open-r1/ioi-test-cases].
    #[arg(long, requires = "problems")]
    tests: Vec<String>,
    /// Problem id in --problems.
    #[arg(long)]
    problem_id: Option<String>,
    /// Year of the problem in --problems (when several years share an id).
    #[arg(long)]
    year: Option<i64>,
    /// Judge only this subtask (repeatable).
    #[arg(long = "subtask")]
    subtasks: Vec<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// Refuse --problems or --tests with a bad row (even one of another problem), naming its
    /// file, row and field, instead of skipping the row with a warning.
    #[arg(long)]
    strict: bool,
    /// Exit with status 1 when the total score (out of the problem's points, as printed) is
    /// below this, after printing the results as usual.
    #[arg(long, value_name = "SCORE", value_parser = parse_min_score)]
    min_score: Option<f64>,
    // Last: its compile cache options open a help heading of their own.
    #[command(flatten)]
    run: super::RunArgs,
}

pub fn run(args: Args) -> Result<i32> {
    check_paths(&args).map_err(usage)?;
    let judge = Judge::new(args.run.judge_options().map_err(usage)?)?;
    // A problem that does not load is bad input, unless a closer cause is known (a path that
    // does not exist is a usage error, a failed generator run the host's).
    let (problem, tests) = load_problem(&args, &judge).map_err(crate::error::bad_input)?;
    for name in &args.subtasks {
        if problem.subtask(name).is_none() {
            let names: Vec<&str> = problem.subtasks.iter().map(|s| s.name.as_str()).collect();
            return Err(usage(anyhow::anyhow!(
                "problem {} has no subtask {name:?} (it has {})",
                problem.id,
                names.join(", ")
            )));
        }
    }
    let solution = &args.solution;
    // Bytes, compiled as they are: contest archives hold Latin-1 sources with CRLF.
    let code = std::fs::read(solution)
        .with_context(|| format!("cannot read {}", solution.display()))
        .map_err(usage)?;
    let key = problem.id.clone();
    let name_width = problem
        .test_names()
        .iter()
        .map(|t| t.len())
        .max()
        .unwrap_or(4);
    let source = Preloaded::new(judge.prepare(problem, tests)?);
    let options = ScheduleOptions {
        jobs: args.run.jobs(),
        batch_size: args.run.test_batch_size,
        subtasks: (!args.subtasks.is_empty()).then(|| args.subtasks.clone()),
        timeout: None,
    };
    // Tests are shown on stderr as they finish (the table on stdout is the final word: early
    // stop may still turn a test run ahead into SKIPPED).
    let compiling = (!args.json).then(|| compiling(solution));
    let progress = Progress {
        on_test: match &compiling {
            None => TestObserver::default(),
            Some(spinner) => {
                let spinner = spinner.clone();
                TestObserver::new(move |_, t| {
                    spinner.finish_and_clear();
                    show_finished_test(t, name_width)
                })
            }
        },
        ..Progress::default()
    };
    let outcome: Mutex<Option<schedule::Finished>> = Mutex::new(None);
    schedule::run(
        &judge,
        &source,
        &[SubmissionJob {
            problem: key,
            code: Some(code),
            language: Language::of_path(solution),
        }],
        &options,
        &progress,
        &|f| {
            if let Ok(mut slot) = outcome.lock() {
                *slot = Some(f);
            }
        },
    )?;
    if let Some(spinner) = compiling {
        spinner.finish_and_clear();
    }
    let finished = outcome
        .into_inner()
        .ok()
        .flatten()
        .context("the judge produced no result")?;
    let judged = finished.outcome?;
    let (problem, mut results) = (&judged.problem.problem, judged.results);
    name_the_users_file(&mut results, &problem.id, &args.solution);
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json_report(problem, &results))?
        );
    } else {
        print_human(problem, &results, judge.time_scale())?;
    }
    let total =
        crate::score::round_like_python(results.iter().map(|s| s.weighted_score()).sum::<f64>(), 2);
    match args.min_score {
        Some(min) if total < min => {
            eprintln!("total {total} is below --min-score {min}");
            Ok(crate::error::NO)
        }
        _ => Ok(0),
    }
}

/// A `--min-score` value: a finite, non-negative number.
fn parse_min_score(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "expected a score of at least 0 (e.g. 100 or 42.5), got {text:?}"
        )),
    }
}

/// Paths in the wrong place get a hint, not a bare "Not a directory".
fn check_paths(args: &Args) -> Result<()> {
    let solution = &args.solution;
    match (&args.problem, args.problems.first()) {
        (Some(problem), None) if problem.is_file() && solution.is_dir() => bail!(
            "{} is a file and {} a folder: the problem comes first \
             (ioi-run judge {} {})",
            problem.display(),
            solution.display(),
            solution.display(),
            problem.display()
        ),
        (Some(problem), None)
            if problem.is_file() && crate::dataset::Format::of(problem).is_some() =>
        {
            bail!(
                "{0} is a file of problem rows, not a task folder: give it as --problems {0} \
                 --problem-id ID (and --tests with its test cases)",
                problem.display()
            )
        }
        (Some(problem), None) if !problem.is_dir() => bail!(
            "{}: no such problem folder (PROBLEM is a CMS or TPS task folder holding problem.json)",
            problem.display()
        ),
        (Some(problem), None) if !problem.join("problem.json").is_file() => {
            match crate::evaluate::run::is_cms_source(problem) {
                true => bail!(
                    "{0} holds task folders, not one task: give one of them (ioi-run judge \
                     {0}/TASK SOLUTION.cpp), or pick one with --problems {0} --problem-id ID",
                    problem.display()
                ),
                false => bail!(
                    "{}: not a task folder (no problem.json in it; PROBLEM is a CMS or TPS task \
                     folder)",
                    problem.display()
                ),
            }
        }
        (Some(problem), Some(_)) => bail!(
            "with --problems give only SOLUTION.cpp (got {} too)",
            problem.display()
        ),
        (None, None) => bail!(
            "give a CMS or TPS task folder and a solution (ioi-run judge TASK SOLUTION.cpp), or \
             --problems and --problem-id (and --tests) with a solution"
        ),
        _ if solution.is_dir() => bail!(
            "{} is a folder: SOLUTION.cpp must be a file",
            solution.display()
        ),
        _ => Ok(()),
    }
}

fn load_problem(args: &Args, judge: &Judge) -> Result<(Problem, TestSet)> {
    if !args.problems.is_empty() {
        let sources = crate::evaluate::run::resolve_sources(&args.problems)?;
        if sources
            .iter()
            .any(|p| crate::evaluate::run::is_cms_source(p))
        {
            let dir = pick_task_folder(args, &sources)?;
            return crate::judge::tps::load_task_folder(judge, &dir);
        }
        let problem = pick_problem(args, &sources)?;
        // As in `evaluate`: the test cases' hub dataset unless told otherwise.
        let near = sources
            .iter()
            .cloned()
            .chain(std::iter::once(args.solution.clone()))
            .collect::<Vec<_>>();
        let tests = crate::evaluate::run::resolve_tests(&args.tests, &near)?;
        let rows = crate::dataset::RowPolicy::new(args.strict);
        let tests = crate::problem::openr1::load_tests(&tests, &problem, &rows)?;
        return Ok((problem, tests));
    }
    match &args.problem {
        Some(dir) => {
            if crate::problem::tps::is_tps(dir) {
                eprintln!(
                    "{}: a TPS package: its tests are generated on first use, then cached",
                    dir.display()
                );
            }
            crate::judge::tps::load_task_folder(judge, dir)
        }
        None => bail!("give a CMS or TPS task folder and a solution, or --problems and --problem-id (and --tests) with a solution"),
    }
}

/// The task folder `--problem-id` (and `--year`) names among `--problems` task folders (CMS or
/// TPS) or folders of them, as `evaluate` matches submissions to them: by problem id,
/// case-insensitively. A folder that cannot be read is only warned about unless it is the one
/// named.
fn pick_task_folder(args: &Args, sources: &[PathBuf]) -> Result<PathBuf> {
    let id = args
        .problem_id
        .as_deref()
        .unwrap_or_default()
        .to_lowercase();
    let mut folders = Vec::new();
    for source in sources {
        if !crate::evaluate::run::is_cms_source(source) {
            bail!(
                "--problems mixes task folders ({}) and open-r1/ioi rows ({}): use one kind",
                sources
                    .iter()
                    .find(|p| crate::evaluate::run::is_cms_source(p))
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                source.display()
            );
        }
        folders.extend(crate::evaluate::run::task_folders(source)?);
    }
    let mut found = Vec::new();
    let mut ids = Vec::new();
    for dir in folders {
        let named = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().to_lowercase() == id);
        match crate::evaluate::run::folder_header(&dir) {
            Ok(p) if p.id == id && args.year.is_none_or(|y| p.year == y || p.year == 0) => {
                found.push(dir)
            }
            Ok(p) => ids.push(p.id),
            Err(e) if named => {
                return Err(e.context(format!("task folder {} cannot be judged", dir.display())))
            }
            Err(e) => eprintln!(
                "warning: task folder {} could not be read (not the one judged): {e:#}",
                dir.display()
            ),
        }
    }
    ids.sort();
    ids.dedup();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(crate::error::usage(anyhow::anyhow!(
            "no task folder of problem {id:?} in {} (it holds {})",
            args.problems.join(", "),
            match ids.is_empty() {
                true => "none that could be read".to_string(),
                false => ids.join(", "),
            }
        ))),
        _ => Err(crate::error::usage(anyhow::anyhow!(
            "several task folders of problem {id:?} in {} ({}): pick one with --year, or give \
             the folder itself (ioi-run judge TASK SOLUTION.cpp)",
            args.problems.join(", "),
            found
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The problem `--problem-id` (and `--year`) names among open-r1/ioi rows. Other problems
/// with a bad row are only warned about; the named one with a bad row is an error.
fn pick_problem(args: &Args, sources: &[PathBuf]) -> Result<Problem> {
    let id = args
        .problem_id
        .as_deref()
        .unwrap_or_default()
        .to_lowercase();
    let given = args.problems.join(", ");
    let loaded = crate::problem::openr1::load_problems(sources)?;
    let wanted = |year: i64| args.year.is_none_or(|y| y == year);
    for broken in &loaded.broken {
        let named = broken.id == id && broken.year.is_none_or(|y| y == 0 || wanted(y));
        if named {
            bail!(
                "problem {} cannot be judged: {}",
                broken.label(),
                broken.why
            );
        }
        if args.strict {
            bail!(
                "--strict: problem {} has a bad row in --problems: {}",
                broken.label(),
                broken.why
            );
        }
        eprintln!(
            "warning: problem {} could not be loaded (not the one judged): {}",
            broken.label(),
            broken.why
        );
    }
    let mut years: Vec<i64> = loaded
        .problems
        .iter()
        .filter(|p| p.id == id)
        .map(|p| p.year)
        .collect();
    years.sort();
    let found: Vec<Problem> = loaded
        .problems
        .into_iter()
        .filter(|p| p.id == id && wanted(p.year))
        .collect();
    match found.len() {
        0 if !years.is_empty() => Err(usage(anyhow::anyhow!(
            "no problem {id:?} of year {} in {given}; it exists for {}",
            args.year.unwrap_or_default(),
            years
                .iter()
                .map(|y| y.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        0 => Err(usage(anyhow::anyhow!("no problem {id:?} in {given}"))),
        1 => found.into_iter().next().context("unreachable"),
        _ => Err(usage(anyhow::anyhow!(
            "several problems {id:?} in {given} (years differ): pick one with --year"
        ))),
    }
}

/// The first line of a test's feedback (tables show one line per test).
fn first_feedback_line(t: &TestResult) -> &str {
    t.feedback
        .as_deref()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
}

/// Says that the solution is compiling: a spinner at a terminal (cleared when the first test
/// finishes), one line otherwise.
fn compiling(solution: &Path) -> indicatif::ProgressBar {
    let message = format!("compiling {}", solution.display());
    if !std::io::stderr().is_terminal() {
        let _ = writeln!(std::io::stderr().lock(), "{message}");
        return indicatif::ProgressBar::hidden();
    }
    let spinner = super::output::shown(indicatif::ProgressBar::new_spinner());
    spinner.set_message(message);
    spinner.enable_steady_tick(std::time::Duration::from_millis(100));
    spinner
}

/// One line on stderr per test as soon as its result is known.
fn show_finished_test(t: &TestResult, name_width: usize) {
    let time = t.time.map(|v| format!("{v:.3} s")).unwrap_or_default();
    let mem = t
        .memory
        .map(|v| format!("{:.1} MiB", v as f64 / (1 << 20) as f64))
        .unwrap_or_default();
    let feedback = first_feedback_line(t);
    // A closed stderr must not stop judging: the final table still goes to stdout.
    let _ = writeln!(
        std::io::stderr().lock(),
        "  done {:<name_width$} {:<7} {:>5.2} {time:>9} {mem:>11}  {feedback}",
        t.test_name,
        t.status.as_str(),
        t.score,
    );
}

/// The compiler speaks of the submission by the name it has in the judge's folder
/// (`graders/<id>.cpp` or `.c`); the person reading its messages knows it by the path they gave.
fn name_the_users_file(results: &mut [SubtaskResult], problem_id: &str, solution: &Path) {
    let extension = Language::of_path(solution).extension();
    let judged_as = format!("graders/{problem_id}{extension}");
    let given = solution.display().to_string();
    for test in results.iter_mut().flat_map(|s| s.test_results.iter_mut()) {
        if test.status == Verdict::CompilationError {
            if let Some(feedback) = &mut test.feedback {
                *feedback = feedback.replace(&judged_as, &given);
            }
        }
    }
}

/// The `--json` document. A compile error is given once, as `compile_error`: every test
/// would otherwise repeat the compiler's messages.
pub fn json_report(problem: &Problem, results: &[SubtaskResult]) -> serde_json::Value {
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

fn print_human(problem: &Problem, results: &[SubtaskResult], time_scale: f64) -> Result<()> {
    let color = super::output::color_stdout();
    let paint = |text: String, code: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text
        }
    };
    // The id only when the name does not already say it (`sumpairs (sumpairs)` says it twice).
    let title = match problem.name.eq_ignore_ascii_case(&problem.id) {
        true => problem.name.clone(),
        false => format!("{} ({})", problem.name, problem.id),
    };
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
            outln!("{}", messages.trim_end());
        }
        None => print_tests(problem, results, &paint)?,
    }
    outln!();
    outln!("{:<22} {:>10} {:>8}", "subtask", "points", "status");
    let mut total = 0.0;
    for s in results {
        total += s.weighted_score();
        let status = paint(
            format!("{:>8}", s.status().as_str()),
            status_color(s.status()),
        );
        outln!(
            "{:<22} {:>10} {status}",
            s.subtask,
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
            t.test_name,
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

/// `text` cut to `width` characters, with `…` marking the cut.
fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
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
