//! The floor of a judgement, for `bench judge --task`: the same work with no sandbox and no
//! judge. The compiler on the same source with the same flags, precompiled header and grader
//! objects (a plain `g++`); then each test's processes started plainly (`std::process`), with
//! the same pipes and files as in the sandbox (a Batch program's stdin and stdout files and
//! its checker; a Communication manager and its user processes on FIFOs), over the same number
//! of workers. Every test must score what ioi-run gave it: a floor that judges otherwise is no
//! floor.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::floor_scores::{manager_score, score_of, white_diff_score, Started};

use crate::judge::compile::CompileProfile;
use crate::judge::{Judge, ProblemTools};
use crate::problem::{Communication, Problem, TaskType, TestCase, UserIo};

/// What the floor took, in seconds of wall time.
pub struct Floor {
    pub compile: f64,
    pub tests: f64,
}

impl Floor {
    pub fn total(&self) -> f64 {
        self.compile + self.tests
    }
}

/// How a floor starts each test's processes.
#[derive(Clone, Copy)]
pub enum Processes<'a> {
    /// Plainly (`std::process`): no sandbox.
    Plain,
    /// Each in an isolate box of its own, as CMS runs them.
    Isolate(&'a super::isolate::Isolate),
}

/// Compiles `code` plainly and runs `tests` on `jobs` workers, their processes started as
/// `processes` says; each test's score must be the one in `expected` (by test name).
#[allow(clippy::too_many_arguments)]
pub fn measure(
    judge: &Judge,
    problem: &Problem,
    tools: &ProblemTools,
    code: &[u8],
    tests: &[&TestCase],
    expected: &[(String, f64, f64)],
    jobs: usize,
    processes: Processes,
) -> Result<Floor> {
    let dir = tempfile::tempdir().context("cannot create the floor's folder")?;
    let compile = judge
        .cache()
        .unsandboxed_submission(problem, code, CompileProfile::Reference)
        .context("the submission cannot be compiled outside the sandbox (not UTF-8)")?;
    for (name, content) in &compile.files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, content).with_context(|| format!("cannot write {name}"))?;
    }
    let start = Instant::now();
    let out = Command::new("g++")
        .args(&compile.args)
        .current_dir(dir.path())
        .output()
        .context("cannot run g++")?;
    let compile_secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "the plain compile failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let program = dir.path().join(&compile.output);

    let next = AtomicUsize::new(0);
    let failure = Mutex::new(None);
    let start = Instant::now();
    std::thread::scope(|s| {
        for worker in 0..jobs.max(1) {
            let (next, failure, program) = (&next, &failure, &program);
            let root = dir.path().join(format!("worker{worker}"));
            s.spawn(move || loop {
                let Some(test) = tests.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                let outcome = match processes {
                    Processes::Plain => std::fs::create_dir_all(&root)
                        .context("cannot create a worker's folder")
                        .and_then(|_| run_test(problem, tools, program, test, &root)),
                    Processes::Isolate(isolate) => super::isolate_floor::run_test(
                        isolate,
                        worker,
                        &problem.task,
                        tools,
                        program,
                        test,
                    ),
                };
                let wanted = expected.iter().find(|t| t.0 == test.name).map(|t| t.1);
                let message = match outcome {
                    Ok(score) if wanted.is_none_or(|w| w == score) => continue,
                    Ok(score) => format!(
                        "test {}: the floor scored {score}, ioi-run {}",
                        test.name,
                        wanted.unwrap_or(0.0)
                    ),
                    Err(e) => format!("test {}: {e:#}", test.name),
                };
                if let Ok(mut failure) = failure.lock() {
                    failure.get_or_insert(message);
                }
            });
        }
    });
    let tests_secs = start.elapsed().as_secs_f64();
    if let Some(message) = failure.into_inner().ok().flatten() {
        bail!("{message}");
    }
    Ok(Floor {
        compile: compile_secs,
        tests: tests_secs,
    })
}

/// One test, plainly: its score.
fn run_test(
    problem: &Problem,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
    root: &Path,
) -> Result<f64> {
    match &problem.task {
        TaskType::Batch => batch(tools, program, test, root),
        TaskType::Communication(params) => communication(params, tools, program, test, root),
    }
}

fn file(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
}

fn batch(tools: &ProblemTools, program: &Path, test: &TestCase, root: &Path) -> Result<f64> {
    let output = root.join("output.txt");
    let input = std::fs::File::open(&test.input)
        .with_context(|| format!("cannot open {}", test.input.display()))?;
    let status = Command::new(program)
        .current_dir(root)
        .stdin(input)
        .stdout(file(&output)?)
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        return Ok(0.0);
    }
    match &tools.checker {
        Some(checker) => {
            let out = Command::new(checker)
                .current_dir(root)
                .arg(&test.input)
                .arg(&test.output)
                .arg(&output)
                .output()?;
            score_of(&out.stdout, &out.stderr, "checker")
        }
        None => white_diff_score(test, &output),
    }
}

fn communication(
    params: &Communication,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
    root: &Path,
) -> Result<f64> {
    let manager = tools.manager.as_ref().context("no manager")?;
    let n = params.num_processes.max(1);
    let fifo = |name: String| -> Result<PathBuf> {
        let path = root.join(name);
        let _ = std::fs::remove_file(&path);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .with_context(|| format!("cannot make the FIFO {}", path.display()))?;
        Ok(path)
    };
    let mut to_manager = Vec::new();
    let mut to_user = Vec::new();
    for i in 0..n {
        to_manager.push(fifo(format!("u{i}_to_m"))?);
        to_user.push(fifo(format!("m_to_u{i}"))?);
    }
    let mut command = Command::new(manager);
    command.current_dir(root);
    for i in 0..n {
        command.arg(&to_manager[i]).arg(&to_user[i]);
    }
    command
        .args(&params.manager_args)
        .stdin(std::fs::File::open(&test.input)?)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let manager = Started::new(command.spawn().context("cannot start the manager")?);
    let mut users = Vec::new();
    for i in 0..n {
        let mut user = Command::new(program);
        user.current_dir(root).stderr(Stdio::null());
        match params.user_io {
            UserIo::StdIo => {
                // The FIFOs are opened by the child itself, as the sandbox's init does: an
                // open blocks until the manager opens the other end.
                let (read, write) = (to_user[i].clone(), to_manager[i].clone());
                // SAFETY: between fork and exec the child only calls open and dup2, which are
                // async-signal-safe.
                unsafe {
                    user.pre_exec(move || {
                        use nix::fcntl::{open, OFlag};
                        use nix::sys::stat::Mode;
                        let stdin = open(&read, OFlag::O_RDONLY, Mode::empty())?;
                        nix::unistd::dup2_stdin(stdin)?;
                        let stdout = open(&write, OFlag::O_WRONLY, Mode::empty())?;
                        nix::unistd::dup2_stdout(stdout)?;
                        Ok(())
                    });
                }
            }
            UserIo::FifoIo => {
                user.arg(&to_user[i]).arg(&to_manager[i]);
            }
        }
        if n > 1 {
            user.arg(i.to_string());
        }
        users.push(Started::new(
            user.spawn().context("cannot start a user process")?,
        ));
    }
    manager_score(users, manager)
}
