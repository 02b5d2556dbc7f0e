//! Judging one Codeforces request (docs/piston-api.md#the-codeforces-contract) in the sandbox, the
//! way the Codeforces package's
//! `compile` and `run` scripts do, with the sandbox's real limits instead of `ulimit` and
//! `timeout`:
//!
//! 1. C++ is compiled once per distinct source and standard (the compile cache): only the
//!    source goes into the compile box, so neither `#include` nor `.incbin` can reach the test.
//!    Python is not compiled; the host's `python3` runs it inside the box.
//! 2. The program runs in a private tmpfs box with the CPU limit (`TIME_LIMIT`, all threads),
//!    the memory limit (`MEMORY_LIMIT`, the cgroup's), a wall clock that stops sleepers, and
//!    an unlimited stack. With `INPUT_MODE=stdio` its input is on stdin and its stdout goes to
//!    a root-only host folder; with `INPUT_MODE=file` only `input.txt` (read-only) and
//!    `output.txt` (a single host file bound into the box) are in its folder. The expected
//!    output and the checker are never in its box. The program may write at most the batch
//!    judge's [`output_limit`] of the expected output (twice it plus 64 MiB): what the server
//!    reads on its behalf afterwards is bounded by the request, not by the program.
//! 3. `checker.py` runs in a box of its own with the input, the expected output and the
//!    program's output, read-only; without a checker the normalising comparison decides.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use ioi_sandbox::{Bind, Limits, Outcome, RunSpec, Stdio, Termination};

use super::codeforces::{
    checker_passed, copy_without_empty_lines, normalize_expected, normalize_input, outputs_match,
    CfJob, CfVerdict, InputMode,
};
use super::runtime::{CfLanguage, Runtime};
use super::{JudgeExecutor, RequestError};
use crate::judge::compile::Compiled;
use crate::judge::native::output_limit;
use crate::judge::read_capped;

/// Flags of the Codeforces package's C++ compile, before `-std=` and after it.
const CPP_FLAGS_BEFORE_STD: [&str; 2] = ["-DONLINE_JUDGE", "-O2"];
const CPP_FLAGS_AFTER_STD: [&str; 2] = ["-pipe", "-s"];
/// Where the program (binary or Python source) appears inside its box.
const PROGRAM_DIR: &str = "/sol";
/// The checker's limits: the package gives it 10 s; memory is generous but bounded.
const CHECKER_CPU: Duration = Duration::from_secs(10);
const CHECKER_WALL: Duration = Duration::from_secs(30);
const CHECKER_MEMORY: u64 = 2 << 30;
/// Scratch space of a box whose files are all bound in.
const SMALL_BOX_BYTES: u64 = 64 << 20;
/// Python must not write `__pycache__` anywhere, and must not look at the caller's settings.
pub(super) const PYTHON_ENV: [(&str, &str); 3] = [
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONIOENCODING", "utf-8"),
    ("HOME", "/box"),
];

/// The program to run: a compiled binary or a Python source.
enum Program {
    Binary(crate::judge::compile::Executable),
    Python(PathBuf),
}

impl JudgeExecutor {
    /// One Codeforces program on one test.
    pub fn judge_codeforces(&self, mut job: CfJob) -> Result<CfVerdict, RequestError> {
        job.time_limit *= self.judge().time_scale();
        let private = crate::scratch::tempdir("out")
            .map_err(|e| internal("cannot create the test folder", e))?;
        let program = match self.cf_program(&job, private.path())? {
            Ok(program) => program,
            Err(verdict) => return Ok(verdict),
        };
        self.cf_run(&job, &program, private.path())
            .map_err(|e| internal("cannot run the test", e))
    }

    /// Compiles (C++, cached) or stores (Python) the program; a compile error is the verdict.
    fn cf_program(
        &self,
        job: &CfJob,
        private: &Path,
    ) -> Result<Result<Program, CfVerdict>, RequestError> {
        let standard = match job.language {
            CfLanguage::Python3 => {
                python3_in_box()?;
                let path = private.join("main.py");
                fs::write(&path, &job.source)
                    .map_err(|e| internal("cannot write the program", e.into()))?;
                return Ok(Ok(Program::Python(path)));
            }
            CfLanguage::Cpp(standard) => standard,
        };
        let mut flags: Vec<&str> = CPP_FLAGS_BEFORE_STD.to_vec();
        flags.extend(standard.flag());
        flags.extend(CPP_FLAGS_AFTER_STD);
        let judge = self.judge();
        let compiled = judge
            .cache()
            .program_with_flags(
                judge.sandbox(),
                &[("main.cpp", &job.source)],
                "main.cpp",
                &flags,
            )
            .map_err(|e| internal("cannot compile the program", e))?;
        Ok(match compiled {
            Compiled::Binary(path) => Ok(Program::Binary(path)),
            Compiled::Error(error) => Err(CfVerdict::CompileError {
                code: error.exit_code,
                stderr: error.stderr,
            }),
        })
    }

    fn cf_run(&self, job: &CfJob, program: &Program, private: &Path) -> anyhow::Result<CfVerdict> {
        let sandbox = self.judge().sandbox();
        let input = private.join("input.txt");
        fs::write(&input, normalize_input(&job.input)).context("cannot write the input")?;
        let output = private.join("output.txt");
        fs::File::create(&output).context("cannot create the output file")?;

        let (argv, program_bind) = match program {
            Program::Binary(path) => (
                vec![format!("{PROGRAM_DIR}/a.out")],
                Bind::read_only(path.path(), format!("{PROGRAM_DIR}/a.out")),
            ),
            Program::Python(path) => (
                vec!["python3".to_string(), format!("{PROGRAM_DIR}/main.py")],
                Bind::read_only(path, format!("{PROGRAM_DIR}/main.py")),
            ),
        };
        let mut spec = RunSpec::in_tmpfs(job.memory_limit, argv);
        spec.binds.push(program_bind);
        if matches!(program, Program::Python(_)) {
            spec.env
                .extend(PYTHON_ENV.map(|(k, v)| (k.to_string(), v.to_string())));
        }
        match job.input_mode {
            InputMode::Stdio => {
                spec.stdin = Stdio::Path(input.clone());
                spec.stdout = Stdio::Path(output.clone());
            }
            InputMode::File => {
                // The program owns output.txt; bound over a box path, it can neither be
                // replaced by a link nor grow past the output limit.
                sandbox
                    .give_to_box(&output)
                    .context("cannot give output.txt to the sandbox user")?;
                spec.binds.push(Bind::read_only(&input, "/box/input.txt"));
                spec.binds.push(Bind::writable(&output, "/box/output.txt"));
            }
        }
        spec.limits = program_limits(job);
        let run = sandbox.run(&spec);
        self.runs()
            .record_outcome(Runtime::Codeforces(job.language).language(), &run);
        if let Some(verdict) = failure(job, &run)? {
            return Ok(verdict);
        }
        match &job.checker {
            Some(checker) => self.cf_check(checker, &job.expected_output, private),
            None => {
                let file = fs::File::open(&output).context("cannot read the program's output")?;
                let passed = outputs_match(&job.expected_output, file)
                    .context("cannot read the program's output")?;
                Ok(CfVerdict::Judged {
                    passed,
                    how: "diff",
                    note: String::new(),
                })
            }
        }
    }

    /// `python3 checker.py input.txt correct_output.txt output.txt` in its own box; the files
    /// are prepared as the package prepares them (no empty lines, no carriage returns).
    fn cf_check(
        &self,
        checker: &[u8],
        expected: &[u8],
        private: &Path,
    ) -> anyhow::Result<CfVerdict> {
        let checked = private.join("checked_output.txt");
        copy_without_empty_lines(
            fs::File::open(private.join("output.txt")).context("cannot read the output")?,
            std::io::BufWriter::with_capacity(
                1 << 16,
                fs::File::create(&checked).context("cannot create the checker's copy")?,
            ),
        )
        .context("cannot copy the output for the checker")?;
        let expected_path = private.join("correct_output.txt");
        fs::write(&expected_path, normalize_expected(expected))
            .context("cannot write the expected output")?;
        let checker_path = private.join("checker.py");
        fs::write(&checker_path, checker).context("cannot write checker.py")?;

        let mut spec = RunSpec::in_tmpfs(
            SMALL_BOX_BYTES,
            [
                "python3",
                "checker.py",
                "input.txt",
                "correct_output.txt",
                "output.txt",
            ],
        );
        spec.env
            .extend(PYTHON_ENV.map(|(k, v)| (k.to_string(), v.to_string())));
        spec.binds = vec![
            Bind::read_only(&checker_path, "/box/checker.py"),
            Bind::read_only(private.join("input.txt"), "/box/input.txt"),
            Bind::read_only(&expected_path, "/box/correct_output.txt"),
            Bind::read_only(&checked, "/box/output.txt"),
        ];
        let stdout_path = private.join("checker.out");
        spec.stdout = Stdio::Path(stdout_path.clone());
        spec.limits = Limits {
            cpu_time: Some(CHECKER_CPU),
            wall_time: Some(CHECKER_WALL),
            memory: Some(CHECKER_MEMORY),
            processes: Some(16),
            output_size: Some(1 << 20),
            open_files: Some(64),
            stack: None,
        };
        let run = self.judge().sandbox().run(&spec);
        if run.status == Termination::InternalError {
            bail!("sandbox failure running the checker: {}", run.message);
        }
        let stdout = read_capped(&stdout_path)?;
        // The package passes a test only when the checker prints 1 or 100 and exits 0; a
        // checker that fails on a malformed output is that output's fault.
        let (passed, note) = match run.status {
            Termination::Ok => (checker_passed(&stdout), String::new()),
            _ => (false, format!("the checker failed: {}", run.message)),
        };
        Ok(CfVerdict::Judged {
            passed,
            how: "checker",
            note,
        })
    }
}

/// The box sees the host's `/usr` only: a `python3` from pyenv or conda is not there.
pub(super) fn python3_in_box() -> Result<(), RequestError> {
    let found = ["/usr/local/bin/python3", "/usr/bin/python3", "/bin/python3"]
        .iter()
        .any(|path| Path::new(path).exists());
    if found {
        Ok(())
    } else {
        Err(RequestError::Internal(
            "Python requests need python3 in /usr/bin or /usr/local/bin on the host (the box \
             sees only /usr; a python3 from pyenv or conda is not visible): install the \
             distribution's python3"
                .to_string(),
        ))
    }
}

/// CPU and memory from the request, a wall clock three times the CPU limit (within the
/// client's `run_timeout`), unlimited stack as the package's `ulimit -s unlimited`, output
/// bounded by the expected output's size.
fn program_limits(job: &CfJob) -> Limits {
    let wall = (job.time_limit * 3.0 + 1.0).min(job.run_timeout.as_secs_f64().max(job.time_limit));
    Limits {
        cpu_time: Some(Duration::from_secs_f64(job.time_limit)),
        wall_time: Some(Duration::from_secs_f64(wall)),
        memory: Some(job.memory_limit),
        processes: Some(64),
        output_size: Some(output_limit(job.expected_output.len() as u64)),
        open_files: Some(64),
        stack: None,
    }
}

/// The verdict of a run that did not end well, or `None` when it exited 0.
fn failure(job: &CfJob, run: &Outcome) -> anyhow::Result<Option<CfVerdict>> {
    Ok(Some(match run.status {
        Termination::Ok => return Ok(None),
        Termination::TimeLimit | Termination::WallTimeLimit => CfVerdict::TimeLimit {
            seconds: job.time_limit,
        },
        Termination::MemoryLimit => CfVerdict::MemoryLimit {
            megabytes: job.memory_limit as f64 / 1048576.0,
        },
        Termination::OutputLimit => CfVerdict::RuntimeError {
            code: 128 + libc::SIGXFSZ,
            what: "Runtime error: output limit exceeded".to_string(),
        },
        Termination::Signaled => {
            let signal = run.signal.unwrap_or(0);
            CfVerdict::RuntimeError {
                code: 128 + signal,
                what: format!(
                    "Runtime error with exit code {} ({})",
                    128 + signal,
                    ioi_sandbox::signal_name(signal)
                ),
            }
        }
        Termination::RuntimeError => {
            let code = run.exit_code.unwrap_or(1);
            CfVerdict::RuntimeError {
                code,
                what: format!("Runtime error with exit code {code}"),
            }
        }
        Termination::InternalError => bail!("sandbox failure: {}", run.message),
    }))
}

fn internal(what: &str, error: anyhow::Error) -> RequestError {
    RequestError::Internal(format!("{what}: {error:#}"))
}
