//! `ioi-run bench roundtrips`: what the CPU placement of a Communication test's processes
//! (docs/judging.md#cpu-placement) does to round-trip-heavy tasks. Each task's `solutions/ac.cpp`
//! is judged with its processes on one CPU and wherever the host puts them, alone (`--jobs 1`)
//! and at full parallelism beside busy loops; the table gives each test's verdict and CPU
//! time (the largest user process's, what the limit is checked against).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::judge::placement::Placement;
use crate::judge::schedule::{self, Preloaded, Progress, ScheduleOptions, SubmissionJob};
use crate::judge::{Judge, JudgeOptions};
use crate::output::outln;
use crate::score::TestResult;

/// What to measure.
pub struct RoundTripBench<'a> {
    /// CMS task folders, each with `solutions/ac.cpp`.
    pub tasks: &'a [PathBuf],
    /// Workers under load.
    pub jobs: usize,
    /// Busy loops beside the loaded judgings.
    pub loops: usize,
    /// Judgings of each kind; the table shows each test's largest CPU time over them.
    pub repeats: usize,
}

pub fn run(bench: &RoundTripBench) -> Result<i32> {
    let cache = tempfile::tempdir().context("cannot create a temporary folder")?;
    // The mechanism, measured directly: a round trip between two threads placed on one CPU,
    // then on two.
    let costs = ioi_sandbox::host::costs::measure()?;
    let one = costs.round_trip_one_cpu;
    outln!(
        "pipe round trip: {} CPU ({} elapsed) on one CPU",
        super::speed::micros(one.cpu),
        super::speed::micros(one.wall)
    );
    if let Some(two) = costs.round_trip_two_cpus {
        outln!(
            "pipe round trip: {} CPU ({} elapsed) across two CPUs",
            super::speed::micros(two.cpu),
            super::speed::micros(two.wall)
        );
    }
    outln!("task      placement   load                 total   wall s   CPU s per test (verdict)");
    for task in bench.tasks {
        for placement in [Placement::SharedCpu, Placement::Host] {
            let judge = Judge::new(JudgeOptions {
                cache_dir: cache.path().to_path_buf(),
                placement,
                ..JudgeOptions::default()
            })?;
            for loaded in [false, true] {
                let _load = match loaded {
                    true => Some(super::load::BusyLoops::start(bench.loops)?),
                    false => None,
                };
                let jobs = if loaded { bench.jobs } else { 1 };
                let mut worst: Vec<TestResult> = Vec::new();
                let (mut total, mut wall) = (f64::INFINITY, 0.0f64);
                for _ in 0..bench.repeats.max(1) {
                    let start = Instant::now();
                    let (score, tests) = judge_once(&judge, task, jobs)?;
                    wall = wall.max(start.elapsed().as_secs_f64());
                    total = total.min(score);
                    merge_worst(&mut worst, tests);
                }
                let load = match loaded {
                    true => format!("-j {jobs}, {} loops", bench.loops),
                    false => "alone, -j 1".to_string(),
                };
                let name = task.file_name().map_or_else(
                    || task.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                let tests: Vec<String> = worst
                    .iter()
                    .map(|t| {
                        format!(
                            "{} {:.3} ({})",
                            t.test_name,
                            t.time.unwrap_or(0.0),
                            t.status.as_str()
                        )
                    })
                    .collect();
                outln!(
                    "{name:<9} {:<11} {load:<20} {total:>5.0} {wall:>8.2}   {}",
                    placement.as_str(),
                    tests.join(", ")
                );
            }
        }
    }
    Ok(0)
}

/// Keeps, per test, the result with the largest CPU time.
fn merge_worst(worst: &mut Vec<TestResult>, tests: Vec<TestResult>) {
    for t in tests {
        match worst.iter_mut().find(|w| w.test_name == t.test_name) {
            Some(w) if w.time.unwrap_or(0.0) < t.time.unwrap_or(0.0) => *w = t,
            Some(_) => {}
            None => worst.push(t),
        }
    }
}

/// Judges the task's `solutions/ac.cpp` once: its total and its tests (each once).
fn judge_once(judge: &Judge, task: &Path, jobs: usize) -> Result<(f64, Vec<TestResult>)> {
    let (problem, test_set) = crate::problem::cms::load_cms(task)?;
    let loaded = judge.prepare(problem, test_set)?;
    let source = Preloaded::new(loaded);
    let solution = task.join("solutions/ac.cpp");
    let code =
        std::fs::read(&solution).with_context(|| format!("cannot read {}", solution.display()))?;
    let job = SubmissionJob {
        problem: "task".into(),
        code: Some(code),
        language: crate::judge::Language::Cpp,
    };
    let options = ScheduleOptions {
        jobs,
        batch_size: 1,
        selection: Default::default(),
        timeout: None,
    };
    let outcome = std::sync::Mutex::new(None);
    schedule::run(
        judge,
        &source,
        &[job],
        &options,
        &Progress::default(),
        &|f| {
            if let Ok(mut slot) = outcome.lock() {
                *slot = Some(f.outcome);
            }
        },
    )?;
    let judged = outcome
        .into_inner()
        .ok()
        .flatten()
        .context("the submission was not judged")??;
    let total = judged
        .results
        .iter()
        .map(|s| s.weighted_score())
        .sum::<f64>();
    let mut tests: Vec<TestResult> = Vec::new();
    for t in judged.results.into_iter().flat_map(|s| s.test_results) {
        if !tests.iter().any(|k| k.test_name == t.test_name) {
            tests.push(t);
        }
    }
    Ok((total, tests))
}
