//! `ioi-run bench judge`: one submission on a generated problem of ~100 tests whose solution
//! runs ~10 ms per test, judged by ioi-run (compile once, tests on every core) and the way a
//! Piston worker does it (compile and run for every test, one test at a time per worker).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::judge::schedule::{self, Preloaded, Progress, ScheduleOptions, SubmissionJob};
use crate::judge::scripts::{self, ScriptBuild, Scripts};
use crate::judge::{Judge, JudgeOptions};
use crate::output::outln;

/// A solution that burns about `work` iterations per test (≈10 ms at -O2 for 10^7).
const SOLUTION: &str = r#"#include <cstdio>
int main() { long long n; if (scanf("%lld", &n) != 1) return 1;
  volatile unsigned long long x = 0; for (long long i = 0; i < n; i++) x += i ^ (x >> 3);
  printf("%lld\n", n * 2); return 0; }
"#;

/// Writes a CMS task folder with `tests` tests of `work` iterations each.
pub fn write_problem(dir: &Path, tests: usize, work: u64) -> Result<()> {
    let w = |rel: &str, content: &str| -> Result<()> {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().context("path has a parent")?)?;
        std::fs::write(&path, content).with_context(|| format!("cannot write {}", path.display()))
    };
    w(
        "problem.json",
        r#"{"name": "Bench", "time_limit": 1.0, "memory_limit": 268435456, "task_type": "Batch", "task_type_params": "{}", "score_precision": 2}"#,
    )?;
    w(
        "graders/bench.h",
        "// no grader: the solution has its own main\n",
    )?;
    let names: Vec<String> = (0..tests).map(|i| format!("{i:03}")).collect();
    for name in &names {
        w(&format!("tests/{name}.in"), &format!("{work}\n"))?;
        w(&format!("tests/{name}.out"), &format!("{}\n", work * 2))?;
    }
    let list = names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    w(
        "subtasks/01-all.json",
        &format!("{{\"score\": 100, \"testcases\": [{list}]}}"),
    )?;
    Ok(())
}

/// Judges the benchmark submission once; returns the wall time and the solution's CPU time.
fn judge_once(judge: &Judge, task: &Path, tests: usize, jobs: usize) -> Result<(f64, f64)> {
    let start = Instant::now();
    let (problem, test_set) = crate::problem::cms::load_cms(task)?;
    let loaded = judge.prepare(problem, test_set)?;
    let source = Preloaded::new(loaded);
    let progress = Progress::default();
    let cpu_total = std::sync::Mutex::new(0.0f64);
    let accepted = AtomicUsize::new(0);
    let options = ScheduleOptions {
        jobs,
        batch_size: 1,
        selection: Default::default(),
        timeout: None,
    };
    let job = SubmissionJob {
        problem: "bench".into(),
        code: Some(SOLUTION.as_bytes().to_vec()),
        language: crate::judge::Language::Cpp,
    };
    schedule::run(judge, &source, &[job], &options, &progress, &|f| {
        if let Ok(judged) = f.outcome {
            for t in judged.results.iter().flat_map(|s| s.test_results.iter()) {
                if let Ok(mut cpu) = cpu_total.lock() {
                    *cpu += t.time.unwrap_or(0.0);
                }
                if t.score == 1.0 {
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    })?;
    if accepted.load(Ordering::Relaxed) != tests {
        bail!("the benchmark solution was not accepted on every test");
    }
    Ok((
        start.elapsed().as_secs_f64(),
        cpu_total.into_inner().unwrap_or(0.0),
    ))
}

pub fn run(tests: usize, work: u64, jobs: usize, outside_load: usize) -> Result<i32> {
    let root = tempfile::tempdir()?;
    let task = root.path().join("task");
    write_problem(&task, tests, work)?;
    let cache = root.path().join("cache");

    // ioi-run: compile once, tests across `jobs` workers; first with a cold compile cache,
    // then warm (the tests alone).
    let judge = Judge::new(JudgeOptions {
        cache_dir: cache.clone(),
        ..JudgeOptions::default()
    })?;
    let (ours, cpu) = judge_once(&judge, &task, tests, jobs)?;
    let (warm, _) = judge_once(&judge, &task, tests, jobs)?;
    // The same again beside busy loops (each a session of its own, as independent work is):
    // every test must still be accepted (judge_once fails otherwise).
    let loaded = if outside_load > 0 {
        let _load = super::load::BusyLoops::start(outside_load)?;
        Some(judge_once(&judge, &task, tests, jobs)?)
    } else {
        None
    };

    // Piston-style: a fresh box per test, compile + run in it, one test at a time per worker.
    let scripts_judge = Judge::new(JudgeOptions {
        cache_dir: cache,
        ..JudgeOptions::default()
    })?;
    let (problem, test_set) = crate::problem::cms::load_cms(&task)?;
    let piston_tests = tests.min(20);
    let start = Instant::now();
    for name in test_set.cases.keys().take(piston_tests) {
        let ScriptBuild::Box(compiled) = scripts::compile(
            scripts_judge.sandbox(),
            &Scripts::default(),
            &problem,
            SOLUTION.as_bytes(),
        )?
        else {
            bail!("the benchmark solution did not compile");
        };
        let verdict = scripts::run_test(
            scripts_judge.sandbox(),
            &problem,
            &compiled,
            &test_set.cases[name],
            None,
        )?;
        if verdict.score != 1.0 {
            bail!(
                "the Piston-style run did not accept test {name}: {}",
                verdict.feedback
            );
        }
    }
    let per_test_piston = start.elapsed().as_secs_f64() / piston_tests as f64;
    let piston_one_worker = per_test_piston * tests as f64;
    let piston_all_workers = piston_one_worker / jobs as f64;

    outln!(
        "problem: {tests} tests, solution CPU {:.1} ms per test on average",
        cpu / tests as f64 * 1e3
    );
    outln!("ioi-run (compile once, {jobs} workers)        {ours:>8.2} s   ({:.1} tests/s; {warm:.2} s with the compile cached)", tests as f64 / ours);
    outln!(
        "Piston-style (compile+run per test), 1 worker    {piston_one_worker:>8.2} s   (measured on {piston_tests} tests: {:.0} ms per test)",
        per_test_piston * 1e3
    );
    outln!("Piston-style, {jobs} workers                         {piston_all_workers:>8.2} s");
    outln!(
        "speedup vs 1 Piston worker: {:.1}x; vs {jobs} Piston workers: {:.1}x",
        piston_one_worker / ours,
        piston_all_workers / ours
    );
    outln!(
        "overhead per test (sandbox, box, output check; cached run: wall × workers − solution CPU): {:.1} ms",
        ((warm * jobs as f64) - cpu) / tests as f64 * 1e3
    );
    if let Some((wall, loaded_cpu)) = loaded {
        outln!(
            "beside {outside_load} busy loops: every test accepted again (identical verdicts), \
             {wall:.2} s, solution CPU {:.1} ms per test (quiet: {:.1} ms)",
            loaded_cpu / tests as f64 * 1e3,
            cpu / tests as f64 * 1e3
        );
    }
    Ok(0)
}
