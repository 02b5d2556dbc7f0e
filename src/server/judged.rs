//! The real [`Executor`]: Piston requests judged by the [`Judge`] in the sandbox.
//!
//! A `cms_ioi` request is one submission on one test. It becomes a one-test [`Problem`] and goes
//! through the same steps as `ioi-run judge`: `prepare` (checker and manager compiled once, by
//! content hash), `compile` (the submission with its graders, once per distinct code: clients
//! send the same submission once per test, and all but the first find it in the
//! [`CompileCache`](crate::judge::compile::CompileCache)), `run_test`. The verdict travels back
//! in Piston's shape through [`ioi_response`].
//!
//! A `c++` request is a plain program: compiled once per distinct source (same cache), run once
//! on the request's stdin with `run_timeout` as CPU and wall limit, answered with Piston's
//! `run.code` / `run.signal` conventions. Its box is a private tmpfs of at most its memory
//! limit (counted as its memory), where the request's files appear read-only; its stdin,
//! stdout and stderr are files in a root-only host folder that the sandbox opens for it. The
//! server reads back only those files: nothing the program can rename, link or replace (a
//! symlink to a host file, a FIFO) is ever opened on its behalf, and the run leaves nothing on
//! the host but its two output files, each bounded by [`PLAIN_OUTPUT_LIMIT`].
//!
//! Limits follow IOI semantics (docs/judging.md#limits-and-verdicts), not Piston's: a user process
//! has the problem's CPU limit and a wall limit of 3 × that + 1 s, which stays within the client's
//! `run_timeout` (time limit + 3 s) for time limits up to 1 s and exceeds it above. A run whose
//! wall time reached `run_timeout` is reported as Piston's hard time-out, which the client reads as
//! `Time limit exceeded`, as it would from Piston.

use std::fs;
use std::path::{Component, Path};

use anyhow::Context;
use ioi_sandbox::{signal_name, Bind, Limits, Outcome, RunSpec, Stdio, Termination, BOX_PATH};

use super::metrics::RunMetrics;
use super::piston::{ioi_response, IoiOutcome, HARD_TIMEOUT_SIGNAL};
use super::{Executor, IoiJob, Job, PlainJob, RequestError, Response, Runtime, Stage};
use crate::judge::compile::Compiled;
use crate::judge::verdicts::{self, KeyBuilder, VerdictCache, VerdictKey};
use crate::judge::{read_capped, Build, CompileError, Judge, JudgeOptions, Runner};
use crate::problem::{Problem, Subtask, TaskType, TestCase, TestSet};

/// The name of the single test of a `cms_ioi` request.
const TEST_NAME: &str = "request";
/// Where a plain program's binary appears inside its box.
const PLAIN_PROGRAM: &str = "/sol/program";
/// Bytes of a plain program's stdout and of its stderr kept in the response; more is cut (the
/// judge's one capped reader, [`read_capped`], reads this much).
pub const MAX_PLAIN_OUTPUT: u64 = crate::judge::OUTPUT_CAP;
/// Largest file a plain program may write: its stdout and its stderr, each (a write beyond is
/// a kill, answered as Piston's `SIGKILL`).
pub const PLAIN_OUTPUT_LIMIT: u64 = 64 << 20;

/// Runs a plain program's box `spec` with `stdin` and the limits of a plain run (`run_timeout`
/// of CPU and of wall time, `memory`), its streams in files under `private` (root-only);
/// counts the run in `counted_as`'s histograms under its language, and returns the outcome
/// and the paths of its standard output and error.
pub fn run_plain(
    sandbox: &ioi_sandbox::Sandbox,
    mut spec: RunSpec,
    private: &Path,
    stdin: &[u8],
    (run_timeout, memory): (std::time::Duration, u64),
    counted_as: (&RunMetrics, &'static str),
) -> anyhow::Result<(Outcome, std::path::PathBuf, std::path::PathBuf)> {
    let stdin_path = private.join("stdin");
    let stdout = private.join("stdout");
    let stderr = private.join("stderr");
    fs::write(&stdin_path, stdin).context("cannot write the stdin file")?;
    spec.stdin = Stdio::Path(stdin_path);
    spec.stdout = Stdio::Path(stdout.clone());
    spec.stderr = Stdio::Path(stderr.clone());
    spec.limits = Limits {
        cpu_time: Some(run_timeout),
        wall_time: Some(run_timeout),
        memory: Some(memory),
        processes: Some(64),
        output_size: Some(PLAIN_OUTPUT_LIMIT),
        open_files: Some(64),
        stack: None,
    };
    let outcome = sandbox.run(&spec);
    let (runs, language) = counted_as;
    runs.record_outcome(language, &outcome);
    if outcome.status == Termination::InternalError {
        anyhow::bail!("sandbox failure: {}", outcome.message);
    }
    Ok((outcome, stdout, stderr))
}
/// Smallest box of a plain program (a tmpfs of size 0 would be unbounded).
const MIN_PLAIN_BOX: u64 = 1 << 20;

/// A kept verdict's text: the checker's feedback, or the compiler's message.
impl verdicts::Weight for IoiOutcome {
    fn weight(&self) -> usize {
        match self {
            IoiOutcome::Judged { feedback, .. } => feedback.len(),
            IoiOutcome::CompileError(error) => error.stderr.len(),
            IoiOutcome::HardTimeout => 0,
        }
    }
}

/// Judges Piston requests with a [`Judge`].
pub struct JudgeExecutor {
    judge: Judge,
    /// `cms_ioi` answers by request content: an RL batch sends the same program many times.
    /// `None`: every request is judged (`bench serve` measures the judging).
    verdicts: Option<VerdictCache<IoiOutcome>>,
    /// The histograms of its program runs and compiles (the compile cache's observer).
    runs: RunMetrics,
}

impl JudgeExecutor {
    /// Fails with script mode: its box holds `correct_output.txt` next to the solution (the
    /// reference contract), and a server judging hostile code must never show it.
    pub fn new(options: JudgeOptions) -> anyhow::Result<JudgeExecutor> {
        if !matches!(options.runner, Runner::Native) {
            anyhow::bail!(
                "the server judges with the native runner only: script mode lets a solution \
                 read correct_output.txt"
            );
        }
        let judge = Judge::new(options)?;
        // The one walk of the compile cache's folder, for its size, happens here at start:
        // afterwards the figure is kept up to date, and no scrape of `/metrics` waits for a walk.
        judge.cache().footprint();
        let runs = RunMetrics::default();
        judge.cache().observe(std::sync::Arc::new(runs.clone()));
        Ok(JudgeExecutor {
            judge,
            verdicts: Some(VerdictCache::new(verdicts::DEFAULT_CAPACITY)),
            runs,
        })
    }

    /// Judges every request, even one identical to a request judged before.
    pub fn without_verdict_cache(mut self) -> JudgeExecutor {
        self.verdicts = None;
        self
    }

    /// The judge, e.g. to read its compile counter (`judge().cache().builds()`).
    pub fn judge(&self) -> &Judge {
        &self.judge
    }

    /// One submission on one test: the answer already given to the same request (the same
    /// submission, files, test, limits and time-out), or a fresh judgement.
    pub fn judge_ioi(&self, job: IoiJob) -> Result<IoiOutcome, RequestError> {
        match &self.verdicts {
            Some(verdicts) => {
                let key = self.verdict_key(&job);
                verdicts.get_or_judge(key, || self.judge_ioi_afresh(job))
            }
            None => self.judge_ioi_afresh(job),
        }
    }

    /// The histograms of program runs and compiles, to count a run in.
    pub(super) fn runs(&self) -> &RunMetrics {
        &self.runs
    }

    /// How many `cms_ioi` requests were answered from the verdict cache.
    pub fn verdict_hits(&self) -> u64 {
        self.verdicts.as_ref().map_or(0, VerdictCache::hits)
    }

    /// Everything a `cms_ioi` answer depends on (src/judge/verdicts.rs): the request's every
    /// field, and how this judge compiles and times (fixed for its life, with the compiler).
    fn verdict_key(&self, job: &IoiJob) -> VerdictKey {
        let mut key = KeyBuilder::new("cms_ioi");
        let profile = self.judge.compile_profile();
        key.part(profile.as_str().as_bytes());
        for flag in profile.submission_flags() {
            key.part(flag.as_bytes());
        }
        key.part(&self.judge.time_scale().to_le_bytes())
            .part(job.problem_id.as_bytes())
            .part(&job.submission)
            .part(&job.input)
            .optional(job.expected_output.as_deref())
            .part(&(job.grader_files.len() as u64).to_le_bytes());
        for file in &job.grader_files {
            key.part(file.path.as_bytes()).part(&file.content);
        }
        key.part(&job.time_limit.to_le_bytes())
            .part(&job.memory_limit.to_le_bytes())
            .part(format!("{:?}", job.task).as_bytes())
            .part(&job.run_timeout.as_nanos().to_le_bytes())
            .optional(
                job.compile_timeout
                    .map(|t| t.as_nanos().to_le_bytes())
                    .as_ref()
                    .map(|b| b.as_slice()),
            );
        key.finish()
    }

    fn judge_ioi_afresh(&self, mut job: IoiJob) -> Result<IoiOutcome, RequestError> {
        let run_timeout = job.run_timeout;
        let submission = std::mem::take(&mut job.submission);
        let (problem, tests) = one_test_problem(job)?;
        let loaded =
            self.judge.prepare(problem, tests).map_err(|e| match e
                .downcast_ref::<crate::judge::ToolDoesNotCompile>()
            {
                // The request's own checker or manager: its sender's to fix.
                Some(broken) => RequestError::BadRequest(broken.to_string()),
                None => internal("cannot prepare the problem", e),
            })?;
        let test = loaded
            .tests
            .get(TEST_NAME)
            .ok_or_else(|| RequestError::Internal("the request's test went missing".into()))?;
        let build = self
            .judge
            .compile(&loaded, &submission, crate::judge::Language::Cpp)
            .map_err(|e| internal("cannot compile the submission", e))?;
        let program = match build {
            Build::Program(program) => program,
            Build::Error(error) => return Ok(IoiOutcome::CompileError(error)),
        };
        let verdict = self
            .judge
            .run_test(&loaded, &program, test)
            .map_err(|e| internal("cannot run the test", e))?;
        self.runs
            .record_runs(Runtime::CmsIoi.language(), &verdict.runs);
        if verdict.wall_time >= run_timeout.as_secs_f64() {
            return Ok(IoiOutcome::HardTimeout);
        }
        Ok(IoiOutcome::Judged {
            score: verdict.score,
            feedback: verdict.feedback,
        })
    }

    /// A plain C++ program: compile (cached), run once.
    pub fn run_plain(&self, job: PlainJob) -> Result<Response, RequestError> {
        let mut files: Vec<(&str, &[u8])> = vec![(&job.file_name, job.source.as_bytes())];
        files.extend(
            job.other_files
                .iter()
                .map(|(n, c)| (n.as_str(), c.as_slice())),
        );
        let compiled = self
            .judge
            .cache()
            .program(self.judge.sandbox(), &files, &job.file_name, job.language)
            .map_err(|e| internal("cannot compile the program", e))?;
        let binary = match compiled {
            Compiled::Binary(path) => path,
            Compiled::Error(error) => {
                return Ok(Response {
                    compile: Some(compile_failure(error)),
                    run: None,
                })
            }
        };
        let run = self
            .run_program(&job, &files, &binary)
            .map_err(|e| internal("cannot run the program", e))?;
        Ok(Response {
            compile: Some(Stage::new(String::new(), String::new(), Some(0), None)),
            run: Some(run),
        })
    }

    fn run_program(
        &self,
        job: &PlainJob,
        files: &[(&str, &[u8])],
        binary: &Path,
    ) -> anyhow::Result<Stage> {
        let sandbox = self.judge.sandbox();
        // Root-only (0700): the box reaches the files only through the binds below, and its
        // streams only through the descriptors the sandbox opens on these paths.
        let private = crate::scratch::tempdir("out")?;
        let staged = private.path().join("files");
        let mut spec = RunSpec::in_tmpfs(job.memory_limit.max(MIN_PLAIN_BOX), [PLAIN_PROGRAM]);
        spec.argv.extend(job.args.iter().cloned());
        spec.binds.push(Bind::read_only(binary, PLAIN_PROGRAM));
        for entry in stage_files(&staged, files)? {
            spec.binds.push(Bind::read_only(
                staged.join(&entry),
                Path::new(BOX_PATH).join(&entry),
            ));
        }
        let runtime = match job.language {
            crate::judge::Language::Cpp => Runtime::Cpp,
            crate::judge::Language::C => Runtime::C,
        };
        let (outcome, stdout, stderr) = run_plain(
            sandbox,
            spec,
            private.path(),
            &job.stdin,
            (job.run_timeout, job.memory_limit),
            (&self.runs, runtime.language()),
        )?;
        let (code, signal) = piston_exit(&outcome);
        Ok(Stage::new(
            read_capped(&stdout)?,
            read_capped(&stderr)?,
            code,
            signal,
        ))
    }
}

/// Writes the request's files under `dir` (readable by every box uid whatever the umask) and
/// returns the entries directly under it, each to be bound read-only into the box under the
/// same name. File names are relative without `..` (checked when the request was parsed).
pub(super) fn stage_files(dir: &Path, files: &[(&str, &[u8])]) -> anyhow::Result<Vec<String>> {
    let mut entries: Vec<String> = Vec::new();
    open_folder(dir)?;
    for (name, content) in files {
        let parts: Vec<&std::ffi::OsStr> = Path::new(name)
            .components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part),
                _ => None,
            })
            .collect();
        let Some((file, folders)) = parts.split_last() else {
            anyhow::bail!("the file name {name:?} names no file inside the box");
        };
        let mut path = dir.to_path_buf();
        for folder in folders {
            path.push(folder);
            open_folder(&path)?;
        }
        path.push(file);
        fs::write(&path, content).with_context(|| format!("cannot write {name}"))?;
        readable(&path, 0o644)?;
        let first = parts[0].to_string_lossy().into_owned();
        if !entries.contains(&first) {
            entries.push(first);
        }
    }
    Ok(entries)
}

/// Creates a folder (if missing) that every box uid may list.
fn open_folder(path: &Path) -> anyhow::Result<()> {
    match fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
    readable(path, 0o755)
}

fn readable(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot open {} to the box", path.display()))
}

impl Executor for JudgeExecutor {
    fn execute(&self, job: Job) -> Result<Response, RequestError> {
        match job {
            Job::Ioi(job) => self.judge_ioi(job).map(|outcome| ioi_response(&outcome)),
            Job::Plain(job) => self.run_plain(job),
            Job::Codeforces(job) => self.judge_codeforces(job).map(|v| v.response()),
        }
    }

    fn run_code(&self, job: super::RunCodeJob) -> Result<super::RunCodeReply, RequestError> {
        self.run_sandbox_fusion(job)
    }

    fn compile_cache(&self) -> Option<super::metrics::CacheCounts> {
        let cache = self.judge.cache();
        let footprint = cache.footprint();
        Some(super::metrics::CacheCounts {
            hits: cache.hits() as u64,
            misses: cache.builds() as u64,
            verdict_hits: self.verdict_hits(),
            bytes: footprint.bytes,
            entries: footprint.entries,
            verdict_entries: self.verdicts.as_ref().map_or(0, |v| v.len() as u64),
        })
    }

    fn run_metrics(&self) -> Option<RunMetrics> {
        Some(self.runs.clone())
    }

    fn boxes(&self) -> Option<super::metrics::BoxCounts> {
        let sandbox = self.judge.sandbox();
        Some(super::metrics::BoxCounts {
            built: sandbox.boxes_built(),
            in_use: sandbox.boxes_in_use(),
            ready: sandbox.boxes_ready(),
        })
    }
}

/// The problem a `cms_ioi` request describes (its submission aside), with its one test written
/// to a folder the returned [`TestSet`] owns.
fn one_test_problem(job: IoiJob) -> Result<(Problem, TestSet), RequestError> {
    let problem = Problem {
        year: 0,
        name: job.problem_id.clone(),
        id: job.problem_id,
        day: String::new(),
        task: job.task,
        time_limit: job.time_limit,
        memory_limit: job.memory_limit,
        subtasks: vec![Subtask {
            name: TEST_NAME.to_string(),
            points: 100.0,
            score_precision: 2,
            test_names: vec![TEST_NAME.to_string()],
        }],
        grader_files: job.grader_files,
    };
    let decided_by_tool =
        problem.checker().is_some() || matches!(problem.task, TaskType::Communication(_));
    if job.expected_output.is_none() && !decided_by_tool {
        return Err(RequestError::BadRequest(
            "no correct_output.txt among the files, and no checker/checker.cpp or \
             graders/manager.cpp to judge without it: send the expected output"
                .into(),
        ));
    }
    problem
        .check_bounds()
        .map_err(|e| RequestError::BadRequest(format!("{e:#}")))?;
    if matches!(problem.task, TaskType::Communication(_)) && problem.manager().is_none() {
        return Err(RequestError::BadRequest(
            "the task is Communication but graders/manager.cpp is not among the files".into(),
        ));
    }
    let dir = crate::scratch::tempdir("request")
        .map_err(|e| internal("cannot create the test folder", e))?;
    let case = TestCase {
        name: TEST_NAME.to_string(),
        input: dir.path().join("input.txt"),
        output: dir.path().join("correct_output.txt"),
    };
    let expected = job.expected_output.unwrap_or_default();
    fs::write(&case.input, &job.input)
        .and_then(|()| fs::write(&case.output, &expected))
        .map_err(|e| internal("cannot write the test", e.into()))?;
    let tests = TestSet {
        cases: [(TEST_NAME.to_string(), case)].into(),
        _storage: Some(dir),
    };
    Ok((problem, tests))
}

/// Piston's `(code, signal)` of a run: the exit code, or `null` and the signal's name when it
/// was killed; a limit kill is `SIGKILL`, as in Piston.
fn piston_exit(outcome: &Outcome) -> (Option<i32>, Option<String>) {
    match outcome.status {
        Termination::Ok | Termination::RuntimeError => (outcome.exit_code, None),
        Termination::Signaled => (None, outcome.signal.map(signal_name)),
        Termination::TimeLimit
        | Termination::WallTimeLimit
        | Termination::MemoryLimit
        | Termination::OutputLimit
        | Termination::InternalError => (None, Some(HARD_TIMEOUT_SIGNAL.to_string())),
    }
}

/// The compile stage of a failed compile; a compiler stopped by a limit was killed.
fn compile_failure(error: CompileError) -> Stage {
    match error.exit_code {
        None => Stage::new(
            String::new(),
            error.stderr,
            None,
            Some(HARD_TIMEOUT_SIGNAL.to_string()),
        ),
        Some(code) => Stage::new(String::new(), error.stderr, Some(code), None),
    }
}

fn internal(what: &str, error: anyhow::Error) -> RequestError {
    RequestError::Internal(format!("{what}: {error:#}"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn outcome(status: Termination, exit_code: Option<i32>, signal: Option<i32>) -> Outcome {
        Outcome {
            status,
            exit_code,
            signal,
            cpu_time: 0.0,
            wall_time: 0.0,
            memory: 0,
            message: String::new(),
        }
    }

    #[test]
    fn the_server_never_judges_in_script_mode() {
        let options = JudgeOptions {
            runner: crate::judge::Runner::Scripts(Default::default()),
            ..JudgeOptions::default()
        };
        let error = JudgeExecutor::new(options)
            .err()
            .expect("script mode refused");
        assert!(error.to_string().contains("correct_output.txt"), "{error}");
    }

    #[test]
    fn plain_runs_report_exit_codes_and_signals_as_piston_does() {
        assert_eq!(
            piston_exit(&outcome(Termination::Ok, Some(0), None)),
            (Some(0), None)
        );
        assert_eq!(
            piston_exit(&outcome(Termination::RuntimeError, Some(3), None)),
            (Some(3), None)
        );
        assert_eq!(
            piston_exit(&outcome(Termination::Signaled, None, Some(11))),
            (None, Some("SIGSEGV".into()))
        );
        for limit in [
            Termination::TimeLimit,
            Termination::WallTimeLimit,
            Termination::MemoryLimit,
        ] {
            assert_eq!(
                piston_exit(&outcome(limit, None, Some(9))),
                (None, Some("SIGKILL".into()))
            );
        }
    }

    #[test]
    fn a_batch_request_without_expected_output_or_checker_is_refused() {
        let job = IoiJob {
            problem_id: "p".into(),
            submission: Vec::new(),
            input: b"1\n".to_vec(),
            expected_output: None,
            grader_files: Vec::new(),
            time_limit: 1.0,
            memory_limit: 1 << 28,
            task: TaskType::Batch,
            run_timeout: Duration::from_secs(4),
            compile_timeout: None,
        };
        let Err(RequestError::BadRequest(message)) = one_test_problem(job) else {
            panic!("expected a bad request")
        };
        assert!(message.contains("correct_output.txt"), "{message}");
    }
}
