//! One scheduler for every submission: work items are problem loads, compiles and single
//! tests, taken by `jobs` workers (a rayon pool), so all cores stay busy across submission
//! boundaries.
//!
//! Workers prefer, in order: tests on a submission's frontier (certainly needed), compiles,
//! admitting the next submission (loading its problem first if needed), then speculative tests
//! ahead of a frontier. Submissions are admitted in the given order, at most `2 × jobs` at a
//! time, and a problem (its tests on disk) is dropped once its last submission finishes, so
//! giving the jobs grouped by problem keeps one or two problems in memory at a time.
//!
//! The scheduler only decides; a [`SubmissionRunner`] compiles and runs (the [`Judge`], or a
//! scripted fake in tests and `bench scheduler`). Every decision is cheap whatever the number
//! of active submissions: each submission's early-stop plan is replayed only when one of its
//! own results arrives, and the submissions that have a frontier test, a compile or
//! speculative tests to give are kept in ordered sets, so a decision looks at the first one.
//!
//! A test occupies as many of the `jobs` slots as the processes it runs at once (a
//! Communication test: the manager and every user process), so that our own parallelism never
//! overloads the machine; a test wider than the machine runs alone.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::plan::{Replay, SubmissionPlan};
use super::{Build, Judge, LoadedProblem, Program, TestVerdict};
use crate::problem::TaskType;
use crate::score::{SubtaskResult, TestResult, Verdict};

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

/// What the scheduler needs done: compile one submission, run one of its tests. The
/// [`Judge`] does it in the sandbox; tests and benchmarks use a scripted runner.
pub trait SubmissionRunner: Sync {
    fn compile(&self, problem: &LoadedProblem, code: &[u8]) -> Result<Build>;
    fn run_test(
        &self,
        problem: &LoadedProblem,
        program: &Program,
        test: &str,
    ) -> Result<TestVerdict>;
    /// How many processes one test of `problem` runs at once (and so how many of the
    /// scheduler's slots it occupies): a Communication test runs the manager and every user
    /// process side by side.
    fn test_width(&self, problem: &LoadedProblem) -> usize {
        match &problem.problem.task {
            TaskType::Batch => 1,
            TaskType::Communication(c) => c.num_processes.max(1) + 1,
        }
    }
}

impl SubmissionRunner for Judge {
    fn compile(&self, problem: &LoadedProblem, code: &[u8]) -> Result<Build> {
        Judge::compile(self, problem, code)
    }

    fn run_test(
        &self,
        problem: &LoadedProblem,
        program: &Program,
        test: &str,
    ) -> Result<TestVerdict> {
        match problem.tests.get(test) {
            Some(case) => Judge::run_test(self, problem, program, case),
            None => Err(anyhow!("test {test:?} has no input/output")),
        }
    }
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
    /// Nanoseconds the scheduler's lock was held (decisions and recording results), for
    /// `bench scheduler`.
    pub lock_held_nanos: AtomicU64,
    /// Nanoseconds workers spent executing work items (loads, compiles, tests), summed.
    pub working_nanos: AtomicU64,
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
    problem: Arc<LoadedProblem>,
    plan: SubmissionPlan,
    build: BuildState,
    known: HashMap<String, TestResult>,
    in_flight: HashSet<String>,
    /// Tests of the needed batch not yet given to a worker, in order.
    frontier: VecDeque<String>,
    /// Tests speculation may run, in order; `None` until asked for after a change.
    ahead: Option<VecDeque<String>>,
    /// Slots one test occupies.
    width: usize,
}

enum Work {
    Load(String),
    Compile(usize, Arc<LoadedProblem>, Vec<u8>),
    Test(usize, Arc<LoadedProblem>, Program, String),
}

struct State {
    pending: VecDeque<usize>,
    active: HashMap<usize, Active>,
    /// Active submissions with a frontier test to give, a compile to start, or possibly
    /// speculative tests: ordered by job, so that older submissions come first.
    with_frontier: BTreeSet<usize>,
    to_compile: BTreeSet<usize>,
    may_speculate: BTreeSet<usize>,
    /// Deadlines of the active submissions (`--timeout`), earliest first.
    deadlines: BinaryHeap<Reverse<(Instant, usize)>>,
    problems: HashMap<String, Slot>,
    remaining: HashMap<String, usize>,
    /// Work items being executed, and the slots they occupy.
    busy: usize,
    slots_used: usize,
    /// Workers waiting for work: woken one at a time, and only when there is work, so that a
    /// result does not wake every idle worker of a large pool.
    waiting: usize,
}

impl State {
    /// Whether a worker may find something to start (a cheap over-approximation).
    fn has_work(&self, slots: usize) -> bool {
        !self.with_frontier.is_empty()
            || !self.to_compile.is_empty()
            || !self.may_speculate.is_empty()
            || (!self.pending.is_empty() && self.active.len() < slots * 2)
    }
}

/// The scheduler's state while locked; the time it is held goes to
/// [`Progress::lock_held_nanos`].
struct Locked<'a> {
    guard: Option<std::sync::MutexGuard<'a, State>>,
    since: Instant,
    held: &'a AtomicU64,
}

impl Locked<'_> {
    fn account(&self) {
        self.held
            .fetch_add(self.since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.guard.as_deref().expect("the state is locked")
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.guard.as_deref_mut().expect("the state is locked")
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            self.account();
        }
    }
}

struct Shared<'a> {
    runner: &'a dyn SubmissionRunner,
    source: &'a dyn ProblemSource,
    jobs: &'a [Job],
    options: &'a ScheduleOptions,
    progress: &'a Progress,
    slots: usize,
    state: Mutex<State>,
    wake: Condvar,
}

/// Judges every job; `on_done` is called once per job as it finishes (from worker threads).
pub fn run(
    runner: &dyn SubmissionRunner,
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
    let workers = options.jobs.max(1);
    let shared = Shared {
        runner,
        source,
        jobs,
        options,
        progress,
        slots: workers,
        state: Mutex::new(State {
            pending: (0..jobs.len()).collect(),
            active: HashMap::new(),
            with_frontier: BTreeSet::new(),
            to_compile: BTreeSet::new(),
            may_speculate: BTreeSet::new(),
            deadlines: BinaryHeap::new(),
            problems: HashMap::new(),
            remaining,
            busy: 0,
            slots_used: 0,
            waiting: 0,
        }),
        wake: Condvar::new(),
    };
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
    fn lock(&self) -> Locked<'_> {
        // A worker that panicked leaves consistent state behind (every update is a single
        // assignment under the lock), so a poisoned lock is still usable.
        Locked {
            guard: Some(self.state.lock().unwrap_or_else(|e| e.into_inner())),
            since: Instant::now(),
            held: &self.progress.lock_held_nanos,
        }
    }

    /// Waits for a change (or `timeout`), not counting the wait as time the lock was held.
    fn wait<'s>(&'s self, mut locked: Locked<'s>, timeout: Option<Duration>) -> Locked<'s> {
        let Some(mut guard) = locked.guard.take() else {
            return locked;
        };
        locked.account();
        guard.waiting += 1;
        let mut guard = match timeout {
            Some(wait) => {
                self.wake
                    .wait_timeout(guard, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => self.wake.wait(guard).unwrap_or_else(|e| e.into_inner()),
        };
        guard.waiting -= 1;
        locked.guard = Some(guard);
        locked.since = Instant::now();
        locked
    }

    fn worker(&self, on_done: &(dyn Fn(Finished) + Sync)) {
        loop {
            let (work, finished) = {
                let mut state = self.lock();
                let mut finished = Vec::new();
                let work = loop {
                    match self.choose(&mut state, &mut finished) {
                        Some((work, width)) => {
                            state.busy += 1;
                            state.slots_used += width;
                            // More work left: hand it to one waiting worker, which does
                            // the same in turn.
                            if state.waiting > 0 && state.has_work(self.slots) {
                                self.wake.notify_one();
                            }
                            break Some((work, width));
                        }
                        None if state.pending.is_empty()
                            && state.active.is_empty()
                            && state.busy == 0 =>
                        {
                            break None
                        }
                        None if !finished.is_empty() => break None,
                        None => {
                            let timeout = self.next_deadline(&state);
                            state = self.wait(state, timeout);
                        }
                    }
                };
                (work, finished)
            };
            let stop = work.is_none() && finished.is_empty();
            for f in finished {
                on_done(f);
            }
            if let Some((work, width)) = work {
                let start = Instant::now();
                let finished = self.execute(work, width);
                self.progress
                    .working_nanos
                    .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                for f in finished {
                    on_done(f);
                }
            } else if stop {
                self.wake.notify_all();
                return;
            }
        }
    }

    /// How long until the earliest `--timeout` expires, if any submission has one.
    fn next_deadline(&self, state: &State) -> Option<Duration> {
        let Reverse((deadline, _)) = state.deadlines.peek()?;
        Some(deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(1))
    }

    /// Picks the next work item and the slots it occupies, finishing submissions on the way.
    /// `None` when nothing can start now (no work, or not enough free slots for the next).
    fn choose(&self, state: &mut State, finished: &mut Vec<Finished>) -> Option<(Work, usize)> {
        self.expire(state, finished);
        let free = self.slots.saturating_sub(state.slots_used);
        // A wide test waits for enough free slots, and nothing overtakes it meanwhile (it
        // would starve); on an idle machine it runs alone whatever its width.
        let fits = |width: usize, used: usize| used == 0 || width <= free;
        loop {
            // 1. Frontier tests.
            if let Some(&job) = state.with_frontier.first() {
                let used = state.slots_used;
                let Some(a) = state.active.get_mut(&job) else {
                    state.with_frontier.remove(&job);
                    continue;
                };
                if !fits(a.width, used) {
                    return None;
                }
                let BuildState::Ready(program) = &a.build else {
                    state.with_frontier.remove(&job);
                    continue;
                };
                let Some(test) = a.frontier.pop_front() else {
                    state.with_frontier.remove(&job);
                    continue;
                };
                a.in_flight.insert(test.clone());
                let work = Work::Test(job, a.problem.clone(), program.clone(), test);
                let width = a.width;
                if a.frontier.is_empty() {
                    state.with_frontier.remove(&job);
                }
                return Some((work, width));
            }
            if !fits(1, state.slots_used) {
                return None;
            }
            // 2. Compiles.
            if let Some(job) = state.to_compile.pop_first() {
                if let Some(a) = state.active.get_mut(&job) {
                    a.build = BuildState::Building;
                    let code = self.jobs[job].code.clone().unwrap_or_default();
                    return Some((Work::Compile(job, a.problem.clone(), code), 1));
                }
                continue;
            }
            // 3. Admission.
            if state.active.len() < self.slots * 2 {
                if let Some(&next) = state.pending.front() {
                    let key = &self.jobs[next].problem;
                    match state.problems.get(key) {
                        None => {
                            state.problems.insert(key.clone(), Slot::Loading);
                            return Some((Work::Load(key.clone()), 1));
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
                            self.complete(state, next, None, Err(anyhow!("{message}")), finished);
                            continue;
                        }
                        Some(Slot::Loading) => {}
                    }
                }
            }
            // 4. Speculation ahead of the frontiers.
            let job = *state.may_speculate.first()?;
            let used = state.slots_used;
            let Some(a) = state.active.get_mut(&job) else {
                state.may_speculate.remove(&job);
                continue;
            };
            let BuildState::Ready(program) = &a.build else {
                state.may_speculate.remove(&job);
                continue;
            };
            if !fits(a.width, used) {
                return None;
            }
            let ahead = a.ahead.get_or_insert_with(|| {
                a.plan
                    .lookahead(&a.known)
                    .into_iter()
                    .filter(|t| !a.in_flight.contains(t) && !a.known.contains_key(t))
                    .collect()
            });
            // Skips what a frontier took since the list was made.
            let next = std::iter::from_fn(|| ahead.pop_front())
                .find(|t| !a.in_flight.contains(t) && !a.known.contains_key(t));
            let Some(test) = next else {
                state.may_speculate.remove(&job);
                continue;
            };
            a.in_flight.insert(test.clone());
            return Some((
                Work::Test(job, a.problem.clone(), program.clone(), test),
                a.width,
            ));
        }
    }

    /// Fails the submissions whose `--timeout` has passed.
    fn expire(&self, state: &mut State, finished: &mut Vec<Finished>) {
        let now = Instant::now();
        while let Some(&Reverse((deadline, job))) = state.deadlines.peek() {
            if deadline > now {
                break;
            }
            state.deadlines.pop();
            if state.active.contains_key(&job) {
                let limit = self.options.timeout.unwrap_or_default();
                let e = anyhow!(
                    "the submission timed out after {} s (--timeout)",
                    limit.as_secs_f64()
                );
                self.finish(state, job, Err(e), finished);
            }
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
        let width = self.runner.test_width(&problem).max(1);
        state.active.insert(
            job,
            Active {
                problem,
                plan,
                build: BuildState::NotStarted,
                known: HashMap::new(),
                in_flight: HashSet::new(),
                frontier: VecDeque::new(),
                ahead: None,
                width,
            },
        );
        state.to_compile.insert(job);
        if let Some(limit) = self.options.timeout {
            state.deadlines.push(Reverse((Instant::now() + limit, job)));
        }
        self.progress
            .active
            .store(state.active.len(), Ordering::Relaxed);
    }

    /// After a change to submission `job` (compiled, a result arrived): replays its plan once,
    /// and either finishes it or lists what it needs next.
    fn refresh(&self, state: &mut State, job: usize, finished: &mut Vec<Finished>) {
        let Some(a) = state.active.get_mut(&job) else {
            return;
        };
        if !matches!(a.build, BuildState::Ready(_)) {
            return;
        }
        // The cheap walk first; the results are built once, when nothing more is needed.
        match a.plan.frontier(&a.known) {
            None => {
                let result = match a.plan.replay(&a.known) {
                    Replay::Done(results) => Ok(results),
                    Replay::Need(_) => Err(anyhow!("internal: the plan's walks disagree")),
                };
                self.finish(state, job, result, finished)
            }
            Some(batch) => {
                a.frontier = batch
                    .into_iter()
                    .filter(|t| !a.in_flight.contains(t))
                    .collect();
                a.ahead = None;
                if a.frontier.is_empty() {
                    state.with_frontier.remove(&job);
                } else {
                    state.with_frontier.insert(job);
                }
                state.may_speculate.insert(job);
            }
        }
    }

    /// Removes an active submission and reports it; results still in flight are discarded
    /// when they arrive.
    fn finish(
        &self,
        state: &mut State,
        job: usize,
        result: Result<Vec<SubtaskResult>>,
        finished: &mut Vec<Finished>,
    ) {
        let Some(a) = state.active.remove(&job) else {
            return;
        };
        state.with_frontier.remove(&job);
        state.to_compile.remove(&job);
        state.may_speculate.remove(&job);
        if let Ok(results) = &result {
            let used: HashSet<&str> = results
                .iter()
                .flat_map(|s| s.test_results.iter())
                .filter(|t| t.status != Verdict::Skipped)
                .map(|t| t.test_name.as_str())
                .collect();
            let discarded = a
                .known
                .keys()
                .filter(|k| !used.contains(k.as_str()))
                .count();
            self.progress
                .tests_discarded
                .fetch_add(discarded, Ordering::Relaxed);
        }
        self.progress
            .active
            .store(state.active.len(), Ordering::Relaxed);
        self.complete(state, job, Some(a.problem), result, finished);
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
    fn execute(&self, work: Work, width: usize) -> Vec<Finished> {
        let mut finished = Vec::new();
        match work {
            Work::Load(key) => {
                let loaded = self.source.load(&key);
                let mut state = self.lock();
                state.busy -= 1;
                state.slots_used -= width;
                let slot = match loaded {
                    Ok(problem) => Slot::Ready(Arc::new(problem)),
                    Err(e) => Slot::Failed(format!("{e:#}")),
                };
                state.problems.insert(key, slot);
            }
            Work::Compile(job, problem, code) => {
                let build = self.runner.compile(&problem, &code);
                self.progress.compiles.fetch_add(1, Ordering::Relaxed);
                let mut state = self.lock();
                state.busy -= 1;
                state.slots_used -= width;
                if let Some(a) = state.active.get_mut(&job) {
                    match build {
                        Ok(Build::Program(program)) => {
                            a.build = BuildState::Ready(program);
                            self.refresh(&mut state, job, &mut finished);
                        }
                        Ok(Build::Error(error)) => {
                            let feedback = error.feedback();
                            let results = a.plan.uniform(|t| TestResult {
                                score: 0.0,
                                status: Verdict::CompilationError,
                                feedback: Some(feedback.clone()),
                                ..TestResult::skipped(t)
                            });
                            self.finish(&mut state, job, Ok(results), &mut finished);
                        }
                        Err(e) => {
                            let e = e.context("compilation failed on the judge side");
                            self.finish(&mut state, job, Err(e), &mut finished);
                        }
                    }
                }
            }
            Work::Test(job, problem, program, test) => {
                let outcome = self.runner.run_test(&problem, &program, &test);
                self.progress.tests_run.fetch_add(1, Ordering::Relaxed);
                let mut state = self.lock();
                state.busy -= 1;
                state.slots_used -= width;
                if let Some(a) = state.active.get_mut(&job) {
                    a.in_flight.remove(&test);
                    match outcome {
                        Ok(verdict) => {
                            let result = verdict.into_result(&test);
                            self.progress.on_test.notify(job, &result);
                            a.known.insert(test.clone(), result);
                            self.refresh(&mut state, job, &mut finished);
                        }
                        Err(e) => {
                            let e = e.context(format!("test {test}"));
                            self.finish(&mut state, job, Err(e), &mut finished);
                        }
                    }
                } else {
                    self.progress
                        .tests_discarded
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        finished
    }
}

#[cfg(test)]
mod tests;
