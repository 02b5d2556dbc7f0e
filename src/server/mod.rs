//! A Piston-compatible HTTP server (docs/piston-api.md), so existing Piston clients — the Python
//! IOI pipeline first — can send their requests here unchanged. The same server answers
//! SandboxFusion's `POST /run_code` (docs/run-code-api.md, [`sandbox_fusion`]), which verl's
//! code rewards call, with the same admission, sandbox, compile cache and metrics.
//!
//! The server only speaks HTTP: it parses Piston's request shape into a [`Job`], admits it
//! (at most `jobs` running, at most `max_queue` waiting, HTTP 503 beyond), hands it to an
//! [`Executor`] on a blocking thread and turns the [`Response`] back into Piston's JSON. It never
//! judges anything itself: [`JudgeExecutor`] (in [`judged`]) implements [`Executor`] with the
//! judge, and tests also use a fake. The helpers
//! in [`piston`] build the responses the Python client maps back to `(score, feedback)`.
//!
//! ```text
//! POST /api/v2/execute ─▶ request::parse ─▶ admission ─▶ spawn_blocking(Executor::execute)
//!                                                              │
//!                  Piston JSON ◀─ ExecuteReply ◀─ Response ◀───┘
//! POST /run_code ─▶ sandbox_fusion::parse_run_code ─▶ (the same) ─▶ Executor::run_code
//! ```
//!
//! Every request passes one layer that counts it in [`metrics`] (served on `GET /metrics`) and
//! writes its log line.

pub mod codeforces;
mod codeforces_run;
mod http;
pub mod judged;
pub mod metrics;
pub mod piston;
mod request;
mod runtime;
pub mod sandbox_fusion;
mod sandbox_fusion_run;

use std::time::Duration;

pub use codeforces::CfJob;
pub use http::{ServeOptions, Server, ShutdownHandle};
pub use judged::JudgeExecutor;
pub use request::{parse_execute, ExecuteRequest, MAX_REQUEST_FILES};
pub use runtime::{CfLanguage, CppStandard, Runtime};
pub use sandbox_fusion::{RunCodeJob, RunCodeReply};

pub use crate::problem::{GraderFile, TaskType};

/// Executes one Piston request. Implemented by the judge (real) and by a fake in tests.
pub trait Executor: Send + Sync + 'static {
    /// Runs `job` to completion. Blocking: the server calls it on a blocking thread
    /// (`tokio::task::spawn_blocking`), at most `jobs` at once. The executor is responsible for
    /// killing whatever it started when `job.run_timeout` (a wall-clock hard limit) expires.
    fn execute(&self, job: Job) -> Result<Response, RequestError>;

    /// Runs one SandboxFusion `/run_code` request (docs/run-code-api.md), blocking like
    /// [`Executor::execute`]. The default refuses it: an executor without a sandbox (the fakes of
    /// tests) serves Piston requests only.
    fn run_code(&self, job: RunCodeJob) -> Result<RunCodeReply, RequestError> {
        let _ = job;
        Err(RequestError::Internal(
            "this server's executor does not run /run_code requests".to_string(),
        ))
    }

    /// Compile-cache hits and misses so far and what the caches hold, for `GET /metrics`;
    /// `None` (the default) for an executor without a cache.
    fn compile_cache(&self) -> Option<metrics::CacheCounts> {
        None
    }

    /// The histograms this executor fills as it runs programs and compiles, for `GET /metrics`;
    /// `None` (the default) for an executor that runs nothing itself.
    fn run_metrics(&self) -> Option<metrics::RunMetrics> {
        None
    }

    /// The sandbox's boxes built and in use, for `GET /metrics`; `None` (the default) for an
    /// executor without a sandbox.
    fn boxes(&self) -> Option<metrics::BoxCounts> {
        None
    }
}

/// One request to execute, already validated and decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// `cms_ioi`: judge one submission on one test, as Piston's IOI package does.
    Ioi(IoiJob),
    /// `c++`: compile a program and run it once on `stdin`.
    Plain(PlainJob),
    /// `c++17`, `cf_python3`, ...: judge a program on one test by the Codeforces contract.
    Codeforces(CfJob),
}

/// One IOI submission on one test: what the seed's `compile` and `run` scripts would see in
/// their box (docs/judging.md#script-mode).
#[derive(Debug, Clone, PartialEq)]
pub struct IoiJob {
    /// Lowercase problem id: the stem of the first `graders/*.h` that is not `testlib.h`.
    pub problem_id: String,
    /// The source of `graders/<problem_id>.cpp`.
    /// The source as sent: bytes, compiled as they are (need not be UTF-8).
    pub submission: Vec<u8>,
    /// `input.txt`.
    pub input: Vec<u8>,
    /// `correct_output.txt`; the client leaves it out when the expected output is empty.
    pub expected_output: Option<Vec<u8>>,
    /// Every other file of the request (headers, grader.cpp/stub.cpp, manager.cpp, checker,
    /// grader_config.json, ...) with its path as sent; `compile` and `run` scripts are left
    /// out, the server has its own.
    pub grader_files: Vec<GraderFile>,
    /// CPU time limit per user process, in seconds.
    pub time_limit: f64,
    /// Memory limit per user process, in bytes.
    pub memory_limit: u64,
    pub task: TaskType,
    /// Wall-clock hard limit for the whole run (the client sends the time limit + 3 s); when it
    /// expires the answer is [`piston::IoiOutcome::HardTimeout`].
    pub run_timeout: Duration,
    pub compile_timeout: Option<Duration>,
}

/// A plain `c++` program: compile `file_name` (with the other files beside it) and run it once.
#[derive(Debug, Clone, PartialEq)]
pub struct PlainJob {
    /// The first file of the request.
    pub source: String,
    /// Its name (every file must have one).
    pub file_name: String,
    /// The other files, with their names as sent.
    pub other_files: Vec<(String, Vec<u8>)>,
    pub stdin: Vec<u8>,
    pub args: Vec<String>,
    /// Wall-clock limit of the run (Piston's default is 3 s).
    pub run_timeout: Duration,
    /// Bytes: `run_memory_limit`, or [`DEFAULT_PLAIN_MEMORY`] when the request sets none.
    pub memory_limit: u64,
    pub compile_timeout: Option<Duration>,
    /// C++ (`c++`) or C (`c`).
    pub language: crate::judge::Language,
}

/// Memory of a plain `c++` run whose request sets no `run_memory_limit` (or Piston's `-1`, which
/// here means this default, not "unlimited"): every run has a finite bound.
pub const DEFAULT_PLAIN_MEMORY: u64 = 512 << 20;

/// The most memory a request may give one process, however it asks (`run_memory_limit`, the
/// `memory_limit` of `graders/grader_config.json`, Codeforces' `MEMORY_LIMIT`): twice the
/// largest IOI limit. More is refused with HTTP 400 rather than lowered, so that a verdict is
/// never given under a limit other than the one asked for.
pub const MAX_RUN_MEMORY: u64 = 4 << 30;

/// The longest `run_timeout` or `compile_timeout` a request may ask for: every request is
/// answered within its limits, and no caller holds a worker longer than this.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);

/// A time limit of a request, in seconds, refused beyond [`MAX_TIMEOUT`] with the field named.
pub(crate) fn allowed_time_limit(seconds: f64, field: &str) -> Result<f64, RequestError> {
    let max = MAX_TIMEOUT.as_secs_f64();
    if seconds > max {
        return Err(RequestError::BadRequest(format!(
            "{field} is {seconds} s; the server allows at most {max} s"
        )));
    }
    Ok(seconds)
}

/// `bytes` when a request may ask for that much memory (see [`MAX_RUN_MEMORY`]); else a
/// [`RequestError::BadRequest`] naming `field`.
pub(crate) fn allowed_memory(bytes: u64, field: &str) -> Result<u64, RequestError> {
    if bytes > MAX_RUN_MEMORY {
        return Err(RequestError::BadRequest(format!(
            "{field} asks for {bytes} bytes of memory; the server allows at most {MAX_RUN_MEMORY} \
             bytes ({} MiB) per process",
            MAX_RUN_MEMORY >> 20
        )));
    }
    Ok(bytes)
}

/// What Piston answers: the compile stage (for compiled languages) and the run stage. On a
/// compilation error Piston does not run anything, so `run` is absent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Response {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<Stage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Stage>,
}

/// One stage of a Piston response. `output` is stdout followed by stderr.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stage {
    pub stdout: String,
    pub stderr: String,
    /// Exit code; `null` when the process was killed by a signal.
    pub code: Option<i32>,
    /// e.g. `"SIGKILL"` for a hard time-out.
    pub signal: Option<String>,
    pub output: String,
}

impl Stage {
    /// A stage with Piston's `output` (stdout then stderr) filled in.
    pub fn new(stdout: String, stderr: String, code: Option<i32>, signal: Option<String>) -> Stage {
        let output = format!("{stdout}{stderr}");
        Stage {
            stdout,
            stderr,
            code,
            signal,
            output,
        }
    }
}

/// Why a request could not be executed. The server answers `{message}` with the status below.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The request is unusable as sent (missing file, bad grader_config.json, ...): HTTP 400.
    #[error("{0}")]
    BadRequest(String),
    /// The server failed to execute a valid request (sandbox or I/O failure): HTTP 500.
    #[error("{0}")]
    Internal(String),
}
