//! `ioi-run bench scheduler`: the scheduler alone, with a scripted runner whose tests take a
//! fixed time (1 ms by default) and no process, at several numbers of workers. It shows the
//! share of the workers' time spent inside runs, and separates what the rest is made of:
//! - the scheduler's own code: how long one visit to its lock holds it (the median: the
//!   decision's cost; a mean far above it is a holder preempted while holding the lock, i.e.
//!   waiting for a CPU), against the decisions per second the workers ask for;
//! - the kernel: the process's CPU outside runs per test, user (our code and the fake) and
//!   system (sleeps, wake-ups, futexes, context switches).
//!
//! With sleeping tests, 256 threads each sleeping 1 ms on 2 cores are bounded by the kernel's
//! wake-ups; `--spin` makes each test burn 1 ms of its thread's CPU instead, and the figure
//! becomes the share of the process's CPU spent inside runs.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::judge::fake::{self, FakeProblems, FakeRun, FakeRunner};
use crate::judge::schedule::{self, Progress, ScheduleOptions, SubmissionJob};
use crate::output::outln;
use crate::problem::TaskType;

/// Options of `bench scheduler`.
#[derive(Debug, Clone)]
pub struct BenchSchedulerOptions {
    pub workers: Vec<usize>,
    /// Submissions per worker.
    pub per_worker: usize,
    /// Duration of one fake test.
    pub test_time: Duration,
    /// Tests burn their duration as CPU instead of sleeping.
    pub spin: bool,
    /// One problem in four is a Communication task: each of its tests occupies 2 slots.
    pub communication: bool,
}

/// User and system CPU time of this process.
fn process_cpu() -> (Duration, Duration) {
    use nix::sys::resource::{getrusage, UsageWho};
    let t =
        |tv: nix::sys::time::TimeVal| Duration::new(tv.tv_sec() as u64, tv.tv_usec() as u32 * 1000);
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| (t(u.user_time()), t(u.system_time())))
        .unwrap_or_default()
}

/// Four problems of 3 subtasks and 24 distinct tests, some shared between subtasks; with
/// `communication`, the first is a Communication task of one user process (its tests occupy
/// 2 slots: the manager and the user process).
fn problems(communication: bool) -> HashMap<String, crate::problem::Problem> {
    (0..4)
        .map(|p| {
            let t: Vec<String> = (0..24).map(|i| format!("t{i:02}")).collect();
            let id = format!("p{p}");
            let task = match (communication, p) {
                (true, 0) => TaskType::Communication(crate::problem::Communication {
                    num_processes: 1,
                    user_io: crate::problem::UserIo::StdIo,
                    manager_args: Vec::new(),
                }),
                _ => TaskType::Batch,
            };
            let problem = fake::problem(
                &id,
                task,
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
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!(
        "scheduler with a scripted runner: fake tests {} {:.1} ms, no process; {} submissions per worker, 4 problems of 24 tests in 3 subtasks{}, 1 in 10 tests wrong; {cores} cores, load average {}",
        if options.spin { "spinning on the CPU for" } else { "sleeping" },
        options.test_time.as_secs_f64() * 1e3,
        options.per_worker,
        if options.communication { " (one a Communication task: its tests occupy 2 slots)" } else { "" },
        load_average(),
    );
    for &workers in &options.workers {
        let (round, progress) = measure(options, workers)?;
        print_round(options, workers, cores, &round, &progress)?;
    }
    Ok(())
}

/// What one round (one number of workers) measured.
struct Round {
    submissions: usize,
    runs: usize,
    wall: f64,
    /// The process's CPU seconds in user and system mode.
    user: f64,
    system: f64,
    /// Seconds spent inside fake runs.
    inside: f64,
    /// While work remained: the wall seconds, the seconds inside runs and the slot seconds.
    while_work_remains: Option<(f64, f64, f64)>,
}

/// Judges `workers` × `per_worker` submissions with the scripted runner on `workers` workers.
fn measure(options: &BenchSchedulerOptions, workers: usize) -> Result<(Round, Progress)> {
    let test_time = options.test_time;
    let runner = FakeRunner::new(move |code, test| FakeRun {
        score: if fake::hash(&format!("{code}/{test}"), 1).is_multiple_of(10) {
            0.0
        } else {
            1.0
        },
        duration: test_time,
    });
    let runner = if options.spin {
        runner.spinning()
    } else {
        runner
    };
    let jobs: Vec<SubmissionJob> = (0..workers * options.per_worker)
        .map(|i| SubmissionJob {
            problem: format!("p{}", i % 4),
            code: Some(format!("submission {i}").into_bytes()),
            language: crate::judge::Language::Cpp,
        })
        .collect();
    let source = FakeProblems(problems(options.communication));
    let progress = Progress::default();
    let schedule_options = ScheduleOptions {
        jobs: workers,
        batch_size: 1,
        selection: Default::default(),
        timeout: None,
    };
    let (user0, system0) = process_cpu();
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
                        runner.slot_time_inside_runs().as_secs_f64(),
                    ));
                }
            }
        },
    )?;
    let wall = start.elapsed().as_secs_f64();
    let (user1, system1) = process_cpu();
    let round = Round {
        submissions: jobs.len(),
        runs: runner.runs(),
        wall,
        user: (user1 - user0).as_secs_f64(),
        system: (system1 - system0).as_secs_f64(),
        inside: runner.time_inside_runs().as_secs_f64(),
        while_work_remains: snapshot.into_inner().ok().flatten(),
    };
    Ok((round, progress))
}

/// Prints a round's figures: throughput, where the workers' time went, the scheduler's lock.
fn print_round(
    options: &BenchSchedulerOptions,
    workers: usize,
    cores: usize,
    round: &Round,
    progress: &Progress,
) -> Result<()> {
    let Round {
        submissions,
        runs,
        wall,
        user,
        system,
        inside,
        while_work_remains: snapshot,
    } = *round;
    let test_time = options.test_time;
    let per_test = |seconds: f64| seconds / runs.max(1) as f64 * 1e6;
    outln!(
            "  {workers:>4} workers: {submissions} submissions, {runs} tests ({} discarded) in {wall:.2} s: {:.0} tests/s; cores busy {:.0}%",
            progress.tests_discarded.load(Ordering::Relaxed),
            runs as f64 / wall,
            (user + system) / (wall * cores as f64) * 100.0,
        );
    if options.spin {
        outln!(
                "         CPU inside runs {:.1}% of the process's CPU; outside runs per test: {:.1} µs of CPU",
                inside / (user + system) * 100.0,
                per_test(user + system - inside),
            );
    } else {
        let worker_time = wall * workers as f64;
        let remains = match snapshot {
            Some((w, i, _)) => format!("{:.1}%", i / (w * workers as f64) * 100.0),
            None => "n/a".into(),
        };
        outln!(
                "         worker time inside runs {remains} while work remains, {:.1}% overall (tail included); CPU per test (all outside runs): user {:.1} µs, system {:.1} µs",
                inside / worker_time * 100.0,
                per_test(user),
                per_test(system),
            );
        if let (true, Some((w, _, slot_time))) = (options.communication, snapshot) {
            outln!(
                    "         slots occupied by runs {:.1}% while work remains (a 2-slot test counted twice)",
                    slot_time / (w * workers as f64) * 100.0,
                );
        }
    }
    let holds = &progress.lock_holds;
    let visits = holds.count();
    let held = progress.lock_held_nanos.load(Ordering::Relaxed) as f64 * 1e-9;
    let median = holds.quantile(0.5).as_secs_f64();
    outln!(
            "         lock: {visits} visits ({:.2} per test), held median {:.2} µs, p99 {:.1} µs, mean {:.2} µs ({:.1}% of the run); the median allows {:.0} decisions/s, the workers ask {:.0}/s",
            visits as f64 / runs.max(1) as f64,
            median * 1e6,
            holds.quantile(0.99).as_secs_f64() * 1e6,
            held / visits.max(1) as f64 * 1e6,
            held / wall * 100.0,
            1.0 / median.max(1e-9),
            // Spinning tests cannot finish faster than the cores run them.
            match options.spin {
                true => workers.min(cores),
                false => workers,
            } as f64
                / test_time.as_secs_f64().max(1e-6),
        );
    Ok(())
}

/// The 1-minute load average, to say how busy the machine was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}
