//! Compilation, once: submissions with the graders (docs/judging.md#compile), checkers and
//! managers, inside the sandbox, cached on disk by the hash of everything that goes in (sources,
//! grader files, flags, compiler version), and deduplicated in memory so that identical code
//! submitted many times is compiled once even when the copies are judged at the same time.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, Stdio, Termination};

use super::cache::CacheStore;
pub use super::cache::Footprint;
pub use super::compiled::{CompileError, Compiled, Executable};
pub use super::language::Language;
use super::language::{
    C_PROGRAM_FLAGS, C_SUBMISSION_FLAGS, DEBUG_C_SUBMISSION_FLAGS, IOI_C_SUBMISSION_FLAGS,
};
use super::observer::{CacheUse, CompileObserver};
use super::stop;
use crate::problem::{GraderFile, Problem};

/// Flags of the submission compile (docs/judging.md#compile).
pub const SUBMISSION_FLAGS: &[&str] = &["-DEVAL", "-std=gnu++17", "-O2", "-pipe", "-s"];
/// Flags of the submission compile in CMS (its `C++17 / g++` language), on which IOI runs:
/// the reference's, linked statically.
pub const IOI_SUBMISSION_FLAGS: &[&str] =
    &["-DEVAL", "-std=gnu++17", "-O2", "-pipe", "-static", "-s"];
/// Flags of the submission compile under the debug profile (docs/debugging.md#the-debug-profile):
/// debug information, AddressSanitizer and UndefinedBehaviorSanitizer stopping at the first
/// error, and the C++ library's own bounds checks; never stripped.
pub const DEBUG_SUBMISSION_FLAGS: &[&str] = &[
    "-DEVAL",
    "-std=gnu++17",
    "-g",
    "-O1",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-D_GLIBCXX_ASSERTIONS",
    "-pipe",
];
/// Flags of checker and manager compiles: linked statically, since a tool runs once per test
/// and a dynamically linked C++ program spends about a millisecond of every start loading and
/// relocating the C++ library (a testlib checker: 1.7 ms of CPU dynamic, 0.5 ms static).
pub const TOOL_FLAGS: &[&str] = &["-std=gnu++17", "-O2", "-static"];
/// The same, dynamically linked: for hosts without the static C and C++ libraries
/// (`glibc-static` and `libstdc++-static` are separate packages on Fedora and RHEL).
pub const DYNAMIC_TOOL_FLAGS: &[&str] = &["-std=gnu++17", "-O2"];
/// Flags of a plain C++ program (the server's `c++` language).
pub const PROGRAM_FLAGS: &[&str] = &["-std=gnu++17", "-O2"];

/// How submissions are compiled. Every profile is part of the compile cache key (through its
/// flags), so switching never reuses another's programs; [`CompileProfile::purpose`] says what
/// each is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompileProfile {
    #[default]
    Reference,
    Ioi,
    Debug,
}

impl CompileProfile {
    /// Every profile, in the order a command line lists them.
    pub const ALL: [CompileProfile; 3] = [
        CompileProfile::Reference,
        CompileProfile::Ioi,
        CompileProfile::Debug,
    ];

    /// What the profile is for, as a command line's help says it.
    pub fn purpose(self) -> &'static str {
        match self {
            CompileProfile::Reference => {
                "The reference pipeline's flags (docs/judging.md#compile), dynamically linked: \
                 results comparable with the Python pipeline and Piston"
            }
            CompileProfile::Ioi => {
                "CMS's flags, as at IOI: the same, plus `-static`. A statically linked program \
                 can behave differently (memory layout, startup memory, what heap corruption does)"
            }
            CompileProfile::Debug => {
                "For finding a bug, not for a verdict: debug information and the address and \
                 undefined-behaviour sanitizers (docs/debugging.md#the-debug-profile). A crash or \
                 undefined behaviour ends the program with the sanitizer's report, naming the \
                 source line"
            }
        }
    }

    /// The g++ flags of a C++ submission compile.
    pub fn submission_flags(self) -> &'static [&'static str] {
        self.flags_for(Language::Cpp)
    }

    /// The flags of a submission compile in `language`, before the output and the sources.
    pub fn flags_for(self, language: Language) -> &'static [&'static str] {
        match (self, language) {
            (CompileProfile::Reference, Language::Cpp) => SUBMISSION_FLAGS,
            (CompileProfile::Ioi, Language::Cpp) => IOI_SUBMISSION_FLAGS,
            (CompileProfile::Reference, Language::C) => C_SUBMISSION_FLAGS,
            (CompileProfile::Ioi, Language::C) => IOI_C_SUBMISSION_FLAGS,
            (CompileProfile::Debug, Language::Cpp) => DEBUG_SUBMISSION_FLAGS,
            (CompileProfile::Debug, Language::C) => DEBUG_C_SUBMISSION_FLAGS,
        }
    }

    /// What a program compiled under this profile finds in its environment: the sanitizers'
    /// options under `debug` (docs/debugging.md#the-debug-profile), nothing otherwise.
    pub fn run_env(self) -> Vec<(String, String)> {
        match self {
            CompileProfile::Reference | CompileProfile::Ioi => Vec::new(),
            CompileProfile::Debug => [
                ("ASAN_OPTIONS", ASAN_OPTIONS),
                ("UBSAN_OPTIONS", UBSAN_OPTIONS),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    }

    /// The name used on the command line and in results (`reference`, `ioi`).
    pub fn as_str(self) -> &'static str {
        match self {
            CompileProfile::Reference => "reference",
            CompileProfile::Ioi => "ioi",
            CompileProfile::Debug => "debug",
        }
    }
}

/// AddressSanitizer's options under the debug profile: no leak check (contest programs need not
/// free, and it needs `ptrace`), a report on `abort()` too (failed `assert`s, uncaught
/// exceptions, the C++ library's checks) so that it names the line, and a quarantine of freed
/// memory smaller than the default 256 MiB, since it counts against the memory limit.
pub const ASAN_OPTIONS: &str =
    "detect_leaks=0:handle_abort=1:quarantine_size_mb=32:malloc_context_size=10";
/// UndefinedBehaviorSanitizer's options under the debug profile: the stack with the report.
pub const UBSAN_OPTIONS: &str = "print_stacktrace=1";

/// Default bound on the size of a compiled program: far above any real IOI solution (a few
/// MiB), low enough that a program inflated on purpose (`.incbin`, huge initialised arrays)
/// cannot fill the cache or the judge's disk.
pub const DEFAULT_MAX_PROGRAM_BYTES: u64 = 256 << 20;

/// Bytes of compiler diagnostics kept in a CE feedback; the rest is never read.
pub const MAX_COMPILER_STDERR: usize = 64 * 1024;

/// One compile: the sources (paths relative to the compile box) and the flags.
struct CompileJob<'a> {
    /// Every file placed in the box (grader files and the submission).
    files: Vec<(&'a str, &'a [u8])>,
    /// Sources on the compiler's command line, in order.
    sources: Vec<&'a str>,
    flags: &'a [&'a str],
    /// Decides the compiler and what follows the sources.
    language: Language,
    /// Output path inside the box.
    output: &'a str,
    /// A submission compile, which a precompiled header may speed up (see [`super::pch`]).
    submission: bool,
}

impl CompileJob<'_> {
    /// The cache key; `max_program_bytes` is part of it since it decides a verdict.
    fn key(&self, max_program_bytes: u64) -> String {
        let mut h = blake3::Hasher::new();
        // The version of what a compile sees besides its files (the box's view of the host):
        // entries made with another view, e.g. a compile error quoting a host file the box
        // no longer shows, are never served.
        h.update(b"ioi-run compile v2\0");
        h.update(compiler_identity().as_bytes());
        // The same text as C and as C++ is two programs (or one program and one error).
        if self.language != Language::Cpp {
            h.update(b"language\0");
            h.update(self.language.as_str().as_bytes());
            h.update(b"\0");
            h.update(identity_of(self.language.compiler()).as_bytes());
        }
        h.update(&max_program_bytes.to_le_bytes());
        for part in self
            .flags
            .iter()
            .chain(&self.sources)
            .chain(std::iter::once(&self.output))
            .chain(self.language.libs())
        {
            h.update(part.as_bytes());
            h.update(b"\0");
        }
        hash_files(&mut h, &self.files);
        h.finalize().to_hex().to_string()
    }
}

/// Feeds named files into a cache key, in name order, each name and content delimited, so no
/// two different sets of files give the same bytes.
pub(super) fn hash_files(h: &mut blake3::Hasher, files: &[(&str, &[u8])]) {
    let mut files = files.to_vec();
    files.sort();
    for (name, content) in files {
        h.update(name.as_bytes());
        h.update(b"\0");
        h.update(&(content.len() as u64).to_le_bytes());
        h.update(content);
    }
}

/// The static archives `--compile-profile ioi` links with (they come with the host's g++ and
/// libc development packages, e.g. `libstdc++-12-dev` and `libc6-dev`) that g++ cannot find.
pub fn missing_static_archives() -> Vec<&'static str> {
    ["libstdc++.a", "libc.a", "libm.a"]
        .into_iter()
        .filter(|name| {
            // g++ prints the bare name back when it does not find the file.
            let found = std::process::Command::new("g++")
                .arg(format!("-print-file-name={name}"))
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .filter(|path| Path::new(path).is_absolute() && Path::new(path).is_file());
            found.is_none()
        })
        .collect()
}

/// Whether a compile got as far as the linker and failed there, as a static link does without
/// the static libraries: the linker's own lines (`/usr/bin/ld: cannot find -lstdc++`) or the
/// driver's report of its exit (`collect2: error: ld returned 1 exit status`), whichever the
/// capped diagnostics kept.
fn link_failed(error: &CompileError) -> bool {
    error.stderr.lines().any(|line| {
        let program = line.split(':').next().unwrap_or("");
        program == "ld" || program.ends_with("/ld") || line.contains("ld returned")
    })
}

/// `g++ --version`, part of every cache key so that a compiler upgrade recompiles.
pub fn compiler_identity() -> &'static str {
    identity_of("g++")
}

/// `<driver> --version` of `g++` or `gcc`, asked once per process.
fn identity_of(driver: &'static str) -> &'static str {
    static GXX: OnceLock<String> = OnceLock::new();
    static GCC: OnceLock<String> = OnceLock::new();
    let cell = if driver == "gcc" { &GCC } else { &GXX };
    cell.get_or_init(|| {
        std::process::Command::new(driver)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|_| format!("{driver} unknown"))
    })
}

/// One compile in progress, shared by every caller that asks for the same key meanwhile.
type SharedCompile = Arc<OnceLock<Result<Compiled, String>>>;

/// The compile cache: a directory of `<hash>/` entries holding `program` or `error.json`.
pub struct CompileCache {
    /// Where finished compiles are kept (shared between processes and hosts).
    store: CacheStore,
    max_bytes: u64,
    /// Largest compiled program accepted (a bigger one is a CE), see [`DEFAULT_MAX_PROGRAM_BYTES`].
    max_program_bytes: u64,
    /// Compiles in progress, by key: identical code submitted many times at once compiles
    /// once. Finished compiles leave the map (memory stays bounded over a long run or a
    /// server's life) and are found on disk afterwards.
    in_memory: Mutex<HashMap<String, SharedCompile>>,
    /// Compiler runs so far (entries found on disk or in memory do not count).
    builds: AtomicUsize,
    /// Compiles answered without the compiler: found on disk, or shared with an identical
    /// compile in progress.
    hits: AtomicUsize,
    /// Runs of the compiler for a plain compile (those of [`super::pch`] are counted there).
    plain_runs: AtomicUsize,
    /// Precompiled headers and grader objects for submission compiles.
    pch: super::pch::PchStore,
    /// Told of every compile answered (the server's metrics); the first one set stays.
    observer: OnceLock<Arc<dyn CompileObserver>>,
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
            max_bytes,
            max_program_bytes: DEFAULT_MAX_PROGRAM_BYTES.min(max_bytes),
            in_memory: Mutex::new(HashMap::new()),
            builds: AtomicUsize::new(0),
            hits: AtomicUsize::new(0),
            plain_runs: AtomicUsize::new(0),
            pch: super::pch::PchStore::new(std::env::var_os("IOI_RUN_NO_PCH").is_none()),
            observer: OnceLock::new(),
        })
    }

    /// Compiles submissions without precompiled headers (the baseline of `bench compile`).
    pub fn without_pch(mut self) -> CompileCache {
        self.pch = super::pch::PchStore::new(false);
        self
    }

    /// What the precompiled headers did so far.
    pub fn pch_stats(&self) -> super::pch::PchStats {
        self.pch.stats()
    }

    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// Sets the largest compiled program accepted (never above the cache's own bound, so that
    /// one entry always fits).
    pub fn with_max_program_bytes(mut self, bytes: u64) -> CompileCache {
        self.max_program_bytes = bytes.min(self.max_bytes);
        self
    }

    /// How many times this cache ran the compiler: what "compile once" is measured by.
    pub fn builds(&self) -> usize {
        self.builds.load(Ordering::Relaxed)
    }

    /// How many times the compiler itself ran: plain compiles, precompiled headers, grader
    /// objects and accelerated compiles (a compile that falls back to the plain one counts
    /// twice).
    pub fn compiler_runs(&self) -> usize {
        self.plain_runs.load(Ordering::Relaxed) + self.pch.compiler_runs()
    }

    /// How many compiles were answered from the cache (disk, or an identical compile in
    /// progress) instead of by the compiler.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Tells `observer` of every compile answered after the call. A cache has one observer: a
    /// second call changes nothing and returns `false`.
    pub fn observe(&self, observer: Arc<dyn CompileObserver>) -> bool {
        self.observer.set(observer).is_ok()
    }

    /// Bytes and entries of the cache's folder: a running figure, counted from one scan of the
    /// folder (the first call, or the first compile stored, pays for it) and kept up to date
    /// with what this process stores and trims (read without waiting for a trim in progress);
    /// other processes sharing the folder show at its next trim.
    pub fn footprint(&self) -> Footprint {
        self.store.footprint()
    }

    /// Compiles a submission for `problem`: `graders/<id>.cpp` (or `.c`) with the grader/stub
    /// of its language. The code is bytes: g++ accepts sources that are not UTF-8 (Latin-1
    /// comments, CRLF), and so must we. A C submission to a problem whose graders are C++ only
    /// is a compilation error saying so (CMS does not offer C for such a task).
    pub fn submission(
        &self,
        sandbox: &Sandbox,
        problem: &Problem,
        code: &[u8],
        profile: CompileProfile,
        language: Language,
    ) -> Result<Compiled> {
        let graders = problem.grader_files_at(&language.grader_paths());
        if graders.is_empty() && !problem.compiled_graders().is_empty() {
            let cpp: Vec<&str> = problem
                .compiled_graders()
                .iter()
                .map(|g| g.path.as_str())
                .collect();
            return Ok(Compiled::Error(CompileError::exited(
                1,
                format!(
                    "problem {} has no C grader (graders/grader.c): its graders ({}) are C++ \
                     only, so it cannot be solved in C; submit C++",
                    problem.id,
                    cpp.join(", ")
                ),
            )));
        }
        let source = format!("graders/{}{}", problem.id, language.extension());
        let output = format!("graders/{}", problem.id);
        let mut files = grader_files(problem);
        // The submission must not see the checker or the manager: it could embed their
        // sources (`.incbin`) or quote them in compiler errors.
        files.retain(|(name, _)| *name != source && !is_judge_only(name));
        files.push((&source, code));
        let mut sources = vec![source.as_str()];
        sources.extend(graders.iter().map(|g| g.path.as_str()));
        self.compile(
            sandbox,
            CompileJob {
                files,
                sources,
                flags: profile.flags_for(language),
                language,
                output: &output,
                // Precompiled headers are C++'s (`<bits/stdc++.h>`).
                submission: language == Language::Cpp,
            },
        )
    }

    /// Hands the builder (when one is attached) the precompiled headers the C++ submissions of
    /// `problem` most often start with, so that none waits for them; with `problem` `None`,
    /// only the one every problem shares (`<bits/stdc++.h>`).
    pub fn headers_ahead(
        &self,
        sandbox: &Sandbox,
        problem: Option<&Problem>,
        profile: CompileProfile,
    ) {
        let flags = profile.flags_for(Language::Cpp);
        let Some(problem) = problem else {
            self.pch.ahead(self, sandbox, flags, None, &[]);
            return;
        };
        let source = format!("graders/{}.cpp", problem.id);
        let mut files = grader_files(problem);
        files.retain(|(name, _)| *name != source && !is_judge_only(name));
        let header = format!("{}.h", problem.id);
        let own = files
            .iter()
            .any(|(name, _)| name.strip_prefix("graders/") == Some(header.as_str()));
        self.pch
            .ahead(self, sandbox, flags, own.then_some(header.as_str()), &files);
    }

    /// The files and `g++` arguments of the compile of a C++ submission with the precompiled
    /// header and grader objects ready in this cache, to run outside any sandbox (the floor of
    /// `bench judge --task`); `None` when it cannot be written (a source that is not UTF-8).
    pub fn unsandboxed_submission(
        &self,
        problem: &Problem,
        code: &[u8],
        profile: CompileProfile,
    ) -> Option<UnsandboxedCompile> {
        let source = format!("graders/{}.cpp", problem.id);
        let output = format!("graders/{}", problem.id);
        let graders = problem.grader_files_at(&Language::Cpp.grader_paths());
        let mut files = grader_files(problem);
        files.retain(|(name, _)| *name != source && !is_judge_only(name));
        files.push((&source, code));
        let mut sources = vec![source.as_str()];
        sources.extend(graders.iter().map(|g| g.path.as_str()));
        let flags = profile.flags_for(Language::Cpp);
        let (files, args) = super::pch::unsandboxed(self, &files, &sources, flags, &output)?;
        Some(UnsandboxedCompile {
            files,
            args,
            output,
        })
    }

    /// Compiles a trusted tool of the problem (`checker/checker.cpp`, `graders/manager.cpp`):
    /// linked statically ([`TOOL_FLAGS`]), else dynamically where the static link fails (the
    /// host lacks the static libraries); a source that does not compile is compiled once.
    pub fn tool(
        &self,
        sandbox: &Sandbox,
        problem: &Problem,
        source: &GraderFile,
    ) -> Result<Compiled> {
        let output = source.path.trim_end_matches(".cpp").to_string();
        let job = |flags| CompileJob {
            files: grader_files(problem),
            sources: vec![source.path.as_str()],
            flags,
            language: Language::Cpp,
            output: &output,
            submission: false,
        };
        match self.compile(sandbox, job(TOOL_FLAGS))? {
            Compiled::Error(error) if link_failed(&error) => {
                self.compile(sandbox, job(DYNAMIC_TOOL_FLAGS))
            }
            compiled => Ok(compiled),
        }
    }

    /// Compiles a plain program: `source` (one of `files`, all placed side by side) into
    /// `program`, with [`PROGRAM_FLAGS`] (C++) or the C equivalent.
    pub fn program(
        &self,
        sandbox: &Sandbox,
        files: &[(&str, &[u8])],
        source: &str,
        language: Language,
    ) -> Result<Compiled> {
        let job = CompileJob {
            files: files.to_vec(),
            sources: vec![source],
            flags: match language {
                Language::Cpp => PROGRAM_FLAGS,
                Language::C => C_PROGRAM_FLAGS,
            },
            language,
            output: "program",
            submission: false,
        };
        self.compile(sandbox, job)
    }

    /// Like [`CompileCache::program`] with the caller's flags (the server's Codeforces
    /// contract compiles with `-DONLINE_JUDGE -O2 -std=<standard> -pipe -s`).
    pub fn program_with_flags(
        &self,
        sandbox: &Sandbox,
        files: &[(&str, &[u8])],
        source: &str,
        flags: &[&str],
    ) -> Result<Compiled> {
        let job = CompileJob {
            files: files.to_vec(),
            sources: vec![source],
            flags,
            language: Language::Cpp,
            output: "program",
            submission: false,
        };
        self.compile(sandbox, job)
    }

    fn compile(&self, sandbox: &Sandbox, job: CompileJob) -> Result<Compiled> {
        let start = std::time::Instant::now();
        let key = job.key(self.max_program_bytes);
        let cell = {
            let mut map = self
                .in_memory
                .lock()
                .map_err(|_| anyhow::anyhow!("compile cache lock poisoned"))?;
            map.entry(key.clone()).or_default().clone()
        };
        let mut cache_use = CacheUse::Hit;
        let mut initialised_here = false;
        let result = cell
            .get_or_init(|| {
                initialised_here = true;
                self.load_or_build(sandbox, &key, &job)
                    .map(|(compiled, used)| {
                        cache_use = used;
                        compiled
                    })
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
        // Waiters on a compile that ioi-run stopped get the same answer as its builder.
        stop::check()?;
        let compiled = result.map_err(|e| anyhow::anyhow!(e))?;
        if let Some(observer) = self.observer.get() {
            observer.compiled(job.language, cache_use, start.elapsed());
        }
        Ok(compiled)
    }

    /// The entry `key` from disk, or built here: with whether the compiler ran.
    fn load_or_build(
        &self,
        sandbox: &Sandbox,
        key: &str,
        job: &CompileJob,
    ) -> Result<(Compiled, CacheUse)> {
        if let Some(found) = self.store.lookup(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(key, "compile cache hit");
            return Ok((found, CacheUse::Hit));
        }
        tracing::debug!(key, "compile cache miss: compiling");
        self.builds.fetch_add(1, Ordering::Relaxed);
        let accelerated_dir;
        let accelerated = if job.submission {
            accelerated_dir = super::workdir::BoxDir::new(sandbox)?;
            let request = super::pch::Request {
                files: &job.files,
                sources: &job.sources,
                flags: job.flags,
                output: job.output,
            };
            self.pch.build(self, sandbox, &request, &accelerated_dir)
        } else {
            None
        };
        let plain_dir;
        let built = match accelerated {
            Some(built) => built,
            None => {
                plain_dir = super::workdir::BoxDir::new(sandbox)?;
                self.plain_runs.fetch_add(1, Ordering::Relaxed);
                build(sandbox, &plain_dir, job, self.max_program_bytes)?
            }
        };
        let compiled = match built {
            // Only what the compiler decided by itself is stored: the same bytes would give
            // the same verdict again.
            BuildResult::Binary(path) => self.store.publish_program_file(key, &path),
            BuildResult::Error {
                error,
                cacheable: true,
            } => self.store.publish_error(key, error),
            BuildResult::Error { error, .. } => Ok(Compiled::Error(error)),
        }?;
        Ok((compiled, CacheUse::Miss))
    }

    /// Largest compiled program accepted.
    pub(super) fn max_program_bytes(&self) -> u64 {
        self.max_program_bytes
    }

    /// Counts a new entry written beside the compiles (precompiled headers) against the bound.
    pub(super) fn account(&self, added: Footprint) {
        self.store.account(added);
    }
}

/// A submission compile as a plain `g++` command: the files to write in an empty folder, the
/// arguments after `g++`, and the program it writes (relative to that folder).
pub struct UnsandboxedCompile {
    pub files: Vec<(String, Vec<u8>)>,
    pub args: Vec<String>,
    pub output: String,
}

/// Builds precompiled headers on a thread of its own, so that no compile waits for one (see
/// [`super::pch`]): a compile whose header is not ready goes on without it, and hands it here.
/// Dropping it stops the thread after the header in progress; headers handed to it and not
/// started are left for the next process.
pub struct HeaderBuilder {
    cache: Arc<CompileCache>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HeaderBuilder {
    /// Starts building the headers `cache` hands over, with `sandbox`.
    pub fn start(cache: Arc<CompileCache>, sandbox: Arc<Sandbox>) -> Result<HeaderBuilder> {
        let (sender, jobs) = std::sync::mpsc::channel::<super::pch::HeaderJob>();
        let thread_cache = Arc::clone(&cache);
        let thread = std::thread::Builder::new()
            .name("header-builder".into())
            .spawn(move || {
                while let Ok(job) = jobs.recv() {
                    if thread_cache.pch.builder_closed() || stop::requested() {
                        break;
                    }
                    thread_cache.pch.build_job(&thread_cache, &sandbox, job);
                }
            })
            .context("cannot start the thread that builds precompiled headers")?;
        cache.pch.attach_builder(sender);
        Ok(HeaderBuilder {
            cache,
            thread: Some(thread),
        })
    }
}

impl Drop for HeaderBuilder {
    fn drop(&mut self) {
        self.cache.pch.detach_builder();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
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

/// What one run of the compiler gave.
pub(super) enum BuildResult {
    /// The compiled program, in the compile box.
    Binary(PathBuf),
    /// A compilation error. `cacheable` when the compiler's own behaviour decided it (it
    /// exited, or hit a CPU, memory or file-size limit measured on itself alone); not when it
    /// was stopped from outside or by the wall clock, which a loaded machine or a stray signal
    /// can cause: the next run of the same code must compile it again.
    Error {
        error: CompileError,
        cacheable: bool,
    },
}

/// Limits of a compile: generous, but a compiler bomb (templates, huge arrays) cannot take
/// the machine down. Files the compiler writes (the program, its diagnostics) are bounded by
/// twice the largest program accepted.
pub(super) fn compile_limits(max_program_bytes: u64) -> Limits {
    Limits {
        cpu_time: Some(Duration::from_secs(60)),
        wall_time: Some(Duration::from_secs(120)),
        memory: Some(4 << 30),
        processes: Some(64),
        output_size: Some(max_program_bytes.saturating_mul(2).max(1 << 20)),
        ..Limits::default()
    }
}

/// Runs g++ in the compile box `workdir`, filled with the job's files.
fn build(
    sandbox: &Sandbox,
    workdir: &super::workdir::BoxDir,
    job: &CompileJob,
    max_program_bytes: u64,
) -> Result<BuildResult> {
    for (name, content) in &job.files {
        workdir.write(name, content)?;
    }
    let mut argv = vec![job.language.compiler().to_string()];
    argv.extend(job.flags.iter().map(|s| s.to_string()));
    argv.extend(["-o".to_string(), job.output.to_string()]);
    argv.extend(job.sources.iter().map(|s| s.to_string()));
    argv.extend(job.language.libs().iter().map(|s| s.to_string()));
    // Checkers and managers find testlib.h beside them or in graders/.
    if job.flags == TOOL_FLAGS || job.flags == DYNAMIC_TOOL_FLAGS {
        argv.push("-Igraders".into());
    }
    let mut spec = RunSpec::new(workdir.path(), argv);
    spec.limits = compile_limits(max_program_bytes);
    let stderr_path = workdir.stream("compile-stderr");
    spec.stderr = Stdio::Path(stderr_path.clone());
    spec.stdout = Stdio::Path(workdir.stream("compile-stdout"));
    let outcome = sandbox.run(&spec);
    // A compile that ioi-run stopped is not a verdict (and never cached).
    stop::check_outcome(&outcome)?;
    let stderr = read_diagnostics(&stderr_path, MAX_COMPILER_STDERR)?;
    let program = workdir.path().join(job.output);
    let too_large = |size: u64| {
        format!(
            "the compiled program is {size} bytes, over the limit of {max_program_bytes} bytes \
             (--max-program-size)"
        )
    };
    let error = |error: CompileError, cacheable: bool| Ok(BuildResult::Error { error, cacheable });
    match outcome.status {
        Termination::Ok => {
            // Checked before anything reads it: its size, and that it is a plain file.
            let meta = fs::symlink_metadata(&program).with_context(|| {
                format!("the compiler succeeded but produced no {}", job.output)
            })?;
            if !meta.is_file() {
                bail!("the compiler produced {}, which is not a file", job.output);
            }
            if meta.len() > max_program_bytes {
                return error(CompileError::exited(1, too_large(meta.len())), true);
            }
            Ok(BuildResult::Binary(program))
        }
        Termination::RuntimeError => Ok(compiler_failed(
            outcome.exit_code.unwrap_or(1),
            stderr,
            max_program_bytes,
        )),
        Termination::InternalError => Err(crate::error::host(anyhow::anyhow!(
            "cannot compile: {}",
            outcome.message
        ))),
        Termination::TimeLimit | Termination::MemoryLimit | Termination::OutputLimit => error(
            CompileError::stopped(format!("{stderr}\ncompiler stopped: {}", outcome.message)),
            true,
        ),
        Termination::Signaled | Termination::WallTimeLimit => error(
            CompileError::stopped(format!("{stderr}\ncompiler stopped: {}", outcome.message)),
            false,
        ),
    }
}

/// The compile error of a compiler that exited with `exit_code` after printing `stderr`.
pub(super) fn compiler_failed(
    exit_code: i32,
    mut stderr: String,
    max_program_bytes: u64,
) -> BuildResult {
    // The driver exits with an error when one of its programs (cc1plus, as, ld) was killed by
    // a signal: the OOM killer (reported as a memory limit), a compiler crash, or somebody from
    // outside. Not the compiler's verdict on the source: compile again next time. A file-size
    // limit (SIGXFSZ) is the program's size: a verdict.
    let killed =
        stderr.contains("signal terminated program") || stderr.contains("terminated with signal");
    let file_size = stderr.contains("File size limit exceeded");
    let cacheable = !killed || file_size;
    // The assembler or the linker stopped by the file-size limit: say why plainly.
    if file_size {
        stderr = format!(
            "{stderr}\nthe compiled program is over the limit of {max_program_bytes} bytes \
             (--max-program-size)"
        );
    }
    BuildResult::Error {
        error: CompileError::exited(exit_code, stderr),
        cacheable,
    }
}

/// The first `cap` bytes of the compiler's diagnostics (the rest is never read), decoded
/// lossily: diagnostics quote the source, which need not be UTF-8.
pub(super) fn read_diagnostics(path: &Path, cap: usize) -> Result<String> {
    let total = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut text = super::workdir::read_prefix(path, cap as u64)?;
    if total > cap as u64 {
        text.push_str("\n[compiler output truncated]");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool is compiled again dynamically only when its static link failed, never when its
    /// source does not compile (that would compile a broken tool twice).
    #[test]
    fn only_a_failed_link_is_a_link_failure() {
        let failed = |stderr: &str| link_failed(&CompileError::exited(1, stderr));
        assert!(failed(
            "/usr/bin/ld: cannot find -lstdc++: No such file or directory\n\
             collect2: error: ld returned 1 exit status\n"
        ));
        assert!(failed(
            "/usr/bin/ld: /tmp/cc1.o:(.data.rel+0x0): undefined reference to `memcpy@GLIBC_2.2.5'\n"
        ));
        assert!(failed("collect2: error: ld returned 1 exit status\n"));
        assert!(!failed(
            "checker/checker.cpp:3:9: error: 'field' was not declared in this scope\n"
        ));
        assert!(!failed(
            "checker/checker.cpp:1:1: error: expected unqualified-id\n"
        ));
    }

    #[test]
    fn diagnostics_are_capped_and_decoded_lossily() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr");
        fs::write(&path, b"x.cpp:1: error: caf\xe9\n").unwrap();
        assert_eq!(
            read_diagnostics(&path, 1000).unwrap(),
            "x.cpp:1: error: caf\u{fffd}\n"
        );
        let cut = read_diagnostics(&path, 5).unwrap();
        assert_eq!(cut, "x.cpp\n[compiler output truncated]");
    }

    #[test]
    fn the_language_is_in_the_cache_key() {
        let files: Vec<(&str, &[u8])> = vec![("program.c", b"int main(void) { return 0; }")];
        let job = |language| CompileJob {
            files: files.clone(),
            sources: vec!["program.c"],
            flags: &["-O2"],
            language,
            output: "program",
            submission: false,
        };
        let (cpp, c) = (
            job(Language::Cpp).key(1 << 20),
            job(Language::C).key(1 << 20),
        );
        assert_ne!(cpp, c);
        assert_eq!(c, job(Language::C).key(1 << 20));
    }

    #[test]
    fn c_flags_are_cms_c11_with_the_profile_s_static_linking() {
        assert_eq!(
            CompileProfile::Reference.flags_for(Language::C),
            ["-DEVAL", "-std=gnu11", "-O2", "-pipe", "-s"]
        );
        assert!(CompileProfile::Ioi
            .flags_for(Language::C)
            .contains(&"-static"));
        assert_eq!(Language::C.libs(), ["-lm"]);
    }

    #[test]
    fn profiles_differ_only_by_static_linking() {
        let reference = CompileProfile::Reference.submission_flags();
        let ioi = CompileProfile::Ioi.submission_flags();
        assert_eq!(reference, SUBMISSION_FLAGS);
        assert!(ioi.contains(&"-static") && !reference.contains(&"-static"));
        let rest: Vec<&&str> = ioi.iter().filter(|f| **f != "-static").collect();
        assert_eq!(rest, reference.iter().collect::<Vec<_>>());
    }
}
