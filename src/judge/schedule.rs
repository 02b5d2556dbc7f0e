//! One scheduler for every submission: work items are problem loads, compiles and single
//! tests, taken by `jobs` worker threads, so all cores stay busy across submission
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
//! of active submissions and the size of their plans, because 256 workers finishing 1 ms tests
//! ask for 256 000 decisions a second under one lock: each submission's early stop is followed
//! by two incremental walks over its plan (the exact frontier and the speculation ahead of it,
//! see [`walk`]), tests are numbers rather than names, the submissions that have a frontier
//! test, a compile or speculative tests to give are kept in ordered sets so a decision looks at
//! the first one, and everything that allocates (a test's result, a submission's final results
//! by the full replay) is built outside the lock. A worker records its result and takes its
//! next item in one visit to the lock, and wakes at most one idle worker, after unlocking.
//!
//! A test occupies as many of the `jobs` slots as the CPUs its processes may use at once, so
//! that our own parallelism never overloads the machine with timed runs: the [`Judge`] puts a
//! Communication test's processes on one CPU (docs/judging.md#cpu-placement), so every test
//! it runs takes one slot. A runner that lets a Communication test's processes spread (the
//! judge with [`Placement::Host`](super::placement::Placement::Host), for `bench roundtrips`)
//! declares them wider: a slot per process, a test wider than the machine running alone, and
//! the slot held for its manager, which mostly waits for the user processes, lent to one
//! untimed work item (a problem's loading, a compile).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use self::walk::{IndexedPlan, Known, TestId, Walk};
use super::plan::{Replay, Selection, SubmissionPlan};
use super::{Build, Judge, LoadedProblem, Program, TestVerdict};
use crate::problem::TaskType;
use crate::score::{SubtaskResult, TestResult, Verdict};

/// One submission to judge.
#[derive(Debug, Clone)]
pub struct SubmissionJob {
    /// Key of the problem, understood by the [`ProblemSource`].
    pub problem: String,
    /// The code, as bytes (a source need not be UTF-8); `None` when the submission has none
    /// (every test SKIPPED).
    pub code: Option<Vec<u8>>,
    /// The code's language.
    pub language: super::Language,
}

/// Loads problems on demand (tests materialised, tools compiled).
pub trait ProblemSource: Sync {
    fn load(&self, key: &str) -> Result<LoadedProblem>;
}

/// What the scheduler needs done: compile one submission, run one of its tests. The
/// [`Judge`] does it in the sandbox; tests and benchmarks use a scripted runner.
pub trait SubmissionRunner: Sync {
    fn compile(
        &self,
        problem: &LoadedProblem,
        code: &[u8],
        language: super::Language,
    ) -> Result<Build>;
    fn run_test(
        &self,
        problem: &LoadedProblem,
        program: &Program,
        test: &str,
    ) -> Result<TestVerdict>;
    /// How many CPUs one test of `problem` may use at once (and so how many of the
    /// scheduler's slots it occupies): by default, a Communication test's manager and every
    /// user process each on a CPU of its own.
    fn test_width(&self, problem: &LoadedProblem) -> usize {
        match &problem.problem.task {
            TaskType::Batch => 1,
            TaskType::Communication(c) => c.num_processes.max(1) + 1,
        }
    }
    /// Of a test's slots, those held for a process that mostly waits (a Communication test's
    /// manager, blocked on the user processes' pipes): each may be lent to one untimed item.
    fn test_waiting_slots(&self, problem: &LoadedProblem) -> usize {
        match &problem.problem.task {
            TaskType::Batch => 0,
            TaskType::Communication(_) => 1,
        }
    }
}

impl SubmissionRunner for Judge {
    fn compile(
        &self,
        problem: &LoadedProblem,
        code: &[u8],
        language: super::Language,
    ) -> Result<Build> {
        Judge::compile(self, problem, code, language)
    }

    /// One slot for every test when a Communication test's processes share one CPU.
    fn test_width(&self, problem: &LoadedProblem) -> usize {
        self.placement().test_slots(&problem.problem.task).0
    }

    fn test_waiting_slots(&self, problem: &LoadedProblem) -> usize {
        self.placement().test_slots(&problem.problem.task).1
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
    /// What each submission's plan covers: some subtasks, or some tests run whatever fails.
    pub selection: Selection,
    /// Bound on one submission's whole evaluation.
    pub timeout: Option<Duration>,
}

/// A finished submission.
pub struct Finished {
    pub job: usize,
    /// Its verdicts, or why it could not be judged (judge-side failure, time-out, a problem
    /// that would not load): such a submission should be retried, not recorded.
    pub outcome: Result<Judged>,
}

/// A judged submission: the results, and the problem they are for.
pub struct Judged {
    pub problem: Arc<LoadedProblem>,
    pub results: Vec<SubtaskResult>,
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
    /// Worker time spent waiting for work, by what it waited for.
    pub idle: IdleTimes,
    /// How long each visit to the lock held it: the median is the scheduler's own cost, the
    /// mean beyond it mostly a holder waiting for a CPU (a busy machine preempts it).
    pub lock_holds: HoldHistogram,
    /// Nanoseconds workers spent executing work items (loads, compiles, tests), summed.
    pub working_nanos: AtomicU64,
    /// Of them, nanoseconds of untimed items run in a slot a Communication test lent.
    pub lent_nanos: AtomicU64,
    /// Told of every test result as soon as it is known (`judge` prints tests as they finish).
    pub on_test: TestObserver,
}

/// Nanoseconds workers waited for work, summed over the workers, by the reason there was
/// nothing to start (`bench evaluate` prints them, to show what leaves cores idle).
#[derive(Debug, Default)]
pub struct IdleTimes {
    /// A wide test at the head waited for slots (and backfilling was used up).
    pub wide_test: AtomicU64,
    /// The next submission's problem was being loaded (admission is in order).
    pub loading: AtomicU64,
    /// As many submissions in flight as allowed (2 × jobs), all busy.
    pub admission_cap: AtomicU64,
    /// Every submission admitted: the last ones run out.
    pub tail: AtomicU64,
    /// Anything else (waiting for the other workers' results).
    pub other: AtomicU64,
}

impl IdleTimes {
    fn reason(
        &self,
        state: &State,
        slots: usize,
        problems_of: impl Fn(usize) -> bool,
    ) -> &AtomicU64 {
        if state.blocked.is_some() && !state.with_frontier.is_empty() {
            &self.wide_test
        } else if state.pending.is_empty() {
            &self.tail
        } else if state.active.len() >= slots * 2 {
            &self.admission_cap
        } else if state.pending.front().is_some_and(|&job| problems_of(job)) {
            &self.loading
        } else {
            &self.other
        }
    }
}

/// A histogram of durations from nanoseconds to seconds: 64 ns steps up to 8 µs, then
/// doubling. Lock-free (one atomic add a sample), so that measuring the lock does not lengthen
/// it.
#[derive(Debug)]
pub struct HoldHistogram([AtomicU64; HoldHistogram::BUCKETS]);

impl Default for HoldHistogram {
    fn default() -> HoldHistogram {
        HoldHistogram(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl HoldHistogram {
    const FINE: u64 = 128;
    const STEP: u64 = 64;
    const BUCKETS: usize = Self::FINE as usize + 24;

    fn bucket(nanos: u64) -> usize {
        let fine_end = Self::FINE * Self::STEP;
        if nanos < fine_end {
            (nanos / Self::STEP) as usize
        } else {
            let octave = (nanos / fine_end).ilog2() as usize;
            (Self::FINE as usize + octave).min(Self::BUCKETS - 1)
        }
    }

    /// The middle of a bucket.
    fn value(bucket: usize) -> Duration {
        let fine_end = Self::FINE * Self::STEP;
        let nanos = if (bucket as u64) < Self::FINE {
            bucket as u64 * Self::STEP + Self::STEP / 2
        } else {
            let low = fine_end << (bucket as u64 - Self::FINE);
            low + low / 2
        };
        Duration::from_nanos(nanos)
    }

    pub fn record(&self, held: Duration) {
        let bucket = Self::bucket(held.as_nanos().min(u64::MAX as u128) as u64);
        self.0[bucket].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.0.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    /// The duration under which a fraction `q` of the samples fall (to the bucket's middle).
    pub fn quantile(&self, q: f64) -> Duration {
        let counts: Vec<u64> = self.0.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        let rank = ((total as f64 * q.clamp(0.0, 1.0)).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, n) in counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::value(bucket);
            }
        }
        Duration::ZERO
    }
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

/// A loaded problem with its plan, made once (outside the lock) for all its submissions.
struct Planned {
    problem: Arc<LoadedProblem>,
    /// The reference replay, for the final results.
    plan: SubmissionPlan,
    /// The same plan with tests numbered, for the incremental walks.
    indexed: IndexedPlan,
}

enum Slot {
    Loading,
    Ready(Arc<Planned>),
    /// Why it failed, for every submission of the problem, with the error's class (the exit
    /// code of a command it fails).
    Failed(String, Option<crate::error::ErrorClass>),
}

enum BuildState {
    NotStarted,
    Building,
    Ready(Arc<Program>),
}

struct Active {
    planned: Arc<Planned>,
    build: BuildState,
    /// Results by test.
    known: Vec<Option<TestResult>>,
    in_flight: Vec<bool>,
    /// Tests of the needed batch not yet given to a worker, in order.
    frontier: VecDeque<TestId>,
    /// The reference's walk over the known results: what is certainly needed next.
    exact: Walk,
    /// The walk as if every unknown test passed: what speculation runs next.
    ahead: Walk,
    /// Slots one test occupies.
    width: usize,
    /// Of them, slots it lends to untimed work (see [`Claim`]).
    lends: usize,
}

/// The slots a running work item holds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Claim {
    /// Slots of its own.
    slots: usize,
    /// Of them, slots held for a process that mostly waits, which one untimed item each may
    /// share.
    lends: usize,
    /// An untimed item sharing a lent slot: it holds no slot of its own.
    borrowed: bool,
}

impl Active {
    /// What one of its tests holds.
    fn claim(&self) -> Claim {
        Claim {
            slots: self.width,
            lends: self.lends,
            borrowed: false,
        }
    }
}

impl Claim {
    fn own(slots: usize) -> Claim {
        Claim {
            slots,
            lends: 0,
            borrowed: false,
        }
    }
}

fn known_of(known: &[Option<TestResult>], test: TestId) -> Known {
    match &known[test as usize] {
        None => Known::Unknown,
        Some(r) if r.score == 0.0 => Known::Zero,
        Some(_) => Known::NonZero,
    }
}

enum Work {
    Load(String),
    Compile(usize, Arc<Planned>, Vec<u8>, super::Language),
    Test(usize, Arc<Planned>, Arc<Program>, TestId),
}

/// Whether a submission's frontier gave a test.
enum Give {
    Work(Work, Claim),
    /// It has no frontier test to give (any more): look further.
    Gone,
    /// Its next test needs more slots than are free.
    Wait,
}

/// What a work item gave, recorded by the worker at its next visit to the lock.
enum Outcome {
    Loaded(
        String,
        Result<Arc<Planned>, (String, Option<crate::error::ErrorClass>)>,
    ),
    Compiled(usize, Result<Build>),
    Tested(usize, TestId, Result<TestResult>),
}

/// How a submission ended, decided under the lock; its [`Finished`] (the final replay, the
/// count of discarded results) is built after the lock is released.
struct Ending {
    job: usize,
    planned: Option<Arc<Planned>>,
    how: Ended,
}

enum Ended {
    /// The exact walk is complete: the replay over these results gives the verdicts.
    Judged(Vec<Option<TestResult>>),
    /// No code: every test SKIPPED.
    NoCode,
    /// A compilation error, with its feedback for every test.
    CompileError(String),
    /// Not judged (judge-side failure, time-out, problem not loaded).
    Failed(anyhow::Error),
}

struct State {
    pending: VecDeque<usize>,
    active: HashMap<usize, Active>,
    /// Active submissions with a frontier test to give, a compile to start, or possibly
    /// speculative tests: ordered by job, so that older submissions come first.
    with_frontier: BTreeSet<usize>,
    /// Those of them whose tests occupy one slot, which may fill slots a wider test at the
    /// head cannot use yet.
    narrow_frontier: BTreeSet<usize>,
    to_compile: BTreeSet<usize>,
    may_speculate: BTreeSet<usize>,
    /// Deadlines of the active submissions (`--timeout`), earliest first.
    deadlines: BinaryHeap<Reverse<(Instant, usize)>>,
    problems: HashMap<String, Slot>,
    remaining: HashMap<String, usize>,
    /// Work items being executed, and the slots they occupy.
    busy: usize,
    slots_used: usize,
    /// Slots lent by the running tests, and untimed items running in lent slots. A borrower
    /// whose lender ended holds a slot of its own until a new lender takes it in.
    lendable: usize,
    lent: usize,
    /// Workers waiting for work: woken one at a time, and only when there is work, so that a
    /// result does not wake every idle worker of a large pool.
    waiting: usize,
    /// The submission whose wide frontier test waits at the head for free slots, and how many
    /// one-slot items may still start before it (see [`Shared::choose`]).
    blocked: Option<usize>,
    backfills: usize,
}

impl State {
    /// Slots in use as seen by an item that would lend `lends` slots: the borrowers beyond
    /// the lent slots each hold one.
    fn used_with(&self, lends: usize) -> usize {
        self.slots_used + self.lent.saturating_sub(self.lendable + lends)
    }

    fn take(&mut self, claim: Claim) {
        self.slots_used += claim.slots;
        self.lendable += claim.lends;
        self.lent += usize::from(claim.borrowed);
    }

    fn release(&mut self, claim: Claim) {
        self.slots_used -= claim.slots;
        self.lendable -= claim.lends;
        self.lent -= usize::from(claim.borrowed);
    }

    fn drop_frontier(&mut self, job: usize) {
        self.with_frontier.remove(&job);
        self.narrow_frontier.remove(&job);
    }

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
    holds: &'a HoldHistogram,
}

impl Locked<'_> {
    fn account(&self) {
        let held = self.since.elapsed();
        self.held
            .fetch_add(held.as_nanos() as u64, Ordering::Relaxed);
        self.holds.record(held);
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
    jobs: &'a [SubmissionJob],
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
    jobs: &[SubmissionJob],
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
            narrow_frontier: BTreeSet::new(),
            to_compile: BTreeSet::new(),
            may_speculate: BTreeSet::new(),
            deadlines: BinaryHeap::new(),
            problems: HashMap::new(),
            remaining,
            busy: 0,
            slots_used: 0,
            lendable: 0,
            lent: 0,
            waiting: 0,
            blocked: None,
            backfills: 0,
        }),
        wake: Condvar::new(),
    };
    // Plain scoped threads rather than a rayon pool: each worker is one long blocking loop,
    // and rayon's idle threads spin looking for tasks (measured: 5 % of the CPU of `bench
    // scheduler` at 256 workers, at the start and the end of a run).
    let mut started = 0;
    let spawned = std::thread::scope(|scope| -> std::io::Result<()> {
        for i in 0..workers {
            std::thread::Builder::new()
                .name(format!("ioi-worker-{i}"))
                .spawn_scoped(scope, || shared.worker(on_done))?;
            started += 1;
        }
        Ok(())
    });
    match spawned {
        Ok(()) => Ok(()),
        // The workers that did start judge everything; fewer of them is only slower.
        Err(e) if started > 0 => {
            tracing::warn!("only {started} of {workers} workers could start: {e}");
            Ok(())
        }
        Err(e) => Err(e).context("cannot start the scheduler's workers"),
    }
}

impl Shared<'_> {
    fn lock(&self) -> Locked<'_> {
        // A worker that panicked leaves consistent state behind (every update is a single
        // assignment under the lock), so a poisoned lock is still usable.
        Locked {
            guard: Some(self.state.lock().unwrap_or_else(|e| e.into_inner())),
            since: Instant::now(),
            held: &self.progress.lock_held_nanos,
            holds: &self.progress.lock_holds,
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
        // The outcome of the previous item, recorded in the same visit to the lock that takes
        // the next one.
        let mut outcome: Option<(Outcome, Claim)> = None;
        loop {
            let mut endings = Vec::new();
            let (work, wake) = {
                let mut state = self.lock();
                if let Some((outcome, claim)) = outcome.take() {
                    state.busy -= 1;
                    state.release(claim);
                    self.record(&mut state, outcome, &mut endings);
                }
                loop {
                    match self.choose(&mut state, &mut endings) {
                        Some((work, claim)) => {
                            state.busy += 1;
                            state.take(claim);
                            // More work left: hand it to one waiting worker, which does
                            // the same in turn.
                            let wake = state.waiting > 0 && state.has_work(self.slots);
                            break (Some((work, claim)), wake);
                        }
                        None if state.pending.is_empty()
                            && state.active.is_empty()
                            && state.busy == 0 =>
                        {
                            break (None, false)
                        }
                        None if !endings.is_empty() => break (None, false),
                        None => {
                            let timeout = self.next_deadline(&state);
                            let reason = self.progress.idle.reason(&state, self.slots, |job| {
                                matches!(
                                    state.problems.get(&self.jobs[job].problem),
                                    Some(Slot::Loading)
                                )
                            });
                            let since = Instant::now();
                            state = self.wait(state, timeout);
                            reason.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
                        }
                    }
                }
            };
            // Notified after unlocking, so that the woken worker does not block on the lock
            // (and the futex call is not paid while holding it).
            if wake {
                self.wake.notify_one();
            }
            let stop = work.is_none() && endings.is_empty();
            for ending in endings {
                on_done(self.conclude(ending));
            }
            if let Some((work, claim)) = work {
                let start = Instant::now();
                outcome = Some((self.execute(work), claim));
                let nanos = start.elapsed().as_nanos() as u64;
                self.progress
                    .working_nanos
                    .fetch_add(nanos, Ordering::Relaxed);
                if claim.borrowed {
                    self.progress.lent_nanos.fetch_add(nanos, Ordering::Relaxed);
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

    /// Picks the next work item and the slots it occupies, ending submissions on the way.
    /// `None` when nothing can start now (no work, or not enough free slots for the next).
    ///
    /// A wide test (a Communication test's processes) at the head waits for enough free slots;
    /// on an idle machine it runs alone whatever its width. Meanwhile the slots free when it
    /// started waiting may be filled once each with one-slot items (backfilling: on 2 cores a
    /// 2-slot test waiting for a compile to end would otherwise leave a core idle for the whole
    /// compile); a slot freed after that stays free for the wide test, so it cannot starve.
    /// Untimed work takes a lent slot before a free one, whether a wide test waits or not.
    fn choose(&self, state: &mut State, endings: &mut Vec<Ending>) -> Option<(Work, Claim)> {
        self.expire(state, endings);
        let mut backfilling = false;
        let chosen = self.choose_item(state, endings, &mut backfilling);
        // An item in a lent slot takes no slot from the waiting wide test.
        if backfilling && chosen.as_ref().is_some_and(|(_, claim)| !claim.borrowed) {
            state.backfills -= 1;
        }
        chosen
    }

    fn choose_item(
        &self,
        state: &mut State,
        endings: &mut Vec<Ending>,
        backfilling: &mut bool,
    ) -> Option<(Work, Claim)> {
        let slots = self.slots;
        let fits = |width: usize, used: usize| used == 0 || used + width <= slots;
        let borrowed = Claim {
            slots: 0,
            lends: 0,
            borrowed: true,
        };
        loop {
            // 1. Frontier tests: the head's, or while it waits for slots, a one-slot one.
            if let Some(&job) = state.with_frontier.first() {
                match self.give_frontier(state, job) {
                    Give::Work(work, claim) => {
                        state.blocked = None;
                        return Some((work, claim));
                    }
                    Give::Gone => continue,
                    Give::Wait => {
                        if state.blocked != Some(job) {
                            state.blocked = Some(job);
                            state.backfills = slots.saturating_sub(state.used_with(0));
                        }
                        if state.backfills == 0 || !fits(1, state.used_with(0)) {
                            if state.lent < state.lendable {
                                let work = self.give_untimed(state, endings)?;
                                return Some((work, borrowed));
                            }
                            return None;
                        }
                        *backfilling = true;
                    }
                }
            }
            if *backfilling {
                if let Some(&job) = state.narrow_frontier.first() {
                    match self.give_frontier(state, job) {
                        Give::Work(work, claim) => return Some((work, claim)),
                        Give::Gone => continue,
                        Give::Wait => return None,
                    }
                }
            }
            // 2. Compiles and admission, untimed: in a lent slot first, so that the free slots
            // stay for timed runs.
            let claim = if state.lent < state.lendable {
                Some(borrowed)
            } else if fits(1, state.used_with(0)) {
                Some(Claim::own(1))
            } else {
                None
            };
            if let Some(claim) = claim {
                if let Some(work) = self.give_untimed(state, endings) {
                    return Some((work, claim));
                }
            }
            // 3. Speculation ahead of the frontiers (never ahead of a waiting wide test).
            if *backfilling {
                return None;
            }
            let job = *state.may_speculate.first()?;
            let Some(a) = state.active.get(&job) else {
                state.may_speculate.remove(&job);
                continue;
            };
            let claim = a.claim();
            if !fits(claim.slots, state.used_with(claim.lends)) {
                return None;
            }
            let Some(a) = state.active.get_mut(&job) else {
                continue;
            };
            let BuildState::Ready(program) = &a.build else {
                state.may_speculate.remove(&job);
                continue;
            };
            let (known, in_flight) = (&a.known, &a.in_flight);
            let next = a.ahead.next_speculative(
                &a.planned.indexed,
                |t| known_of(known, t),
                |t| in_flight[t as usize],
            );
            let Some(test) = next else {
                // The walk is complete: nothing more until a result proves it wrong.
                state.may_speculate.remove(&job);
                continue;
            };
            a.in_flight[test as usize] = true;
            return Some((
                Work::Test(job, a.planned.clone(), program.clone(), test),
                claim,
            ));
        }
    }

    /// A compile, or the admission of the next submission (loading its problem first if
    /// needed): the work that is not timed.
    fn give_untimed(&self, state: &mut State, endings: &mut Vec<Ending>) -> Option<Work> {
        loop {
            if let Some(job) = state.to_compile.pop_first() {
                if let Some(a) = state.active.get_mut(&job) {
                    a.build = BuildState::Building;
                    let code = self.jobs[job].code.clone().unwrap_or_default();
                    let language = self.jobs[job].language;
                    return Some(Work::Compile(job, a.planned.clone(), code, language));
                }
                continue;
            }
            if state.active.len() >= self.slots * 2 {
                return None;
            }
            let &next = state.pending.front()?;
            let key = &self.jobs[next].problem;
            match state.problems.get(key) {
                None => {
                    state.problems.insert(key.clone(), Slot::Loading);
                    return Some(Work::Load(key.clone()));
                }
                Some(Slot::Ready(planned)) => {
                    let planned = planned.clone();
                    state.pending.pop_front();
                    self.admit(state, next, planned, endings);
                }
                Some(Slot::Failed(message, class)) => {
                    let error = anyhow!("{message}");
                    let how = Ended::Failed(match class {
                        Some(class) => crate::error::classify(*class, error),
                        None => error,
                    });
                    state.pending.pop_front();
                    self.complete(state, next, None, how, endings);
                }
                Some(Slot::Loading) => return None,
            }
        }
    }

    /// The next frontier test of submission `job`, if it fits.
    fn give_frontier(&self, state: &mut State, job: usize) -> Give {
        let Some(a) = state.active.get(&job) else {
            state.drop_frontier(job);
            return Give::Gone;
        };
        let claim = a.claim();
        let used = state.used_with(claim.lends);
        if used != 0 && used + claim.slots > self.slots {
            return Give::Wait;
        }
        let Some(a) = state.active.get_mut(&job) else {
            return Give::Gone;
        };
        let BuildState::Ready(program) = &a.build else {
            state.drop_frontier(job);
            return Give::Gone;
        };
        let Some(test) = a.frontier.pop_front() else {
            state.drop_frontier(job);
            return Give::Gone;
        };
        a.in_flight[test as usize] = true;
        let work = Work::Test(job, a.planned.clone(), program.clone(), test);
        if a.frontier.is_empty() {
            state.drop_frontier(job);
        }
        Give::Work(work, claim)
    }

    /// Fails the submissions whose `--timeout` has passed.
    fn expire(&self, state: &mut State, endings: &mut Vec<Ending>) {
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
                self.finish(state, job, Ended::Failed(e), endings);
            }
        }
    }

    fn admit(
        &self,
        state: &mut State,
        job: usize,
        planned: Arc<Planned>,
        endings: &mut Vec<Ending>,
    ) {
        if self.jobs[job].code.as_deref().is_none_or(<[u8]>::is_empty) {
            self.complete(state, job, Some(planned), Ended::NoCode, endings);
            return;
        }
        let width = self.runner.test_width(&planned.problem).max(1);
        // A test wider than the machine runs alone: nothing shares its slots.
        let lends = match width <= self.slots {
            true => self
                .runner
                .test_waiting_slots(&planned.problem)
                .min(width - 1),
            false => 0,
        };
        let tests = planned.indexed.len();
        let walk = Walk::new(&planned.indexed);
        state.active.insert(
            job,
            Active {
                known: vec![None; tests],
                in_flight: vec![false; tests],
                frontier: VecDeque::new(),
                exact: walk.clone(),
                ahead: walk,
                planned,
                build: BuildState::NotStarted,
                width,
                lends,
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

    /// Records what a work item gave.
    fn record(&self, state: &mut State, outcome: Outcome, endings: &mut Vec<Ending>) {
        match outcome {
            Outcome::Loaded(key, loaded) => {
                let slot = match loaded {
                    Ok(planned) => Slot::Ready(planned),
                    Err((message, class)) => Slot::Failed(message, class),
                };
                state.problems.insert(key, slot);
            }
            Outcome::Compiled(job, build) => {
                let Some(a) = state.active.get_mut(&job) else {
                    return;
                };
                match build {
                    Ok(Build::Program(program)) => {
                        a.build = BuildState::Ready(Arc::new(program));
                        let known = &a.known;
                        let next = a.exact.advance(&a.planned.indexed, |t| known_of(known, t));
                        state.may_speculate.insert(job);
                        self.needs(state, job, next, endings);
                    }
                    Ok(Build::Error(error)) => {
                        let feedback = error.feedback();
                        self.finish(state, job, Ended::CompileError(feedback), endings);
                    }
                    Err(e) => {
                        let e = e.context("compilation failed on the judge side");
                        self.finish(state, job, Ended::Failed(e), endings);
                    }
                }
            }
            Outcome::Tested(job, test, outcome) => {
                let Some(a) = state.active.get_mut(&job) else {
                    self.progress
                        .tests_discarded
                        .fetch_add(1, Ordering::Relaxed);
                    return;
                };
                a.in_flight[test as usize] = false;
                match outcome {
                    Ok(result) => {
                        self.progress.on_test.notify(job, &result);
                        let zero = result.score == 0.0;
                        a.known[test as usize] = Some(result);
                        let known = &a.known;
                        let next = a
                            .exact
                            .record(&a.planned.indexed, test, |t| known_of(known, t));
                        if zero && a.ahead.assumed(test) {
                            // Speculation went ahead as if this test passed.
                            a.ahead.restart_from(&a.exact);
                            state.may_speculate.insert(job);
                        }
                        self.needs(state, job, next, endings);
                    }
                    Err(e) => {
                        let e = e.context(format!("test {}", a.planned.indexed.name(test)));
                        self.finish(state, job, Ended::Failed(e), endings);
                    }
                }
            }
        }
    }

    /// After the exact walk of submission `job` moved: `None` ends it, a new batch becomes
    /// its frontier (less what speculation already runs), an empty one changes nothing.
    fn needs(
        &self,
        state: &mut State,
        job: usize,
        next: Option<Vec<TestId>>,
        endings: &mut Vec<Ending>,
    ) {
        let Some(a) = state.active.get_mut(&job) else {
            return;
        };
        match next {
            None => {
                let known = std::mem::take(&mut a.known);
                self.finish(state, job, Ended::Judged(known), endings);
            }
            Some(batch) if batch.is_empty() => {}
            Some(batch) => {
                let in_flight = &a.in_flight;
                a.frontier = batch
                    .into_iter()
                    .filter(|&t| !in_flight[t as usize])
                    .collect();
                if !a.frontier.is_empty() {
                    let narrow = a.width == 1;
                    state.with_frontier.insert(job);
                    if narrow {
                        state.narrow_frontier.insert(job);
                    }
                }
            }
        }
    }

    /// Removes an active submission and reports it; results still in flight are discarded
    /// when they arrive.
    fn finish(&self, state: &mut State, job: usize, how: Ended, endings: &mut Vec<Ending>) {
        let Some(a) = state.active.remove(&job) else {
            return;
        };
        state.drop_frontier(job);
        state.to_compile.remove(&job);
        state.may_speculate.remove(&job);
        self.progress
            .active
            .store(state.active.len(), Ordering::Relaxed);
        self.complete(state, job, Some(a.planned), how, endings);
    }

    fn complete(
        &self,
        state: &mut State,
        job: usize,
        planned: Option<Arc<Planned>>,
        how: Ended,
        endings: &mut Vec<Ending>,
    ) {
        self.release_problem(state, &self.jobs[job].problem);
        self.progress
            .submissions_done
            .fetch_add(1, Ordering::Relaxed);
        endings.push(Ending { job, planned, how });
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

    /// Builds a submission's final report, outside the lock: the full replay over its known
    /// results (the one reference of the verdicts), and the count of results it did not use.
    fn conclude(&self, ending: Ending) -> Finished {
        let Ending { job, planned, how } = ending;
        let Some(planned) = planned else {
            let outcome = match how {
                Ended::Failed(e) => Err(e),
                _ => Err(anyhow!("internal: a submission ended without its problem")),
            };
            return Finished { job, outcome };
        };
        let plan = &planned.plan;
        let result = match how {
            Ended::NoCode => Ok(plan.uniform(TestResult::skipped)),
            Ended::CompileError(feedback) => Ok(plan.uniform(|t| TestResult {
                score: 0.0,
                status: Verdict::CompilationError,
                feedback: Some(feedback.clone()),
                ..TestResult::skipped(t)
            })),
            Ended::Failed(e) => Err(e),
            Ended::Judged(known) => {
                let known: HashMap<String, TestResult> = known
                    .into_iter()
                    .flatten()
                    .map(|r| (r.test_name.clone(), r))
                    .collect();
                match plan.replay(&known) {
                    Replay::Done(results) => {
                        let used: HashSet<&str> = results
                            .iter()
                            .flat_map(|s| s.test_results.iter())
                            .filter(|t| t.status != Verdict::Skipped)
                            .map(|t| t.test_name.as_str())
                            .collect();
                        let discarded = known.keys().filter(|k| !used.contains(k.as_str())).count();
                        self.progress
                            .tests_discarded
                            .fetch_add(discarded, Ordering::Relaxed);
                        Ok(results)
                    }
                    Replay::Need(_) => Err(anyhow!("internal: the plan's walks disagree")),
                }
            }
        };
        Finished {
            job,
            outcome: result.map(|results| Judged {
                problem: planned.problem.clone(),
                results,
            }),
        }
    }

    /// Runs one work item, outside the lock.
    fn execute(&self, work: Work) -> Outcome {
        match work {
            Work::Load(key) => {
                let loaded = unpanicking("loading a problem", || self.source.load(&key))
                    .map(|problem| {
                        let selection = &self.options.selection;
                        let batch = self.options.batch_size;
                        let plan = SubmissionPlan::new(&problem.problem, selection, batch);
                        Arc::new(Planned {
                            indexed: IndexedPlan::new(&plan),
                            plan,
                            problem: Arc::new(problem),
                        })
                    })
                    .map_err(|e| (format!("{e:#}"), crate::error::class_of(&e)));
                Outcome::Loaded(key, loaded)
            }
            Work::Compile(job, planned, code, language) => {
                let build = unpanicking("compiling a submission", || {
                    self.runner.compile(&planned.problem, &code, language)
                });
                self.progress.compiles.fetch_add(1, Ordering::Relaxed);
                Outcome::Compiled(job, build)
            }
            Work::Test(job, planned, program, test) => {
                let name = planned.indexed.name(test);
                let outcome = unpanicking("running a test", || {
                    self.runner.run_test(&planned.problem, &program, name)
                })
                .map(|verdict| verdict.into_result(name));
                self.progress.tests_run.fetch_add(1, Ordering::Relaxed);
                Outcome::Tested(job, test, outcome)
            }
        }
    }
}

/// `work`, with a panic in it made an error of the work: a worker that unwound out of its loop
/// would leave its claim on the scheduler's slots, and every other worker would wait for it
/// for ever. The submission whose work panicked gets the error, as for any host failure, and
/// the rest of the run goes on.
fn unpanicking<T>(what: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(anyhow::anyhow!(
                "ioi-run panicked while {what}: {message} (a bug of ioi-run: please report it)"
            ))
        }
    }
}

#[cfg(test)]
mod tests;
mod walk;
