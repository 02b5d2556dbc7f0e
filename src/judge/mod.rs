//! Judging: compile once, run tests in the sandbox, score with the reference semantics.
//!
//! [`Judge`] owns the sandbox and the compile cache and knows how to compile a submission and
//! run one test with the chosen runner (native, or the Piston-style scripts). [`schedule`]
//! spreads the tests of many submissions over all cores; [`plan`] decides which tests a
//! submission needs so that early stopping matches the reference exactly.

pub mod cache;
pub(crate) mod check;
pub mod compile;
pub(crate) mod compiled;
pub mod fake;
pub(crate) mod kept;
pub(crate) mod language;
pub(crate) mod native;
pub mod observer;
mod options;
pub(crate) mod pch;
pub(crate) mod phases;
pub(crate) mod placement;
pub mod plan;
pub(crate) mod relay;
pub mod schedule;
pub(crate) mod scripts;
pub mod stop;
pub(crate) mod tps;
pub mod verdicts;
mod workdir;
pub(crate) use workdir::read_capped;
pub use workdir::OUTPUT_CAP;

use std::sync::Arc;

use anyhow::{bail, Result};
use ioi_sandbox::{Sandbox, SandboxOptions};

use crate::problem::{Problem, TaskType, TestCase, TestSet};
use crate::score::{TestResult, Verdict};
pub use compile::CompileError;
use compile::{CompileCache, CompileProfile, Compiled};
pub use language::Language;
pub use options::{JudgeOptions, Runner};
pub use workdir::BoxDir;

/// Compiled checker and manager of a problem (native runner).
#[derive(Debug, Clone, Default)]
pub struct ProblemTools {
    pub checker: Option<compile::Executable>,
    pub manager: Option<compile::Executable>,
}

/// A problem ready to judge: its tests on disk and its tools compiled.
#[derive(Debug)]
pub struct LoadedProblem {
    pub problem: Problem,
    pub tests: TestSet,
    pub tools: ProblemTools,
}

/// The outcome of one test before it becomes a [`TestResult`].
#[derive(Debug, Clone, PartialEq)]
pub struct TestVerdict {
    pub score: f64,
    pub feedback: String,
    /// CPU seconds of the (slowest) user process.
    pub time: f64,
    pub wall_time: f64,
    /// Peak memory in bytes of the (largest) user process.
    pub memory: u64,
    /// The status, when the runner knows what happened (native: a program that ended normally
    /// and was scored 0 is WA whatever the checker's wording). `None` in script mode, where
    /// only the text is known: the status is derived from the feedback as the reference does.
    pub status: Option<Verdict>,
    /// How each user process of the test ended and what it used, in order (native runner;
    /// empty in script mode, where the run script is the only process the judge sees).
    pub runs: Vec<ProcessRun>,
}

/// One user process of a test: how it ended, its CPU time and its peak memory (what the
/// server's run metrics count, docs/serve.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessRun {
    pub termination: ioi_sandbox::Termination,
    /// CPU seconds.
    pub cpu_time: f64,
    /// Peak memory in bytes.
    pub memory: u64,
}

impl ProcessRun {
    pub fn of(outcome: &ioi_sandbox::Outcome) -> ProcessRun {
        ProcessRun {
            termination: outcome.status,
            cpu_time: outcome.cpu_time,
            memory: outcome.memory,
        }
    }
}

impl TestVerdict {
    pub fn into_result(self, test_name: &str) -> TestResult {
        TestResult {
            test_name: test_name.to_string(),
            score: self.score,
            status: self
                .status
                .unwrap_or_else(|| Verdict::of_run(self.score, &self.feedback)),
            feedback: Some(self.feedback),
            time: Some(self.time),
            wall_time: Some(self.wall_time),
            memory: Some(self.memory),
        }
    }
}

/// A compiled submission.
#[derive(Clone)]
pub enum Program {
    Binary(compile::Executable),
    ScriptBox(Arc<BoxDir>),
}

/// What compiling a submission gave.
#[derive(Clone)]
pub enum Build {
    Program(Program),
    Error(CompileError),
}

/// The factors `--time-scale` accepts: a host ten times slower or faster than the contest's
/// is already far from any real one.
pub const TIME_SCALES: std::ops::RangeInclusive<f64> = 0.1..=100.0;

/// The folders of the sandbox's `PATH`, where compiles find `g++`.
const BOX_PATH_DIRS: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];

/// Why nothing could be compiled, when `g++` is in none of `dirs`: without this check every
/// submission would be a compilation error ("exit code 127"), a verdict the host caused.
fn missing_compiler(dirs: &[&str]) -> Option<String> {
    let found = dirs
        .iter()
        .any(|dir| std::path::Path::new(dir).join("g++").is_file());
    (!found).then(|| {
        format!(
            "g++ is in none of {} (the sandbox's PATH): install it (Debian and Ubuntu: apt \
             install g++) and check the host with `ioi-run doctor`",
            dirs.join(", ")
        )
    })
}

/// The judge: a sandbox, a compile cache and a runner.
pub struct Judge {
    sandbox: Arc<Sandbox>,
    cache: Arc<CompileCache>,
    /// Builds the precompiled headers compiles do not wait for (native runner).
    headers: Option<compile::HeaderBuilder>,
    headers_ahead: bool,
    runner: Runner,
    profile: CompileProfile,
    time_scale: f64,
    placement: placement::Placement,
    cpus: placement::CpuPool,
    debugging: native::Debugging,
}

impl Drop for Judge {
    /// The header in progress is finished, and the folders of the tests run are removed,
    /// before the judge is gone.
    fn drop(&mut self) {
        self.headers = None;
        crate::scratch::wait_for_removals();
    }
}

impl Judge {
    pub fn new(options: JudgeOptions) -> Result<Judge> {
        if options.compile_profile != CompileProfile::Reference
            && matches!(options.runner, Runner::Scripts(_))
        {
            return Err(crate::error::usage(anyhow::anyhow!(
                "--compile-profile {} needs the native runner: with --runner scripts the compile \
                 script chooses the flags",
                options.compile_profile.as_str()
            )));
        }
        if !(TIME_SCALES.contains(&options.time_scale)) {
            return Err(crate::error::usage(anyhow::anyhow!(
                "time scale {} is out of range: give a factor from {} to {}",
                options.time_scale,
                TIME_SCALES.start(),
                TIME_SCALES.end()
            )));
        }
        if options.keep_dir.is_some() && matches!(options.runner, Runner::Scripts(_)) {
            return Err(crate::error::usage(anyhow::anyhow!(
                "keeping outputs needs the native runner: with --runner scripts the run script \
                 reads them itself"
            )));
        }
        if options.time_scale != 1.0 && matches!(options.runner, Runner::Scripts(_)) {
            return Err(crate::error::usage(anyhow::anyhow!(
                "--time-scale needs the native runner: with --runner scripts the run script reads \
                 the time limit from graders/grader_config.json itself"
            )));
        }
        if let Some(missing) = missing_compiler(BOX_PATH_DIRS) {
            return Err(crate::error::host(anyhow::anyhow!("{missing}")));
        }
        crate::scratch::sweep_stale();
        let sandbox =
            Arc::new(Sandbox::new(SandboxOptions::default()).map_err(crate::error::host)?);
        let cache = Arc::new(
            CompileCache::new(options.cache_dir, options.cache_max_bytes)
                .map_err(crate::error::host)?
                .with_max_program_bytes(options.max_program_bytes),
        );
        let native = matches!(options.runner, Runner::Native);
        let headers = match native {
            true => Some(compile::HeaderBuilder::start(
                Arc::clone(&cache),
                Arc::clone(&sandbox),
            )?),
            false => None,
        };
        let headers_ahead = options.headers_ahead && native;
        if headers_ahead {
            cache.headers_ahead(&sandbox, None, options.compile_profile);
        }
        Ok(Judge {
            sandbox,
            cache,
            headers,
            headers_ahead,
            runner: options.runner,
            profile: options.compile_profile,
            time_scale: options.time_scale,
            placement: options.placement,
            cpus: placement::CpuPool::of_this_process(),
            debugging: native::Debugging {
                keep_dir: options.keep_dir,
                env: options.compile_profile.run_env(),
            },
        })
    }

    /// Where this judge runs a Communication test's processes.
    pub fn placement(&self) -> placement::Placement {
        self.placement
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// How this judge compiles submissions.
    pub fn compile_profile(&self) -> CompileProfile {
        self.profile
    }

    /// The factor every time limit is multiplied by.
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// Checks the problem is judgeable and compiles its checker and manager (once; cached).
    /// The problem's time limit becomes the scaled one here, so that every run (and every
    /// wall limit derived from it) sees the same limit.
    pub fn prepare(&self, mut problem: Problem, tests: TestSet) -> Result<LoadedProblem> {
        problem.time_limit *= self.time_scale;
        for subtask in &problem.subtasks {
            for test in &subtask.test_names {
                if tests.get(test).is_none() {
                    bail!(
                        "problem {}: subtask {} names test {test:?}, which has no input/output",
                        problem.id,
                        subtask.name
                    );
                }
            }
        }
        // The script-mode contract (docs/judging.md#script-mode) reads the manager's verdict from
        // its stdout; a checker judging the manager's output (TPS packages) exists only natively.
        if matches!(self.runner, Runner::Scripts(_))
            && matches!(problem.task, TaskType::Communication(_))
            && problem.checker().is_some()
        {
            bail!(
                "problem {}: a Communication task with a checker is judged by the native runner only (not --runner scripts)",
                problem.id
            );
        }
        if self.headers_ahead {
            self.cache
                .headers_ahead(&self.sandbox, Some(&problem), self.profile);
        }
        let mut tools = ProblemTools::default();
        if matches!(self.runner, Runner::Native) {
            if let Some(source) = problem.checker() {
                tools.checker = Some(self.tool(&problem, source, "checker")?);
            }
            if let TaskType::Communication(_) = problem.task {
                let Some(source) = problem.manager() else {
                    bail!(
                        "problem {}: a Communication task needs graders/manager.cpp",
                        problem.id
                    )
                };
                tools.manager = Some(self.tool(&problem, source, "manager")?);
            }
        }
        Ok(LoadedProblem {
            problem,
            tests,
            tools,
        })
    }

    fn tool(
        &self,
        problem: &Problem,
        source: &crate::problem::GraderFile,
        what: &str,
    ) -> Result<compile::Executable> {
        match self.cache.tool(&self.sandbox, problem, source)? {
            Compiled::Binary(path) => Ok(path),
            Compiled::Error(error) => Err(ToolDoesNotCompile(format!(
                "problem {}: the {what} {} {error}",
                problem.id, source.path
            ))
            .into()),
        }
    }

    /// Compiles a submission (once per distinct code, language and problem). The code is
    /// bytes, compiled as they are (g++ accepts sources that are not UTF-8). A compile that
    /// ioi-run stopped is the error [`stop::Aborted`], never a [`Build::Error`].
    pub fn compile(
        &self,
        loaded: &LoadedProblem,
        code: &[u8],
        language: Language,
    ) -> Result<Build> {
        stop::check()?;
        let start = phases::now();
        let build = self.compile_unrecorded(loaded, code, language);
        phases::since(phases::Phase::Compile, start);
        build
    }

    fn compile_unrecorded(
        &self,
        loaded: &LoadedProblem,
        code: &[u8],
        language: Language,
    ) -> Result<Build> {
        match &self.runner {
            Runner::Native => Ok(
                match self.cache.submission(
                    &self.sandbox,
                    &loaded.problem,
                    code,
                    self.profile,
                    language,
                )? {
                    Compiled::Binary(path) => Build::Program(Program::Binary(path)),
                    Compiled::Error(error) => Build::Error(error),
                },
            ),
            Runner::Scripts(_) if language != Language::Cpp => bail!(
                "a {language} submission needs the native runner: the compile script of \
                 --runner scripts builds C++ (graders/{}.cpp)",
                loaded.problem.id
            ),
            Runner::Scripts(scripts) => Ok(
                match scripts::compile(&self.sandbox, scripts, &loaded.problem, code)? {
                    scripts::ScriptBuild::Box(dir) => Build::Program(Program::ScriptBox(dir)),
                    scripts::ScriptBuild::Error(error) => Build::Error(error),
                },
            ),
        }
    }

    /// Runs one test of a compiled submission.
    pub fn run_test(
        &self,
        loaded: &LoadedProblem,
        program: &Program,
        test: &TestCase,
    ) -> Result<TestVerdict> {
        stop::check()?;
        let problem = &loaded.problem;
        // The processes of a Communication test share one CPU (docs/judging.md#cpu-placement).
        let lease = match (&problem.task, self.placement) {
            (TaskType::Communication(_), placement::Placement::SharedCpu) => {
                Some(self.cpus.lease())
            }
            _ => None,
        };
        let cpu = lease.as_ref().map(placement::CpuLease::cpu);
        let start = phases::now();
        let verdict = match (program, &problem.task) {
            (Program::ScriptBox(dir), _) => {
                scripts::run_test(&self.sandbox, problem, dir, test, cpu)
            }
            (Program::Binary(bin), TaskType::Batch) => native::run_batch(
                &self.sandbox,
                problem,
                &loaded.tools,
                bin,
                test,
                &self.debugging,
            ),
            (Program::Binary(bin), TaskType::Communication(_)) => native::run_communication(
                &self.sandbox,
                problem,
                &loaded.tools,
                bin,
                test,
                cpu,
                &self.debugging,
            ),
        };
        phases::since(phases::Phase::Test, start);
        verdict
    }
}

impl Judge {
    /// Runs a compiled submission on an input of the user's, as a test would run it, and
    /// judges nothing (`judge --input`); its streams go to the keep folder.
    pub fn run_input(
        &self,
        loaded: &LoadedProblem,
        program: &Program,
        input: &std::path::Path,
    ) -> Result<native::InputRun> {
        stop::check()?;
        let Program::Binary(bin) = program else {
            bail!("running on an input of your own needs the native runner")
        };
        native::run_input(
            &self.sandbox,
            &loaded.problem,
            &loaded.tools,
            bin,
            input,
            &self.debugging,
        )
    }
}

impl Judge {
    /// Runs a Communication test again with its conversation relayed, and keeps what was
    /// said in the keep folder under the test's name (`judge`, for a test it explains;
    /// [`native::replay`]). Nothing is judged; a Batch test is left alone.
    pub fn replay(&self, loaded: &LoadedProblem, program: &Program, test: &TestCase) -> Result<()> {
        stop::check()?;
        let Program::Binary(bin) = program else {
            bail!("a conversation is relayed by the native runner only")
        };
        // Placed as the judged run was, the relay on the same CPU.
        let lease = match self.placement {
            placement::Placement::SharedCpu => Some(self.cpus.lease()),
            placement::Placement::Host => None,
        };
        native::replay(
            &self.sandbox,
            &loaded.problem,
            &loaded.tools,
            bin,
            test,
            lease.as_ref().map(placement::CpuLease::cpu),
            &self.debugging,
        )
    }
}

/// A problem's checker or manager that does not compile: the problem's fault (a package, a
/// request's files), not the host's, so a server answers it as a client error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ToolDoesNotCompile(String);

#[cfg(test)]
mod tests {
    use super::*;

    /// The problem model cannot name the sandbox, so it states the sandbox's floor of memory
    /// again: the two must agree.
    #[test]
    fn a_problem_s_memory_floor_is_the_sandbox_s() {
        assert_eq!(
            crate::problem::bounds::MIN_MEMORY_LIMIT,
            ioi_sandbox::MIN_MEMORY_LIMIT
        );
    }

    #[test]
    fn a_missing_compiler_is_named_with_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let message = missing_compiler(&[path]).unwrap();
        assert!(
            message.contains("g++ is in none of") && message.contains(path),
            "{message}"
        );
        std::fs::write(dir.path().join("g++"), "").unwrap();
        assert_eq!(missing_compiler(&[path]), None);
    }
}
