//! One scheduler for every submission: work items are problem loads, compiles and single
//! tests, taken by `jobs` workers (a rayon pool), so all cores stay busy across submission
//! boundaries.
//!
//! Workers prefer, in order: tests on a submission's frontier (certainly needed), compiles,
//! admitting the next submission (loading its problem first if needed), then speculative tests
//! ahead of a frontier. Submissions are admitted in the given order, at most `2 × jobs` at a
//! time, and a problem (its tests on disk) is dropped once its last submission finishes, so
//! giving the jobs grouped by problem keeps one or two problems in memory at a time.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::plan::{Replay, SubmissionPlan};
use super::{Build, Judge, LoadedProblem, Program};
use crate::score::{Status, SubtaskResult, TestResult};

/// One submission to judge.
#[derive(Debug, Clone)]
pub struct Job {
    /// Key of the problem, understood by the [`ProblemSource`].
    pub problem: String,
    /// The code, as bytes (a source need not be UTF-8); `None` when the submission has none
    /// (every test SKIPPED).
    pub code: Option<Vec<u8>>,
}

/// Loads problems on demand (tests materialised, tools compiled).
pub trait ProblemSource: Sync {
    fn load(&self, key: &str) -> Result<LoadedProblem>;
}

/// A source of one problem loaded beforehand, for judging submissions of a single problem.
pub struct Preloaded(Mutex<Option<LoadedProblem>>);

impl Preloaded {
    pub fn new(problem: LoadedProblem) -> Preloaded {
        Preloaded(Mutex::new(Some(problem)))
    }
}

impl ProblemSource for Preloaded {
    fn load(&self, _key: &str) -> Result<LoadedProblem> {
        self.0
            .lock()
            .map_err(|_| anyhow!("problem lock poisoned"))?
            .take()
            .context("the problem was already handed out (one key per Preloaded source)")
    }
}

#[derive(Debug, Clone)]
pub struct ScheduleOptions {
    pub jobs: usize,
    pub batch_size: usize,
    /// Judge only these subtasks.
    pub subtasks: Option<Vec<String>>,
    /// Bound on one submission's whole evaluation.
    pub timeout: Option<Duration>,
}

/// A finished submission.
pub struct Finished {
    pub job: usize,
    /// The problem, unless it could not be loaded (then `result` says why).
    pub problem: Option<Arc<LoadedProblem>>,
    /// The subtask results, or why the submission could not be judged (judge-side failure,
    /// time-out): such a submission should be retried, not recorded.
    pub result: Result<Vec<SubtaskResult>>,
}

/// Live counters, for progress display.
#[derive(Debug, Default)]
pub struct Progress {
    pub submissions_done: AtomicUsize,
    pub tests_run: AtomicUsize,
    /// Tests run ahead of need whose results the reference would not have produced.
    pub tests_discarded: AtomicUsize,
    pub active: AtomicUsize,
    pub compiles: AtomicUsize,
    /// Told of every test result as soon as it is known (`judge` prints tests as they finish).
    pub on_test: TestObserver,
}

/// A callback given `(job, result)` for each test result kept for a submission (results run
/// ahead and discarded are not reported). The final results remain the authority: a test
/// reported here may still end up SKIPPED by early stop.
#[derive(Default)]
pub struct TestObserver(Option<TestCallback>);

type TestCallback = Box<dyn Fn(usize, &TestResult) + Send + Sync>;

impl TestObserver {
    pub fn new(f: impl Fn(usize, &TestResult) + Send + Sync + 'static) -> TestObserver {
        TestObserver(Some(Box::new(f)))
    }

    fn notify(&self, job: usize, result: &TestResult) {
        if let Some(f) = &self.0 {
            f(job, result);
        }
    }
}

impl std::fmt::Debug for TestObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "TestObserver(set)"
        } else {
            "TestObserver(none)"
        })
    }
}

enum Slot {
    Loading,
    Ready(Arc<LoadedProblem>),
    Failed(String),
}

enum BuildState {
    NotStarted,
    Building,
    Ready(Program),
}

struct Active {
    job: usize,
    problem: Arc<LoadedProblem>,
    plan: SubmissionPlan,
    build: BuildState,
    known: HashMap<String, TestResult>,
    in_flight: HashSet<String>,
    started: Instant,
    failure: Option<anyhow::Error>,
}

enum Work {
    Load(String),
    Compile(usize, Arc<LoadedProblem>, Vec<u8>),
    Test(usize, Arc<LoadedProblem>, Program, String),
}

struct State {
    pending: VecDeque<usize>,
    active: Vec<Active>,
    problems: HashMap<String, Slot>,
    remaining: HashMap<String, usize>,
    busy: usize,
}

struct Shared<'a> {
    judge: &'a Judge,
    source: &'a dyn ProblemSource,
    jobs: &'a [Job],
    options: &'a ScheduleOptions,
    progress: &'a Progress,
    state: Mutex<State>,
    wake: Condvar,
}

/// Judges every job; `on_done` is called once per job as it finishes (from worker threads).
pub fn run(
    judge: &Judge,
    source: &dyn ProblemSource,
    jobs: &[Job],
    options: &ScheduleOptions,
    progress: &Progress,
    on_done: &(dyn Fn(Finished) + Sync),
) -> Result<()> {
    let mut remaining = HashMap::new();
    for job in jobs {
        *remaining.entry(job.problem.clone()).or_insert(0) += 1;
    }
    let shared = Shared {
        judge,
        source,
        jobs,
        options,
        progress,
        state: Mutex::new(State {
            pending: (0..jobs.len()).collect(),
            active: Vec::new(),
            problems: HashMap::new(),
            remaining,
            busy: 0,
        }),
        wake: Condvar::new(),
    };
    let workers = options.jobs.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .thread_name(|i| format!("ioi-worker-{i}"))
        .build()?;
    pool.scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|_| shared.worker(on_done));
        }
    });
    Ok(())
}

impl Shared<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A worker that panicked leaves consistent state behind (every update is a single
        // assignment under the lock), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn worker(&self, on_done: &(dyn Fn(Finished) + Sync)) {
        loop {
            let (work, finished) = {
                let mut state = self.lock();
                let mut finished = Vec::new();
                let work = loop {
                    match self.choose(&mut state, &mut finished) {
                        Some(work) => {
                            state.busy += 1;
                            break Some(work);
                        }
                        None if state.pending.is_empty()
                            && state.active.is_empty()
                            && state.busy == 0 =>
                        {
                            break None
                        }
                        None if !finished.is_empty() => break None,
                        None => state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
                    }
                };
                (work, finished)
            };
            let stop = work.is_none() && finished.is_empty();
            for f in finished {
                on_done(f);
            }
            if let Some(work) = work {
                let finished = self.execute(work);
                for f in finished {
                    on_done(f);
                }
                self.wake.notify_all();
            } else if stop {
                self.wake.notify_all();
                return;
            }
        }
    }

    /// Picks the next work item, finishing submissions on the way.
    fn choose(&self, state: &mut State, finished: &mut Vec<Finished>) -> Option<Work> {
        loop {
            self.finish_ready(state, finished);
            // 1. Frontier tests.
            for a in &mut state.active {
                if let (BuildState::Ready(program), None) = (&a.build, &a.failure) {
                    if let Replay::Need(batch) = a.plan.replay(&a.known) {
                        if let Some(test) = batch.into_iter().find(|t| !a.in_flight.contains(t)) {
                            a.in_flight.insert(test.clone());
                            return Some(Work::Test(
                                a.job,
                                a.problem.clone(),
                                program.clone(),
                                test,
                            ));
                        }
                    }
                }
            }
            // 2. Compiles.
            for a in &mut state.active {
                if matches!(a.build, BuildState::NotStarted) {
                    a.build = BuildState::Building;
                    let code = self.jobs[a.job].code.clone().unwrap_or_default();
                    return Some(Work::Compile(a.job, a.problem.clone(), code));
                }
            }
            // 3. Admission.
            if state.active.len() < self.options.jobs.max(1) * 2 {
                if let Some(&next) = state.pending.front() {
                    let key = &self.jobs[next].problem;
                    match state.problems.get(key) {
                        None => {
                            state.problems.insert(key.clone(), Slot::Loading);
                            return Some(Work::Load(key.clone()));
                        }
                        Some(Slot::Ready(problem)) => {
                            let problem = problem.clone();
                            state.pending.pop_front();
                            self.admit(state, next, problem, finished);
                            continue;
                        }
                        Some(Slot::Failed(message)) => {
                            let message = message.clone();
                            state.pending.pop_front();
                            self.fail_unadmitted(state, next, &message, finished);
                            continue;
                        }
                        Some(Slot::Loading) => {}
                    }
                }
            }
            // 4. Speculation ahead of the frontiers.
            for a in &mut state.active {
                if let (BuildState::Ready(program), None) = (&a.build, &a.failure) {
                    let ahead = a.plan.lookahead(&a.known);
                    if let Some(test) = ahead
                        .into_iter()
                        .find(|t| !a.in_flight.contains(t) && !a.known.contains_key(t))
                    {
                        a.in_flight.insert(test.clone());
                        return Some(Work::Test(a.job, a.problem.clone(), program.clone(), test));
                    }
                }
            }
            return None;
        }
    }

    fn admit(
        &self,
        state: &mut State,
        job: usize,
        problem: Arc<LoadedProblem>,
        finished: &mut Vec<Finished>,
    ) {
        let plan = SubmissionPlan::new(
            &problem.problem,
            self.options.subtasks.as_deref(),
            self.options.batch_size,
        );
        if self.jobs[job].code.as_deref().is_none_or(<[u8]>::is_empty) {
            let results = plan.uniform(TestResult::skipped);
            self.complete(state, job, Some(problem), Ok(results), finished);
            return;
        }
        state.active.push(Active {
            job,
            problem,
            plan,
            build: BuildState::NotStarted,
            known: HashMap::new(),
            in_flight: HashSet::new(),
            started: Instant::now(),
            failure: None,
        });
        self.progress
            .active
            .store(state.active.len(), Ordering::Relaxed);
    }

    /// Reports a submission whose problem could not be loaded.
    fn fail_unadmitted(
        &self,
        state: &mut State,
        job: usize,
        message: &str,
        finished: &mut Vec<Finished>,
    ) {
        self.complete(state, job, None, Err(anyhow!("{message}")), finished);
    }

    /// Finishes every active submission whose results are complete, failed or timed out.
    fn finish_ready(&self, state: &mut State, finished: &mut Vec<Finished>) {
        let mut i = 0;
        while i < state.active.len() {
            let a = &mut state.active[i];
            if a.failure.is_none() {
                if let Some(limit) = self.options.timeout {
                    if a.started.elapsed() > limit {
                        a.failure = Some(anyhow!(
                            "the submission timed out after {} s (--timeout)",
                            limit.as_secs_f64()
                        ));
                    }
                }
            }
            // Results still in flight when a submission fails are discarded when they arrive.
            let result = match (&a.failure, &a.build) {
                (Some(_), _) => None,
                (None, BuildState::Ready(_)) => match a.plan.replay(&a.known) {
                    Replay::Done(results) => Some(results),
                    Replay::Need(_) => {
                        i += 1;
                        continue;
                    }
                },
                _ => {
                    i += 1;
                    continue;
                }
            };
            let a = state.active.swap_remove(i);
            let result = match (a.failure, result) {
                (Some(e), _) => Err(e),
                (None, Some(results)) => {
                    let used: HashSet<&str> = results
                        .iter()
                        .flat_map(|s| s.test_results.iter())
                        .filter(|t| t.status != Status::Skipped)
                        .map(|t| t.test_name.as_str())
                        .collect();
                    let discarded = a
                        .known
                        .keys()
                        .filter(|k| !used.contains(k.as_str()))
                        .count()
                        + a.in_flight.len();
                    self.progress
                        .tests_discarded
                        .fetch_add(discarded, Ordering::Relaxed);
                    Ok(results)
                }
                (None, None) => Err(anyhow!("internal: a submission finished without results")),
            };
            self.complete(state, a.job, Some(a.problem), result, finished);
        }
        self.progress
            .active
            .store(state.active.len(), Ordering::Relaxed);
    }

    fn complete(
        &self,
        state: &mut State,
        job: usize,
        problem: Option<Arc<LoadedProblem>>,
        result: Result<Vec<SubtaskResult>>,
        finished: &mut Vec<Finished>,
    ) {
        self.release_problem(state, &self.jobs[job].problem);
        self.progress
            .submissions_done
            .fetch_add(1, Ordering::Relaxed);
        finished.push(Finished {
            job,
            problem,
            result,
        });
    }

    fn release_problem(&self, state: &mut State, key: &str) {
        if let Some(n) = state.remaining.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                state.remaining.remove(key);
                state.problems.remove(key);
            }
        }
    }

    /// Runs one work item outside the lock, then records its result.
    fn execute(&self, work: Work) -> Vec<Finished> {
        let mut finished = Vec::new();
        match work {
            Work::Load(key) => {
                let loaded = self.source.load(&key);
                let mut state = self.lock();
                state.busy -= 1;
                let slot = match loaded {
                    Ok(problem) => Slot::Ready(Arc::new(problem)),
                    Err(e) => Slot::Failed(format!("{e:#}")),
                };
                state.problems.insert(key, slot);
            }
            Work::Compile(job, problem, code) => {
                let build = self.judge.compile(&problem, &code);
                self.progress.compiles.fetch_add(1, Ordering::Relaxed);
                let mut state = self.lock();
                state.busy -= 1;
                if let Some(a) = state.active.iter_mut().find(|a| a.job == job) {
                    match build {
                        Ok(Build::Program(program)) => a.build = BuildState::Ready(program),
                        Ok(Build::Error { exit_code, stderr }) => {
                            let feedback = Build::error_feedback(exit_code, &stderr);
                            let results = a.plan.uniform(|t| TestResult {
                                score: 0.0,
                                status: Status::CompilationError,
                                feedback: Some(feedback.clone()),
                                ..TestResult::skipped(t)
                            });
                            let index = state.active.iter().position(|a| a.job == job).unwrap_or(0);
                            let a = state.active.swap_remove(index);
                            self.complete(
                                &mut state,
                                job,
                                Some(a.problem),
                                Ok(results),
                                &mut finished,
                            );
                        }
                        Err(e) => {
                            a.build = BuildState::Building;
                            a.failure = Some(e.context("compilation failed on the judge side"));
                        }
                    }
                }
                self.finish_ready(&mut state, &mut finished);
            }
            Work::Test(job, problem, program, test) => {
                let outcome = match problem.tests.get(&test) {
                    Some(case) => self.judge.run_test(&problem, &program, case),
                    None => Err(anyhow!("test {test:?} has no input/output")),
                };
                self.progress.tests_run.fetch_add(1, Ordering::Relaxed);
                let mut state = self.lock();
                state.busy -= 1;
                if let Some(a) = state.active.iter_mut().find(|a| a.job == job) {
                    a.in_flight.remove(&test);
                    match outcome {
                        Ok(verdict) => {
                            let result = verdict.into_result(&test);
                            self.progress.on_test.notify(job, &result);
                            a.known.insert(test.clone(), result);
                        }
                        Err(e) => a.failure = Some(e.context(format!("test {test}"))),
                    }
                } else {
                    self.progress
                        .tests_discarded
                        .fetch_add(1, Ordering::Relaxed);
                }
                self.finish_ready(&mut state, &mut finished);
            }
        }
        finished
    }
}
