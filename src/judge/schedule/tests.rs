//! The scheduler with a scripted runner: verdicts identical at every parallelism and completion
//! order, time-outs, compilation failures, discarded speculation, slots of wide tests and the
//! slots they lend to untimed work.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::*;
use crate::judge::fake::{self, FakeProblems, FakeRun, FakeRunner};
use crate::judge::plan::{Replay, Selection, SubmissionPlan};
use crate::judge::CompileError;
use crate::problem::{Communication, Problem, TaskType, UserIo};

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:02}")).collect()
}

/// Three problems with shared tests between subtasks.
fn problems() -> HashMap<String, Problem> {
    let a = names("a", 6);
    let b = names("b", 8);
    let c = names("c", 5);
    let mut map = HashMap::new();
    map.insert(
        "p1".to_string(),
        fake::problem(
            "p1",
            TaskType::Batch,
            &[
                ("00-samples", vec![a[0].clone(), a[1].clone()]),
                ("01-small", a.clone()),
                ("02-big", [&a[..3], &b[..]].concat()),
            ],
        ),
    );
    map.insert(
        "p2".to_string(),
        fake::problem(
            "p2",
            TaskType::Batch,
            &[("01", c.clone()), ("02", [&c[2..], &b[..4]].concat())],
        ),
    );
    map.insert(
        "p3".to_string(),
        fake::problem(
            "p3",
            TaskType::Batch,
            &[("01", b.clone()), ("02", a.clone())],
        ),
    );
    map
}

/// The true score of a test of a submission: mostly right, sometimes partial or wrong.
fn truth(code: &str, test: &str) -> f64 {
    match fake::hash(&format!("{code}/{test}"), 7) % 20 {
        0 | 1 => 0.0,
        2 => 0.5,
        _ => 1.0,
    }
}

fn jobs() -> Vec<SubmissionJob> {
    (0..45)
        .map(|i| SubmissionJob {
            problem: format!("p{}", i % 3 + 1),
            code: match i % 9 {
                4 => Some(format!("CE {i}").into_bytes()),
                7 => None,
                _ => Some(format!("solution {i}").into_bytes()),
            },
            language: crate::judge::Language::Cpp,
        })
        .collect()
}

/// What the reference pipeline gives: the plan replayed sequentially over the true scores.
fn reference(problem: &Problem, code: Option<&str>, batch: usize) -> Vec<SubtaskResult> {
    let plan = SubmissionPlan::new(problem, &Selection::default(), batch);
    let Some(code) = code else {
        return plan.uniform(TestResult::skipped);
    };
    if code.starts_with("CE") {
        let feedback = CompileError::exited(1, format!("scripted error in {code}")).feedback();
        return plan.uniform(|t| TestResult {
            score: 0.0,
            status: Verdict::CompilationError,
            feedback: Some(feedback.clone()),
            ..TestResult::skipped(t)
        });
    }
    let mut known = HashMap::new();
    loop {
        match plan.replay(&known) {
            Replay::Done(results) => return results,
            Replay::Need(batch) => {
                for t in batch {
                    let score = truth(code, &t);
                    let verdict = TestVerdict {
                        score,
                        feedback: if score == 0.0 {
                            "Output isn't correct".into()
                        } else {
                            "Output is correct".into()
                        },
                        time: 0.0,
                        wall_time: 0.0,
                        memory: (code.len() + t.len()) as u64,
                        status: None,
                        runs: Vec::new(),
                    };
                    known.insert(t.clone(), verdict.into_result(&t));
                }
            }
        }
    }
}

/// Runs the scheduler, returning every job's result in job order.
fn schedule(
    runner: &FakeRunner,
    problems: HashMap<String, Problem>,
    jobs: &[SubmissionJob],
    options: &ScheduleOptions,
    progress: &Progress,
) -> Vec<Result<Vec<SubtaskResult>>> {
    let source = FakeProblems(problems);
    let results: Mutex<Vec<Option<Result<Vec<SubtaskResult>>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    run(runner, &source, jobs, options, progress, &|f: Finished| {
        let mut results = results.lock().unwrap();
        assert!(results[f.job].is_none(), "job {} finished twice", f.job);
        results[f.job] = Some(f.outcome.map(|j| j.results));
    })
    .unwrap();
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|| panic!("job {i} never finished")))
        .collect()
}

/// A submission of `code` to `problem`.
fn job(problem: &str, code: &str) -> SubmissionJob {
    SubmissionJob {
        problem: problem.into(),
        code: Some(code.into()),
        language: crate::judge::Language::Cpp,
    }
}

fn options(jobs: usize, batch_size: usize) -> ScheduleOptions {
    ScheduleOptions {
        jobs,
        batch_size,
        selection: Default::default(),
        timeout: None,
    }
}

/// Zeroes the durations, which differ with the completion order by design of the fake.
fn without_times(mut results: Vec<SubtaskResult>) -> Vec<SubtaskResult> {
    for t in results.iter_mut().flat_map(|s| s.test_results.iter_mut()) {
        if t.time.is_some() {
            t.time = Some(0.0);
            t.wall_time = Some(0.0);
        }
    }
    results
}

#[test]
fn verdicts_are_identical_at_every_parallelism_and_completion_order() {
    let jobs = jobs();
    let problems = problems();
    for batch in [1, 2] {
        let expected: Vec<Vec<SubtaskResult>> = jobs
            .iter()
            .map(|j| {
                reference(
                    &problems[&j.problem],
                    j.code.as_deref().map(|c| std::str::from_utf8(c).unwrap()),
                    batch,
                )
            })
            .collect();
        for (workers, seed) in [(1, 0), (2, 1), (3, 2), (8, 3), (64, 4), (256, 5), (256, 6)] {
            // Durations from 0 to 3 ms, different for every seed: the completion order
            // changes from one run to the next.
            // Every test of a submission runs at most once (speculation and frontiers never
            // hand out the same test twice).
            let ran = Arc::new(Mutex::new(std::collections::HashSet::new()));
            let seen = ran.clone();
            let runner = FakeRunner::new(move |code, test| {
                let first = seen.lock().unwrap().insert(format!("{code}/{test}"));
                assert!(first, "{code}/{test} ran twice");
                FakeRun {
                    score: truth(code, test),
                    duration: Duration::from_micros(
                        fake::hash(&format!("{code}/{test}"), seed) % 3000,
                    ),
                }
            });
            let progress = Progress::default();
            let got = schedule(
                &runner,
                problems.clone(),
                &jobs,
                &options(workers, batch),
                &progress,
            );
            for (i, (got, expected)) in got.into_iter().zip(&expected).enumerate() {
                let got = got.unwrap_or_else(|e| panic!("job {i}: {e:#}"));
                assert_eq!(
                    &without_times(got),
                    &without_times(expected.clone()),
                    "job {i} at {workers} workers, batch {batch}"
                );
            }
            assert_eq!(
                progress.tests_run.load(Ordering::Relaxed),
                runner.runs(),
                "at {workers} workers"
            );
            assert_eq!(ran.lock().unwrap().len(), runner.runs());
            // No code: no compile; compile errors: no test.
            assert_eq!(
                runner.compiles(),
                jobs.iter().filter(|j| j.code.is_some()).count()
            );
        }
    }
}

#[test]
fn compilation_errors_and_judge_side_failures() {
    let problems = problems();
    let jobs = vec![
        job("p1", "CE broken"),
        job("p2", "JUDGE-ERROR"),
        job("p4", "solution"),
        job("p3", "fine"),
    ];
    let runner = FakeRunner::new(|_, _| FakeRun {
        score: 1.0,
        duration: Duration::ZERO,
    });
    let got = schedule(
        &runner,
        problems.clone(),
        &jobs,
        &options(4, 1),
        &Progress::default(),
    );
    let mut got = got.into_iter();
    let ce = got.next().unwrap().unwrap();
    assert!(ce
        .iter()
        .flat_map(|s| s.test_results.iter())
        .all(|t| t.status == Verdict::CompilationError
            && t.feedback.as_deref()
                == Some("Compilation error exit code 1\nscripted error in CE broken")));
    assert_eq!(ce.len(), problems["p1"].subtasks.len());
    let judge_side = got.next().unwrap().unwrap_err();
    assert!(format!("{judge_side:#}").contains("judge side"));
    let no_problem = got.next().unwrap().unwrap_err();
    assert!(format!("{no_problem:#}").contains("no problem p4"));
    let fine = got.next().unwrap().unwrap();
    assert!(fine.iter().all(|s| s.status() == Verdict::Accepted));
    // Only the submission that compiled ran tests.
    assert_eq!(runner.runs(), problems["p3"].test_names().len());
}

#[test]
fn a_panic_in_a_submission_s_work_fails_that_submission_and_the_others_finish() {
    // A panicking worker that kept its claim on a slot would leave the others waiting for it
    // for ever: a run that hangs. Run on a thread of its own, so that a hang fails the test.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let problems = problems();
        let jobs = vec![job("p3", "panics"), job("p3", "fine"), job("p1", "fine")];
        let runner = FakeRunner::new(|code, _| {
            if code == "panics" {
                panic!("scripted panic");
            }
            FakeRun {
                score: 1.0,
                duration: Duration::ZERO,
            }
        });
        let got = schedule(
            &runner,
            problems,
            &jobs,
            &options(2, 1),
            &Progress::default(),
        );
        let _ = done.send(
            got.into_iter()
                .map(|r| r.map(|_| ()).map_err(|e| format!("{e:#}")))
                .collect::<Vec<_>>(),
        );
    });
    let got = finished
        .recv_timeout(Duration::from_secs(120))
        .expect("the scheduler finished every submission");
    let error = got[0].as_ref().unwrap_err();
    assert!(
        error.contains("panicked while running a test: scripted panic"),
        "{error}"
    );
    assert!(got[1].is_ok() && got[2].is_ok(), "{got:?}");
}

#[test]
fn a_submission_past_its_timeout_fails_and_the_others_finish() {
    let mut problems = problems();
    problems.insert(
        "slow".into(),
        fake::problem("slow", TaskType::Batch, &[("01", names("s", 10))]),
    );
    let jobs = vec![job("slow", "slow"), job("p1", "quick")];
    // The slow submission needs at least 10 × 1 s / 2 workers = 5 s, far past its 1.5 s.
    let runner = FakeRunner::new(|code, test| FakeRun {
        score: truth(code, test).max(0.5),
        duration: if code == "slow" {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        },
    });
    let mut opts = options(2, 1);
    opts.timeout = Some(Duration::from_millis(1500));
    let quick_tests = problems["p1"].test_names().len();
    let got = schedule(&runner, problems, &jobs, &opts, &Progress::default());
    let e = got[0].as_ref().unwrap_err();
    assert!(format!("{e:#}").contains("timed out after 1.5 s"), "{e:#}");
    assert!(got[1].is_ok());
    let slow_runs = runner.runs() - quick_tests;
    assert!(
        slow_runs < 10,
        "{slow_runs}: no test of a timed-out submission starts"
    );
}

#[test]
fn speculative_results_are_discarded_and_nothing_more_starts() {
    // One subtask of 1000 tests; the first fails. Speculative tests start meanwhile (the first
    // test waits for three of them), then wait until the submission is reported: their
    // results arrive for a finished submission and are discarded, and no other test starts.
    let tests = names("t", 1000);
    let first = tests[0].clone();
    let mut problems = HashMap::new();
    problems.insert(
        "p".to_string(),
        fake::problem("p", TaskType::Batch, &[("01", tests)]),
    );
    let started = Arc::new((Mutex::new(0usize), Condvar::new()));
    let reported = Arc::new((Mutex::new(false), Condvar::new()));
    let (s, r) = (started.clone(), reported.clone());
    let runner = FakeRunner::new(move |_, test| {
        let limit = Duration::from_secs(30);
        if test == first {
            let (lock, cv) = &*s;
            let guard = lock.lock().unwrap();
            let _ = cv.wait_timeout_while(guard, limit, |n| *n < 3).unwrap();
            FakeRun {
                score: 0.0,
                duration: Duration::ZERO,
            }
        } else {
            {
                let (lock, cv) = &*s;
                *lock.lock().unwrap() += 1;
                cv.notify_all();
            }
            let (lock, cv) = &*r;
            let guard = lock.lock().unwrap();
            let _ = cv.wait_timeout_while(guard, limit, |done| !*done).unwrap();
            FakeRun {
                score: 1.0,
                duration: Duration::ZERO,
            }
        }
    });
    let jobs = [job("p", "x")];
    let progress = Progress::default();
    let source = FakeProblems(problems.clone());
    let result = Mutex::new(None);
    run(&runner, &source, &jobs, &options(8, 1), &progress, &|f| {
        *result.lock().unwrap() = Some(f.outcome.map(|j| j.results));
        let (lock, cv) = &*reported;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    })
    .unwrap();
    let results = result.into_inner().unwrap().unwrap().unwrap();
    let plan = SubmissionPlan::new(&problems["p"], &Selection::default(), 1);
    assert_eq!(results, plan.uniform(TestResult::skipped).first_wrong());
    let runs = runner.runs();
    assert!((4..=8).contains(&runs), "{runs} tests ran");
    assert_eq!(progress.tests_discarded.load(Ordering::Relaxed), runs - 1);
}

/// The expected result of the speculation test: the first test WA, every other SKIPPED.
trait FirstWrong {
    fn first_wrong(self) -> Vec<SubtaskResult>;
}

impl FirstWrong for Vec<SubtaskResult> {
    fn first_wrong(mut self) -> Vec<SubtaskResult> {
        for s in &mut self {
            for (i, t) in s.test_results.iter_mut().enumerate() {
                *t = if i == 0 {
                    TestVerdict {
                        score: 0.0,
                        feedback: "Output isn't correct".into(),
                        time: 0.0,
                        wall_time: 0.0,
                        memory: ("x".len() + t.test_name.len()) as u64,
                        status: None,
                        runs: Vec::new(),
                    }
                    .into_result(&t.test_name)
                } else {
                    TestResult::skipped(&t.test_name)
                };
            }
        }
        self
    }
}

#[test]
fn wide_tests_take_their_slots_and_a_test_wider_than_the_machine_runs_alone() {
    let comm = |n| {
        TaskType::Communication(Communication {
            num_processes: n,
            user_io: UserIo::StdIo,
            manager_args: vec![],
        })
    };
    let mut problems = HashMap::new();
    problems.insert(
        "comm".to_string(),
        fake::problem("comm", comm(2), &[("01", names("c", 12))]),
    );
    problems.insert(
        "batch".to_string(),
        fake::problem("batch", TaskType::Batch, &[("01", names("b", 12))]),
    );
    problems.insert(
        "huge".to_string(),
        fake::problem("huge", comm(7), &[("01", names("h", 3))]),
    );
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let wide_alone = Arc::new(AtomicBool::new(true));
    let (u, p, w) = (in_use.clone(), peak.clone(), wide_alone.clone());
    let runner = FakeRunner::new(move |code, _| {
        let width = match code {
            c if c.starts_with("comm") => 3,
            c if c.starts_with("huge") => 8,
            _ => 1,
        };
        let now = u.fetch_add(width, Ordering::SeqCst) + width;
        p.fetch_max(now, Ordering::SeqCst);
        if width == 8 && now != 8 {
            w.store(false, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(2));
        u.fetch_sub(width, Ordering::SeqCst);
        FakeRun {
            score: 1.0,
            duration: Duration::ZERO,
        }
    });
    let jobs: Vec<SubmissionJob> = (0..12)
        .map(|i| {
            let problem = ["comm", "batch", "huge"][i % 3];
            job(problem, &format!("{problem} {i}"))
        })
        .collect();
    let got = schedule(
        &runner,
        problems,
        &jobs,
        &options(4, 1),
        &Progress::default(),
    );
    assert!(got.iter().all(|r| r.is_ok()));
    // A Communication test with 2 user processes is 3 processes: never two at once on 4
    // slots, never more than 4 processes in all, except the 8-process test, alone.
    assert!(
        wide_alone.load(Ordering::SeqCst),
        "the widest test ran beside others"
    );
    assert!(peak.load(Ordering::SeqCst) <= 8);
    assert_eq!(in_use.load(Ordering::SeqCst), 0);
}

#[test]
fn slots_never_exceed_the_jobs_without_the_widest() {
    // Same as above without the 8-process problem: the peak stays within the 4 slots.
    let mut problems = HashMap::new();
    let comm = TaskType::Communication(Communication {
        num_processes: 2,
        user_io: UserIo::FifoIo,
        manager_args: vec![],
    });
    problems.insert(
        "comm".to_string(),
        fake::problem("comm", comm, &[("01", names("c", 10))]),
    );
    problems.insert(
        "batch".to_string(),
        fake::problem("batch", TaskType::Batch, &[("01", names("b", 10))]),
    );
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (u, p) = (in_use.clone(), peak.clone());
    let runner = FakeRunner::new(move |code, _| {
        let width = if code.starts_with("comm") { 3 } else { 1 };
        let now = u.fetch_add(width, Ordering::SeqCst) + width;
        p.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(2));
        u.fetch_sub(width, Ordering::SeqCst);
        FakeRun {
            score: 1.0,
            duration: Duration::ZERO,
        }
    });
    let jobs: Vec<SubmissionJob> = (0..10)
        .map(|i| {
            let problem = ["comm", "batch"][i % 2];
            job(problem, &format!("{problem} {i}"))
        })
        .collect();
    let got = schedule(
        &runner,
        problems,
        &jobs,
        &options(4, 1),
        &Progress::default(),
    );
    assert!(got.iter().all(|r| r.is_ok()));
    assert!(
        peak.load(Ordering::SeqCst) <= 4,
        "peak {}",
        peak.load(Ordering::SeqCst)
    );
    assert!(
        peak.load(Ordering::SeqCst) >= 3,
        "the Communication tests ran"
    );
}

#[test]
fn the_hold_histogram_reads_quantiles_to_the_bucket() {
    let h = HoldHistogram::default();
    assert_eq!(h.quantile(0.5), Duration::ZERO, "empty");
    for micros in [1u64, 1, 1, 2, 100] {
        h.record(Duration::from_micros(micros));
    }
    assert_eq!(h.count(), 5);
    let near = |d: Duration, micros: f64| (d.as_secs_f64() * 1e6 - micros).abs() <= 0.07;
    assert!(near(h.quantile(0.5), 1.0), "{:?}", h.quantile(0.5));
    assert!(near(h.quantile(0.8), 2.0), "{:?}", h.quantile(0.8));
    // 100 µs falls in the doubling buckets: [65.5 µs, 131 µs).
    let top = h.quantile(1.0).as_secs_f64() * 1e6;
    assert!((65.5..131.1).contains(&top), "{top}");
}

#[test]
fn a_wide_test_waiting_for_slots_lets_one_slot_work_fill_them_and_still_runs() {
    // 2 slots. Job 0's compile holds one slot until job 2 has compiled; job 1's tests need both
    // slots (a manager and a user process). Without backfilling, job 1's waiting test would
    // keep the other slot idle for the whole compile, and job 2 would not compile meanwhile
    // (admission is in order, so job 1 compiles before job 2 is admitted).
    let comm = TaskType::Communication(Communication {
        num_processes: 1,
        user_io: UserIo::StdIo,
        manager_args: vec![],
    });
    let mut problems = HashMap::new();
    problems.insert(
        "wide".to_string(),
        fake::problem("wide", comm, &[("01", names("w", 2))]),
    );
    problems.insert(
        "narrow".to_string(),
        fake::problem("narrow", TaskType::Batch, &[("01", names("n", 3))]),
    );
    let compiled = Arc::new((Mutex::new(false), Condvar::new()));
    let filled = Arc::new(AtomicBool::new(false));
    let (c, f) = (compiled.clone(), filled.clone());
    let runner = FakeRunner::new(|_, _| FakeRun {
        score: 1.0,
        duration: Duration::from_millis(1),
    })
    .with_compile_hook(move |code| {
        let (lock, cv) = &*c;
        match code {
            "slow" => {
                let guard = lock.lock().unwrap();
                let (done, _) = cv
                    .wait_timeout_while(guard, Duration::from_secs(30), |done| !*done)
                    .unwrap();
                f.store(*done, Ordering::SeqCst);
            }
            "quick" => {
                *lock.lock().unwrap() = true;
                cv.notify_all();
            }
            _ => {}
        }
    });
    let jobs =
        [("narrow", "slow"), ("wide", "w"), ("narrow", "quick")].map(|(p, code)| job(p, code));
    let got = schedule(
        &runner,
        problems.clone(),
        &jobs,
        &options(2, 1),
        &Progress::default(),
    );
    assert!(
        filled.load(Ordering::SeqCst),
        "job 2 compiled while job 0 compiled and job 1's wide test waited"
    );
    for (job, result) in jobs.iter().zip(got) {
        let results = result.unwrap();
        assert!(
            results.iter().all(|s| s.score() == 1.0),
            "{}: every test ran and passed",
            job.problem
        );
    }
}

#[test]
fn an_untimed_job_runs_in_the_slot_a_manager_waits_in_and_a_timed_one_never_does() {
    // 2 slots. Job 0 is a Communication task: each test holds both slots (the manager and the
    // user process). The batch submissions behind it compile while its first test runs, in
    // the slot its manager waits in; their tests (timed) never run beside a Communication test.
    let comm = TaskType::Communication(Communication {
        num_processes: 1,
        user_io: UserIo::StdIo,
        manager_args: vec![],
    });
    let mut problems = HashMap::new();
    problems.insert(
        "comm".to_string(),
        fake::problem("comm", comm, &[("01", names("c", 4))]),
    );
    problems.insert(
        "batch".to_string(),
        fake::problem("batch", TaskType::Batch, &[("01", names("b", 4))]),
    );
    // Processes of timed runs (a Communication test counts 2) running now.
    let timed = Arc::new(AtomicUsize::new(0));
    let timed_peak = Arc::new(AtomicUsize::new(0));
    // Compiles in progress, whether a Communication test is in its runner, and whether a
    // compile was seen running beside one. While a Communication test holds both slots, a
    // compile in progress can only be in the slot its manager lent: the test sees one when it
    // enters (a compile lent as it started), or the compile sees the test when it starts or ends.
    #[derive(Default)]
    struct Overlap {
        compiles: usize,
        comm_running: bool,
        beside: bool,
    }
    let overlap = Arc::new((Mutex::new(Overlap::default()), Condvar::new()));
    let first = Arc::new(AtomicBool::new(true));
    let (t, p, o, f) = (
        timed.clone(),
        timed_peak.clone(),
        overlap.clone(),
        first.clone(),
    );
    let runner = FakeRunner::new(move |code, _| {
        let width = if code.starts_with("comm") { 2 } else { 1 };
        let now = t.fetch_add(width, Ordering::SeqCst) + width;
        p.fetch_max(now, Ordering::SeqCst);
        if width == 2 {
            let (lock, cv) = &*o;
            let mut state = lock.lock().unwrap();
            state.comm_running = true;
            state.beside |= state.compiles > 0;
            if f.swap(false, Ordering::SeqCst) {
                // The first Communication test waits for a compile beside it.
                state = cv
                    .wait_timeout_while(state, Duration::from_secs(30), |s| !s.beside)
                    .unwrap()
                    .0;
            }
            state.comm_running = false;
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        t.fetch_sub(width, Ordering::SeqCst);
        FakeRun {
            score: 1.0,
            duration: Duration::ZERO,
        }
    })
    .with_compile_hook({
        let o = overlap.clone();
        move |_| {
            let (lock, cv) = &*o;
            {
                let mut state = lock.lock().unwrap();
                state.compiles += 1;
                state.beside |= state.comm_running;
                cv.notify_all();
            }
            // Outlasts a Communication test, so that one starts beside a borrower too.
            std::thread::sleep(Duration::from_millis(5));
            let mut state = lock.lock().unwrap();
            state.compiles -= 1;
            state.beside |= state.comm_running;
            cv.notify_all();
        }
    });
    let jobs: Vec<SubmissionJob> = (0..5)
        .map(|i| match i {
            0 => job("comm", "comm 0"),
            _ => job("batch", &format!("batch {i}")),
        })
        .collect();
    let progress = Progress::default();
    let got = schedule(&runner, problems, &jobs, &options(2, 1), &progress);
    assert!(
        overlap.0.lock().unwrap().beside,
        "a compile ran while a Communication test held both slots"
    );
    assert!(progress.lent_nanos.load(Ordering::SeqCst) > 0);
    assert_eq!(
        timed_peak.load(Ordering::SeqCst),
        2,
        "timed runs never held more than the 2 slots"
    );
    assert_eq!(timed.load(Ordering::SeqCst), 0);
    for (job, result) in jobs.iter().zip(got) {
        let results = result.unwrap();
        assert!(
            results.iter().all(|s| s.score() == 1.0),
            "{}: every test ran and passed",
            job.problem
        );
    }
}

#[test]
fn with_one_slot_a_communication_test_lends_nothing() {
    // A test wider than the machine runs alone: no compile starts beside it.
    let comm = TaskType::Communication(Communication {
        num_processes: 1,
        user_io: UserIo::StdIo,
        manager_args: vec![],
    });
    let mut problems = HashMap::new();
    problems.insert(
        "comm".to_string(),
        fake::problem("comm", comm, &[("01", names("c", 3))]),
    );
    let running = Arc::new(AtomicUsize::new(0));
    let overlapped = Arc::new(AtomicBool::new(false));
    let (r, o) = (running.clone(), overlapped.clone());
    let (r2, o2) = (running.clone(), overlapped.clone());
    let runner = FakeRunner::new(move |_, _| {
        if r.fetch_add(1, Ordering::SeqCst) > 0 {
            o.store(true, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(3));
        r.fetch_sub(1, Ordering::SeqCst);
        FakeRun {
            score: 1.0,
            duration: Duration::ZERO,
        }
    })
    .with_compile_hook(move |_| {
        if r2.fetch_add(1, Ordering::SeqCst) > 0 {
            o2.store(true, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(3));
        r2.fetch_sub(1, Ordering::SeqCst);
    });
    let jobs: Vec<SubmissionJob> = (0..4).map(|i| job("comm", &format!("c {i}"))).collect();
    let progress = Progress::default();
    let got = schedule(&runner, problems, &jobs, &options(1, 1), &progress);
    assert!(got.iter().all(|r| r.is_ok()));
    assert!(!overlapped.load(Ordering::SeqCst), "one item at a time");
    assert_eq!(progress.lent_nanos.load(Ordering::SeqCst), 0);
}
