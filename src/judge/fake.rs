//! A scripted [`SubmissionRunner`]: verdicts and durations decided by a function of the code
//! and the test, no process, no sandbox. The scheduler is tested and benchmarked with it
//! (`ioi-run bench scheduler`), so that its behaviour at 64 or 256 workers is known without
//! 256 cores.
//!
//! The "program" of a compiled submission is its code (carried in [`Program::Binary`]); code
//! starting with `CE` does not compile, and code starting with `JUDGE-ERROR` makes the compile
//! fail on the judge side.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::schedule::{ProblemSource, SubmissionRunner};
use super::{Build, CompileError, LoadedProblem, ProblemTools, Program, TestVerdict};
use crate::problem::{Problem, Subtask, TaskType, TestSet};

/// What one scripted test does: its score, and how long it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FakeRun {
    pub score: f64,
    pub duration: Duration,
}

type Script = dyn Fn(&str, &str) -> FakeRun + Send + Sync;
type CompileHook = dyn Fn(&str) + Send + Sync;

/// The scripted runner.
pub struct FakeRunner {
    script: Box<Script>,
    compile_time: Duration,
    /// Tests burn their duration as CPU time of the worker's thread instead of sleeping.
    spin: bool,
    /// Called with the code at the start of every compile (a test can hold a compile there).
    compile_hook: Option<Box<CompileHook>>,
    /// Nanoseconds spent inside `run_test`, over all workers.
    inside_runs: AtomicU64,
    /// The same, each run counted once per scheduler slot its test occupies.
    slot_inside_runs: AtomicU64,
    runs: AtomicUsize,
    compiles: AtomicUsize,
}

impl FakeRunner {
    /// A runner whose test `test` of submission `code` does `script(code, test)`.
    pub fn new(script: impl Fn(&str, &str) -> FakeRun + Send + Sync + 'static) -> FakeRunner {
        FakeRunner {
            script: Box::new(script),
            compile_time: Duration::ZERO,
            spin: false,
            compile_hook: None,
            inside_runs: AtomicU64::new(0),
            slot_inside_runs: AtomicU64::new(0),
            runs: AtomicUsize::new(0),
            compiles: AtomicUsize::new(0),
        }
    }

    /// Every compile takes this long.
    pub fn with_compile_time(mut self, time: Duration) -> FakeRunner {
        self.compile_time = time;
        self
    }

    /// Calls `hook(code)` at the start of every compile, on the compiling worker.
    pub fn with_compile_hook(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> FakeRunner {
        self.compile_hook = Some(Box::new(hook));
        self
    }

    /// Tests spin on the CPU for their duration (of the worker thread's CPU time, so that a
    /// test costs the same CPU however many threads share the cores) instead of sleeping.
    pub fn spinning(mut self) -> FakeRunner {
        self.spin = true;
        self
    }

    /// Time spent inside test runs, summed over the workers: wall time, or the threads' CPU
    /// time when [`FakeRunner::spinning`].
    pub fn time_inside_runs(&self) -> Duration {
        Duration::from_nanos(self.inside_runs.load(Ordering::Relaxed))
    }

    /// [`FakeRunner::time_inside_runs`] with each run counted once per slot its test
    /// occupies (a Communication test's processes): how full the scheduler kept its slots.
    pub fn slot_time_inside_runs(&self) -> Duration {
        Duration::from_nanos(self.slot_inside_runs.load(Ordering::Relaxed))
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::Relaxed)
    }

    pub fn compiles(&self) -> usize {
        self.compiles.load(Ordering::Relaxed)
    }
}

impl SubmissionRunner for FakeRunner {
    fn compile(
        &self,
        _problem: &LoadedProblem,
        code: &[u8],
        _language: super::Language,
    ) -> Result<Build> {
        // Scripted programs are text: their code says what they do.
        let code = std::str::from_utf8(code).context("fake program code is text")?;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        if let Some(hook) = &self.compile_hook {
            hook(code);
        }
        if !self.compile_time.is_zero() {
            std::thread::sleep(self.compile_time);
        }
        if code.starts_with("JUDGE-ERROR") {
            bail!("scripted judge-side failure");
        }
        if code.starts_with("CE") {
            return Ok(Build::Error(CompileError::exited(
                1,
                format!("scripted error in {code}"),
            )));
        }
        Ok(Build::Program(Program::Binary(
            super::compile::Executable::at(code),
        )))
    }

    fn run_test(
        &self,
        problem: &LoadedProblem,
        program: &Program,
        test: &str,
    ) -> Result<TestVerdict> {
        let start = Instant::now();
        let cpu_start = thread_cpu_time();
        let Program::Binary(code) = program else {
            bail!("the fake runner only runs its own programs");
        };
        let code = code.to_str().context("fake program is its code")?;
        let run = (self.script)(code, test);
        if self.spin {
            while thread_cpu_time().saturating_sub(cpu_start) < run.duration {
                std::hint::spin_loop();
            }
        } else if !run.duration.is_zero() {
            std::thread::sleep(run.duration);
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        let verdict = TestVerdict {
            score: run.score,
            feedback: if run.score == 0.0 {
                "Output isn't correct".into()
            } else {
                "Output is correct".into()
            },
            time: run.duration.as_secs_f64(),
            wall_time: run.duration.as_secs_f64(),
            memory: (code.len() + test.len()) as u64,
            status: None,
            runs: Vec::new(),
        };
        let inside = match self.spin {
            true => thread_cpu_time().saturating_sub(cpu_start),
            false => start.elapsed(),
        };
        self.inside_runs
            .fetch_add(inside.as_nanos() as u64, Ordering::Relaxed);
        let slots = self.test_width(problem) as u64;
        self.slot_inside_runs
            .fetch_add(inside.as_nanos() as u64 * slots, Ordering::Relaxed);
        Ok(verdict)
    }
}

/// CPU time of the calling thread (user and system).
pub fn thread_cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    // Cannot fail for the calling thread; a zero would only make a spinning test return early.
    getrusage(UsageWho::RUSAGE_THREAD)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| {
                Duration::new(tv.tv_sec() as u64, tv.tv_usec() as u32 * 1000)
            };
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or_default()
}

/// Problems by key, made on demand (no tests on disk: the fake runner needs none).
pub struct FakeProblems(pub HashMap<String, Problem>);

impl ProblemSource for FakeProblems {
    fn load(&self, key: &str) -> Result<LoadedProblem> {
        let problem = self
            .0
            .get(key)
            .with_context(|| format!("no problem {key}"))?;
        Ok(LoadedProblem {
            problem: problem.clone(),
            tests: TestSet::default(),
            tools: ProblemTools::default(),
        })
    }
}

/// A problem with the given subtasks (`(name, tests)`), 10 points each.
pub fn problem(id: &str, task: TaskType, subtasks: &[(&str, Vec<String>)]) -> Problem {
    Problem {
        year: 2024,
        id: id.into(),
        name: id.into(),
        day: "1".into(),
        task,
        time_limit: 1.0,
        memory_limit: 1 << 28,
        subtasks: subtasks
            .iter()
            .map(|(name, tests)| Subtask {
                name: name.to_string(),
                points: 10.0,
                score_precision: 2,
                test_names: tests.clone(),
            })
            .collect(),
        grader_files: vec![],
    }
}

/// A deterministic pseudo-random number from a string and a salt (FNV-1a then a mix), for
/// scripts that must give the same answer every time.
pub fn hash(text: &str, salt: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ salt;
    for b in text.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}
