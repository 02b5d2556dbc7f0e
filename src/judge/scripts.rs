//! Script mode (docs/judging.md#script-mode): the Piston IOI contract. A box holds
//! `graders/<id>.cpp`, every grader file, `compile` and `run`; `compile` runs once per submission,
//! and for each test the compiled box is copied with `input.txt` and `correct_output.txt` added,
//! and `run` prints the score on stdout and the feedback on stderr, under a hard wall limit of the
//! time limit + 3 s. The project's own scripts are embedded; `--compile-script`/`--run-script` take
//! a user's pair.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, Stdio, Termination};

use super::workdir::{read_capped, BoxDir};
use super::{CompileError, TestVerdict};
use crate::problem::{Problem, TestCase};

/// The project's `graders/compile`.
pub const COMPILE_SCRIPT: &str = include_str!("../../graders/compile");
/// The project's `graders/run`.
pub const RUN_SCRIPT: &str = include_str!("../../graders/run");

/// The compile and run scripts to use.
#[derive(Debug, Clone)]
pub struct Scripts {
    pub compile: String,
    pub run: String,
    pub origin: ScriptsOrigin,
}

/// Where a pair of scripts comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptsOrigin {
    /// The project's own, embedded.
    BuiltIn,
    /// Files given (`--compile-script`, `--run-script`).
    Files,
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts {
            compile: COMPILE_SCRIPT.to_string(),
            run: RUN_SCRIPT.to_string(),
            origin: ScriptsOrigin::BuiltIn,
        }
    }
}

impl Scripts {
    /// A user's pair of scripts, read from their files.
    pub fn read(compile: &Path, run: &Path) -> Result<Scripts> {
        let read = |path: &Path| {
            fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
        };
        Ok(Scripts {
            compile: read(compile)?,
            run: read(run)?,
            origin: ScriptsOrigin::Files,
        })
    }

    /// How a result names these scripts: `scripts (built in)`, or `scripts` and a hash of the
    /// pair given, so that results of two different pairs are never mixed.
    pub fn label(&self) -> String {
        match self.origin {
            ScriptsOrigin::BuiltIn => "scripts (built in)".to_string(),
            ScriptsOrigin::Files => {
                let mut h = blake3::Hasher::new();
                h.update(self.compile.as_bytes());
                h.update(self.run.as_bytes());
                format!("scripts {}", &h.finalize().to_hex()[..16])
            }
        }
    }
}

/// Result of `compile`: the compiled box, or the compiler's failure.
pub enum ScriptBuild {
    Box(Arc<BoxDir>),
    Error(CompileError),
}

fn script_limits(wall: Duration, memory: u64) -> Limits {
    Limits {
        cpu_time: None,
        wall_time: Some(wall),
        memory: Some(memory),
        processes: Some(256),
        output_size: Some(1 << 30),
        open_files: Some(256),
        stack: None,
    }
}

/// Runs `compile` in a fresh box holding the submission, the grader files and both scripts.
pub fn compile(
    sandbox: &Sandbox,
    scripts: &Scripts,
    problem: &Problem,
    code: &[u8],
) -> Result<ScriptBuild> {
    let work = BoxDir::new(sandbox)?;
    for file in &problem.grader_files {
        work.write(&file.path, &file.content)?;
    }
    work.write(&format!("graders/{}.cpp", problem.id), code)?;
    work.write("compile", scripts.compile.as_bytes())?;
    work.write("run", scripts.run.as_bytes())?;
    let mut spec = RunSpec::new(work.path(), ["bash", "compile"]);
    spec.stdout = Stdio::Path(work.join(".compile-stdout"));
    spec.stderr = Stdio::Path(work.join(".compile-stderr"));
    spec.limits = script_limits(Duration::from_secs(120), 4 << 30);
    let outcome = sandbox.run(&spec);
    super::stop::check_outcome(&outcome)?;
    let stderr = read_capped(&work.join(".compile-stderr"))?;
    Ok(match outcome.status {
        Termination::Ok => ScriptBuild::Box(Arc::new(work)),
        Termination::InternalError => {
            anyhow::bail!("cannot run the compile script: {}", outcome.message)
        }
        // A script stopped by a limit or a signal has no exit code of its own.
        _ => ScriptBuild::Error(CompileError {
            exit_code: outcome.exit_code,
            stderr,
        }),
    })
}

/// Runs `run` on one test in a copy of the compiled box.
pub fn run_test(
    sandbox: &Sandbox,
    problem: &Problem,
    compiled: &BoxDir,
    test: &TestCase,
    cpu: Option<usize>,
) -> Result<TestVerdict> {
    // The submission writes in this box: on a tmpfs, where its files count against the run's
    // memory limit, never on the host's disk.
    let work = BoxDir::in_memory(sandbox)?;
    copy_tree(compiled, &work)?;
    fs::copy(&test.input, work.join("input.txt"))
        .with_context(|| format!("cannot copy {}", test.input.display()))?;
    fs::copy(&test.output, work.join("correct_output.txt"))
        .with_context(|| format!("cannot copy {}", test.output.display()))?;
    let mut spec = RunSpec::new(work.path(), ["bash", "run"]);
    spec.cpu = cpu;
    // The submission runs inside this box: capture the verdict outside it, in a root-only
    // folder, so that the box's content (a planted symlink, a FIFO) is never opened.
    let private = crate::scratch::tempdir("out")?;
    spec.stdout = Stdio::Path(private.path().join("stdout"));
    spec.stderr = Stdio::Path(private.path().join("stderr"));
    let hard = Duration::from_secs_f64(problem.time_limit + 3.0);
    spec.limits = script_limits(hard, problem.memory_limit.saturating_mul(2) + (1 << 30));
    let outcome = sandbox.run(&spec);
    super::stop::check_outcome(&outcome)?;
    let stdout = read_capped(&private.path().join("stdout"))?;
    let stderr = read_capped(&private.path().join("stderr"))?;
    if outcome.status == Termination::InternalError {
        anyhow::bail!("cannot run the run script: {}", outcome.message);
    }
    // The Python client's reading of a Piston response: stdout is the score; a hard time-out
    // is a time limit; anything else is an unknown error.
    let (score, feedback) = match stdout.trim().parse::<f64>() {
        Ok(score) if !stdout.trim().is_empty() => (score, stderr.trim().to_string()),
        _ if outcome.status == Termination::WallTimeLimit => {
            (0.0, "Time limit exceeded".to_string())
        }
        _ => (0.0, format!("Unknown error: {}", stderr.trim())),
    };
    Ok(TestVerdict {
        score,
        feedback,
        time: outcome.cpu_time,
        wall_time: outcome.wall_time,
        memory: outcome.memory,
        // Only the text is known: the status is derived from it, as the reference does.
        status: None,
        runs: Vec::new(),
    })
}

/// Copies every file of the compiled box (hard links would let one test's run alter another's
/// copy through a shared inode; the files are small).
fn copy_tree(from: &BoxDir, to: &BoxDir) -> Result<()> {
    for entry in walkdir::WalkDir::new(from.path()).min_depth(1) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from.path())?;
        let target = to.path().join(rel);
        if entry.file_type().is_dir() {
            to.mkdirs(&target)?;
        } else if entry.file_type().is_file()
            && !rel.starts_with(".compile-stdout")
            && !rel.starts_with(".compile-stderr")
        {
            fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
            keep_mode(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn keep_mode(from: &Path, to: &Path) -> Result<()> {
    let mode = fs::metadata(from)?.permissions();
    fs::set_permissions(to, mode)?;
    Ok(())
}
