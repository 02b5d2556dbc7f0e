//! Piston's execute request (`{language, version, files, stdin?, args?, compile_timeout?,
//! run_timeout?, compile_memory_limit?, run_memory_limit?}`) parsed into a [`Job`].
//!
//! Parsing goes through `serde_json::Value` by hand rather than a derived struct so that every
//! error names the field at fault, in Piston's words (`files[2].content is required as a
//! string`), and so that large file contents are moved, not copied.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::codeforces;
use super::runtime::CONTRACT_FILES;
use super::{
    allowed_memory, allowed_time_limit, IoiJob, Job, PlainJob, RequestError, Runtime,
    DEFAULT_PLAIN_MEMORY, MAX_TIMEOUT,
};
use crate::name::RelativePath;
use crate::problem::config::{parse_config, GRADER_CONFIG_PATH};
use crate::problem::{id_from_headers, Communication, GraderFile, TaskType, UserIo};

/// The hard limit the client adds to the time limit (docs/judging.md#script-mode); used to recover
/// a time limit from `run_timeout` when the grader config has none.
const CLIENT_EXTRA_SECONDS: f64 = 3.0;
/// Piston's default `run_timeout`.
const DEFAULT_PLAIN_RUN_TIMEOUT: Duration = Duration::from_secs(3);
/// Files of the IOI package's box that the server provides itself.
const PACKAGE_SCRIPTS: [&str; 2] = ["compile", "run"];
/// Longest file name (a path inside the box), in bytes: a box takes a bounded amount of paths.
const MAX_NAME_BYTES: usize = 255;
/// Most files of a plain `c++` request: each is bound into the program's box on its own, and a
/// box takes a bounded number of mounts.
pub const MAX_PLAIN_FILES: usize = 64;

/// A valid execute request: the runtime it selected and the job to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteRequest {
    pub runtime: Runtime,
    pub job: Job,
}

/// Parses and validates the body of `POST /api/v2/execute`. Every error is a
/// [`RequestError::BadRequest`] whose message names the field or file at fault.
pub fn parse_execute(body: &[u8]) -> Result<ExecuteRequest, RequestError> {
    parse_execute_noting_runtime(body, &mut None)
}

/// [`parse_execute`], noting the runtime in `runtime` as soon as the language is read: a request
/// refused after that (a file missing) is counted under its language, not as `unknown`.
pub fn parse_execute_noting_runtime(
    body: &[u8],
    runtime_read: &mut Option<Runtime>,
) -> Result<ExecuteRequest, RequestError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("request body is not valid JSON: {e}")))?;
    let Value::Object(mut top) = value else {
        return Err(bad(
            "request body must be a JSON object {language, version, files, ...}",
        ));
    };
    let language = required_string(&mut top, "language")?;
    let version = required_string(&mut top, "version")?;
    let files = files(top.remove("files"))?;
    let contract_shaped = files
        .iter()
        .any(|f| CONTRACT_FILES.contains(&f.name.as_str()));
    let runtime = Runtime::find(&language, &version, contract_shaped)
        .ok_or_else(|| unknown_runtime(&language, &version))?;
    *runtime_read = Some(runtime);
    let limits = RequestLimits::parse(&top)?;
    let job = match runtime {
        Runtime::CmsIoi => Job::Ioi(ioi_job(files, &limits)?),
        Runtime::Cpp => Job::Plain(plain_job(files, &mut top, &limits)?),
        Runtime::C => Job::Plain(PlainJob {
            language: crate::judge::Language::C,
            ..plain_job(files, &mut top, &limits)?
        }),
        Runtime::Codeforces(language) => Job::Codeforces(codeforces::parse_job(
            language,
            files.into_iter().map(|f| (f.name, f.content)).collect(),
            limits.run_timeout,
            limits.run_memory_limit,
        )?),
    };
    Ok(ExecuteRequest { runtime, job })
}

/// Piston's message for an unknown runtime, with the versions we do serve for that language.
fn unknown_runtime(language: &str, version: &str) -> RequestError {
    let versions = Runtime::versions_of(language);
    if versions.is_empty() {
        bad(format!("{language}-{version} runtime is unknown"))
    } else {
        bad(format!(
            "{language}-{version} runtime is unknown: {language} is served as version {} (or \"*\")",
            versions.join(", ")
        ))
    }
}

/// The limits a request asks for (`run_timeout`, `compile_timeout`, `run_memory_limit`), in
/// the units the judge uses; not the sandbox's [`ioi_sandbox::Limits`], which they become.
struct RequestLimits {
    run_timeout: Option<Duration>,
    compile_timeout: Option<Duration>,
    run_memory_limit: Option<u64>,
}

impl RequestLimits {
    fn parse(top: &Map<String, Value>) -> Result<RequestLimits, RequestError> {
        Ok(RequestLimits {
            run_timeout: milliseconds(top, "run_timeout")?,
            compile_timeout: milliseconds(top, "compile_timeout")?,
            run_memory_limit: bytes(top, "run_memory_limit")?
                .map(|b| allowed_memory(b, "run_memory_limit"))
                .transpose()?,
        })
    }
}

/// One file of the request, decoded.
struct File {
    name: String,
    content: Vec<u8>,
}

fn ioi_job(mut files: Vec<File>, limits: &RequestLimits) -> Result<IoiJob, RequestError> {
    let problem_id = problem_id(&files)?;
    let submission_path = format!("graders/{problem_id}.cpp");
    let submission = take(&mut files, &submission_path).ok_or_else(|| {
        bad(format!(
            "no {submission_path} among the files: it must hold the submission"
        ))
    })?;
    let input = take(&mut files, "input.txt")
        .ok_or_else(|| bad("no input.txt among the files: it must hold the test input"))?;
    let expected_output = take(&mut files, "correct_output.txt");
    files.retain(|f| !PACKAGE_SCRIPTS.contains(&f.name.as_str()));
    let grader_files: Vec<GraderFile> = files
        .into_iter()
        .map(|f| {
            Ok(GraderFile {
                path: RelativePath::parse(&f.name).map_err(|e| bad(format!("files: {e}")))?,
                content: f.content,
            })
        })
        .collect::<Result<_, RequestError>>()?;

    let config = grader_files
        .iter()
        .find(|f| f.path == GRADER_CONFIG_PATH)
        .map(|f| {
            let text = String::from_utf8_lossy(&f.content);
            parse_config(&text, &format!("{GRADER_CONFIG_PATH} (request file)"))
                .map_err(|e| bad(format!("{e:#}")))
        })
        .transpose()?;
    let config_time = config.as_ref().and_then(|c| c.time_limit);
    if let Some(t) = config_time {
        allowed_time_limit(t, &format!("{GRADER_CONFIG_PATH} time_limit"))?;
    }
    let from_timeout = limits
        .run_timeout
        .map(|t| t.as_secs_f64() - CLIENT_EXTRA_SECONDS)
        .filter(|t| *t > 0.0);
    let mut time_limit = config_time.or(from_timeout).ok_or_else(|| {
        bad(format!(
            "no time limit: {GRADER_CONFIG_PATH} has no time_limit and run_timeout is not above \
             {CLIENT_EXTRA_SECONDS} s"
        ))
    })?;
    let run_timeout = limits
        .run_timeout
        .unwrap_or_else(|| Duration::from_secs_f64(time_limit + CLIENT_EXTRA_SECONDS));
    // The request's hard limit bounds everything: a CPU limit above it could never be reached.
    time_limit = time_limit.min(run_timeout.as_secs_f64());
    let config_memory = config.as_ref().and_then(|c| c.memory_limit);
    if let Some(bytes) = config_memory {
        allowed_memory(bytes, &format!("{GRADER_CONFIG_PATH} memory_limit"))?;
    }
    let memory_limit = config_memory.or(limits.run_memory_limit).ok_or_else(|| {
        bad(format!(
            "no memory limit: {GRADER_CONFIG_PATH} has no memory_limit and run_memory_limit \
                 is not set"
        ))
    })?;
    let has_manager = grader_files.iter().any(|f| f.path == "graders/manager.cpp");
    let task = config
        .as_ref()
        .and_then(|c| c.task(None))
        .unwrap_or_else(|| {
            if has_manager {
                let communication = config.as_ref().map(|c| c.communication.clone());
                TaskType::Communication(communication.unwrap_or(Communication {
                    num_processes: 1,
                    user_io: UserIo::StdIo,
                    manager_args: Vec::new(),
                }))
            } else {
                TaskType::Batch
            }
        });
    task.check_bounds()
        .map_err(|e| bad(format!("{GRADER_CONFIG_PATH}: {e:#}")))?;
    Ok(IoiJob {
        problem_id,
        submission,
        input,
        expected_output,
        grader_files,
        time_limit,
        memory_limit,
        task,
        run_timeout,
        compile_timeout: limits.compile_timeout,
    })
}

/// The problem id: from the headers (docs/judging.md#compile), else from a lone `graders/<id>.cpp`
/// sent first, as the Python client does.
fn problem_id(files: &[File]) -> Result<String, RequestError> {
    let headers: Vec<GraderFile> = files
        .iter()
        .filter(|f| f.name.ends_with(".h"))
        .filter_map(|f| {
            Some(GraderFile {
                path: RelativePath::parse(&f.name).ok()?,
                content: Vec::new(),
            })
        })
        .collect();
    if let Some(id) = id_from_headers(&headers) {
        return Ok(id);
    }
    files
        .first()
        .and_then(|f| f.name.strip_prefix("graders/"))
        .and_then(|name| name.strip_suffix(".cpp"))
        .filter(|stem| crate::name::SafeName::parse(stem).is_ok())
        .map(str::to_lowercase)
        .ok_or_else(|| {
            bad(
                "cannot tell the problem id: no graders/<id>.h header (other than testlib.h) \
                 among the files, and the first file is not graders/<id>.cpp",
            )
        })
}

fn plain_job(
    mut files: Vec<File>,
    top: &mut Map<String, Value>,
    limits: &RequestLimits,
) -> Result<PlainJob, RequestError> {
    if files.is_empty() {
        return Err(bad(
            "files must contain at least one file: the source to compile",
        ));
    }
    if files.len() > MAX_PLAIN_FILES {
        return Err(bad(format!(
            "files holds {} files; a c++ run takes at most {MAX_PLAIN_FILES}",
            files.len()
        )));
    }
    let main = files.remove(0);
    let file_name = main.name;
    let source = String::from_utf8(main.content)
        .map_err(|_| bad(format!("{file_name} is not valid UTF-8")))?;
    let stdin = match top.remove("stdin") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.into_bytes(),
        Some(_) => return Err(bad("stdin must be a string")),
    };
    let args = match top.remove("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s),
                _ => Err(bad(format!("args[{i}] must be a string"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("args must be an array of strings")),
    };
    Ok(PlainJob {
        language: crate::judge::Language::Cpp,
        source,
        file_name,
        other_files: files.into_iter().map(|f| (f.name, f.content)).collect(),
        stdin,
        args,
        run_timeout: limits.run_timeout.unwrap_or(DEFAULT_PLAIN_RUN_TIMEOUT),
        memory_limit: limits.run_memory_limit.unwrap_or(DEFAULT_PLAIN_MEMORY),
        compile_timeout: limits.compile_timeout,
    })
}

/// Removes the file named `name` and returns its content.
fn take(files: &mut Vec<File>, name: &str) -> Option<Vec<u8>> {
    let at = files.iter().position(|f| f.name == name)?;
    Some(files.remove(at).content)
}

/// The most files one request may send: an IOI task's graders, checker and test are a few
/// dozen. Every check below is linear in the files, so a body of many tiny files costs little,
/// and this bound says so up front.
pub const MAX_REQUEST_FILES: usize = 1024;

fn files(value: Option<Value>) -> Result<Vec<File>, RequestError> {
    let Some(Value::Array(items)) = value else {
        return Err(bad("files is required as an array"));
    };
    if items.len() > MAX_REQUEST_FILES {
        return Err(bad(format!(
            "files: {} files, at most {MAX_REQUEST_FILES} a request",
            items.len()
        )));
    }
    let mut files: Vec<File> = Vec::with_capacity(items.len());
    let mut names = std::collections::HashSet::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let file = file(i, item)?;
        if !names.insert(file.name.clone()) {
            return Err(bad(format!(
                "files[{i}].name: {:?} is sent twice",
                file.name
            )));
        }
        files.push(file);
    }
    // Each file appears in the box at its name: one cannot also be the folder of another.
    for inner in &files {
        let name = inner.name.as_str();
        for (at, _) in name.match_indices('/') {
            if let Some(outer) = names.get(&name[..at]) {
                return Err(bad(format!(
                    "files: {outer:?} is a file, so {name:?} cannot be inside it"
                )));
            }
        }
    }
    Ok(files)
}

fn file(i: usize, item: Value) -> Result<File, RequestError> {
    let Value::Object(mut fields) = item else {
        return Err(bad(format!(
            "files[{i}] must be an object {{name, content, encoding?}}"
        )));
    };
    // Piston names a nameless file `file0.code`, which g++ takes for a linker script: refuse.
    let name = match fields.remove("name") {
        None | Some(Value::Null) => {
            return Err(bad(format!(
                "files[{i}].name is required: e.g. main.cpp, input.txt"
            )))
        }
        Some(Value::String(name)) => name,
        Some(_) => return Err(bad(format!("files[{i}].name must be a string"))),
    };
    check_name(i, &name)?;
    let Some(Value::String(content)) = fields.remove("content") else {
        return Err(bad(format!("files[{i}].content is required as a string")));
    };
    let content = match fields
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("utf8")
    {
        "utf8" | "utf-8" => content.into_bytes(),
        "base64" => decode_base64(&content).map_err(|e| {
            bad(format!(
                "files[{i}] ({name}): content is not valid base64: {e}"
            ))
        })?,
        "hex" => decode_hex(&content).map_err(|e| {
            bad(format!(
                "files[{i}] ({name}): content is not valid hex: {e}"
            ))
        })?,
        other => {
            return Err(bad(format!(
                "files[{i}].encoding must be utf8, base64 or hex, got {other:?}"
            )))
        }
    };
    Ok(File { name, content })
}

/// File names become paths inside the box: they must stay inside it. Nor may a part of one
/// start with `-` or `@`: g++ and its passes read such a name (a source's, or the base name
/// they derive from it) as an option, or as a file of options to read from the box
/// (`@opts.cpp` beside an `opts.cpp` holding `-wrapper /bin/sh,...` runs a shell).
fn check_name(i: usize, name: &str) -> Result<(), RequestError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(bad(format!(
            "files[{i}].name is {} bytes long; at most {MAX_NAME_BYTES}",
            name.len()
        )));
    }
    // The one grammar of paths from the input (docs/data.md#names): relative, no `.` or `..`,
    // no empty component, no control character (a newline would forge a log line).
    if let Err(e) = RelativePath::parse(name) {
        return Err(bad(format!(
            "files[{i}].name must be a relative path inside the box: {e}"
        )));
    }
    if name.split('/').any(|part| part.starts_with(['-', '@'])) {
        return Err(bad(format!(
            "files[{i}].name {name:?}: no part of a file name may start with - or @ (the \
             compiler would read it as an option)"
        )));
    }
    Ok(())
}

/// Decodes base64 as leniently as Node's `Buffer.from(s, "base64")`, which Piston uses:
/// whitespace is ignored and padding is optional.
pub(super) fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    if text.bytes().any(|b| b.is_ascii_whitespace()) {
        let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        LENIENT.decode(compact)
    } else {
        LENIENT.decode(text)
    }
}

fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if text.len() % 2 == 1 {
        return Err(format!("odd number of digits ({})", text.len()));
    }
    text.as_bytes()
        .chunks(2)
        .enumerate()
        .map(|(at, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| format!("not a hex byte at offset {}", at * 2))
        })
        .collect()
}

fn required_string(top: &mut Map<String, Value>, key: &str) -> Result<String, RequestError> {
    match top.remove(key) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(bad(format!("{key} is required as a string"))),
    }
}

/// A duration in milliseconds; absent, `null` or Piston's `-1` (no limit) give `None`.
fn milliseconds(top: &Map<String, Value>, key: &str) -> Result<Option<Duration>, RequestError> {
    let Some(ms) = number(top, key, "a number of milliseconds")? else {
        return Ok(None);
    };
    let max = MAX_TIMEOUT.as_millis();
    if ms > max as f64 {
        return Err(bad(format!(
            "{key} is {ms} ms; the server allows at most {max} ms (a run holds a worker for that long)"
        )));
    }
    Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
}

/// A size in bytes; absent, `null` or Piston's `-1` (no limit) give `None`.
fn bytes(top: &Map<String, Value>, key: &str) -> Result<Option<u64>, RequestError> {
    Ok(number(top, key, "a number of bytes")?.map(|b| b as u64))
}

fn number(top: &Map<String, Value>, key: &str, what: &str) -> Result<Option<f64>, RequestError> {
    match top.get(key) {
        None | Some(Value::Null) => Ok(None),
        // Piston's -1 means no limit.
        Some(Value::Number(n)) if n.as_f64() == Some(-1.0) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if v >= 0.0 && v.is_finite() => Ok(Some(v)),
            _ => Err(bad(format!(
                "{key} must be {what} (or -1 for no limit), got {n}"
            ))),
        },
        Some(other) => Err(bad(format!("{key} must be {what}, got {other}"))),
    }
}

fn bad(message: impl Into<String>) -> RequestError {
    RequestError::BadRequest(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ioi(body: Value) -> IoiJob {
        match parse_execute(body.to_string().as_bytes()) {
            Ok(ExecuteRequest {
                runtime: Runtime::CmsIoi,
                job: Job::Ioi(job),
            }) => job,
            other => panic!("expected an IOI job, got {other:?}"),
        }
    }

    fn error(body: &str) -> String {
        match parse_execute(body.as_bytes()) {
            Err(RequestError::BadRequest(message)) => message,
            other => panic!("expected a bad request, got {other:?}"),
        }
    }

    fn file(name: &str, content: &str) -> Value {
        json!({"name": name, "content": content})
    }

    #[test]
    fn an_ioi_request_as_the_python_client_sends_it_becomes_a_job() {
        let job = ioi(json!({
            "language": "cms_ioi", "version": "*",
            "files": [
                file("graders/nile.cpp", "int main(){}"),
                file("input.txt", "3\n1 2 3\n"),
                file("correct_output.txt", "6\n"),
                file("graders/grader_config.json",
                     r#"{"code":"nile","task_type":"Batch","time_limit":2.0,"memory_limit":2147483648}"#),
                file("graders/nile.h", "long long f();"),
                file("graders/grader.cpp", "#include \"nile.h\""),
                file("compile", "#!/bin/bash"),
                file("run", "#!/bin/bash"),
            ],
            "run_timeout": 5000, "run_memory_limit": 2147483648u64,
        }));
        assert_eq!(job.problem_id, "nile");
        assert_eq!(job.submission, b"int main(){}");
        assert_eq!(job.input, b"3\n1 2 3\n");
        assert_eq!(job.expected_output.as_deref(), Some(&b"6\n"[..]));
        let paths: Vec<&str> = job.grader_files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "graders/grader_config.json",
                "graders/nile.h",
                "graders/grader.cpp"
            ],
            "the submission, the test files and the package scripts are not grader files"
        );
        assert_eq!(job.time_limit, 2.0);
        assert_eq!(job.memory_limit, 2 << 30);
        assert_eq!(job.task, TaskType::Batch);
        assert_eq!(job.run_timeout, Duration::from_secs(5));
        assert_eq!(job.compile_timeout, None);
    }

    #[test]
    fn limits_fall_back_to_the_request_when_the_config_lacks_them() {
        let job = ioi(json!({
            "language": "ioi", "version": "1.0.0",
            "files": [file("graders/Wall.h", ""), file("graders/wall.cpp", "x"), file("input.txt", "")],
            "run_timeout": 4500, "run_memory_limit": 1073741824, "compile_timeout": 60000,
        }));
        assert_eq!(job.problem_id, "wall", "the header's stem, lowercased");
        assert_eq!(job.time_limit, 1.5, "run_timeout minus the client's 3 s");
        assert_eq!(job.memory_limit, 1 << 30);
        assert_eq!(job.expected_output, None);
        assert_eq!(job.compile_timeout, Some(Duration::from_secs(60)));
    }

    #[test]
    fn communication_parameters_come_from_the_config_in_any_form() {
        let config = json!({
            "task_type": "Communication", "time_limit": 1, "memory_limit": 1048576,
            "task_type_params": "{\"task_type_parameters_Communication_num_processes\": 2, \
                                  \"task_type_parameters_Communication_user_io\": \"fifo_io\"}",
        });
        let job = ioi(json!({
            "language": "cms_ioi", "version": "*",
            "files": [file("graders/a.cpp", ""), file("input.txt", "1"), file("graders/a.h", ""),
                      file("graders/manager.cpp", ""), file("graders/grader_config.json", &config.to_string())],
            "run_timeout": 4000,
        }));
        let TaskType::Communication(c) = job.task else {
            panic!("expected Communication")
        };
        assert_eq!((c.num_processes, c.user_io), (2, UserIo::FifoIo));
    }

    #[test]
    fn a_manager_without_task_type_means_communication() {
        let job = ioi(json!({
            "language": "cms_ioi", "version": "*",
            "files": [file("graders/a.cpp", ""), file("input.txt", ""), file("graders/manager.cpp", "")],
            "run_timeout": 4000, "run_memory_limit": 1000,
        }));
        assert!(matches!(job.task, TaskType::Communication(ref c) if c.num_processes == 1));
        assert_eq!(
            job.problem_id, "a",
            "without a header the first graders/<id>.cpp names it"
        );
    }

    #[test]
    fn base64_and_hex_contents_are_decoded() {
        let job = ioi(json!({
            "language": "cms_ioi", "version": "*",
            "files": [
                {"name": "graders/a.cpp", "content": "aW50IG1h\naW4oKXt9", "encoding": "base64"},
                {"name": "input.txt", "content": "00ff0a", "encoding": "hex"},
                {"name": "correct_output.txt", "content": "eA", "encoding": "base64"},
            ],
            "run_timeout": 4000, "run_memory_limit": 1000,
        }));
        assert_eq!(job.submission, b"int main(){}");
        assert_eq!(job.input, [0x00, 0xff, 0x0a]);
        assert_eq!(
            job.expected_output.as_deref(),
            Some(&b"x"[..]),
            "padding is optional"
        );
    }

    #[test]
    fn a_submission_that_is_not_utf8_is_compiled_as_sent() {
        // "// é\r\nint main(){}" in Latin-1, as contest archives hold it.
        let job = ioi(json!({
            "language": "cms_ioi", "version": "*",
            "files": [
                {"name": "graders/a.cpp", "content": "2f2f20e90d0a696e74206d61696e28297b7d", "encoding": "hex"},
                {"name": "input.txt", "content": ""},
            ],
            "run_timeout": 4000, "run_memory_limit": 1000,
        }));
        assert_eq!(job.submission, b"// \xe9\r\nint main(){}");
    }

    #[test]
    fn a_plain_cpp_request_becomes_a_plain_job() {
        let body = json!({
            "language": "c++", "version": "*", "files": [file("main.cpp", "int main(){}"), file("a.h", "")],
            "stdin": "1 2", "args": ["x"], "run_memory_limit": -1,
        });
        let Ok(ExecuteRequest {
            runtime: Runtime::Cpp,
            job: Job::Plain(job),
        }) = parse_execute(body.to_string().as_bytes())
        else {
            panic!("expected a plain job");
        };
        assert_eq!(
            (job.file_name.as_str(), job.source.as_str()),
            ("main.cpp", "int main(){}")
        );
        assert_eq!(job.other_files, [("a.h".to_string(), Vec::new())]);
        assert_eq!(
            (job.stdin.as_slice(), job.args.as_slice()),
            (&b"1 2"[..], &["x".to_string()][..])
        );
        assert_eq!(job.run_timeout, DEFAULT_PLAIN_RUN_TIMEOUT);
        assert_eq!(
            job.memory_limit, DEFAULT_PLAIN_MEMORY,
            "-1 (Piston's `no limit`) is the default, never unlimited"
        );
    }

    #[test]
    fn errors_name_the_field_at_fault() {
        assert!(error("{\"language\": ").starts_with("request body is not valid JSON"));
        assert_eq!(
            error("[]"),
            "request body must be a JSON object {language, version, files, ...}"
        );
        assert_eq!(
            error(r#"{"version": "*", "files": []}"#),
            "language is required as a string"
        );
        assert_eq!(
            error(r#"{"language": "c++", "files": []}"#),
            "version is required as a string"
        );
        assert_eq!(
            error(r#"{"language": "c++", "version": "*"}"#),
            "files is required as an array"
        );
        assert_eq!(
            error(r#"{"language": "c++", "version": "*", "files": [{"name": "a"}]}"#),
            "files[0].content is required as a string"
        );
        assert_eq!(
            error(r#"{"language": "cobol", "version": "*", "files": []}"#),
            "cobol-* runtime is unknown"
        );
        assert!(error(
            r#"{"language": "c++", "version": "*", "files": [{"name": "../x", "content": ""}]}"#
        )
        .contains("inside the box"));
        for name in [".", "./", "a/../b", "a\nFORGED log line"] {
            let body = json!({"language": "c++", "version": "*", "files": [file(name, "")]});
            assert!(
                error(&body.to_string()).contains("must be a relative path inside the box"),
                "{name}"
            );
        }
        let long =
            json!({"language": "c++", "version": "*", "files": [file(&"a".repeat(256), "")]});
        assert_eq!(
            error(&long.to_string()),
            "files[0].name is 256 bytes long; at most 255"
        );
        for name in ["@opts.cpp", "-wrapper", "graders/@x.h", "dir/-o"] {
            let body = json!({"language": "cms_ioi", "version": "*",
                              "files": [file("graders/a.cpp", ""), file(name, "")]});
            assert!(
                error(&body.to_string()).ends_with("(the compiler would read it as an option)"),
                "{name}"
            );
        }
        assert_eq!(
            error(r#"{"language": "c++", "version": "*", "files": [{"content": "int main(){}"}]}"#),
            "files[0].name is required: e.g. main.cpp, input.txt"
        );
        assert_eq!(
            error(r#"{"language": "c++", "version": "9.9.9", "files": []}"#),
            "c++-9.9.9 runtime is unknown: c++ is served as version 10.2.0, 17, 1.0.0 (or \"*\")"
        );
        assert!(error(r#"{"language": "c++", "version": "*", "files": [{"name": "a.cpp", "content": "", "encoding": "rot13"}]}"#)
            .contains("encoding must be utf8, base64 or hex"));
        assert!(error(r#"{"language": "c++", "version": "*", "files": [{"name": "a.cpp", "content": "%%", "encoding": "base64"}]}"#)
            .contains("not valid base64"));
        assert_eq!(
            error(
                r#"{"language": "c++", "version": "*", "files": [{"name": "a.cpp", "content": ""}], "run_timeout": "5s"}"#
            ),
            "run_timeout must be a number of milliseconds, got \"5s\""
        );
    }

    #[test]
    fn plain_requests_beyond_the_servers_bounds_are_refused_naming_the_field() {
        let plain = |memory: u64| {
            json!({"language": "c++", "version": "*", "files": [file("main.cpp", "")],
                   "run_memory_limit": memory})
            .to_string()
        };
        let message = error(&plain(super::super::MAX_RUN_MEMORY + 1));
        assert!(
            message.starts_with("run_memory_limit asks for 4294967297 bytes")
                && message.contains("at most 4294967296 bytes"),
            "{message}"
        );
        let Ok(ExecuteRequest {
            job: Job::Plain(job),
            ..
        }) = parse_execute(plain(super::super::MAX_RUN_MEMORY).as_bytes())
        else {
            panic!("the maximum itself is allowed");
        };
        assert_eq!(job.memory_limit, super::super::MAX_RUN_MEMORY);
        let config = r#"{"task_type": "Batch", "time_limit": 1, "memory_limit": 68719476736}"#;
        let ioi = json!({"language": "cms_ioi", "version": "*", "run_timeout": 4000,
            "files": [file("graders/a.cpp", ""), file("input.txt", ""),
                      file("graders/grader_config.json", config)]});
        let message = error(&ioi.to_string());
        assert!(
            message.starts_with("graders/grader_config.json memory_limit asks for 68719476736"),
            "{message}"
        );
        let many: Vec<Value> = (0..=MAX_PLAIN_FILES)
            .map(|i| file(&format!("f{i}.cpp"), ""))
            .collect();
        let message = error(&json!({"language": "c++", "version": "*", "files": many}).to_string());
        assert_eq!(message, "files holds 65 files; a c++ run takes at most 64");
        let nested = json!({"language": "c++", "version": "*",
            "files": [file("main.cpp", ""), file("data", ""), file("data/x.txt", "")]});
        assert_eq!(
            error(&nested.to_string()),
            "files: \"data\" is a file, so \"data/x.txt\" cannot be inside it"
        );
    }

    #[test]
    fn ioi_requests_must_carry_the_submission_the_input_and_limits() {
        let missing_input = r#"{"language": "cms_ioi", "version": "*", "run_timeout": 4000, "run_memory_limit": 1,
            "files": [{"name": "graders/a.h", "content": ""}, {"name": "graders/a.cpp", "content": ""}]}"#;
        assert_eq!(
            error(missing_input),
            "no input.txt among the files: it must hold the test input"
        );
        let missing_submission = r#"{"language": "cms_ioi", "version": "*", "run_timeout": 4000, "run_memory_limit": 1,
            "files": [{"name": "graders/a.h", "content": ""}, {"name": "input.txt", "content": ""}]}"#;
        assert!(error(missing_submission).starts_with("no graders/a.cpp among the files"));
        let no_id = r#"{"language": "cms_ioi", "version": "*", "files": [{"name": "input.txt", "content": ""}]}"#;
        assert!(error(no_id).starts_with("cannot tell the problem id"));
        let no_memory = r#"{"language": "cms_ioi", "version": "*", "run_timeout": 4000,
            "files": [{"name": "graders/a.cpp", "content": ""}, {"name": "input.txt", "content": ""}]}"#;
        assert!(error(no_memory).starts_with("no memory limit"));
        let bad_config = r#"{"language": "cms_ioi", "version": "*", "run_timeout": 4000, "run_memory_limit": 1,
            "files": [{"name": "graders/a.cpp", "content": ""}, {"name": "input.txt", "content": ""},
                      {"name": "graders/grader_config.json", "content": "{\"task_type\": \"OutputOnly\"}"}]}"#;
        assert!(
            error(bad_config).contains("OutputOnly"),
            "{}",
            error(bad_config)
        );
    }
    #[test]
    fn timeouts_beyond_the_servers_maximum_are_refused_naming_the_field() {
        for key in ["run_timeout", "compile_timeout"] {
            for ms in [120_001.0, 1e300] {
                let mut top = Map::new();
                top.insert(key.into(), serde_json::json!(ms));
                let Err(RequestError::BadRequest(message)) = RequestLimits::parse(&top) else {
                    panic!("{key} = {ms} accepted")
                };
                assert!(
                    message.contains(key) && message.contains("120000"),
                    "{message}"
                );
            }
            let mut top = Map::new();
            top.insert(key.into(), serde_json::json!(120_000));
            assert!(
                RequestLimits::parse(&top).is_ok(),
                "{key} at the maximum refused"
            );
        }
    }
    #[test]
    fn time_limits_beyond_the_servers_maximum_are_refused_naming_the_field() {
        let config = r#"{"time_limit": 1e300, "memory_limit": 268435456, "task_type": "Batch"}"#;
        let body = serde_json::json!({
            "language": "cms_ioi", "version": "*",
            "files": [
                {"name": "graders/p.cpp", "content": "int main(){}"},
                {"name": "input.txt", "content": "1"},
                {"name": "correct_output.txt", "content": "1"},
                {"name": "graders/grader_config.json", "content": config},
            ],
        });
        let Err(RequestError::BadRequest(message)) = parse_execute(body.to_string().as_bytes())
        else {
            panic!("a time limit of 1e300 s accepted")
        };
        assert!(message.contains("time_limit"), "{message}");
    }
}
