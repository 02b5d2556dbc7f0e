//! `ioi-run evaluate`: judge whole datasets like tests_runner.py (resumable, parallel), then
//! write results (JSONL + parquet) and reports. `ioi-run report` rebuilds reports from results.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::output::outln;
use anyhow::{Context, Result};

use crate::catalog::{self, resolve_datasets, Catalog, DatasetSource};
use crate::evaluate::html_report::REPORT_HTML;
use crate::evaluate::run::{self, EvaluateOptions, Summary};
use crate::evaluate::shard::Shard;
use crate::evaluate::SubmissionOptions;
use crate::judge::schedule::{Progress, ScheduleOptions};
use crate::judge::{Judge, JudgeOptions};

/// Where `evaluate --demo` writes when given no folder.
const DEMO_RESULTS: &str = "ioi-run-demo";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Datasets to evaluate, comma-separated: parquet/jsonl files, folders, globs, or Hugging
    /// Face ids (`org/name`, `org/prefix-*`).
    #[arg(required_unless_present = "demo")]
    pub(super) datasets: Option<String>,
    /// Output dataset: a local folder receiving the parquet results and reports/ (for a hub
    /// id, a local folder of that name and the command to upload it).
    #[arg(required_unless_present = "demo")]
    pub(super) results_name: Option<String>,
    /// Evaluate the embedded demo (three problems, 26 submissions; no download needed):
    /// `ioi-run evaluate --demo [RESULTS_NAME]` (default: `ioi-run-demo` in the current folder).
    #[arg(long, conflicts_with_all = ["results_name", "problems", "tests"])]
    pub(super) demo: bool,
    /// Problems: open-r1/ioi rows (file, folder or hub id), or CMS/TPS task folders (or a
    /// folder of them).
    #[arg(long, default_value = "open-r1/ioi", help_heading = "Input")]
    problems: Vec<String>,
    /// Test cases: open-r1/ioi-test-cases (file, folder or hub id); not needed for CMS folders
    /// [default: open-r1/ioi-test-cases].
    #[arg(long, help_heading = "Input")]
    tests: Vec<String>,
    /// Where the results JSONL (the resume cache) are kept [default: RESULTS_NAME].
    #[arg(long, alias = "local_results_path", help_heading = "Output")]
    pub(super) local_results_path: Option<PathBuf>,
    /// Column holding each submission's unique id.
    #[arg(
        long,
        default_value = "uuid",
        alias = "id_column",
        help_heading = "Input"
    )]
    id_column: String,
    #[command(flatten, next_help_heading = "Judging")]
    pub(super) run: super::RunArgs,
    /// Judge nothing: say what would run.
    #[arg(long, alias = "dry_run", help_heading = "Output")]
    pub(super) dry_run: bool,
    /// Start over: move existing results to .bak first.
    #[arg(long = "override", help_heading = "Output")]
    pub(super) override_existing: bool,
    /// Seconds one submission's whole evaluation may take; past it the submission is left
    /// out of the results (and retried by the next run).
    #[arg(long, value_parser = super::parse_seconds, help_heading = "Judging")]
    timeout: Option<Duration>,
    /// Prepend the includes models often forget.
    #[arg(long, alias = "add_includes", help_heading = "Input")]
    add_includes: bool,
    /// Add a `messages` column (prompt, generation) for SFT.
    #[arg(long, alias = "add_messages_column", help_heading = "Output")]
    add_messages_column: bool,
    /// Refuse a dataset with a bad row (malformed, a field missing or of the wrong type, a
    /// duplicate id), naming its file, row and field, instead of skipping the row.
    #[arg(long, help_heading = "Input")]
    strict: bool,
    /// Take the code from the last ```cpp block of `generation` even when `code` is filled.
    #[arg(long, alias = "always_extract_code", help_heading = "Input")]
    always_extract_code: bool,
    /// Judge only shard K of N (K from 0 to N-1, e.g. `$SLURM_ARRAY_TASK_ID/4`): the
    /// submissions whose hash of dataset and id falls in it. Results go to
    /// `<dataset>.shard-K-of-N.jsonl`; no parquet or reports (`ioi-run merge` writes them).
    #[arg(long, value_name = "K/N", help_heading = "Cluster")]
    pub(super) shard: Option<Shard>,
}

/// What to judge and where the results go, after `--demo` or the positionals were read.
struct Inputs {
    datasets: Vec<DatasetSource>,
    results_name: String,
    problems: Vec<PathBuf>,
    tests: Vec<PathBuf>,
}

impl Inputs {
    /// The embedded demo, written into `RESULTS/demo-input` (with `--demo` the only
    /// positional, if any, is the results folder). `ioi-run-demo` is in the repository's
    /// .gitignore: running the demo from a clone leaves nothing untracked.
    fn demo(results: Option<String>) -> Result<Inputs> {
        let results = results.unwrap_or_else(|| DEMO_RESULTS.into());
        let demo_dir = PathBuf::from(&results).join("demo-input");
        crate::evaluate::demo::extract(&demo_dir)?;
        // The demo's rows without code are warned about like any dataset's: say it is on purpose.
        eprintln!(
            "demo problems and submissions written to {} (every kind of failure is there on \
             purpose: compilation errors, crashes, TLE, MLE, rows without code)",
            demo_dir.display()
        );
        Ok(Inputs {
            datasets: resolve_datasets(&demo_dir.join("submissions.jsonl").to_string_lossy())?,
            results_name: results,
            problems: vec![demo_dir.join("problems")],
            tests: vec![],
        })
    }

    /// The positionals, `--problems` and `--tests` (only open-r1 rows need tests: CMS task
    /// folders carry theirs).
    fn of(args: &Args) -> Result<Inputs> {
        if args.demo {
            return Inputs::demo(args.datasets.clone());
        }
        let results_name = args
            .results_name
            .clone()
            .context("RESULTS_NAME is required")
            .map_err(crate::error::usage)?;
        results_folder("RESULTS_NAME", std::path::Path::new(&results_name))?;
        if let Some(path) = &args.local_results_path {
            results_folder("--local-results-path", path)?;
        }
        let datasets = args
            .datasets
            .as_deref()
            .context("DATASETS is required")
            .map_err(crate::error::usage)?;
        let datasets = resolve_datasets(datasets)?;
        let problems = catalog::resolve_sources(&args.problems)?;
        let tests = if problems.iter().all(|p| catalog::is_cms_source(p)) {
            vec![]
        } else {
            let near: Vec<PathBuf> = problems
                .iter()
                .cloned()
                .chain(datasets.iter().flat_map(|d| d.files.iter().cloned()))
                .collect();
            catalog::resolve_tests(&args.tests, &near)?
        };
        Ok(Inputs {
            datasets,
            results_name,
            problems,
            tests,
        })
    }
}

/// Results go in a folder: an existing file of that name is a usage error saying so (rather
/// than the "File exists" of creating the folder).
fn results_folder(what: &str, path: &std::path::Path) -> Result<()> {
    if path.exists() && !path.is_dir() {
        return Err(crate::error::usage(anyhow::anyhow!(
            "{what} {}: an existing file, not a folder; results are written into a folder \
             (<folder>/<dataset>.jsonl, parquet and reports): give a folder's name",
            path.display()
        )));
    }
    Ok(())
}

/// The library's options for this command line.
fn evaluate_options(
    args: &Args,
    inputs: &Inputs,
    catalog: &Catalog,
    judge: &JudgeOptions,
) -> EvaluateOptions {
    let results_dir = PathBuf::from(&inputs.results_name);
    let submissions = SubmissionOptions {
        id_column: args.id_column.clone(),
        always_extract_code: args.always_extract_code,
        add_includes: args.add_includes,
        add_messages_column: args.add_messages_column,
    };
    let settings = crate::evaluate::settings::of_evaluation(
        judge,
        &submissions,
        args.run.test_batch_size,
        catalog.fingerprint(),
    );
    EvaluateOptions {
        datasets: inputs.datasets.clone(),
        local_results_path: args
            .local_results_path
            .clone()
            .unwrap_or_else(|| results_dir.clone()),
        results_dir,
        submissions,
        schedule: ScheduleOptions {
            jobs: args.run.jobs(),
            batch_size: args.run.test_batch_size,
            selection: Default::default(),
            timeout: args.timeout,
        },
        override_existing: args.override_existing,
        shard: args.shard,
        settings,
        strict: args.strict,
    }
}

pub fn run(args: Args) -> Result<i32> {
    let inputs = Inputs::of(&args)?;
    let catalog =
        Catalog::load(&inputs.problems, &inputs.tests).map_err(crate::error::bad_input)?;
    if args.strict && !catalog.broken().is_empty() {
        return Err(crate::error::bad_input(anyhow::anyhow!(
            "--strict: {} problem(s) could not be loaded:\n  {}",
            catalog.broken().len(),
            catalog.broken().join("\n  ")
        )));
    }
    let mut judge_options = args.run.judge_options()?;
    let options = evaluate_options(&args, &inputs, &catalog, &judge_options);
    if args.dry_run {
        let plan = run::dry_run(&options, &catalog)?;
        outln!("dry run: nothing judged\n{}", run::describe(&plan));
        return Ok(if plan.bad_rows.is_empty() { 0 } else { 1 });
    }
    judge_options.headers_ahead = true;
    let judge = Judge::new(judge_options)?;
    let progress = Progress::default();
    let summary = evaluate_showing_progress(&options, &catalog, &judge, &progress)?;
    print_summary(&args, &inputs, &options, &judge, &progress, &summary)
}

/// Runs the evaluation while a second thread shows its progress.
fn evaluate_showing_progress(
    options: &EvaluateOptions,
    catalog: &Catalog,
    judge: &Judge,
    progress: &Progress,
) -> Result<Summary> {
    let total = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let display = s.spawn(|| show_progress(progress, &total, &finished));
        let result = run::evaluate(options, catalog, judge, progress, &|plan| {
            eprint!("{}", run::describe(plan));
            total.store(
                plan.datasets.iter().map(|d| d.to_run).sum(),
                Ordering::Relaxed,
            );
        });
        finished.store(true, Ordering::Relaxed);
        let _ = display.join();
        result
    })
}

/// What the run did, where its files are, and what went wrong; the exit code.
fn print_summary(
    args: &Args,
    inputs: &Inputs,
    options: &EvaluateOptions,
    judge: &Judge,
    progress: &Progress,
    summary: &Summary,
) -> Result<i32> {
    let secs = summary.elapsed.as_secs_f64().max(1e-9);
    let tests = progress.tests_run.load(Ordering::Relaxed);
    outln!(
        "judged {} submission(s) in {:.1} s ({} answered with the verdict of an identical one; {:.1} tests/s, {} tests run, {} run ahead and not needed; {} compiled, {} from the compile cache)",
        summary.judged,
        secs,
        summary.from_cache,
        tests as f64 / secs,
        tests,
        progress.tests_discarded.load(Ordering::Relaxed),
        judge.cache().builds(),
        judge.cache().hits()
    );
    let table = crate::evaluate::summary::summarize(&summary.results_files, &args.id_column)?;
    if !table.is_empty() {
        outln!("\n{}", crate::evaluate::summary::render(&table));
    }
    for path in &summary.results_files {
        outln!("results:  {}", path.display());
    }
    for path in &summary.parquet_files {
        outln!("parquet:  {}", path.display());
    }
    report_lines(&summary.reports)?;
    // An `org/name` results name is also a Hugging Face dataset id: say how to publish it.
    if looks_like_hub_id(&inputs.results_name) && !args.demo {
        outln!(
            "to upload to the Hugging Face hub: {}",
            upload_command(&inputs.results_name, &options.results_dir)
        );
    }
    if summary.skipped_rows > 0 {
        eprintln!(
            "{} row(s) skipped: they cannot be read (listed above; recorded in {})",
            summary.skipped_rows,
            summary
                .skipped_files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if summary.broken_problems > 0 {
        eprintln!(
            "{} problem(s) could not be loaded (listed above); {} submission(s) named them and \
             were left out",
            summary.broken_problems, summary.naming_broken
        );
    }
    if summary.bad_rows > 0 {
        eprintln!(
            "{} row(s) were not judged because of bad input (listed above; written nowhere)",
            summary.bad_rows
        );
    }
    if !summary.failed.is_empty() {
        eprintln!(
            "{} submission(s) could not be judged (run again to retry them):",
            summary.failed.len()
        );
        for f in &summary.failed {
            eprintln!("  {f}");
        }
        // The host is what to look at first when it failed any of them.
        return Ok(match summary.host_failures {
            0 => crate::error::NO,
            _ => crate::error::HOST,
        });
    }
    Ok(if summary.bad_rows > 0 { 1 } else { 0 })
}

/// The `reports:`, `plots:` and `compare:` lines closing `evaluate` and `merge`: the first
/// markdown report, every dataset's HTML report, and the page comparing result sets.
pub(super) fn report_lines(reports: &[std::path::PathBuf]) -> Result<()> {
    if let Some(first) = reports.iter().find(|p| p.ends_with("README.md")) {
        outln!(
            "reports:  {} (and {} more)",
            first.display(),
            reports.len().saturating_sub(1)
        );
    }
    for html in reports.iter().filter(|p| p.ends_with(REPORT_HTML)) {
        outln!("plots:    {}", html.display());
    }
    let compare = crate::evaluate::html_compare::COMPARISON_HTML;
    if let Some(page) = reports.iter().find(|p| p.ends_with(compare)) {
        outln!("compare:  {}", page.display());
    }
    Ok(())
}

/// The command that publishes a results folder. `hf` is the Hugging Face CLI since
/// huggingface_hub 0.34 (1.0 removed `huggingface-cli`). The lock files that keep two runs
/// apart (`.<dataset>.jsonl.lock`, naming a pid, a host and a command line) and the `.bak` of
/// an `--override` are not results: they stay home.
fn upload_command(repo: &str, folder: &std::path::Path) -> String {
    format!(
        "hf upload {repo} {} --repo-type dataset --exclude '{}' --exclude '*.bak'",
        folder.display(),
        crate::evaluate::LOCK_PATTERN
    )
}

fn looks_like_hub_id(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.len() == 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != "..")
}

/// A progress bar on a terminal, a log line every 10 s otherwise.
fn show_progress(progress: &Progress, total: &AtomicUsize, finished: &AtomicBool) {
    let start = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let bar = terminal.then(|| {
        let bar = super::output::shown(indicatif::ProgressBar::new(0));
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} submissions  {msg}  ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut last_log = Instant::now();
    while !finished.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        let done = progress.submissions_done.load(Ordering::Relaxed);
        let tests = progress.tests_run.load(Ordering::Relaxed);
        let rate = tests as f64 / start.elapsed().as_secs_f64().max(1e-3);
        let msg = format!(
            "{} active, {rate:.1} tests/s",
            progress.active.load(Ordering::Relaxed)
        );
        match &bar {
            Some(bar) => {
                bar.set_length(total.load(Ordering::Relaxed) as u64);
                bar.set_position(done as u64);
                bar.set_message(msg);
            }
            None if last_log.elapsed() >= Duration::from_secs(10) => {
                eprintln!(
                    "progress: {done}/{} submissions, {msg}",
                    total.load(Ordering::Relaxed)
                );
                last_log = Instant::now();
            }
            None => {}
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}
