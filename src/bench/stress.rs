//! `ioi-run bench stress`: a verdict must depend on the solution alone, never on the load of
//! the host. Every solution of every task of a fixture folder is judged once on the machine as
//! it is, then `rounds` times beside busy loops on three times the cores (each a session of its
//! own, as independent work is), at full parallelism; every test whose verdict, score or
//! feedback differs from the first judging is a change (the goal: none). Each judging is the
//! `ioi-run judge --json` command, as a user runs it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::output::outln;

/// What the stress benchmark judges, and how often.
pub struct StressOptions {
    /// A folder of CMS task folders, each with a `solutions/` folder of `.cpp` files.
    pub problems: PathBuf,
    /// Loaded judgings of the whole set.
    pub rounds: usize,
    /// Busy loops per core beside the loaded judgings.
    pub loops_per_core: usize,
    /// Workers of each judging.
    pub jobs: usize,
}

/// One judged test: what must not change, and its CPU and wall times.
struct TestResult {
    verdict: Value,
    cpu: f64,
    wall: f64,
}

/// Every (task, solution) of the fixture folder, sorted.
fn solutions(problems: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(problems)
        .with_context(|| format!("cannot read the fixture folder {}", problems.display()))?;
    for entry in entries {
        let task = entry?.path();
        if !task.join("problem.json").is_file() {
            continue;
        }
        let Ok(files) = std::fs::read_dir(task.join("solutions")) else {
            continue;
        };
        for file in files {
            let file = file?.path();
            if file.extension().is_some_and(|e| e == "cpp") {
                found.push((task.clone(), file));
            }
        }
    }
    found.sort();
    if found.is_empty() {
        bail!(
            "{}: no task folder with a problem.json and solutions/*.cpp",
            problems.display()
        );
    }
    Ok(found)
}

/// Judges one solution with the `judge` command; its tests by `subtask/test`.
fn judge(task: &Path, solution: &Path, jobs: usize) -> Result<BTreeMap<String, TestResult>> {
    let exe = std::env::current_exe().context("cannot find the ioi-run executable")?;
    let out = std::process::Command::new(exe)
        .args(["judge", "--json", "--jobs", &jobs.to_string()])
        .arg(task)
        .arg(solution)
        .output()
        .context("cannot run ioi-run judge")?;
    if !out.status.success() {
        bail!(
            "ioi-run judge {} {} failed: {}",
            task.display(),
            solution.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report: Value = serde_json::from_slice(&out.stdout).context("judge printed no JSON")?;
    let mut tests = BTreeMap::new();
    for subtask in report["subtasks"].as_array().into_iter().flatten() {
        let name = subtask["subtask"].as_str().unwrap_or("?");
        for test in subtask["tests"].as_array().into_iter().flatten() {
            let mut verdict = test.clone();
            let (cpu, wall) = (test["time"].as_f64(), test["wall_time"].as_f64());
            if let Some(fields) = verdict.as_object_mut() {
                for load_dependent in ["time", "wall_time", "memory"] {
                    fields.remove(load_dependent);
                }
            }
            let key = format!("{name}/{}", test["test_name"].as_str().unwrap_or("?"));
            tests.insert(
                key,
                TestResult {
                    verdict,
                    cpu: cpu.unwrap_or(0.0),
                    wall: wall.unwrap_or(0.0),
                },
            );
        }
    }
    Ok(tests)
}

fn label(task: &Path, solution: &Path) -> String {
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into())
    };
    format!("{}/{}", name(task), name(solution))
}

/// Runs the benchmark; exits 1 when a verdict changed.
pub fn run(options: &StressOptions) -> Result<i32> {
    let set = solutions(&options.problems)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loops = options.loops_per_core * cores;
    outln!(
        "bench stress: {} solutions of {}, --jobs {}, {} rounds beside {loops} busy loops ({cores} cores)",
        set.len(),
        options.problems.display(),
        options.jobs,
        options.rounds
    );
    let start = Instant::now();
    let mut reference = Vec::with_capacity(set.len());
    for (task, solution) in &set {
        reference.push(judge(task, solution, options.jobs)?);
    }
    let tests: usize = reference.iter().map(BTreeMap::len).sum();
    outln!(
        "reference: {tests} tests judged in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let mut changes = 0usize;
    for round in 1..=options.rounds {
        let _load = super::load::BusyLoops::start(loops)?;
        let start = Instant::now();
        let (mut changed, mut stretch) = (0usize, 0.0f64);
        for ((task, solution), before) in set.iter().zip(&reference) {
            let after = judge(task, solution, options.jobs)?;
            for (key, was) in before {
                let now = after.get(key);
                if let Some(now) = now {
                    if now.cpu > 0.01 {
                        stretch = stretch.max(now.wall / now.cpu);
                    }
                }
                if now.map(|n| &n.verdict) != Some(&was.verdict) {
                    changed += 1;
                    let show = |r: Option<&TestResult>| {
                        r.map_or_else(
                            || "missing".to_string(),
                            |r| {
                                format!(
                                    "{} ({:.2} s CPU, {:.2} s wall)",
                                    r.verdict["status"].as_str().unwrap_or("?"),
                                    r.cpu,
                                    r.wall
                                )
                            },
                        )
                    };
                    outln!(
                        "  changed: {} {key}: {} -> {}",
                        label(task, solution),
                        show(Some(was)),
                        show(now)
                    );
                }
            }
        }
        outln!(
            "round {round}: {changed} of {tests} verdicts changed in {:.1} s; largest wall/CPU of a test {stretch:.1}",
            start.elapsed().as_secs_f64()
        );
        changes += changed;
    }
    outln!(
        "verdict changes under load: {changes} of {} (goal: 0)",
        tests * options.rounds
    );
    Ok(i32::from(changes > 0))
}
