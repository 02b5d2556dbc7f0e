//! `ioi-run judge`: judge one solution on one problem and show every test.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

use super::output::outln;
use crate::error::usage;
mod conversation;
mod diagnosis;
mod difference;
mod input;
mod keep;
mod select;
mod table;
mod watch;

use select::Selection;
use table::{first_feedback_line, json_report, Diagnoses};

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
    /// Judge only this subtask (repeatable): its name, or its number as the table prints it
    /// (`03`).
    #[arg(long = "subtask")]
    subtasks: Vec<String>,
    /// Run only this test (repeatable; a glob such as `03*`), and every one of them whatever
    /// fails.
    #[arg(long = "test", value_name = "NAME", help_heading = "Debugging")]
    test_names: Vec<String>,
    /// Run every test, with no early stop: nothing is SKIPPED.
    #[arg(long, help_heading = "Debugging")]
    all_tests: bool,
    /// Keep every test's input, expected output, your output, your stderr, the checker's
    /// message and the verdict in DIR, named by test (`03.in`, `03.ans`, `03.out`, `03.err`,
    /// `03.checker`, `03.verdict`).
    #[arg(long, value_name = "DIR", help_heading = "Debugging")]
    keep: Option<PathBuf>,
    /// Run the solution on this input (`-` for stdin) through the problem's grader (and, for a
    /// Communication task, its manager) and print what it wrote; nothing is judged.
    #[arg(long, value_name = "FILE", help_heading = "Debugging")]
    input: Option<PathBuf>,
    /// Judge again whenever the solution file is saved (Ctrl-C to stop).
    #[arg(long, help_heading = "Debugging")]
    watch: bool,
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
    check_debugging_args(&args).map_err(usage)?;
    // Every test's files are kept, in the user's folder or in one of ours: the reasons shown
    // for a failing test are read from them.
    let ours;
    let kept = match &args.keep {
        Some(dir) => {
            keep::prepare(dir).map_err(usage)?;
            dir.clone()
        }
        None => {
            ours = crate::scratch::tempdir("kept")?;
            ours.path().to_path_buf()
        }
    };
    let mut options = args.run.judge_options().map_err(usage)?;
    if matches!(options.runner, crate::judge::Runner::Native) {
        options.keep_dir = Some(kept.clone());
    }
    let judge = Judge::new(options)?;
    match args.watch {
        true => watch::run(&args, || judge_once(&args, &judge, &kept)),
        false => judge_once(&args, &judge, &kept),
    }
}

/// Whether tests run through run scripts, which read the outputs themselves: nothing is kept.
fn scripts(args: &Args) -> bool {
    args.run.runner == super::RunnerKind::Scripts || args.run.run_script.is_some()
}

/// Options of the debugging flags that cannot go together.
fn check_debugging_args(args: &Args) -> Result<()> {
    if scripts(args) && (args.keep.is_some() || args.input.is_some()) {
        bail!(
            "--keep and --input need the native runner: with --runner scripts the run script \
             reads the outputs itself"
        );
    }
    if args.input.is_some() && (!args.test_names.is_empty() || args.all_tests) {
        bail!("--input runs your input only: leave out --test and --all-tests");
    }
    if args.input.is_some() && args.json {
        bail!("--input prints what your program wrote, not a report: leave out --json");
    }
    if args.input.is_some() && args.min_score.is_some() {
        bail!("--input judges nothing: --min-score has no score to compare");
    }
    Ok(())
}

/// Judges the solution once (or runs it on `--input`) and prints the result.
fn judge_once(args: &Args, judge: &Judge, kept: &Path) -> Result<i32> {
    // Each judgement (each of `--watch`) starts from a folder without the last one's files.
    keep::prepare(kept)?;
    // A problem that does not load is bad input, unless a closer cause is known (a path that
    // does not exist is a usage error, a failed generator run the host's).
    let (problem, tests) = load_problem(args, judge).map_err(crate::error::bad_input)?;
    let selection = Selection::new(&problem, &args.subtasks, &args.test_names, args.all_tests)?;
    let solution = &args.solution;
    let code = read_solution(solution, &problem)?;
    let language = Language::of_path(solution);
    if let Some(input) = &args.input {
        let loaded = judge.prepare(problem, tests)?;
        return input::run(judge, &loaded, code, language, input, solution, kept);
    }
    let key = problem.id.clone();
    let replayed_code = code.clone();
    let name_width = problem
        .test_names()
        .iter()
        .map(|t| t.len())
        .max()
        .unwrap_or(4);
    let source = Preloaded::new(judge.prepare(problem.clone(), tests)?);
    let options = ScheduleOptions {
        jobs: args.run.jobs(),
        batch_size: args.run.test_batch_size,
        selection: selection.plan(&problem),
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
        judge,
        &source,
        &[SubmissionJob {
            problem: key,
            code: Some(code),
            language,
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
    let loaded = &judged.problem;
    let mut results = judged.results;
    name_the_users_file(&mut results, &problem.id, solution);
    if !scripts(args) {
        let explained = table::explained(&results, !args.test_names.is_empty());
        conversation::replay_explained(
            judge,
            loaded,
            &replayed_code,
            language,
            &explained,
            args.json,
        )?;
    }
    let diagnoses = diagnose_all(&results, loaded, solution, kept);
    if args.keep.is_some() {
        keep::write(&results, loaded, kept)?;
    }
    present(
        args, judge, &problem, loaded, &selection, &results, &diagnoses,
    )
}

/// Prints the results (a table, or the JSON report with `--json`); the exit code says whether
/// the total reached `--min-score`.
fn present(
    args: &Args,
    judge: &Judge,
    problem: &Problem,
    loaded: &crate::judge::LoadedProblem,
    selection: &Selection,
    results: &[SubtaskResult],
    diagnoses: &Diagnoses,
) -> Result<i32> {
    // The judged problem's limits: the time limit is the scaled one.
    let mut shown_problem = problem.clone();
    shown_problem.time_limit = loaded.problem.time_limit;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json_report(&shown_problem, results, diagnoses))?
        );
    } else {
        let shown = table::Shown {
            time_scale: judge.time_scale(),
            diagnoses,
            every_failure: !args.test_names.is_empty(),
            partial: selection.is_partial(problem),
            kept: args.keep.as_deref(),
        };
        table::print_human(&shown_problem, results, &shown)?;
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

/// The largest solution `judge` reads: far above any contest's source limit (IOI's is 100 KB).
const MAX_SOLUTION_BYTES: u64 = 16 << 20;

/// The solution's bytes, compiled as they are (contest archives hold Latin-1 sources with
/// CRLF). An empty file, or a C file for a task whose graders are C++ only, is refused before
/// anything is judged.
fn read_solution(solution: &Path, problem: &Problem) -> Result<Vec<u8>> {
    let code = crate::problem::package::read_regular_file(solution, MAX_SOLUTION_BYTES)
        .with_context(|| format!("cannot read {}", solution.display()))
        .map_err(usage)?;
    if code.iter().all(u8::is_ascii_whitespace) {
        return Err(usage(anyhow::anyhow!(
            "{} is empty: there is nothing to judge",
            solution.display()
        )));
    }
    let language = Language::of_path(solution);
    if problem.grader_files_at(&language.grader_paths()).is_empty()
        && !problem.compiled_graders().is_empty()
    {
        let graders: Vec<&str> = problem
            .compiled_graders()
            .iter()
            .map(|g| g.path.as_str())
            .collect();
        return Err(usage(anyhow::anyhow!(
            "{} is a C file, but problem {} has no C grader (graders/grader.c): its graders \
             ({}) are C++ only, so submit C++ (a file not named *.c)",
            solution.display(),
            problem.id,
            graders.join(", ")
        )));
    }
    Ok(code)
}

/// Why each test that failed did, from the files it left in `kept`.
fn diagnose_all(
    results: &[SubtaskResult],
    loaded: &crate::judge::LoadedProblem,
    solution: &Path,
    kept: &Path,
) -> Diagnoses {
    let judged_as = format!(
        "graders/{}{}",
        loaded.problem.id,
        Language::of_path(solution).extension()
    );
    let given = solution.display().to_string();
    let sources = diagnosis::Sources {
        kept,
        judged_as: &judged_as,
        given: &given,
        user_io: match &loaded.problem.task {
            crate::problem::TaskType::Communication(params) => Some(params.user_io),
            crate::problem::TaskType::Batch => None,
        },
        time_limit: loaded.problem.time_limit,
    };
    let mut found = Diagnoses::new();
    for t in results.iter().flat_map(|s| &s.test_results) {
        if found.contains_key(&t.test_name) {
            continue;
        }
        let Some(case) = loaded.tests.get(&t.test_name) else {
            continue;
        };
        if let Some(d) = diagnosis::diagnose(t, case, &sources) {
            found.insert(t.test_name.clone(), d);
        }
    }
    found
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
            match crate::catalog::is_cms_source(problem) {
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
        let sources = crate::catalog::resolve_sources(&args.problems)?;
        let wanted = crate::catalog::lookup::Wanted {
            id: args.problem_id.as_deref().unwrap_or_default(),
            year: args.year,
            given: &args.problems,
            strict: args.strict,
        };
        // As in `evaluate`: the test cases' hub dataset unless told otherwise.
        let near = sources
            .iter()
            .cloned()
            .chain(std::iter::once(args.solution.clone()))
            .collect::<Vec<_>>();
        let warn = &mut |warning: String| {
            eprintln!("warning: {}", crate::output::printable(&warning, true))
        };
        return crate::catalog::lookup::load(judge, &wanted, &sources, &args.tests, &near, warn);
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
        "  done {:<name_width$} {:<7} {:>5.2} {time:>9} {mem:>11}  {}",
        crate::output::printable(&t.test_name, false),
        t.status.as_str(),
        t.score,
        crate::output::printable(feedback, false),
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
