//! The evaluation of whole datasets: submissions from every dataset are judged by one
//! scheduler (all cores busy across submission boundaries), each result is appended to its
//! dataset's results JSONL as soon as it is known, and at the end the parquet export and the
//! reports are written.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::settings::{self, JudgedProblems, Settings};
use super::shard::{self, Shard};
use super::{result_row, ResultsFile, Submission, SubmissionKey, SubmissionOptions};
use crate::catalog::{Catalog, DatasetSource};
use crate::dataset::RowPolicy;
use crate::judge::schedule::{
    self, Finished, Judged, ProblemSource, Progress, ScheduleOptions, SubmissionJob,
};
use crate::judge::verdicts::{KeyBuilder, VerdictKey};
use crate::judge::{stop, Judge, LoadedProblem};
use crate::problem::{Problem, ProblemKey};
use anyhow::{bail, Context, Result};
use serde_json::Value;

/// Everything `ioi-run evaluate` needs.
#[derive(Debug, Clone)]
pub struct EvaluateOptions {
    pub datasets: Vec<DatasetSource>,
    /// Where the parquet results and the reports go.
    pub results_dir: PathBuf,
    /// Where the results JSONL (the resume cache) go.
    pub local_results_path: PathBuf,
    pub submissions: SubmissionOptions,
    pub schedule: ScheduleOptions,
    pub override_existing: bool,
    /// Judge only one shard of every dataset (`--shard K/N`): its own results file, no parquet
    /// and no reports (`merge` writes those).
    pub shard: Option<Shard>,
    /// The settings that can change a verdict, recorded with the results and compared on
    /// resume (see [`super::settings`]).
    pub settings: Settings,
    /// Refuse a dataset with a bad row (`--strict`) instead of skipping the row.
    pub strict: bool,
}

impl EvaluateOptions {
    /// The name of a dataset's results file (without `.jsonl`): the dataset's config name, or
    /// the shard's name for it.
    fn results_stem(&self, config_name: &str) -> String {
        match &self.shard {
            Some(shard) => shard.results_stem(config_name),
            None => config_name.to_string(),
        }
    }
}

/// Loads problems for the scheduler: tests streamed for one problem at a time.
struct CatalogSource<'a> {
    catalog: &'a Catalog,
    judge: &'a Judge,
    /// The problems of the jobs, by the name the scheduler knows them by (their label).
    keys: HashMap<String, ProblemKey>,
    /// The content the rows already in the results were judged on, by problem.
    judged: JudgedProblems,
    /// The content hash of each problem loaded, by label, for the rows judged on it.
    hashes: Mutex<HashMap<String, String>>,
    /// What becomes of a bad row in the `--tests` files.
    test_rows: RowPolicy,
}

impl CatalogSource<'_> {
    /// Refuses to judge a problem whose content (tests, grader files, limits) differs from the
    /// one the rows already in the results were judged on, and remembers its hash for the rows
    /// to come.
    fn check_content(
        &self,
        name: &str,
        problem: &Problem,
        tests: &crate::problem::TestSet,
    ) -> Result<()> {
        let hash = settings::problem_hash(problem, tests)?;
        if let Some((seen, at)) = self.judged.of_problem(problem.year, &problem.id) {
            if *seen != hash {
                return Err(crate::error::usage(anyhow::anyhow!(
                    "problem {name} has other content (tests, grader files or limits) than the \
                     one its results were judged on (problem_hash {hash}, {at} has {seen}): \
                     its new results would mix with the old. Judge against the same data, give \
                     another results folder, or add --override to judge everything again"
                )));
            }
        }
        if let Ok(mut hashes) = self.hashes.lock() {
            hashes.insert(name.to_string(), hash);
        }
        Ok(())
    }

    /// The content hash of a problem loaded under `name`.
    fn hash_of(&self, name: &str) -> Option<String> {
        self.hashes.lock().ok()?.get(name).cloned()
    }
}

impl ProblemSource for CatalogSource<'_> {
    fn load(&self, name: &str) -> Result<LoadedProblem> {
        let key = self
            .keys
            .get(name)
            .with_context(|| format!("unknown problem {name}"))?;
        let (problem, tests) = match self.catalog {
            Catalog::Cms(list, _) => {
                let (_, dir) = list
                    .iter()
                    .find(|(p, _)| key.is(p))
                    .context("unknown problem")?;
                crate::judge::tps::load_task_folder(self.judge, dir)?
            }
            Catalog::OpenR1 { rows, tests } => {
                let problem = rows
                    .problems
                    .iter()
                    .find(|p| key.is(p))
                    .context("unknown problem")?;
                let test_set = crate::problem::openr1::load_tests(tests, problem, &self.test_rows)?;
                (problem.clone(), test_set)
            }
        };
        self.check_content(name, &problem, &tests)?;
        self.judge.prepare(problem, tests)
    }
}

/// One submission to judge, with where its result goes.
struct Pending {
    dataset: usize,
    submission: Submission,
    problem_key: ProblemKey,
}

/// One dataset of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetPlan {
    /// Its config name (the name of its results).
    pub name: String,
    /// Submissions in it (in this shard).
    pub total: usize,
    /// Already judged by an earlier run.
    pub done: usize,
    /// To judge now.
    pub to_run: usize,
}

/// What a dry run or a run found to do.
#[derive(Debug, Default)]
pub struct Plan {
    /// What each dataset holds and what of it runs.
    pub datasets: Vec<DatasetPlan>,
    /// Submissions to run per problem.
    pub per_problem: BTreeMap<ProblemKey, usize>,
    /// Rows that cannot be judged (e.g. an unknown problem), each named: written nowhere.
    pub bad_rows: Vec<String>,
    /// Problems that could not be loaded (task folders, problems with a bad row), each named.
    pub broken_problems: Vec<String>,
    /// How many of `bad_rows` name one of `broken_problems`.
    pub naming_broken: usize,
    /// What looks wrong but is judged anyway (an empty dataset, generations without code).
    pub warnings: Vec<String>,
    /// The submissions of `bad_rows`, by dataset index (a shard records them, so that `merge`
    /// does not wait for them).
    pub left_out: Vec<(usize, SubmissionKey)>,
    /// Rows that could not be read as submissions (malformed, a field missing or wrong, a
    /// duplicate id), skipped: `{file, row, field, error}` records, by dataset index.
    pub skipped: Vec<Vec<Value>>,
}

impl Plan {
    /// How many rows were skipped as unreadable, over every dataset.
    pub fn skipped_rows(&self) -> usize {
        self.skipped.iter().map(Vec::len).sum()
    }
}

/// The end-of-run summary.
#[derive(Debug, Default)]
pub struct Summary {
    pub judged: usize,
    /// Of `judged`, the submissions answered with the verdict of an identical one (the same
    /// problem, language and code) judged in this run.
    pub from_cache: usize,
    /// Rows skipped as unreadable (malformed, a field missing or wrong, a duplicate id).
    pub skipped_rows: usize,
    /// Where the skipped rows are recorded (`<dataset>.skipped.jsonl`).
    pub skipped_files: Vec<PathBuf>,
    /// Rows left out as bad input (named in the plan).
    pub bad_rows: usize,
    /// Problems that could not be loaded, and how many submissions named them (among
    /// `bad_rows`).
    pub broken_problems: usize,
    pub naming_broken: usize,
    pub failed: Vec<String>,
    /// How many of `failed` failed because of the host or the sandbox.
    pub host_failures: usize,
    pub elapsed: Duration,
    pub results_files: Vec<PathBuf>,
    pub parquet_files: Vec<PathBuf>,
    pub reports: Vec<PathBuf>,
}

/// Loads every dataset, matches submissions to problems (bad input is an error naming the
/// file, row and field), and works out what remains to run.
/// With `dry`, nothing is opened for writing (a dry run changes nothing on disk) and no
/// results file is returned.
fn prepare(options: &EvaluateOptions, catalog: &Catalog, dry: bool) -> Result<Prepared> {
    let mut plan = Plan {
        broken_problems: catalog.broken(),
        ..Plan::default()
    };
    let mut judged = JudgedProblems::default();
    let mut files = Vec::new();
    let mut pending = Vec::new();
    for (index, dataset) in options.datasets.iter().enumerate() {
        let rows = RowPolicy::new(options.strict);
        let mut submissions =
            super::submissions::load_dataset(dataset, &options.submissions, &rows)?;
        plan.skipped.push(rows.skipped());
        if let Some(shard) = &options.shard {
            submissions.retain(|s| shard.contains(&dataset.config_name, &s.key()));
        }
        let (done, results) = open_results(options, &dataset.config_name, dry)?;
        if let Some(file) = &results {
            judged.merge_from(file.judged_problems());
        }
        let total = submissions.len();
        warn_about_content(&mut plan, &dataset.origin, &submissions);
        let mut to_run = 0;
        let mut bad = 0;
        for submission in submissions {
            if done.contains(&submission.key()) {
                continue;
            }
            match problem_of(catalog, &submission, &mut plan) {
                Some(problem_key) => {
                    *plan.per_problem.entry(problem_key.clone()).or_default() += 1;
                    to_run += 1;
                    pending.push(Pending {
                        dataset: index,
                        submission,
                        problem_key,
                    });
                }
                None => {
                    bad += 1;
                    plan.left_out.push((index, submission.key()));
                }
            }
        }
        plan.datasets.push(DatasetPlan {
            name: dataset.config_name.clone(),
            total,
            done: total - to_run - bad,
            to_run,
        });
        files.extend(results);
    }
    // Grouped by problem so each problem's tests are loaded once and dropped after use.
    pending.sort_by(|a, b| a.problem_key.cmp(&b.problem_key));
    Ok(Prepared {
        plan,
        files,
        pending,
        judged,
    })
}

/// The submissions of a dataset already in its results, and (unless `dry`) its results file
/// open for appending, with the settings of the run checked against those the file was
/// written with (a shard's against its record).
fn open_results(
    options: &EvaluateOptions,
    config_name: &str,
    dry: bool,
) -> Result<(HashSet<SubmissionKey>, Option<ResultsFile>)> {
    let stem = options.results_stem(config_name);
    let dir = &options.local_results_path;
    let check_settings = |holds_rows: bool| match options.shard {
        Some(_) => Ok(()),
        None => settings::begin(
            dir,
            &stem,
            &options.settings,
            holds_rows,
            options.override_existing,
            dry,
        ),
    };
    if dry {
        let done = judged_keys(options, config_name)?;
        check_settings(!done.is_empty())?;
        return Ok((done, None));
    }
    if let Some(shard) = options.shard {
        shard::begin(
            dir,
            config_name,
            shard,
            &options.settings,
            options.override_existing,
        )?;
    }
    let file = ResultsFile::open(
        dir,
        &stem,
        &options.submissions.id_column,
        options.override_existing,
    )?;
    // Under the results file's lock: no other run records other settings meanwhile.
    check_settings(!file.done().is_empty())?;
    Ok((file.done().clone(), Some(file)))
}

/// The problem a submission is for, or `None` with the reason recorded in `plan` as a bad row:
/// a problem that failed to load (judging it on a partly loaded problem would be a wrong
/// score), or none of that id and year. One bad row must not refuse the whole dataset: it is
/// named and left out.
fn problem_of(catalog: &Catalog, submission: &Submission, plan: &mut Plan) -> Option<ProblemKey> {
    if let Some(key) = catalog.key_for(submission.year, &submission.problem_id) {
        return Some(key);
    }
    if let Some(why) = catalog.broken_for(submission.year, &submission.problem_id) {
        plan.bad_rows.push(format!(
            "{}: field `problem_id`: {why} (listed above)",
            submission.origin
        ));
        plan.naming_broken += 1;
        return None;
    }
    let known: Vec<String> = catalog
        .problems()
        .into_iter()
        .map(|p| ProblemKey::of(p).to_string())
        .collect();
    plan.bad_rows.push(format!(
        "{}: field `problem_id`: no problem {:?} of year {} among the problems ({})",
        submission.origin,
        submission.problem_id,
        submission.year,
        known.join(", ")
    ));
    None
}

/// What [`prepare`] found: the plan, the results files open for appending, the submissions to
/// judge, and the content the rows already written were judged on.
struct Prepared {
    plan: Plan,
    files: Vec<ResultsFile>,
    pending: Vec<Pending>,
    judged: JudgedProblems,
}

/// Warnings about a dataset that loads but looks wrong: judged anyway, never silently.
fn warn_about_content(plan: &mut Plan, origin: &str, submissions: &[Submission]) {
    if submissions.is_empty() {
        plan.warnings
            .push(format!("dataset `{origin}` holds no submission"));
        return;
    }
    let without_code: Vec<&Submission> = submissions.iter().filter(|s| s.code.is_none()).collect();
    let no_block = without_code
        .iter()
        .filter(|s| s.fields.get("generation").is_some_and(|g| g.is_string()))
        .count();
    if no_block > 0 {
        plan.warnings.push(format!(
            "dataset `{origin}`: {no_block} of {} submission(s) have no code and no ```cpp block \
             in `generation` (scored 0, every test SKIPPED){}",
            submissions.len(),
            match without_code.first() {
                Some(s) => format!("; the first is {}", s.origin),
                None => String::new(),
            }
        ));
    } else if !without_code.is_empty() {
        plan.warnings.push(format!(
            "dataset `{origin}`: {} of {} submission(s) have no code (scored 0)",
            without_code.len(),
            submissions.len()
        ));
    }
}

/// What would run, without judging anything.
pub fn dry_run(options: &EvaluateOptions, catalog: &Catalog) -> Result<Plan> {
    Ok(prepare(options, catalog, true)?.plan)
}

/// The submissions a dataset's results file already holds, read without touching the file
/// (none with `--override`, which would start over).
fn judged_keys(options: &EvaluateOptions, config_name: &str) -> Result<HashSet<SubmissionKey>> {
    let path = options
        .local_results_path
        .join(format!("{}.jsonl", options.results_stem(config_name)));
    if options.override_existing || !path.exists() {
        return Ok(HashSet::new());
    }
    super::read_results(&path)?
        .iter()
        .map(|row| SubmissionKey::of_row(row, &options.submissions.id_column))
        .collect()
}

/// Judges every submission not yet in the results, appending each result as it comes, then
/// writes the parquet export and the reports.
pub fn evaluate(
    options: &EvaluateOptions,
    catalog: &Catalog,
    judge: &Judge,
    progress: &Progress,
    on_plan: &dyn Fn(&Plan),
) -> Result<Summary> {
    let started = Instant::now();
    let Prepared {
        plan,
        files,
        pending,
        judged,
    } = prepare(options, catalog, false)?;
    let skipped_files = record_skipped(options, &plan.skipped)?;
    on_plan(&plan);
    let (jobs, copies) = distinct_jobs(&pending);
    let from_cache = pending.len() - jobs.len();
    let source = CatalogSource {
        catalog,
        judge,
        keys: pending
            .iter()
            .map(|p| (p.problem_key.to_string(), p.problem_key.clone()))
            .collect(),
        judged,
        hashes: Mutex::default(),
        test_rows: RowPolicy::new(options.strict),
    };
    let recorder = Recorder {
        judge,
        source: &source,
        pending: &pending,
        copies: &copies,
        files: files.into_iter().map(Mutex::new).collect(),
        failures: Mutex::default(),
        host_failures: AtomicUsize::new(0),
        write_errors: Mutex::default(),
    };
    schedule::run(
        judge,
        &source,
        &jobs,
        &options.schedule,
        progress,
        &|finished| recorder.record(finished),
    )?;
    let Recorder {
        files,
        failures,
        host_failures,
        write_errors,
        ..
    } = recorder;
    let write_errors = write_errors.into_inner().unwrap_or_default();
    if !write_errors.is_empty() {
        bail!("cannot write results:\n{}", write_errors.join("\n"));
    }
    // The files (and their locks) stay open until the parquet and reports are written, so
    // that no other run appends meanwhile.
    let files: Vec<ResultsFile> = files
        .into_iter()
        .filter_map(|f| f.into_inner().ok())
        .collect();
    let results_files: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
    let failed = failures.into_inner().unwrap_or_default();
    let host_failures = host_failures.into_inner();
    let (skipped_rows, skipped_files) =
        with_test_rows(options, &plan, skipped_files, source.test_rows.skipped())?;
    let (parquet_files, reports) = match options.shard {
        Some(shard) => {
            mark_complete_shards(options, shard, &files, &pending, &plan.left_out)?;
            // A shard writes neither parquet nor reports: `merge` does, from all the shards.
            (Vec::new(), Vec::new())
        }
        None => write_outputs(options, &results_files)?,
    };
    Ok(Summary {
        skipped_rows,
        skipped_files,
        bad_rows: plan.bad_rows.len(),
        broken_problems: plan.broken_problems.len(),
        naming_broken: plan.naming_broken,
        judged: pending.len() - failed.len(),
        from_cache,
        failed,
        host_failures,
        elapsed: started.elapsed(),
        results_files,
        parquet_files,
        reports,
    })
}

/// Where each finished job's results go: every copy of the submission it answers gets its row
/// appended to its dataset's results; a failure is counted and named, an interrupted job
/// neither (the next run judges it afresh).
struct Recorder<'a> {
    judge: &'a Judge,
    source: &'a CatalogSource<'a>,
    pending: &'a [Pending],
    copies: &'a [Vec<usize>],
    files: Vec<Mutex<ResultsFile>>,
    failures: Mutex<Vec<String>>,
    host_failures: AtomicUsize,
    write_errors: Mutex<Vec<String>>,
}

impl Recorder<'_> {
    fn record(&self, finished: Finished) {
        for &copy in &self.copies[finished.job] {
            let pending = &self.pending[copy];
            let who = format!("{} ({})", pending.submission.id, pending.submission.origin);
            match &finished.outcome {
                Ok(judged) => {
                    if let Err(e) = self.append(pending, judged) {
                        if let Ok(mut errors) = self.write_errors.lock() {
                            errors.push(format!("{who}: {e:#}"));
                        }
                    }
                }
                // Interrupted: not a verdict and not a failure; the next run judges it afresh.
                Err(e) if stop::is_aborted(e) || stop::requested() => {}
                Err(e) => {
                    tracing::warn!("{who}: not judged: {e:#}");
                    if crate::error::class_of(e) == Some(crate::error::ErrorClass::Host) {
                        self.host_failures.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Ok(mut list) = self.failures.lock() {
                        list.push(format!("{who}: {e:#}"));
                    }
                }
            }
        }
    }

    /// Appends the row of `pending` judged as `judged` to its dataset's results (`false` when
    /// the submission already has one).
    fn append(&self, pending: &Pending, judged: &Judged) -> Result<bool> {
        let Judged { problem, results } = judged;
        let mut row = result_row(&pending.submission, &problem.problem, results);
        // How the submission was compiled: results of the two profiles can differ.
        row.entry("compile_profile")
            .or_insert(self.judge.compile_profile().as_str().into());
        if let Some(hash) = self.source.hash_of(&pending.problem_key.to_string()) {
            row.insert(settings::PROBLEM_HASH.into(), hash.into());
        }
        self.files[pending.dataset]
            .lock()
            .map_err(|_| anyhow::anyhow!("results file lock poisoned"))
            .and_then(|mut file| file.append(&row))
    }
}

/// The rows skipped and the files recording them, with the bad rows of the test cases added:
/// those are known only once the problems are loaded, and every dataset's record lists them
/// too (the test cases are every dataset's input).
fn with_test_rows(
    options: &EvaluateOptions,
    plan: &Plan,
    skipped_files: Vec<PathBuf>,
    test_rows: Vec<Value>,
) -> Result<(usize, Vec<PathBuf>)> {
    if test_rows.is_empty() {
        return Ok((plan.skipped_rows(), skipped_files));
    }
    let mut with_tests = plan.skipped.clone();
    for skipped in &mut with_tests {
        skipped.extend(test_rows.iter().cloned());
    }
    Ok((
        plan.skipped_rows() + test_rows.len(),
        record_skipped(options, &with_tests)?,
    ))
}

/// The parquet export and the reports of every results file.
fn write_outputs(
    options: &EvaluateOptions,
    results_files: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut parquet_files = Vec::new();
    for path in results_files {
        if let Some(out) = super::export_results_file(path, &options.results_dir)? {
            parquet_files.push(out);
        }
    }
    let reports = super::write_reports(
        results_files,
        &options.results_dir,
        &options.submissions.id_column,
    )?;
    Ok((parquet_files, reports))
}

/// The distinct submissions of `pending` to judge, and for each the positions in `pending` of
/// the submissions it answers: the first with that problem, language and code, and its copies.
/// In one run every problem has one content and the judge one set of settings, so these three
/// decide the verdict (src/judge/verdicts.rs); the copies get the first one's results.
fn distinct_jobs(pending: &[Pending]) -> (Vec<SubmissionJob>, Vec<Vec<usize>>) {
    let mut jobs = Vec::new();
    let mut copies: Vec<Vec<usize>> = Vec::new();
    let mut seen: HashMap<VerdictKey, usize> = HashMap::new();
    for (at, p) in pending.iter().enumerate() {
        let mut key = KeyBuilder::new("evaluate");
        key.part(p.problem_key.to_string().as_bytes())
            .part(p.submission.language.as_str().as_bytes())
            .optional(p.submission.code.as_deref().map(str::as_bytes));
        match seen.entry(key.finish()) {
            std::collections::hash_map::Entry::Occupied(job) => copies[*job.get()].push(at),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(jobs.len());
                copies.push(vec![at]);
                jobs.push(SubmissionJob {
                    problem: p.problem_key.to_string(),
                    code: p.submission.code.clone().map(String::into_bytes),
                    language: p.submission.language,
                });
            }
        }
    }
    (jobs, copies)
}

/// Writes each dataset's skipped rows beside its results, replacing the record of an earlier
/// run (the input may have been fixed since); a dataset with none has no record. Returns the
/// records written.
fn record_skipped(options: &EvaluateOptions, skipped: &[Vec<Value>]) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (dataset, skipped) in options.datasets.iter().zip(skipped) {
        let stem = options.results_stem(&dataset.config_name);
        let path = super::skipped::path(&options.local_results_path, &stem);
        if super::skipped::write(&path, skipped)? {
            written.push(path);
        }
    }
    Ok(written)
}

/// Records, for every dataset whose shard now holds a row for each of its submissions, that
/// the shard is complete (what `slurm evaluate` looks at to leave it out when submitting again).
fn mark_complete_shards(
    options: &EvaluateOptions,
    shard: Shard,
    files: &[ResultsFile],
    pending: &[Pending],
    left_out: &[(usize, SubmissionKey)],
) -> Result<()> {
    for (index, dataset) in options.datasets.iter().enumerate() {
        let Some(file) = files.get(index) else {
            continue;
        };
        let complete = pending
            .iter()
            .filter(|p| p.dataset == index)
            .all(|p| file.is_done(&p.submission.key()));
        if complete {
            let record = shard::ShardRecord {
                dataset: dataset.config_name.clone(),
                shard,
                settings: options.settings.clone(),
                complete: true,
                left_out: left_out
                    .iter()
                    .filter(|(d, _)| *d == index)
                    .map(|(_, key)| key.clone())
                    .collect(),
            };
            record.write(&shard.sidecar_path(&options.local_results_path, &dataset.config_name))?;
        }
    }
    Ok(())
}

/// What a plan will judge, per dataset and per problem, for messages.
pub fn describe(plan: &Plan) -> String {
    let mut out = String::new();
    for d in &plan.datasets {
        out.push_str(&format!(
            "  {}: {} submissions, {} already judged, {} to judge\n",
            d.name, d.total, d.done, d.to_run
        ));
    }
    // A BTreeMap: already in problem order.
    for (key, count) in &plan.per_problem {
        out.push_str(&format!("    {key}: {count}\n"));
    }
    for warning in &plan.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    if !plan.broken_problems.is_empty() {
        out.push_str(&format!(
            "warning: {} problem(s) could not be loaded (the submissions naming them are left \
             out; the other problems are judged):\n",
            plan.broken_problems.len()
        ));
        for broken in &plan.broken_problems {
            out.push_str(&format!("  {broken}\n"));
        }
    }
    if plan.skipped_rows() > 0 {
        out.push_str(&format!(
            "warning: {} row(s) skipped: they cannot be read as submissions (named above; \
             recorded beside the results, in the file named below; --strict refuses them)\n",
            plan.skipped_rows()
        ));
    }
    if !plan.bad_rows.is_empty() {
        out.push_str(&format!(
            "{} row(s) cannot be judged (left out, written nowhere):\n",
            plan.bad_rows.len()
        ));
        for row in &plan.bad_rows {
            out.push_str(&format!("  {row}\n"));
        }
    }
    out
}
