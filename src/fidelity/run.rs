//! Judging the official solutions, one package at a time (its solutions in parallel), with
//! every judged solution appended to `judged.jsonl` at once: an interrupted run loses nothing,
//! and the next run judges only what is missing (or changed: the source's hash is kept).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use super::packages::{OfficialSolution, Package};
use super::rules::{compare, JudgedSubtask};
use super::{JudgedSolution, SubtaskOutcome};
use crate::judge::schedule::{self, Preloaded, Progress, ScheduleOptions, SubmissionJob};
use crate::judge::Judge;

/// The resume cache in the output folder.
pub const JUDGED_FILE: &str = "judged.jsonl";

/// Why a solution has no result in a `--report-only` report.
pub const NOT_JUDGED_YET: &str = "not judged yet (no line in judged.jsonl)";

/// What became of one official solution.
#[derive(Debug, Clone)]
pub enum Judgement {
    Judged(JudgedSolution),
    /// The judge could not judge it (the package would not load, a judge-side failure).
    Failed(String),
}

/// Every solution of a package with what became of it, in the package's order.
#[derive(Debug, Clone)]
pub struct PackageResults {
    pub package: Package,
    pub solutions: Vec<(OfficialSolution, Judgement)>,
}

pub struct RunOptions {
    pub jobs: usize,
    pub out_dir: PathBuf,
    /// Judge everything again, ignoring `judged.jsonl`.
    pub rejudge: bool,
    /// Judge nothing: report what `judged.jsonl` holds (while another run is still judging).
    pub report_only: bool,
}

/// Judges every solution of `packages` not already in the output folder's `judged.jsonl`.
pub fn judge_all(
    judge: &Judge,
    packages: Vec<Package>,
    options: &RunOptions,
) -> Result<Vec<PackageResults>> {
    std::fs::create_dir_all(&options.out_dir)
        .with_context(|| format!("cannot create {}", options.out_dir.display()))?;
    let path = options.out_dir.join(JUDGED_FILE);
    if options.rejudge && path.exists() {
        let bak = path.with_extension("jsonl.bak");
        std::fs::rename(&path, &bak)
            .with_context(|| format!("cannot move {} to {}", path.display(), bak.display()))?;
    }
    let mut cache = read_judged(&path)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let sink = Mutex::new(file);
    let profile = judge.compile_profile().as_str();
    let mut all = Vec::new();
    for package in packages {
        let mut sources = Vec::new();
        for solution in &package.solutions {
            let path = package.dir.join(&solution.file);
            let code = crate::problem::package::read(&package.dir, &path)?;
            let hash = blake3::hash(&code).to_hex().to_string();
            let key = key_of(&package.name, &solution.file, profile, judge.time_scale());
            let cached = cache.remove(&key).filter(|j| j.source_hash == hash);
            sources.push((code, hash, cached));
        }
        let pending: Vec<usize> = (0..sources.len())
            .filter(|&i| sources[i].2.is_none())
            .collect();
        let mut judged: HashMap<usize, Judgement> = HashMap::new();
        if options.report_only {
            for &i in &pending {
                judged.insert(i, Judgement::Failed(NOT_JUDGED_YET.into()));
            }
        } else if !pending.is_empty() {
            eprintln!(
                "{}: judging {} of {} solutions",
                package.name,
                pending.len(),
                sources.len()
            );
            let jobs: Vec<(usize, Vec<u8>, String)> = pending
                .iter()
                .map(|&i| (i, sources[i].0.clone(), sources[i].1.clone()))
                .collect();
            judged = judge_package(judge, &package, &jobs, options.jobs, profile, &sink)?;
        }
        let solutions = package
            .solutions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let judgement = match sources[i].2.take() {
                    Some(cached) => Judgement::Judged(cached),
                    None => judged
                        .remove(&i)
                        .unwrap_or_else(|| Judgement::Failed("not judged".into())),
                };
                (s.clone(), judgement)
            })
            .collect();
        all.push(PackageResults { package, solutions });
    }
    Ok(all)
}

/// Judges `jobs` (index in the package, code, hash) of one package; a package that will not
/// load fails each of its solutions with the reason, and the run goes on.
fn judge_package(
    judge: &Judge,
    package: &Package,
    jobs: &[(usize, Vec<u8>, String)],
    parallel: usize,
    profile: &str,
    sink: &Mutex<std::fs::File>,
) -> Result<HashMap<usize, Judgement>> {
    let loaded = crate::judge::tps::load_task_folder(judge, &package.dir)
        .and_then(|(problem, tests)| judge.prepare(problem, tests));
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            let why = format!("the package could not be loaded: {e:#}");
            eprintln!("{}: {why}", package.name);
            return Ok(jobs
                .iter()
                .map(|(i, _, _)| (*i, Judgement::Failed(why.clone())))
                .collect());
        }
    };
    let key = loaded.problem.id.clone();
    let time_limit = loaded.problem.time_limit;
    let source = Preloaded::new(loaded);
    let submissions: Vec<SubmissionJob> = jobs
        .iter()
        .map(|(_, code, _)| SubmissionJob {
            problem: key.clone(),
            code: Some(code.clone()),
            // The packages' solutions judged here are their C++ ones.
            language: crate::judge::Language::Cpp,
        })
        .collect();
    let options = ScheduleOptions {
        jobs: parallel,
        batch_size: 1,
        selection: Default::default(),
        timeout: None,
    };
    let results: Mutex<HashMap<usize, Judgement>> = Mutex::new(HashMap::new());
    let write_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    schedule::run(
        judge,
        &source,
        &submissions,
        &options,
        &Progress::default(),
        &|finished| {
            let (index, _, hash) = &jobs[finished.job];
            let solution = &package.solutions[*index];
            let judgement = match finished.outcome {
                Ok(judged) => {
                    let row = JudgedSolution {
                        task: package.name.clone(),
                        solution: solution.file.clone(),
                        source_hash: hash.clone(),
                        compile_profile: profile.to_string(),
                        time_scale: judge.time_scale(),
                        time_limit,
                        subtasks: judged.results.iter().map(SubtaskOutcome::of).collect(),
                    };
                    if let Err(e) = append(sink, &row) {
                        if let Ok(mut slot) = write_error.lock() {
                            slot.get_or_insert(e);
                        }
                    }
                    Judgement::Judged(row)
                }
                Err(e) => Judgement::Failed(format!("{e:#}")),
            };
            eprintln!(
                "  {}/{}: {}",
                package.name,
                solution.file,
                progress_word(solution, &judgement)
            );
            if let Ok(mut map) = results.lock() {
                map.insert(*index, judgement);
            }
        },
    )?;
    if let Some(e) = write_error.into_inner().ok().flatten() {
        return Err(e);
    }
    Ok(results.into_inner().unwrap_or_default())
}

fn progress_word(solution: &OfficialSolution, judgement: &Judgement) -> String {
    match judgement {
        Judgement::Failed(why) => format!("not judged: {why}"),
        Judgement::Judged(j) => {
            let statuses: Vec<&str> = j.subtasks.iter().map(|s| s.status.as_str()).collect();
            let fits = compare(&solution.expectation, &judged_subtasks(j)).is_empty();
            format!(
                "{} ({}: {})",
                if fits { "fits" } else { "DEVIATES" },
                solution.expectation.describe(),
                statuses.join(" ")
            )
        }
    }
}

/// The comparison's view of a judged solution.
pub fn judged_subtasks(judged: &JudgedSolution) -> Vec<JudgedSubtask> {
    judged
        .subtasks
        .iter()
        .map(|s| JudgedSubtask {
            name: s.subtask.clone(),
            status: s.status,
        })
        .collect()
}

fn append(sink: &Mutex<std::fs::File>, row: &JudgedSolution) -> Result<()> {
    let mut line = serde_json::to_string(row)?;
    line.push('\n');
    let mut file = sink
        .lock()
        .map_err(|_| anyhow::anyhow!("results file lock poisoned"))?;
    file.write_all(line.as_bytes())
        .and_then(|_| file.flush())
        .context("cannot append to judged.jsonl")
}

/// What a row of `judged.jsonl` answers for: a solution of a task under one compile profile and
/// one time scale (a verdict judged under other settings is judged again).
type Key = (String, String, String, String);

fn key_of(task: &str, solution: &str, profile: &str, time_scale: f64) -> Key {
    (
        task.to_string(),
        solution.to_string(),
        profile.to_string(),
        time_scale.to_string(),
    )
}

/// The rows of an earlier run, by [`Key`]; the last line wins. A
/// line that does not parse (a run killed mid-write) is skipped with a warning naming it.
fn read_judged(path: &Path) -> Result<HashMap<Key, JudgedSolution>> {
    let mut rows = HashMap::new();
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(rows),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<JudgedSolution>(&line) {
            Ok(row) => {
                let key = key_of(
                    &row.task,
                    &row.solution,
                    &row.compile_profile,
                    row.time_scale,
                );
                rows.insert(key, row);
            }
            Err(e) => eprintln!(
                "warning: {} line {}: skipped ({e}); that solution is judged again",
                path.display(),
                n + 1
            ),
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::Verdict;

    fn row(solution: &str, status: Verdict) -> JudgedSolution {
        JudgedSolution {
            task: "t".into(),
            solution: solution.into(),
            source_hash: "h".into(),
            compile_profile: "ioi".into(),
            time_scale: 1.0,
            time_limit: 1.0,
            subtasks: vec![SubtaskOutcome {
                subtask: "01-a".into(),
                status,
                score: 0.0,
                max_time: Some(0.5),
                deciding_test: None,
            }],
        }
    }

    #[test]
    fn the_resume_file_keeps_the_last_row_and_skips_a_torn_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(JUDGED_FILE);
        let sink = Mutex::new(std::fs::File::create(&path).unwrap());
        append(&sink, &row("a.cpp", Verdict::WrongAnswer)).unwrap();
        append(&sink, &row("a.cpp", Verdict::Accepted)).unwrap();
        append(&sink, &row("b.cpp", Verdict::TimeLimit)).unwrap();
        sink.lock()
            .unwrap()
            .write_all(b"{\"task\": \"t\", \"solu")
            .unwrap();
        let rows = read_judged(&path).unwrap();
        assert_eq!(rows.len(), 2);
        let a = &rows[&key_of("t", "a.cpp", "ioi", 1.0)];
        assert_eq!(a.subtasks[0].status, Verdict::Accepted);
    }

    /// A row judged under another time scale or profile is not the answer for this run; a row
    /// written without a time scale was judged unscaled.
    #[test]
    fn a_row_answers_only_for_its_profile_and_time_scale() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(JUDGED_FILE);
        let sink = Mutex::new(std::fs::File::create(&path).unwrap());
        let mut scaled = row("a.cpp", Verdict::Accepted);
        scaled.time_scale = 1.5;
        append(&sink, &scaled).unwrap();
        let mut line = serde_json::to_value(row("b.cpp", Verdict::TimeLimit)).unwrap();
        line.as_object_mut().unwrap().remove("time_scale");
        writeln!(sink.lock().unwrap(), "{line}").unwrap();
        let rows = read_judged(&path).unwrap();
        assert!(rows.contains_key(&key_of("t", "a.cpp", "ioi", 1.5)));
        assert!(!rows.contains_key(&key_of("t", "a.cpp", "ioi", 1.0)));
        assert!(!rows.contains_key(&key_of("t", "a.cpp", "reference", 1.5)));
        assert!(rows.contains_key(&key_of("t", "b.cpp", "ioi", 1.0)));
    }
}
