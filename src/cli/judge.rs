//! `ioi-run judge`: judge one solution on one problem and show every test.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

use crate::judge::schedule::{self, Job, Preloaded, Progress, ScheduleOptions};
use crate::judge::Judge;
use crate::problem::{Problem, TestSet};
use crate::score::{Status, SubtaskResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `PROBLEM SOLUTION.cpp`, where PROBLEM is a CMS or TPS task folder; or only `SOLUTION.cpp`
    /// with --problems, --tests and --problem-id.
    #[arg(required = true, num_args = 1..=2, value_name = "PROBLEM] [SOLUTION.cpp")]
    paths: Vec<PathBuf>,
    /// open-r1/ioi problem rows (parquet or jsonl, file or folder).
    #[arg(long, requires = "problem_id")]
    problems: Option<PathBuf>,
    /// open-r1/ioi-test-cases (parquet or jsonl) or a folder of <name>.in/.out.
    #[arg(long, requires = "problems")]
    tests: Vec<PathBuf>,
    /// Problem id in --problems.
    #[arg(long)]
    problem_id: Option<String>,
    /// Year of the problem in --problems (when several years share an id).
    #[arg(long)]
    year: Option<i64>,
    /// Judge only this subtask (repeatable).
    #[arg(long = "subtask")]
    subtasks: Vec<String>,
    #[command(flatten)]
    run: super::RunArgs,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let judge = Judge::new(args.run.judge_options()?)?;
    let (problem, tests) = load_problem(&args, &judge)?;
    for name in &args.subtasks {
        if problem.subtask(name).is_none() {
            let names: Vec<&str> = problem.subtasks.iter().map(|s| s.name.as_str()).collect();
            bail!(
                "problem {} has no subtask {name:?} (it has {})",
                problem.id,
                names.join(", ")
            );
        }
    }
    let solution = args.paths.last().context("missing SOLUTION.cpp")?;
    let code = std::fs::read_to_string(solution)
        .with_context(|| format!("cannot read {}", solution.display()))?;
    let key = problem.id.clone();
    let source = Preloaded::new(judge.prepare(problem, tests)?);
    let options = ScheduleOptions {
        jobs: args.run.jobs(),
        batch_size: args.run.test_batch_size,
        subtasks: (!args.subtasks.is_empty()).then(|| args.subtasks.clone()),
        timeout: None,
    };
    let progress = Progress::default();
    let outcome: Mutex<Option<schedule::Finished>> = Mutex::new(None);
    schedule::run(
        &judge,
        &source,
        &[Job {
            problem: key,
            code: Some(code),
        }],
        &options,
        &progress,
        &|f| {
            if let Ok(mut slot) = outcome.lock() {
                *slot = Some(f);
            }
        },
    )?;
    let finished = outcome
        .into_inner()
        .ok()
        .flatten()
        .context("the judge produced no result")?;
    let results = finished.result?;
    let problem = &finished
        .problem
        .context("the judge produced no problem")?
        .problem;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json_report(problem, &results))?
        );
    } else {
        print_human(problem, &results);
    }
    Ok(0)
}

fn load_problem(args: &Args, judge: &Judge) -> Result<(Problem, TestSet)> {
    if let Some(rows) = &args.problems {
        let id = args
            .problem_id
            .as_deref()
            .unwrap_or_default()
            .to_lowercase();
        let problems = crate::problem::openr1::load_problems(std::slice::from_ref(rows))?;
        let found: Vec<Problem> = problems
            .into_iter()
            .filter(|p| p.id == id && args.year.is_none_or(|y| p.year == y))
            .collect();
        let problem = match found.len() {
            0 => bail!("no problem {id:?} in {}", rows.display()),
            1 => found.into_iter().next().context("unreachable")?,
            _ => bail!(
                "several problems {id:?} in {} (years differ): pick one with --year",
                rows.display()
            ),
        };
        if args.tests.is_empty() {
            bail!("--tests is required with --problems");
        }
        let tests = crate::problem::openr1::load_tests(&args.tests, &problem)?;
        return Ok((problem, tests));
    }
    match args.paths.as_slice() {
        [dir, _solution] => {
            if crate::problem::tps::is_tps(dir) {
                eprintln!(
                    "{}: a TPS package: its tests are generated on first use, then cached",
                    dir.display()
                );
            }
            crate::judge::tps::load_task_folder(judge, dir)
        }
        _ => bail!("give a CMS or TPS task folder and a solution, or --problems, --tests and --problem-id with a solution"),
    }
}

/// The `--json` document.
pub fn json_report(problem: &Problem, results: &[SubtaskResult]) -> serde_json::Value {
    let total: f64 = results.iter().map(|s| s.weighted_score()).sum();
    serde_json::json!({
        "problem": problem.id,
        "total": crate::score::round_like_python(total, 2),
        "subtasks": results.iter().map(|s| serde_json::json!({
            "subtask": s.subtask,
            "points": s.points,
            "score": s.score(),
            "weighted_score": s.weighted_score(),
            "status": s.status(),
            "tests": s.test_results,
        })).collect::<Vec<_>>(),
    })
}

fn print_human(problem: &Problem, results: &[SubtaskResult]) {
    let color = std::io::stdout().is_terminal();
    let paint = |text: String, code: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text
        }
    };
    // Each test once, with every subtask it belongs to.
    let mut rows: Vec<(&crate::score::TestResult, Vec<&str>)> = Vec::new();
    for s in results {
        for t in &s.test_results {
            match rows.iter_mut().find(|(r, _)| r.test_name == t.test_name) {
                Some((r, subtasks)) => {
                    subtasks.push(&s.subtask);
                    if r.status == Status::Skipped && t.status != Status::Skipped {
                        *r = t;
                    }
                }
                None => rows.push((t, vec![&s.subtask])),
            }
        }
    }
    println!(
        "{} ({}), time limit {} s, memory limit {} MiB",
        problem.name,
        problem.id,
        problem.time_limit,
        problem.memory_limit >> 20
    );
    println!();
    // Column widths from the content (test names and subtask lists vary a lot).
    let name_width = rows
        .iter()
        .map(|(t, _)| t.test_name.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let subtasks_width = rows
        .iter()
        .map(|(_, s)| s.join(",").len())
        .max()
        .unwrap_or(0)
        .max(8);
    println!(
        "{:<name_width$} {:<subtasks_width$} {:<7} {:>6} {:>8} {:>8} {:>9}  feedback",
        "test", "subtasks", "verdict", "score", "cpu s", "wall s", "mem MiB"
    );
    for (t, subtasks) in rows {
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
        let feedback = t
            .feedback
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        let status = paint(format!("{:<7}", t.status.as_str()), status_color(t.status));
        println!(
            "{:<name_width$} {:<subtasks_width$} {status} {:>6} {time} {wall:>8} {mem:>9}  {feedback}",
            t.test_name,
            subtasks.join(","),
            format!("{:.2}", t.score)
        );
    }
    println!();
    println!("{:<22} {:>10} {:>8}", "subtask", "points", "status");
    let mut total = 0.0;
    for s in results {
        total += s.weighted_score();
        let status = paint(
            format!("{:>8}", s.status().as_str()),
            status_color(s.status()),
        );
        println!(
            "{:<22} {:>10} {status}",
            s.subtask,
            format!("{}/{}", s.weighted_score(), s.points)
        );
    }
    let max: f64 = results.iter().map(|s| s.points).sum();
    println!();
    println!(
        "total {}/{}",
        crate::score::round_like_python(total, 2),
        max
    );
}

fn status_color(status: Status) -> &'static str {
    match status {
        Status::Accepted => "32",
        Status::Partial => "33",
        Status::Skipped => "2",
        _ => "31",
    }
}
