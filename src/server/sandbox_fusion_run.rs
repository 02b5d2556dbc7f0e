//! Running one `/run_code` request (docs/run-code-api.md) in the sandbox.
//!
//! 1. C++ is compiled by the compile cache, exactly as a Piston `c++` request whose one file is
//!    `main.cpp` (the same flags, so the two APIs share entries): once per distinct code, however
//!    many test cases arrive for it and however many arrive at once. Only the code goes into the
//!    compile box. Python is not compiled; the host's `python3` runs it.
//! 2. The program runs with `run_timeout` as its CPU limit (all threads) and as its wall limit
//!    (which does not charge time spent waiting for a CPU, so load does not turn a run into a
//!    timeout), the request's memory limit on its cgroup, its stdin, stdout and stderr in a
//!    root-only host folder, each output bounded. Its working directory `/box` holds the
//!    request's `files`:
//!    - without `fetch_files`, `/box` is a private tmpfs (counted as the program's memory) and
//!      the files are bound into it read-only, as for a Piston `c++` request;
//!    - with `fetch_files`, `/box` is a host folder owned by the box, the files written in it,
//!      so that what the program leaves there can be read back afterwards. Each file the
//!      program writes is bounded by the output limit; the folder is removed after the run.
//!      Fetched files are opened without following links, only when they are regular files,
//!      and read up to [`FETCH_LIMIT`] bytes in all: nothing the program planted there (a link
//!      to a host file, a FIFO) is read on its behalf.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use base64::Engine as _;
use ioi_sandbox::{Bind, Outcome, RunSpec, Termination};

use super::codeforces_run::{python3_in_box, PYTHON_ENV};
use super::judged::{run_plain, stage_files, PLAIN_OUTPUT_LIMIT};
use super::sandbox_fusion::{
    CommandRunResult, CommandRunStatus, RunCodeJob, RunCodeLanguage, RunCodeReply,
};
use super::{JudgeExecutor, RequestError};
use crate::judge::compile::Compiled;
use crate::judge::{read_capped, BoxDir, CompileError, Language};

/// The name the C++ code is compiled under (as a one-file Piston `c++` request).
const CPP_SOURCE: &str = "main.cpp";
/// Where the program (binary or Python source) appears inside its box.
const PROGRAM_DIR: &str = "/sol";
/// Smallest tmpfs box (a tmpfs of size 0 would be unbounded).
const MIN_BOX: u64 = 1 << 20;
/// Bytes of fetched files returned by one request, over all of them.
pub const FETCH_LIMIT: u64 = PLAIN_OUTPUT_LIMIT;

/// The program to run: a compiled binary or a Python source.
enum Program {
    Binary(crate::judge::compile::Executable),
    Python(PathBuf),
}

impl JudgeExecutor {
    /// One `/run_code` request: compile (C++, cached) and run once.
    pub fn run_sandbox_fusion(&self, job: RunCodeJob) -> Result<RunCodeReply, RequestError> {
        let private = crate::scratch::tempdir("out")
            .map_err(|e| internal("cannot create the run's folder", e))?;
        let (program, compile) = match self.run_code_program(&job, private.path())? {
            Ok(ready) => ready,
            Err(failed) => {
                return Ok(RunCodeReply::of(
                    Some(failed),
                    None,
                    String::new(),
                    BTreeMap::new(),
                ))
            }
        };
        let (run, message, files) = self
            .run_code_run(&job, &program, private.path())
            .map_err(|e| internal("cannot run the program", e))?;
        Ok(RunCodeReply::of(compile, Some(run), message, files))
    }

    /// The program and its compile stage (none for Python), or the failed compile stage.
    #[allow(clippy::type_complexity)]
    fn run_code_program(
        &self,
        job: &RunCodeJob,
        private: &Path,
    ) -> Result<Result<(Program, Option<CommandRunResult>), CommandRunResult>, RequestError> {
        if job.language == RunCodeLanguage::Python {
            python3_in_box()?;
            let path = private.join("main.py");
            fs::write(&path, &job.code)
                .map_err(|e| internal("cannot write the program", e.into()))?;
            return Ok(Ok((Program::Python(path), None)));
        }
        let judge = self.judge();
        let started = Instant::now();
        let compiled = judge
            .cache()
            .program(
                judge.sandbox(),
                &[(CPP_SOURCE, job.code.as_bytes())],
                CPP_SOURCE,
                Language::Cpp,
            )
            .map_err(|e| internal("cannot compile the program", e))?;
        let seconds = Some(started.elapsed().as_secs_f64());
        Ok(match compiled {
            Compiled::Binary(path) => Ok((
                Program::Binary(path),
                Some(CommandRunResult {
                    status: CommandRunStatus::Finished,
                    execution_time: seconds,
                    return_code: Some(0),
                    stdout: Some(String::new()),
                    stderr: Some(String::new()),
                }),
            )),
            Compiled::Error(error) => Err(compile_failure(error, seconds)),
        })
    }

    /// Runs the program once; its stage, the note for `message` and the fetched files.
    fn run_code_run(
        &self,
        job: &RunCodeJob,
        program: &Program,
        private: &Path,
    ) -> anyhow::Result<(CommandRunResult, String, BTreeMap<String, String>)> {
        let sandbox = self.judge().sandbox();
        let (argv, program_bind) = match program {
            Program::Binary(path) => (
                vec![format!("{PROGRAM_DIR}/program")],
                Bind::read_only(path.path(), format!("{PROGRAM_DIR}/program")),
            ),
            Program::Python(path) => (
                vec!["python3".to_string(), format!("{PROGRAM_DIR}/main.py")],
                Bind::read_only(path, format!("{PROGRAM_DIR}/main.py")),
            ),
        };
        // With fetch_files, a host folder that outlives the run (on a tmpfs, so that what the
        // program writes there counts against its memory limit); else a private tmpfs.
        let host_box = if job.fetch_files.is_empty() {
            None
        } else {
            Some(BoxDir::in_memory(sandbox)?)
        };
        let mut spec = match &host_box {
            Some(dir) => {
                for (name, content) in &job.files {
                    dir.write(name, content)?;
                }
                RunSpec::new(dir.path(), argv)
            }
            None => {
                let mut spec = RunSpec::in_tmpfs(job.memory_limit.max(MIN_BOX), argv);
                let staged = private.join("files");
                let files: Vec<(&str, &[u8])> = job
                    .files
                    .iter()
                    .map(|(n, c)| (n.as_str(), c.as_slice()))
                    .collect();
                for entry in stage_files(&staged, &files)? {
                    spec.binds.push(Bind::read_only(
                        staged.join(&entry),
                        Path::new(ioi_sandbox::BOX_PATH).join(&entry),
                    ));
                }
                spec
            }
        };
        spec.binds.push(program_bind);
        if matches!(program, Program::Python(_)) {
            spec.env
                .extend(PYTHON_ENV.map(|(k, v)| (k.to_string(), v.to_string())));
            // `import` finds the request's modules in the working directory, as in
            // SandboxFusion, where the script is written beside them.
            spec.env.push(("PYTHONPATH".into(), "/box".into()));
        }
        let (outcome, stdout, stderr) = run_plain(
            sandbox,
            spec,
            private,
            &job.stdin,
            (job.run_timeout, job.memory_limit),
            (self.runs(), job.language.as_str()),
        )?;
        let (status, return_code, mut message) = run_status(&outcome, job);
        let run = CommandRunResult {
            status,
            execution_time: Some(outcome.cpu_time),
            return_code,
            stdout: Some(read_capped(&stdout)?),
            stderr: Some(read_capped(&stderr)?),
        };
        let mut files = BTreeMap::new();
        if let Some(dir) = &host_box {
            let skipped = fetch(dir.path(), &job.fetch_files, &mut files)?;
            if !skipped.is_empty() {
                if !message.is_empty() {
                    message.push_str("; ");
                }
                message.push_str(&format!(
                    "not fetched, over the {FETCH_LIMIT} bytes a request returns: {}",
                    skipped.join(", ")
                ));
            }
        }
        Ok((run, message, files))
    }
}

/// The run's stage status, return code and, for a limit other than time, a note saying which.
fn run_status(outcome: &Outcome, job: &RunCodeJob) -> (CommandRunStatus, Option<i32>, String) {
    let killed = |signal: i32| Some(-signal);
    match outcome.status {
        Termination::Ok | Termination::RuntimeError => {
            (CommandRunStatus::Finished, outcome.exit_code, String::new())
        }
        Termination::Signaled => (
            CommandRunStatus::Finished,
            killed(outcome.signal.unwrap_or(libc::SIGKILL)),
            String::new(),
        ),
        Termination::TimeLimit | Termination::WallTimeLimit => {
            (CommandRunStatus::TimeLimitExceeded, None, String::new())
        }
        Termination::MemoryLimit => (
            CommandRunStatus::Finished,
            killed(libc::SIGKILL),
            format!(
                "memory limit exceeded: the program used more than {} MB",
                job.memory_limit >> 20
            ),
        ),
        Termination::OutputLimit => (
            CommandRunStatus::Finished,
            killed(libc::SIGXFSZ),
            format!("output limit exceeded: a file over {PLAIN_OUTPUT_LIMIT} bytes"),
        ),
        Termination::InternalError => (CommandRunStatus::Error, None, outcome.message.clone()),
    }
}

/// The compile stage of a failed compile: the compiler's code and diagnostics, or
/// `TimeLimitExceeded` when a limit stopped it.
fn compile_failure(error: CompileError, seconds: Option<f64>) -> CommandRunResult {
    CommandRunResult {
        status: match error.exit_code {
            Some(_) => CommandRunStatus::Finished,
            None => CommandRunStatus::TimeLimitExceeded,
        },
        execution_time: seconds,
        return_code: error.exit_code,
        stdout: Some(String::new()),
        stderr: Some(error.stderr),
    }
}

/// Reads the fetched files that are regular files under `root` into `files` (base64), within
/// [`FETCH_LIMIT`] bytes in all; returns the names left out for the limit. Missing files,
/// links and anything else are left out silently, as SandboxFusion leaves out what is not a
/// file.
fn fetch(
    root: &Path,
    names: &[String],
    files: &mut BTreeMap<String, String>,
) -> anyhow::Result<Vec<String>> {
    let mut budget = FETCH_LIMIT;
    let mut skipped = Vec::new();
    for name in names {
        let Some(mut file) = open_beneath(root, name) else {
            continue;
        };
        let size = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if size > budget {
            skipped.push(name.clone());
            continue;
        }
        let mut content = Vec::new();
        (&mut file)
            .take(budget)
            .read_to_end(&mut content)
            .with_context(|| format!("cannot read the fetched file {name}"))?;
        budget -= content.len() as u64;
        files.insert(
            name.clone(),
            base64::engine::general_purpose::STANDARD.encode(content),
        );
    }
    Ok(skipped)
}

/// `root/name` opened for reading when every folder on the way is a real folder and the end a
/// regular file, none of them a link (the program is dead: nothing moves meanwhile).
fn open_beneath(root: &Path, name: &str) -> Option<fs::File> {
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::Mode;
    let parts: Vec<&str> = name
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let (last, folders) = parts.split_last()?;
    let no_follow = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = fs::File::open(root).ok().map(std::os::fd::OwnedFd::from)?;
    for folder in folders {
        dir = openat(
            dir.as_fd(),
            *folder,
            no_follow | OFlag::O_DIRECTORY | OFlag::O_RDONLY,
            Mode::empty(),
        )
        .ok()?;
    }
    // Non-blocking: opening a FIFO must not wait for a writer.
    let fd = openat(
        dir.as_fd(),
        *last,
        no_follow | OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    let file = fs::File::from(fd);
    file.metadata().ok()?.is_file().then_some(file)
}

fn internal(what: &str, error: anyhow::Error) -> RequestError {
    RequestError::Internal(format!("{what}: {error:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetching_reads_regular_files_only_and_never_follows_links() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"host").unwrap();
        fs::create_dir(root.path().join("sub")).unwrap();
        fs::write(root.path().join("sub/out.txt"), b"hi").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("link"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dirlink")).unwrap();
        nix::unistd::mkfifo(&root.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let names: Vec<String> = [
            "sub/out.txt",
            "link",
            "dirlink/secret",
            "fifo",
            "sub",
            "none",
        ]
        .map(String::from)
        .to_vec();
        let mut files = BTreeMap::new();
        let skipped = fetch(root.path(), &names, &mut files).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(
            files,
            BTreeMap::from([("sub/out.txt".to_string(), "aGk=".to_string())])
        );
    }

    #[test]
    fn limits_other_than_time_are_named_in_the_message() {
        let job = RunCodeJob {
            language: RunCodeLanguage::Cpp,
            code: String::new(),
            stdin: Vec::new(),
            run_timeout: std::time::Duration::from_secs(1),
            compile_timeout: std::time::Duration::from_secs(1),
            memory_limit: 64 << 20,
            files: Vec::new(),
            fetch_files: Vec::new(),
        };
        let outcome = |status, exit_code, signal| Outcome {
            status,
            exit_code,
            signal,
            cpu_time: 0.0,
            wall_time: 0.0,
            memory: 0,
            message: String::new(),
        };
        let (status, code, message) =
            run_status(&outcome(Termination::MemoryLimit, None, Some(9)), &job);
        assert_eq!((status, code), (CommandRunStatus::Finished, Some(-9)));
        assert!(message.contains("64 MB"), "{message}");
        assert_eq!(
            run_status(&outcome(Termination::Signaled, None, Some(11)), &job).1,
            Some(-11)
        );
        assert_eq!(
            run_status(&outcome(Termination::RuntimeError, Some(3), None), &job).1,
            Some(3)
        );
        let (status, code, _) = run_status(&outcome(Termination::WallTimeLimit, None, None), &job);
        assert_eq!((status, code), (CommandRunStatus::TimeLimitExceeded, None));
    }
}
