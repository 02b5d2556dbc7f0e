//! `ioi-run bench scheduler`: the scheduler alone, with a scripted runner whose tests take a
//! fixed time (1 ms by default) and no process, at several numbers of workers. It shows the
//! share of the workers' time spent inside runs (the rest is scheduling: the lock, the plan
//! replays, waking up), and the cost of one decision as the number of active submissions
//! (2 × workers) grows.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::output::outln;
use crate::judge::fake::{self, FakeProblems, FakeRun, FakeRunner};
use crate::judge::schedule::{self, Job, Progress, ScheduleOptions};
use crate::problem::TaskType;

/// Options of `bench scheduler`.
#[derive(Debug, Clone)]
pub struct BenchSchedulerOptions {
    pub workers: Vec<usize>,
    /// Submissions per worker.
    pub per_worker: usize,
    /// Duration of one fake test.
    pub test_time: Duration,
}

/// Four problems of 3 subtasks and 24 distinct tests, some shared between subtasks.
fn problems() -> HashMap<String, crate::problem::Problem> {
    (0..4)
        .map(|p| {
            let t: Vec<String> = (0..24).map(|i| format!("t{i:02}")).collect();
            let id = format!("p{p}");
            let problem = fake::problem(
                &id,
                TaskType::Batch,
                &[
                    ("00-samples", t[..2].to_vec()),
                    ("01-small", t[..10].to_vec()),
                    ("02-full", t.clone()),
                ],
            );
            (id, problem)
        })
        .collect()
}

pub fn run(options: &BenchSchedulerOptions) -> Result<()> {
    outln!(
        "scheduler with a scripted runner: fake tests of {:.1} ms, no process; {} submissions per worker, 4 problems of 24 tests in 3 subtasks, 1 in 10 tests wrong",
        options.test_time.as_secs_f64() * 1e3,
        options.per_worker
    );
    for &workers in &options.workers {
        let test_time = options.test_time;
        let runner = FakeRunner::new(move |code, test| FakeRun {
            score: if fake::hash(&format!("{code}/{test}"), 1).is_multiple_of(10) {
                0.0
            } else {
                1.0
            },
            duration: test_time,
        });
        let jobs: Vec<Job> = (0..workers * options.per_worker)
            .map(|i| Job {
                problem: format!("p{}", i % 4),
                code: Some(format!("submission {i}").into_bytes()),
            })
            .collect();
        let source = FakeProblems(problems());
        let progress = Progress::default();
        let schedule_options = ScheduleOptions {
            jobs: workers,
            batch_size: 1,
            subtasks: None,
            timeout: None,
        };
        let start = Instant::now();
        // "While work remains": until the last submissions are admitted, when every worker
        // could still be given work; after it, the tail of the last submissions.
        let busy_until = jobs.len().saturating_sub(2 * workers);
        let snapshot = std::sync::Mutex::new(None);
        let done = std::sync::atomic::AtomicUsize::new(0);
        schedule::run(
            &runner,
            &source,
            &jobs,
            &schedule_options,
            &progress,
            &|_| {
                if done.fetch_add(1, Ordering::SeqCst) + 1 == busy_until {
                    if let Ok(mut s) = snapshot.lock() {
                        *s = Some((
                            start.elapsed().as_secs_f64(),
                            runner.time_inside_runs().as_secs_f64(),
                        ));
                    }
                }
            },
        )?;
        let wall = start.elapsed().as_secs_f64();
        let inside = runner.time_inside_runs().as_secs_f64();
        let runs = runner.runs();
        let worker_time = wall * workers as f64;
        let remains = match snapshot.into_inner().ok().flatten() {
            Some((w, i)) => format!("{:.1}%", i / (w * workers as f64) * 100.0),
            None => "n/a".into(),
        };
        outln!(
            "  {workers:>4} workers: {} submissions, {runs} tests ({} discarded) in {wall:.2} s; worker time inside runs {remains} while work remains, {:.1}% overall (tail included); outside runs {:.0} µs per test",
            jobs.len(),
            progress.tests_discarded.load(Ordering::Relaxed),
            inside / worker_time * 100.0,
            (worker_time - inside) / runs.max(1) as f64 * 1e6,
        );
        let held = progress.lock_held_nanos.load(Ordering::Relaxed) as f64 * 1e-9;
        let decisions = runs + runner.compiles();
        outln!(
            "         lock held {:.2} µs per work item ({:.1}% of the run): room for {:.0} items/s",
            held / decisions.max(1) as f64 * 1e6,
            held / wall * 100.0,
            decisions as f64 / held.max(1e-9),
        );
    }
    Ok(())
}
