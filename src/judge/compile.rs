//! Compilation, once: submissions with the graders (SPEC §2.1), checkers and managers, inside
//! the sandbox, cached on disk by the hash of everything that goes in (sources, grader files,
//! flags, compiler version), and deduplicated in memory so that identical code submitted many
//! times is compiled once even when the copies are judged at the same time.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, Status, Stdio};

use super::cache::CacheStore;

use crate::problem::{GraderFile, Problem};

/// Flags of the submission compile (SPEC §2.1).
pub const SUBMISSION_FLAGS: &[&str] = &["-DEVAL", "-std=gnu++17", "-O2", "-pipe", "-s"];
/// Flags of checker and manager compiles.
pub const TOOL_FLAGS: &[&str] = &["-std=gnu++17", "-O2"];
/// Flags of a plain C++ program (the server's `c++` language).
pub const PROGRAM_FLAGS: &[&str] = &["-std=gnu++17", "-O2"];

/// What a compile produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiled {
    /// The executable, in the cache.
    Binary(PathBuf),
    /// The compiler failed: its exit code (or -1 when it was stopped by a limit) and stderr.
    Error { exit_code: i32, stderr: String },
}

impl Compiled {
    /// The feedback the Python pipeline expects for a compilation error.
    pub fn error_feedback(exit_code: i32, stderr: &str) -> String {
        format!("Compilation error exit code {exit_code}\n{stderr}")
    }
}

/// One compile: the sources (paths relative to the compile box) and the flags.
struct CompileJob<'a> {
    /// Every file placed in the box (grader files and the submission).
    files: Vec<(&'a str, &'a [u8])>,
    /// Sources on the g++ command line, in order.
    sources: Vec<&'a str>,
    flags: &'a [&'a str],
    /// Output path inside the box.
    output: &'a str,
}

impl CompileJob<'_> {
    fn key(&self) -> String {
        let mut h = blake3::Hasher::new();
        h.update(b"ioi-run compile v1\0");
        h.update(compiler_identity().as_bytes());
        for part in self
            .flags
            .iter()
            .chain(&self.sources)
            .chain(std::iter::once(&self.output))
        {
            h.update(part.as_bytes());
            h.update(b"\0");
        }
        let mut files = self.files.clone();
        files.sort();
        for (name, content) in files {
            h.update(name.as_bytes());
            h.update(b"\0");
            h.update(&(content.len() as u64).to_le_bytes());
            h.update(content);
        }
        h.finalize().to_hex().to_string()
    }
}

/// `g++ --version`, part of every cache key so that a compiler upgrade recompiles.
fn compiler_identity() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        std::process::Command::new("g++")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|_| "g++ unknown".into())
    })
}

/// One compile in progress, shared by every caller that asks for the same key meanwhile.
type SharedCompile = Arc<OnceLock<Result<Compiled, String>>>;

/// The compile cache: a directory of `<hash>/` entries holding `program` or `error.json`.
pub struct CompileCache {
    /// Where finished compiles are kept (shared between processes and hosts).
    store: CacheStore,
    /// Compiles in progress, by key: identical code submitted many times at once compiles
    /// once. Finished compiles leave the map (memory stays bounded over a long run or a
    /// server's life) and are found on disk afterwards.
    in_memory: Mutex<HashMap<String, SharedCompile>>,
    /// Compiler runs so far (entries found on disk or in memory do not count).
    builds: AtomicUsize,
    /// Compiles answered without the compiler: found on disk, or shared with an identical
    /// compile in progress.
    hits: AtomicUsize,
}

/// Default location: `$IOI_RUN_CACHE` or the user's cache directory.
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("IOI_RUN_CACHE")
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("ioi-run")))
        .unwrap_or_else(|| std::env::temp_dir().join("ioi-run-cache"))
        .join("compile")
}

impl CompileCache {
    /// A cache in `dir`, trimmed to about `max_bytes` (least recently used entries go first).
    pub fn new(dir: PathBuf, max_bytes: u64) -> Result<CompileCache> {
        Ok(CompileCache {
            store: CacheStore::new(dir, max_bytes)?,
            in_memory: Mutex::new(HashMap::new()),
            builds: AtomicUsize::new(0),
            hits: AtomicUsize::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// How many times this cache ran the compiler: what "compile once" is measured by.
    pub fn builds(&self) -> usize {
        self.builds.load(Ordering::Relaxed)
    }

    /// How many compiles were answered from the cache (disk, or an identical compile in
    /// progress) instead of by the compiler.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Compiles a submission for `problem`: `graders/<id>.cpp` with the grader/stub.
    pub fn submission(&self, sandbox: &Sandbox, problem: &Problem, code: &str) -> Result<Compiled> {
        let source = format!("graders/{}.cpp", problem.id);
        let output = format!("graders/{}", problem.id);
        let mut files = grader_files(problem);
        // The submission must not see the checker or the manager: it could embed their
        // sources (`.incbin`) or quote them in compiler errors.
        files.retain(|(name, _)| *name != source && !is_judge_only(name));
        files.push((&source, code.as_bytes()));
        let mut sources = vec![source.as_str()];
        sources.extend(problem.compiled_graders().iter().map(|g| g.path.as_str()));
        self.compile(
            sandbox,
            CompileJob {
                files,
                sources,
                flags: SUBMISSION_FLAGS,
                output: &output,
            },
        )
    }

    /// Compiles a trusted tool of the problem (`checker/checker.cpp`, `graders/manager.cpp`).
    pub fn tool(
        &self,
        sandbox: &Sandbox,
        problem: &Problem,
        source: &GraderFile,
    ) -> Result<Compiled> {
        let output = source.path.trim_end_matches(".cpp").to_string();
        let job = CompileJob {
            files: grader_files(problem),
            sources: vec![source.path.as_str()],
            flags: TOOL_FLAGS,
            output: &output,
        };
        self.compile(sandbox, job)
    }

    /// Compiles a plain program: `source` (one of `files`, all placed side by side) into
    /// `program`, with [`PROGRAM_FLAGS`].
    pub fn program(
        &self,
        sandbox: &Sandbox,
        files: &[(&str, &[u8])],
        source: &str,
    ) -> Result<Compiled> {
        let job = CompileJob {
            files: files.to_vec(),
            sources: vec![source],
            flags: PROGRAM_FLAGS,
            output: "program",
        };
        self.compile(sandbox, job)
    }

    fn compile(&self, sandbox: &Sandbox, job: CompileJob) -> Result<Compiled> {
        let key = job.key();
        let cell = {
            let mut map = self
                .in_memory
                .lock()
                .map_err(|_| anyhow::anyhow!("compile cache lock poisoned"))?;
            map.entry(key.clone()).or_default().clone()
        };
        let mut initialised_here = false;
        let result = cell
            .get_or_init(|| {
                initialised_here = true;
                self.load_or_build(sandbox, &key, &job)
                    .map_err(|e| format!("{e:#}"))
            })
            .clone();
        if !initialised_here {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        if let Ok(mut map) = self.in_memory.lock() {
            if map.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                map.remove(&key);
            }
        }
        result.map_err(|e| anyhow::anyhow!(e))
    }

    fn load_or_build(&self, sandbox: &Sandbox, key: &str, job: &CompileJob) -> Result<Compiled> {
        if let Some(found) = self.store.lookup(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(found);
        }
        self.builds.fetch_add(1, Ordering::Relaxed);
        match build(sandbox, job)? {
            BuildResult::Binary(bytes) => self.store.publish_program(key, &bytes),
            BuildResult::Error { exit_code, stderr } => {
                self.store.publish_error(key, exit_code, &stderr)
            }
        }
    }
}

/// Files of the judge that never go next to a submission.
fn is_judge_only(path: &str) -> bool {
    path.starts_with("checker/") || path == "graders/manager.cpp"
}

fn grader_files(problem: &Problem) -> Vec<(&str, &[u8])> {
    problem
        .grader_files
        .iter()
        .map(|f| (f.path.as_str(), f.content.as_slice()))
        .collect()
}

enum BuildResult {
    Binary(Vec<u8>),
    Error { exit_code: i32, stderr: String },
}

/// Limits of a compile: generous, but a compiler bomb (templates, huge arrays) cannot take
/// the machine down.
fn compile_limits() -> Limits {
    Limits {
        cpu_time: Some(Duration::from_secs(60)),
        wall_time: Some(Duration::from_secs(120)),
        memory: Some(4 << 30),
        processes: Some(64),
        output_size: Some(1 << 30),
        ..Limits::default()
    }
}

/// Runs g++ in a fresh sandbox box holding the job's files.
fn build(sandbox: &Sandbox, job: &CompileJob) -> Result<BuildResult> {
    let workdir = super::workdir::BoxDir::new(sandbox)?;
    for (name, content) in &job.files {
        workdir.write(name, content)?;
    }
    let mut argv = vec!["g++".to_string()];
    argv.extend(job.flags.iter().map(|s| s.to_string()));
    argv.extend(["-o".to_string(), job.output.to_string()]);
    argv.extend(job.sources.iter().map(|s| s.to_string()));
    // Checkers and managers find testlib.h beside them or in graders/.
    if job.flags == TOOL_FLAGS {
        argv.push("-Igraders".into());
    }
    let mut spec = RunSpec::new(workdir.path(), argv);
    spec.limits = compile_limits();
    let stderr_path = workdir.path().join(".compile-stderr");
    spec.stderr = Stdio::Path(stderr_path.clone());
    spec.stdout = Stdio::Path(workdir.path().join(".compile-stdout"));
    let outcome = sandbox.run(&spec);
    let mut stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
    const MAX_STDERR: usize = 64 * 1024;
    if stderr.len() > MAX_STDERR {
        let mut cut = MAX_STDERR;
        while !stderr.is_char_boundary(cut) {
            cut -= 1;
        }
        stderr.truncate(cut);
        stderr.push_str("\n[compiler output truncated]");
    }
    match outcome.status {
        Status::Ok => {
            let bytes = fs::read(workdir.path().join(job.output)).with_context(|| {
                format!("the compiler succeeded but produced no {}", job.output)
            })?;
            Ok(BuildResult::Binary(bytes))
        }
        Status::RuntimeError => Ok(BuildResult::Error {
            exit_code: outcome.exit_code.unwrap_or(1),
            stderr,
        }),
        Status::InternalError => bail!("cannot compile: {}", outcome.message),
        _ => Ok(BuildResult::Error {
            exit_code: -1,
            stderr: format!("{stderr}\ncompiler stopped: {}", outcome.message),
        }),
    }
}
