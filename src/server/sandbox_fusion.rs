//! SandboxFusion's `POST /run_code` (docs/run-code-api.md), the API verl's code rewards call
//! (`verl/utils/reward_score/sandbox_fusion/utils.py`): one program, one stdin, one answer with
//! the compile and run results.
//!
//! This module holds the request's shape ([`RunCodeJob`], parsed by hand from
//! `serde_json::Value` so that every error names the field at fault) and the answer's
//! ([`RunCodeReply`], with SandboxFusion's field names and status strings). Running the program
//! is in `sandbox_fusion_run`.
//!
//! The overall `status` follows SandboxFusion's own rule: `SandboxError` when a stage could not
//! be run, `Failed` when a stage ran out of time or ended with a non-zero return code, else
//! `Success`. verl reads it back as: `Success` and equal stdout → pass, `Failed` with a compile
//! stage not finished with code 0 → compile error, `Failed` with a run `TimeLimitExceeded` →
//! timeout, any other `Failed` → runtime error, `SandboxError` → the sandbox's fault.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::metrics::RequestOutcome;
use super::request::{decode_base64, MAX_PLAIN_FILES};
use super::MAX_TIMEOUT;
use super::{allowed_memory, RequestError, DEFAULT_PLAIN_MEMORY};

/// SandboxFusion's default `compile_timeout` and `run_timeout`, in seconds.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest name of a file sent or fetched, in bytes.
const MAX_NAME_BYTES: usize = 255;
/// SandboxFusion skips the files whose name contains this text; so does the server.
const IGNORED_FILE_MARKER: &str = "IGNORE_THIS_FILE";
/// The fields of a request; any other is refused (a misspelt limit must not pass unseen).
const FIELDS: [&str; 8] = [
    "code",
    "language",
    "stdin",
    "compile_timeout",
    "run_timeout",
    "memory_limit_MB",
    "files",
    "fetch_files",
];

/// A language `/run_code` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunCodeLanguage {
    /// `cpp`: g++ with the plain program's flags (`-std=gnu++17 -O2`), compiled once per code.
    Cpp,
    /// `python`: the host's `python3`.
    Python,
}

impl RunCodeLanguage {
    pub const ALL: [RunCodeLanguage; 2] = [RunCodeLanguage::Cpp, RunCodeLanguage::Python];

    /// SandboxFusion's name, also the `language` label of the metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RunCodeLanguage::Cpp => "cpp",
            RunCodeLanguage::Python => "python",
        }
    }

    fn parse(name: &str) -> Option<RunCodeLanguage> {
        RunCodeLanguage::ALL
            .into_iter()
            .find(|language| language.as_str() == name)
    }
}

/// One `/run_code` request, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCodeJob {
    pub language: RunCodeLanguage,
    /// The program's source.
    pub code: String,
    /// The program's stdin (empty when the request has none).
    pub stdin: Vec<u8>,
    /// CPU limit of the run, and its wall limit (which does not count time spent waiting for
    /// a CPU).
    pub run_timeout: Duration,
    /// Accepted and bounded like `run_timeout`; compiles run under the compile cache's own
    /// limits, the same for every request, so that a cached compile is the same answer for all.
    pub compile_timeout: Duration,
    /// Bytes: `memory_limit_MB` MiB, or [`DEFAULT_PLAIN_MEMORY`] when it sets none.
    pub memory_limit: u64,
    /// Files placed in the program's working directory, by relative path.
    pub files: Vec<(String, Vec<u8>)>,
    /// Files of the working directory returned after the run, by relative path.
    pub fetch_files: Vec<String>,
}

/// What a request body asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum RunCodeRequest {
    /// A program in a served language.
    Run(RunCodeJob),
    /// A language SandboxFusion knows but this server does not run: answered with
    /// SandboxFusion's `SandboxError` shape, without executing anything.
    Unserved { language: String },
}

/// Parses and validates the body of `POST /run_code`. A client mistake is a
/// [`RequestError::BadRequest`] naming the field.
pub fn parse_run_code(body: &[u8]) -> Result<RunCodeRequest, RequestError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("request body is not valid JSON: {e}")))?;
    let Value::Object(mut top) = value else {
        return Err(bad(
            "request body must be a JSON object {code, language, stdin, ...}",
        ));
    };
    if let Some(unknown) = top.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        return Err(bad(format!(
            "unknown field {unknown:?}: /run_code takes {}",
            FIELDS.join(", ")
        )));
    }
    let language = match top.remove("language") {
        Some(Value::String(language)) => language,
        None | Some(Value::Null) => return Err(bad("language is required, e.g. \"cpp\"")),
        Some(other) => return Err(bad(format!("language must be a string, got {other}"))),
    };
    let Some(language) = RunCodeLanguage::parse(&language) else {
        return Ok(RunCodeRequest::Unserved { language });
    };
    let code = match top.remove("code") {
        Some(Value::String(code)) => code,
        None | Some(Value::Null) => return Err(bad("code is required as a string")),
        Some(_) => return Err(bad("code must be a string")),
    };
    let stdin = match top.remove("stdin") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(stdin)) => stdin.into_bytes(),
        Some(_) => return Err(bad("stdin must be a string or null")),
    };
    Ok(RunCodeRequest::Run(RunCodeJob {
        language,
        code,
        stdin,
        run_timeout: seconds(&top, "run_timeout")?,
        compile_timeout: seconds(&top, "compile_timeout")?,
        memory_limit: memory_limit(&top)?,
        files: files(top.remove("files"))?,
        fetch_files: fetch_files(top.remove("fetch_files"))?,
    }))
}

/// A timeout in seconds (SandboxFusion's unit), [`DEFAULT_TIMEOUT`] when absent or null.
fn seconds(top: &Map<String, Value>, key: &str) -> Result<Duration, RequestError> {
    let value = match top.get(key) {
        None | Some(Value::Null) => return Ok(DEFAULT_TIMEOUT),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => {
            return Err(bad(format!(
                "{key} must be a number of seconds, got {other}"
            )))
        }
    };
    if !(value > 0.0 && value.is_finite()) {
        return Err(bad(format!(
            "{key} must be a positive number of seconds, got {value}"
        )));
    }
    let max = MAX_TIMEOUT.as_secs_f64();
    if value > max {
        return Err(bad(format!(
            "{key} is {value} s; the server allows at most {max} s (a run holds a worker for \
             that long)"
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

/// `memory_limit_MB` in bytes. Absent, null or not positive (SandboxFusion's `-1`: no limit)
/// gives [`DEFAULT_PLAIN_MEMORY`]: every run here has a finite bound.
fn memory_limit(top: &Map<String, Value>) -> Result<u64, RequestError> {
    const KEY: &str = "memory_limit_MB";
    let megabytes = match top.get(KEY) {
        None | Some(Value::Null) => return Ok(DEFAULT_PLAIN_MEMORY),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => return Err(bad(format!("{KEY} must be an integer, got {other}"))),
    };
    if !megabytes.is_finite() || megabytes.fract() != 0.0 {
        return Err(bad(format!("{KEY} must be an integer, got {megabytes}")));
    }
    if megabytes <= 0.0 {
        return Ok(DEFAULT_PLAIN_MEMORY);
    }
    // Saturating: a number beyond u64 is refused by the bound below like any other too large.
    let bytes = (megabytes * 1048576.0) as u64;
    allowed_memory(bytes, KEY)
}

/// `files`: an object from relative path to base64 content; null contents are skipped, as
/// SandboxFusion skips them.
fn files(value: Option<Value>) -> Result<Vec<(String, Vec<u8>)>, RequestError> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(entries)) => entries,
        Some(_) => {
            return Err(bad(
                "files must be an object from file path to base64 content",
            ))
        }
    };
    let mut files = Vec::with_capacity(entries.len());
    for (name, content) in entries {
        let content = match content {
            Value::Null => continue,
            Value::String(content) => content,
            _ => {
                return Err(bad(format!(
                    "files[{name:?}] must be base64 text (or null)"
                )))
            }
        };
        if name.contains(IGNORED_FILE_MARKER) {
            continue;
        }
        check_name("files", &name)?;
        let bytes = decode_base64(&content)
            .map_err(|e| bad(format!("files[{name:?}] is not valid base64: {e}")))?;
        files.push((name, bytes));
    }
    if files.len() > MAX_PLAIN_FILES {
        return Err(bad(format!(
            "files holds {} files; a run takes at most {MAX_PLAIN_FILES}",
            files.len()
        )));
    }
    // Each file appears at its path: one cannot also be the folder of another.
    for (name, _) in &files {
        let folder = format!("{}/", name);
        if let Some((inner, _)) = files.iter().find(|(other, _)| other.starts_with(&folder)) {
            return Err(bad(format!(
                "files: {name:?} is a file, so {inner:?} cannot be inside it"
            )));
        }
    }
    Ok(files)
}

/// `fetch_files`: a list of relative paths.
fn fetch_files(value: Option<Value>) -> Result<Vec<String>, RequestError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(bad("fetch_files must be an array of file paths")),
    };
    if items.len() > MAX_PLAIN_FILES {
        return Err(bad(format!(
            "fetch_files names {} files; at most {MAX_PLAIN_FILES}",
            items.len()
        )));
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::String(name) = item else {
            return Err(bad(format!("fetch_files[{i}] must be a string")));
        };
        check_name(&format!("fetch_files[{i}]"), &name)?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// A path sent or fetched must stay inside the working directory: relative, without `..`.
fn check_name(field: &str, name: &str) -> Result<(), RequestError> {
    let escapes = name.starts_with('/') || name.split('/').any(|part| part == "..");
    let names_nothing = name.split('/').all(|part| part.is_empty() || part == ".");
    if escapes || names_nothing || name.contains('\0') {
        return Err(bad(format!(
            "{field}: {name:?} must be a relative path inside the working directory (no \
             leading /, no ..)"
        )));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(bad(format!(
            "{field}: a path is {} bytes long; at most {MAX_NAME_BYTES}",
            name.len()
        )));
    }
    Ok(())
}

fn bad(message: impl Into<String>) -> RequestError {
    RequestError::BadRequest(message.into())
}

/// SandboxFusion's `RunStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RunStatus {
    /// Every stage finished in time with return code 0.
    Success,
    /// A stage ran out of time or ended with a non-zero return code.
    Failed,
    /// The server could not run a stage (or does not serve the language).
    SandboxError,
}

/// SandboxFusion's `CommandRunStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CommandRunStatus {
    /// The command ended by itself or was killed by a signal (`return_code` says which).
    Finished,
    /// The command could not be run.
    Error,
    /// The command was stopped at its time limit.
    TimeLimitExceeded,
}

/// SandboxFusion's `CommandRunResult`: one stage, compile or run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandRunResult {
    pub status: CommandRunStatus,
    /// Seconds: the CPU time of a run; the time this request waited for its program (compiled,
    /// or found in the compile cache) for a compile.
    pub execution_time: Option<f64>,
    /// The exit code, or minus the signal's number when a signal killed the command (as
    /// Python's `subprocess` reports it); `null` when it was stopped at its time limit.
    pub return_code: Option<i32>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
}

impl CommandRunResult {
    /// Whether the stage counts as failed in the overall status.
    fn failed(&self) -> bool {
        self.status == CommandRunStatus::TimeLimitExceeded
            || self.return_code.is_some_and(|code| code != 0)
    }
}

/// SandboxFusion's `RunCodeResponse`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunCodeReply {
    pub status: RunStatus,
    /// Empty on success; on `SandboxError` what went wrong; on `Failed` the limit that stopped
    /// the run, when one did (memory, output).
    pub message: String,
    /// `null` for Python, which is not compiled.
    pub compile_result: Option<CommandRunResult>,
    /// `null` when the compile failed.
    pub run_result: Option<CommandRunResult>,
    /// SandboxFusion's Kubernetes pod name; always `null` here.
    pub executor_pod_name: Option<String>,
    /// The fetched files that exist, by path, base64-encoded.
    pub files: BTreeMap<String, String>,
}

impl RunCodeReply {
    /// The answer for these stages, with SandboxFusion's overall status.
    pub fn of(
        compile: Option<CommandRunResult>,
        run: Option<CommandRunResult>,
        message: String,
        files: BTreeMap<String, String>,
    ) -> RunCodeReply {
        let stages = || compile.iter().chain(run.iter());
        let status = if let Some(error) = stages().find(|s| s.status == CommandRunStatus::Error) {
            return RunCodeReply::sandbox_error(error.stderr.clone().unwrap_or_default());
        } else if stages().any(CommandRunResult::failed) {
            RunStatus::Failed
        } else {
            RunStatus::Success
        };
        RunCodeReply {
            status,
            message,
            compile_result: compile,
            run_result: run,
            executor_pod_name: None,
            files,
        }
    }

    /// A `SandboxError` answer: nothing ran.
    pub fn sandbox_error(message: String) -> RunCodeReply {
        RunCodeReply {
            status: RunStatus::SandboxError,
            message,
            compile_result: None,
            run_result: None,
            executor_pod_name: None,
            files: BTreeMap::new(),
        }
    }

    /// The answer to a language this server does not run, naming those it does.
    pub fn unserved(language: &str) -> RunCodeReply {
        let served: Vec<&str> = RunCodeLanguage::ALL.iter().map(|l| l.as_str()).collect();
        RunCodeReply::sandbox_error(format!(
            "language {language:?} is not served here: this server runs {}",
            served.join(" and ")
        ))
    }

    /// How the request is counted in the metrics and the request log.
    pub fn outcome(&self) -> RequestOutcome {
        if self.status == RunStatus::SandboxError {
            return RequestOutcome::InternalError;
        }
        if self.compile_result.as_ref().is_some_and(|c| c.failed()) {
            return RequestOutcome::CompileError;
        }
        match &self.run_result {
            None => RequestOutcome::CompileError,
            Some(run) if run.status == CommandRunStatus::TimeLimitExceeded => {
                RequestOutcome::Timeout
            }
            Some(run) if run.return_code == Some(0) => RequestOutcome::Exited,
            Some(_) => RequestOutcome::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(body: Value) -> Result<RunCodeRequest, RequestError> {
        parse_run_code(body.to_string().as_bytes())
    }

    fn job(body: Value) -> RunCodeJob {
        match parse(body) {
            Ok(RunCodeRequest::Run(job)) => job,
            other => panic!("expected a job, got {other:?}"),
        }
    }

    fn error(body: Value) -> String {
        match parse(body) {
            Err(RequestError::BadRequest(message)) => message,
            other => panic!("expected a bad request, got {other:?}"),
        }
    }

    /// What verl's `call_sandbox_api` sends.
    fn verl(language: &str) -> Value {
        json!({"compile_timeout": 10, "run_timeout": 10, "code": "print(1)", "stdin": "5\n",
               "memory_limit_MB": 1024, "language": language, "files": {}, "fetch_files": []})
    }

    #[test]
    fn verls_request_parses_with_its_limits() {
        let job = job(verl("python"));
        assert_eq!(job.language, RunCodeLanguage::Python);
        assert_eq!(job.code, "print(1)");
        assert_eq!(job.stdin, b"5\n");
        assert_eq!(job.run_timeout, Duration::from_secs(10));
        assert_eq!(job.compile_timeout, Duration::from_secs(10));
        assert_eq!(job.memory_limit, 1024 << 20);
        assert!(job.files.is_empty() && job.fetch_files.is_empty());
    }

    #[test]
    fn defaults_are_sandbox_fusions_with_a_bounded_memory() {
        let job = job(
            json!({"code": "int main(){}", "language": "cpp", "stdin": null,
                             "memory_limit_MB": -1}),
        );
        assert_eq!(job.language, RunCodeLanguage::Cpp);
        assert_eq!(job.stdin, b"");
        assert_eq!(job.run_timeout, DEFAULT_TIMEOUT);
        assert_eq!(job.memory_limit, DEFAULT_PLAIN_MEMORY);
        let fractional = job_of_timeout(0.5);
        assert_eq!(fractional.run_timeout, Duration::from_millis(500));
    }

    fn job_of_timeout(seconds: f64) -> RunCodeJob {
        job(json!({"code": "", "language": "python", "run_timeout": seconds}))
    }

    #[test]
    fn other_languages_are_unserved_not_errors() {
        assert_eq!(
            parse(verl("java")),
            Ok(RunCodeRequest::Unserved {
                language: "java".into()
            })
        );
        let reply = RunCodeReply::unserved("java");
        assert_eq!(reply.status, RunStatus::SandboxError);
        assert!(
            reply.message.contains("\"java\"") && reply.message.contains("cpp and python"),
            "{}",
            reply.message
        );
    }

    #[test]
    fn client_mistakes_are_refused_naming_the_field() {
        let cases = [
            (
                json!({"code": "", "language": "cpp", "memory_limit_mb": 5}),
                "memory_limit_mb",
            ),
            (json!({"code": ""}), "language is required"),
            (
                json!({"code": 3, "language": "cpp"}),
                "code must be a string",
            ),
            (json!({"language": "cpp"}), "code is required"),
            (
                json!({"code": "", "language": "cpp", "run_timeout": 0}),
                "run_timeout",
            ),
            (
                json!({"code": "", "language": "cpp", "run_timeout": 121}),
                "at most 120",
            ),
            (
                json!({"code": "", "language": "cpp", "compile_timeout": "10"}),
                "compile_timeout",
            ),
            (
                json!({"code": "", "language": "cpp", "memory_limit_MB": 1.5}),
                "memory_limit_MB",
            ),
            (
                json!({"code": "", "language": "cpp", "memory_limit_MB": 1e9}),
                "memory_limit_MB asks",
            ),
            (json!({"code": "", "language": "cpp", "stdin": 1}), "stdin"),
            (
                json!({"code": "", "language": "cpp", "files": []}),
                "files must be an object",
            ),
            (
                json!({"code": "", "language": "cpp", "files": {"a": "%%"}}),
                "files[\"a\"] is not valid base64",
            ),
            (
                json!({"code": "", "language": "cpp", "files": {"../a": ""}}),
                "files: \"../a\"",
            ),
            (
                json!({"code": "", "language": "cpp", "files": {"/etc/a": ""}}),
                "files: \"/etc/a\"",
            ),
            (
                json!({"code": "", "language": "cpp", "files": {"a": "", "a/b": ""}}),
                "cannot be inside",
            ),
            (
                json!({"code": "", "language": "cpp", "fetch_files": ["../x"]}),
                "fetch_files[0]",
            ),
            (
                json!({"code": "", "language": "cpp", "fetch_files": [1]}),
                "fetch_files[0] must be",
            ),
            (
                json!({"code": "", "language": 7}),
                "language must be a string",
            ),
        ];
        for (body, expected) in cases {
            let message = error(body.clone());
            assert!(message.contains(expected), "{body}: {message}");
        }
        assert!(matches!(
            parse_run_code(b"[1]"),
            Err(RequestError::BadRequest(_))
        ));
    }

    #[test]
    fn files_are_decoded_and_null_or_ignored_ones_skipped() {
        let job = job(json!({"code": "", "language": "python",
            "files": {"data/in.txt": "aGk=", "skip": null, "x_IGNORE_THIS_FILE": "aGk="},
            "fetch_files": ["out.txt", "out.txt"]}));
        assert_eq!(job.files, vec![("data/in.txt".to_string(), b"hi".to_vec())]);
        assert_eq!(job.fetch_files, vec!["out.txt".to_string()]);
    }

    fn stage(status: CommandRunStatus, code: Option<i32>) -> CommandRunResult {
        CommandRunResult {
            status,
            execution_time: Some(0.1),
            return_code: code,
            stdout: Some(String::new()),
            stderr: Some("err".into()),
        }
    }

    #[test]
    fn the_overall_status_follows_sandbox_fusions_rule() {
        use CommandRunStatus::*;
        let reply = |compile, run| RunCodeReply::of(compile, run, String::new(), BTreeMap::new());
        let ok = reply(
            Some(stage(Finished, Some(0))),
            Some(stage(Finished, Some(0))),
        );
        assert_eq!(
            (ok.status, ok.outcome()),
            (RunStatus::Success, RequestOutcome::Exited)
        );
        let ce = reply(Some(stage(Finished, Some(1))), None);
        assert_eq!(
            (ce.status, ce.outcome()),
            (RunStatus::Failed, RequestOutcome::CompileError)
        );
        let tle = reply(None, Some(stage(TimeLimitExceeded, None)));
        assert_eq!(
            (tle.status, tle.outcome()),
            (RunStatus::Failed, RequestOutcome::Timeout)
        );
        let re = reply(None, Some(stage(Finished, Some(-11))));
        assert_eq!(
            (re.status, re.outcome()),
            (RunStatus::Failed, RequestOutcome::Failed)
        );
        let error = reply(None, Some(stage(Error, None)));
        assert_eq!(
            (error.status, error.message.as_str()),
            (RunStatus::SandboxError, "err")
        );
        assert_eq!(error.outcome(), RequestOutcome::InternalError);
    }

    #[test]
    fn the_reply_has_sandbox_fusions_field_names() {
        let reply = RunCodeReply::of(
            None,
            Some(stage(CommandRunStatus::Finished, Some(0))),
            String::new(),
            BTreeMap::from([("out.txt".to_string(), "aGk=".to_string())]),
        );
        assert_eq!(
            serde_json::to_value(&reply).unwrap(),
            json!({"status": "Success", "message": "", "compile_result": null,
                   "run_result": {"status": "Finished", "execution_time": 0.1, "return_code": 0,
                                  "stdout": "", "stderr": "err"},
                   "executor_pod_name": null, "files": {"out.txt": "aGk="}})
        );
    }
}
