//! Precompiled headers for submission compiles: the same binary, about three times sooner.
//!
//! Nearly every model-written submission starts with `#include <bits/stdc++.h>`, and g++
//! spends most of such a compile parsing it. When a submission's first lines are only
//! includes of standard headers (`<bits/stdc++.h>` or the common ones, at least one) and of the
//! problem's own headers (with blank and `//` comment lines between them), the compile is split
//! in three, each in the sandbox:
//!
//! 1. a precompiled header (`.gch`) of exactly those include lines, in that order, built once
//!    per compiler, flags and include list (and the problem's files, when it includes one of
//!    its headers: a header of standard includes serves every problem), kept in the compile
//!    cache. No compile waits for one: a compile whose header is not ready goes on without it
//!    and hands it to the judge's builder thread; `evaluate` and `serve` hand it
//!    `<bits/stdc++.h>` when they start and the problem's header with it when they prepare a
//!    problem;
//! 2. the problem's grader sources (`grader.cpp`, `stub.cpp`) compiled to objects, once per
//!    problem and flags, kept in the compile cache;
//! 3. the submission, with those first lines made blank (line numbers, `__FILE__` and
//!    `__LINE__` unchanged), compiled with `-include` of the precompiled header and linked with
//!    the grader objects, with the flags the solution is judged with.
//!
//! A submission with nothing to precompile is still compiled against the grader objects (step 3
//! without the header), when the problem has graders.
//!
//! The compiler then sees the same tokens in the same order as in the plain compile, and
//! produces the same executable (the tests compare them byte for byte). The header is trusted
//! because we write it: the submission only chooses which of a fixed set of include lines it
//! lists, and the result of a given list is what textual inclusion would give. The `.gch` is
//! used only when valid: it is not accompanied by its header, and `-Werror=invalid-pch` turns a
//! rejected one into a failure. A compilation error costs one compile: its message is the
//! plain compile's word for word (the same source, flags and file names), except where the
//! diagnostics show the precompiled header (an include chain through it): then, as after any
//! other failure (an invalid or missing header, anything unexpected), the plain compile runs
//! and gives the message. A compile stopped by a limit is not repeated: the plain compile does
//! strictly more work. A link error names a grader's object as `/objs/<grader>.o`, where the
//! plain compile names a temporary file of its own.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use anyhow::{Context, Result};
use ioi_sandbox::{Bind, RunSpec, Sandbox, Stdio, Termination};

use super::compile::{
    compile_limits, compiler_failed, compiler_identity, read_diagnostics, BuildResult,
    CompileCache, DEFAULT_MAX_PROGRAM_BYTES, MAX_COMPILER_STDERR,
};
use super::compiled::CompileError;
use super::stop;
use super::workdir::BoxDir;

/// The one header worth precompiling: every standard header at once.
const STDCXX: &str = "bits/stdc++.h";
/// At most this many include lines go into a precompiled header (bounds how many distinct
/// headers a hostile dataset can make us build).
const MAX_INCLUDES: usize = 6;
/// Where the precompiled header and the grader objects appear in the compile box.
const PCH_DIR: &str = "/pch";
const OBJ_DIR: &str = "/objs";

/// The standard headers a prefix may include besides `<bits/stdc++.h>` (C++17 and the C
/// headers of its library): a header of any of them is what textual inclusion gives, whatever
/// the problem.
const STANDARD: &[&str] = &[
    "algorithm",
    "any",
    "array",
    "atomic",
    "bitset",
    "cassert",
    "cctype",
    "cfloat",
    "chrono",
    "cinttypes",
    "climits",
    "cmath",
    "complex",
    "cstdint",
    "cstdio",
    "cstdlib",
    "cstring",
    "ctime",
    "deque",
    "functional",
    "iomanip",
    "ios",
    "iostream",
    "istream",
    "iterator",
    "limits",
    "list",
    "map",
    "memory",
    "numeric",
    "optional",
    "ostream",
    "queue",
    "random",
    "set",
    "sstream",
    "stack",
    "string",
    "string_view",
    "tuple",
    "type_traits",
    "unordered_map",
    "unordered_set",
    "utility",
    "variant",
    "vector",
];

/// At most this many headers are built by one process (bounds the compiler time a hostile
/// dataset can make us spend on headers: each include list is a header of its own).
const MAX_HEADERS: usize = 64;

/// One include line of a submission's prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Include {
    /// `#include <name>` of `<bits/stdc++.h>` or a [`STANDARD`] header.
    System(String),
    /// `#include "<name>"` of one of the problem's headers.
    Grader(String),
}

/// A submission whose first lines the precompiled header can stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The header to precompile: the prefix's include lines, canonically spelled.
    pub header: String,
    /// The submission with the prefix's lines blank.
    pub rest: String,
}

/// Splits `code` into a precompilable prefix and the rest, or `None` when its first lines are
/// not only includes of `<bits/stdc++.h>` and of `headers` (the problem's header file names,
/// which sit beside the submission in `graders/`).
pub fn split(code: &str, headers: &[&str]) -> Option<Split> {
    let mut includes = Vec::new();
    // Byte offset just after the last include line of the prefix.
    let mut end = 0;
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        offset += line.len();
        let body = line.strip_suffix('\n').unwrap_or(line);
        let body = body.strip_suffix('\r').unwrap_or(body);
        // g++ also ends lines at a lone '\r', and a trailing backslash joins two lines: either
        // would make the line mean something other than what it looks like.
        if body.contains('\r') || body.ends_with('\\') || body.contains("/*") {
            break;
        }
        let trimmed = body.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        match parse_include(trimmed, headers) {
            Some(include) if includes.len() < MAX_INCLUDES => {
                includes.push(include);
                end = offset;
            }
            _ => break,
        }
    }
    if !includes.iter().any(|i| matches!(i, Include::System(_))) {
        return None;
    }
    let header = header_of(&includes);
    // Every line of the prefix becomes empty; line ends are kept, so line numbers hold.
    let mut rest = String::with_capacity(code.len());
    for line in code[..end].split_inclusive('\n') {
        if line.ends_with("\r\n") {
            rest.push_str("\r\n");
        } else if line.ends_with('\n') {
            rest.push('\n');
        }
    }
    rest.push_str(&code[end..]);
    Some(Split { header, rest })
}

/// The header standing for `includes`, canonically spelled.
fn header_of(includes: &[Include]) -> String {
    let mut header = String::new();
    for include in includes {
        match include {
            Include::System(name) => header.push_str(&format!("#include <{name}>\n")),
            Include::Grader(name) => header.push_str(&format!("#include \"{name}\"\n")),
        }
    }
    header
}

/// `#include <h>` for `<bits/stdc++.h>` or a [`STANDARD`] header, or `#include "h"` for a
/// problem header `h`, with optional spaces
/// and an optional trailing `//` comment.
fn parse_include(line: &str, headers: &[&str]) -> Option<Include> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim_start();
    let (include, after) = if let Some(r) = rest.strip_prefix('<') {
        let close = r.find('>')?;
        let name = &r[..close];
        (
            (name == STDCXX || STANDARD.contains(&name))
                .then(|| Include::System(name.to_string()))?,
            &r[close + 1..],
        )
    } else if let Some(r) = rest.strip_prefix('"') {
        let close = r.find('"')?;
        let name = &r[..close];
        (
            headers
                .contains(&name)
                .then(|| Include::Grader(name.to_string()))?,
            &r[close + 1..],
        )
    } else {
        return None;
    };
    let after = after.trim();
    (after.is_empty() || after.starts_with("//")).then_some(include)
}

/// What the store knows of one precompiled header or set of grader objects.
#[derive(Debug, Clone)]
enum Entry {
    /// Another compile is building it: compile plainly meanwhile rather than wait.
    Building,
    Ready(PathBuf),
    /// It cannot be built (a header that does not compile): never try again in this process.
    Failed,
}

/// Counters, for `bench compile` and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PchStats {
    /// Precompiled headers built.
    pub headers_built: usize,
    /// Submissions compiled with a precompiled header.
    pub used: usize,
    /// Submissions that could have used one but were compiled plainly (header not ready, or
    /// the accelerated compile failed).
    pub fallbacks: usize,
    /// Submissions with nothing to precompile compiled against the grader objects alone.
    pub objects_only: usize,
}

/// Precompiled headers and grader objects, kept in the compile cache directory as
/// `pch-<key>/` and `obj-<key>/` entries.
pub struct PchStore {
    enabled: bool,
    entries: Mutex<HashMap<String, Entry>>,
    headers_built: AtomicUsize,
    used: AtomicUsize,
    fallbacks: AtomicUsize,
    objects_only: AtomicUsize,
    /// Runs of the compiler: headers, grader objects and accelerated compiles.
    runs: AtomicUsize,
    /// Where headers that are not ready go to be built, off the compiles' path.
    builder: Mutex<Option<mpsc::Sender<HeaderJob>>>,
    /// The builder was detached: it builds nothing more.
    closed: AtomicBool,
}

/// A compile the store may accelerate: the submission compile of [`CompileCache`].
pub(super) struct Request<'a> {
    /// Every file of the box; the first source is the submission.
    pub files: &'a [(&'a str, &'a [u8])],
    pub sources: &'a [&'a str],
    pub flags: &'a [&'a str],
    pub output: &'a str,
}

impl PchStore {
    pub fn new(enabled: bool) -> PchStore {
        PchStore {
            enabled,
            entries: Mutex::new(HashMap::new()),
            headers_built: AtomicUsize::new(0),
            used: AtomicUsize::new(0),
            fallbacks: AtomicUsize::new(0),
            objects_only: AtomicUsize::new(0),
            runs: AtomicUsize::new(0),
            builder: Mutex::new(None),
            closed: AtomicBool::new(false),
        }
    }

    /// How many times this store ran the compiler.
    pub fn compiler_runs(&self) -> usize {
        self.runs.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> PchStats {
        PchStats {
            headers_built: self.headers_built.load(Ordering::Relaxed),
            used: self.used.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            objects_only: self.objects_only.load(Ordering::Relaxed),
        }
    }

    /// Compiles `request` with a precompiled header, or returns `None` when the plain compile
    /// must do it (nothing to precompile, header not ready, or any failure).
    pub(super) fn build(
        &self,
        cache: &CompileCache,
        sandbox: &Sandbox,
        request: &Request,
        workdir: &BoxDir,
    ) -> Option<BuildResult> {
        if !self.enabled {
            return None;
        }
        let (&source, graders) = request.sources.split_first()?;
        let code = request.files.iter().find(|(n, _)| *n == source)?.1;
        let code = std::str::from_utf8(code).ok()?;
        let dir = Path::new(source).parent()?.to_str()?;
        let headers: Vec<&str> = request
            .files
            .iter()
            .filter_map(|(n, _)| n.strip_prefix(dir)?.strip_prefix('/'))
            .filter(|n| n.ends_with(".h") && !n.contains('/'))
            .collect();
        let others: Vec<(&str, &[u8])> = request
            .files
            .iter()
            .filter(|(n, _)| *n != source)
            .copied()
            .collect();
        let split = split(code, &headers);
        // With nothing to precompile, the grader objects still spare compiling the graders;
        // without graders either, there is nothing to gain.
        if split.is_none() && graders.is_empty() {
            return None;
        }
        let built = self.accelerated(
            cache,
            sandbox,
            request,
            split.as_ref(),
            code,
            &others,
            graders,
            workdir,
        );
        let counter = match (&split, &built) {
            (Some(_), Some((_, true))) => &self.used,
            (Some(_), _) => &self.fallbacks,
            (None, Some(_)) => &self.objects_only,
            (None, None) => return None,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        built.map(|(built, _)| built)
    }

    #[allow(clippy::too_many_arguments)]
    fn accelerated(
        &self,
        cache: &CompileCache,
        sandbox: &Sandbox,
        request: &Request,
        split: Option<&Split>,
        code: &str,
        others: &[(&str, &[u8])],
        graders: &[&str],
        workdir: &BoxDir,
    ) -> Option<(BuildResult, bool)> {
        // A header not ready is not waited for: the compile goes on without it (the same
        // executable), and the header is built meanwhile for the submissions to come.
        let pch = split
            .and_then(|split| self.header(cache, sandbox, request.flags, &split.header, others));
        if pch.is_none() && graders.is_empty() {
            return None;
        }
        let objects = if graders.is_empty() {
            None
        } else {
            let obj_key = key("obj", request.flags, graders, others);
            Some(self.entry(cache, &obj_key, |dir| {
                build_objects(sandbox, &self.runs, request.flags, graders, others, dir)
            })?)
        };
        let (&source, _) = request.sources.split_first()?;
        let used = pch.is_some();
        let max_program_bytes = cache.max_program_bytes();
        self.runs.fetch_add(1, Ordering::Relaxed);
        compile_with(
            sandbox,
            workdir,
            request,
            source,
            match (split, &pch) {
                (Some(split), Some(_)) => split.rest.as_str(),
                _ => code,
            },
            others,
            graders,
            pch.as_deref(),
            objects,
            max_program_bytes,
        )
        .ok()
        .flatten()
        .map(|built| (built, used))
    }

    /// The precompiled header of `header` (its key covers the problem's files only when it
    /// includes one of them: a header of standard includes is shared by every problem), or
    /// `None` when it is not ready. With a builder, a header not ready is handed to it; without
    /// one, it is built now.
    fn header(
        &self,
        cache: &CompileCache,
        sandbox: &Sandbox,
        flags: &[&str],
        header: &str,
        others: &[(&str, &[u8])],
    ) -> Option<PathBuf> {
        let files = if header.contains('"') { others } else { &[] };
        let pch_key = key("pch", flags, &[header], files);
        let dir = match self.claim(cache, &pch_key, true)? {
            Claim::Ready(dir) => return Some(dir),
            Claim::Mine(dir) => dir,
        };
        let builder = self.builder.lock().ok().and_then(|b| b.clone());
        match builder {
            Some(builder) => {
                let job = HeaderJob {
                    key: pch_key.clone(),
                    dir,
                    flags: flags.iter().map(|f| f.to_string()).collect(),
                    header: header.to_string(),
                    files: files
                        .iter()
                        .map(|(n, c)| (n.to_string(), c.to_vec()))
                        .collect(),
                };
                if builder.send(job).is_err() {
                    if let Ok(mut entries) = self.entries.lock() {
                        entries.remove(&pch_key);
                    }
                }
                None
            }
            None => {
                let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
                let files: Vec<(String, Vec<u8>)> = files
                    .iter()
                    .map(|(n, c)| (n.to_string(), c.to_vec()))
                    .collect();
                self.finish(cache, &pch_key, dir, |into| {
                    build_header(sandbox, &self.runs, &flags, header, &files, into)
                })
            }
        }
    }

    /// Builds a header handed to the builder.
    pub(super) fn build_job(&self, cache: &CompileCache, sandbox: &Sandbox, job: HeaderJob) {
        self.finish(cache, &job.key, job.dir, |into| {
            build_header(
                sandbox,
                &self.runs,
                &job.flags,
                &job.header,
                &job.files,
                into,
            )
        });
    }

    /// Starts handing headers that are not ready to `builder` instead of building them on the
    /// compile's path.
    pub(super) fn attach_builder(&self, builder: mpsc::Sender<HeaderJob>) {
        if let Ok(mut slot) = self.builder.lock() {
            *slot = Some(builder);
        }
    }

    /// Stops handing headers to the builder; the headers it was handed and has not started
    /// are left unbuilt (the next process builds them).
    pub(super) fn detach_builder(&self) {
        self.closed.store(true, Ordering::Relaxed);
        if let Ok(mut slot) = self.builder.lock() {
            *slot = None;
        }
    }

    pub(super) fn builder_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Hands the builder the headers most submissions of `problem` start with, ahead of them:
    /// `<bits/stdc++.h>` alone (once for every problem) and followed by the problem's header
    /// (the order `--add-includes` writes). One per problem: a header weighs about 100 MB in
    /// the compile cache.
    pub(super) fn ahead(
        &self,
        cache: &CompileCache,
        sandbox: &Sandbox,
        flags: &[&str],
        problem_header: Option<&str>,
        others: &[(&str, &[u8])],
    ) {
        if !self.enabled || self.builder.lock().map_or(true, |b| b.is_none()) {
            return;
        }
        let stdcxx = Include::System(STDCXX.to_string());
        let mut lists = vec![vec![stdcxx.clone()]];
        if let Some(name) = problem_header {
            lists.push(vec![stdcxx, Include::Grader(name.to_string())]);
        }
        for list in lists {
            self.header(cache, sandbox, flags, &header_of(&list), others);
        }
    }

    /// The entry `key` when it is ready (from memory or disk), `Mine` when the caller is to
    /// build it, `None` while another compile builds it, when it cannot be built, or when
    /// `header` and the process built [`MAX_HEADERS`] already.
    fn claim(&self, cache: &CompileCache, key: &str, header: bool) -> Option<Claim> {
        let dir = cache.dir().join(key);
        let mut entries = self.entries.lock().ok()?;
        match entries.get(key) {
            Some(Entry::Ready(path)) if path.is_dir() => {
                touch(path);
                return Some(Claim::Ready(path.clone()));
            }
            Some(Entry::Building) | Some(Entry::Failed) => return None,
            _ => {}
        }
        if dir.join(COMPLETE).is_file() {
            touch(&dir);
            entries.insert(key.to_string(), Entry::Ready(dir.clone()));
            return Some(Claim::Ready(dir));
        }
        if header && self.headers_built.fetch_add(1, Ordering::Relaxed) >= MAX_HEADERS {
            self.headers_built.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        entries.insert(key.to_string(), Entry::Building);
        Some(Claim::Mine(dir))
    }

    /// The entry `key`, from memory, from disk, or built now by `make` (which fills a folder);
    /// `None` while another compile builds it, or when it cannot be built.
    fn entry(
        &self,
        cache: &CompileCache,
        key: &str,
        make: impl FnOnce(&Path) -> Result<bool>,
    ) -> Option<PathBuf> {
        match self.claim(cache, key, false)? {
            Claim::Ready(dir) => Some(dir),
            Claim::Mine(dir) => self.finish(cache, key, dir, make),
        }
    }

    /// Builds the entry `key` claimed by the caller into `dir`.
    fn finish(
        &self,
        cache: &CompileCache,
        key: &str,
        dir: PathBuf,
        make: impl FnOnce(&Path) -> Result<bool>,
    ) -> Option<PathBuf> {
        let made = store(cache, &dir, make);
        let mut entries = self.entries.lock().ok()?;
        match made {
            Ok(true) => {
                entries.insert(key.to_string(), Entry::Ready(dir.clone()));
                Some(dir)
            }
            Ok(false) => {
                entries.insert(key.to_string(), Entry::Failed);
                None
            }
            Err(e) => {
                // A judge-side problem (disk, sandbox): try again next time. Runs killed by an
                // interrupt of ioi-run are not a problem to report (the handler says it once).
                if !stop::requested() {
                    tracing::warn!("precompiled header {key}: {e:#}");
                }
                entries.remove(key);
                None
            }
        }
    }
}

/// Files by name, owned.
pub(super) type OwnedFiles = Vec<(String, Vec<u8>)>;

/// The command line of a submission compile with whatever precompiled header and grader
/// objects are ready on disk, for a plain `g++` in a folder holding `files` (outside any
/// sandbox): the floor `bench judge --task` measures a compile against. Returns the files (the
/// submission's precompiled lines blank when a header is used) and the arguments after `g++`.
pub(super) fn unsandboxed(
    cache: &CompileCache,
    files: &[(&str, &[u8])],
    sources: &[&str],
    flags: &[&str],
    output: &str,
) -> Option<(OwnedFiles, Vec<String>)> {
    let (&source, graders) = sources.split_first()?;
    let code = std::str::from_utf8(files.iter().find(|(n, _)| *n == source)?.1).ok()?;
    let dir = Path::new(source).parent()?.to_str()?;
    let headers: Vec<&str> = files
        .iter()
        .filter_map(|(n, _)| n.strip_prefix(dir)?.strip_prefix('/'))
        .filter(|n| n.ends_with(".h") && !n.contains('/'))
        .collect();
    let others: Vec<(&str, &[u8])> = files
        .iter()
        .filter(|(n, _)| *n != source)
        .copied()
        .collect();
    let ready = |key: String| {
        let dir = cache.dir().join(key);
        dir.join(COMPLETE).is_file().then_some(dir)
    };
    let pch = split(code, &headers).and_then(|split| {
        let with = if split.header.contains('"') {
            &others[..]
        } else {
            &[]
        };
        ready(key("pch", flags, &[&split.header], with)).map(|dir| (dir, split.rest))
    });
    let objects = match graders.is_empty() {
        true => None,
        false => ready(key("obj", flags, graders, &others)),
    };
    let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    if let Some((dir, _)) = &pch {
        args.extend([
            "-Winvalid-pch".into(),
            "-Werror=invalid-pch".into(),
            "-include".into(),
        ]);
        args.push(dir.join(PCH_NAME).to_string_lossy().into_owned());
    }
    args.extend(["-o".to_string(), output.to_string(), source.to_string()]);
    match &objects {
        Some(dir) => args.extend(
            graders
                .iter()
                .map(|g| dir.join(object_name(g)).to_string_lossy().into_owned()),
        ),
        None => args.extend(graders.iter().map(|g| g.to_string())),
    }
    let mut out: Vec<(String, Vec<u8>)> = others
        .iter()
        .map(|(n, c)| (n.to_string(), c.to_vec()))
        .collect();
    let code = pch.map_or(code.to_string(), |(_, rest)| rest);
    out.push((source.to_string(), code.into_bytes()));
    Some((out, args))
}

/// What [`PchStore::claim`] found.
enum Claim {
    Ready(PathBuf),
    /// Absent: the caller builds it into this folder.
    Mine(PathBuf),
}

/// A header handed to the builder (see [`super::compile::HeaderBuilder`]).
pub(super) struct HeaderJob {
    key: String,
    dir: PathBuf,
    flags: Vec<String>,
    header: String,
    /// The problem's files the header may include (none for standard includes only).
    files: Vec<(String, Vec<u8>)>,
}

/// Marks a finished entry: entries are complete or absent, never half-written.
const COMPLETE: &str = "complete";

/// Builds an entry in a staging folder, then moves it into place.
fn store(
    cache: &CompileCache,
    dir: &Path,
    make: impl FnOnce(&Path) -> Result<bool>,
) -> Result<bool> {
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(cache.dir())
        .with_context(|| {
            format!(
                "cannot write to the compile cache {}",
                cache.dir().display()
            )
        })?;
    if !make(staging.path())? {
        return Ok(false);
    }
    fs::write(staging.path().join(COMPLETE), b"")?;
    // Another process may have stored the same entry meanwhile: either copy is right.
    if fs::rename(staging.path(), dir).is_err() && !dir.join(COMPLETE).is_file() {
        anyhow::bail!("cannot store {} in the compile cache", dir.display());
    }
    let _ = staging.keep();
    cache.account(super::cache::Footprint::entry(super::cache::dir_size(dir)));
    Ok(true)
}

fn touch(entry: &Path) {
    let _ = fs::File::open(entry).and_then(|f| f.set_modified(std::time::SystemTime::now()));
}

/// The cache key of an entry: the compiler, the flags, what is compiled and every file beside
/// it (a later compile profile changes the flags, and so the key).
fn key(kind: &str, flags: &[&str], what: &[&str], files: &[(&str, &[u8])]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"ioi-run pch v1\0");
    h.update(kind.as_bytes());
    h.update(compiler_identity().as_bytes());
    for part in flags.iter().chain(std::iter::once(&"\0")).chain(what) {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    super::compile::hash_files(&mut h, files);
    format!("{kind}-{}", h.finalize().to_hex())
}

/// A box holding the problem's files beside the submission (never the submission itself).
fn box_with(sandbox: &Sandbox, files: &[(&str, &[u8])]) -> Result<BoxDir> {
    let workdir = BoxDir::new(sandbox)?;
    for (name, content) in files {
        workdir.write(name, content)?;
    }
    Ok(workdir)
}

/// Runs g++ with `args` in `workdir`; `Ok(true)` when it succeeded.
fn gcc(
    sandbox: &Sandbox,
    runs: &AtomicUsize,
    workdir: &BoxDir,
    args: Vec<String>,
    binds: Vec<Bind>,
) -> Result<bool> {
    runs.fetch_add(1, Ordering::Relaxed);
    let mut argv = vec!["g++".to_string()];
    argv.extend(args);
    let mut spec = RunSpec::new(workdir.path(), argv);
    // Our own header and the problem's graders: the default program size bound is plenty.
    spec.limits = compile_limits(DEFAULT_MAX_PROGRAM_BYTES);
    spec.binds = binds;
    spec.stderr = Stdio::Path(workdir.stream("compile-stderr"));
    let outcome = sandbox.run(&spec);
    stop::check_outcome(&outcome)?;
    if outcome.status == Termination::InternalError {
        anyhow::bail!("cannot compile: {}", outcome.message);
    }
    Ok(outcome.status == Termination::Ok)
}

/// Moves a file the sandbox wrote into an entry, owned by us and read-only.
fn take(from: &Path, to: &Path) -> Result<()> {
    if fs::rename(from, to).is_err() {
        fs::copy(from, to)
            .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    }
    std::os::unix::fs::chown(
        to,
        Some(nix::unistd::geteuid().as_raw()),
        Some(nix::unistd::getegid().as_raw()),
    )
    .with_context(|| format!("cannot chown {}", to.display()))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(to, fs::Permissions::from_mode(0o444))
        .with_context(|| format!("cannot chmod {}", to.display()))
}

/// Name of the precompiled header in its entry (its header is deliberately absent).
const PCH_NAME: &str = "prefix.h";
/// Where the header is written when it is precompiled: diagnostics through it name this file.
const PCH_SOURCE: &str = "graders/.ioi-pch.h";

fn build_header(
    sandbox: &Sandbox,
    runs: &AtomicUsize,
    flags: &[String],
    header: &str,
    files: &[(String, Vec<u8>)],
    into: &Path,
) -> Result<bool> {
    let workdir = BoxDir::new(sandbox)?;
    for (name, content) in files {
        workdir.write(name, content)?;
    }
    // Beside the problem's headers, so that quoted includes find the same files.
    let path = PCH_SOURCE;
    workdir.write(path, header.as_bytes())?;
    let gch = format!("{path}.gch");
    let mut args: Vec<String> = flags.to_vec();
    args.extend(["-x", "c++-header", "-o", &gch, path].map(String::from));
    if !gcc(sandbox, runs, &workdir, args, Vec::new())? {
        return Ok(false);
    }
    take(&workdir.join(&gch), &into.join(format!("{PCH_NAME}.gch")))?;
    Ok(true)
}

/// The object file name of a grader source.
fn object_name(source: &str) -> String {
    let stem = Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{stem}.o")
}

fn build_objects(
    sandbox: &Sandbox,
    runs: &AtomicUsize,
    flags: &[&str],
    graders: &[&str],
    others: &[(&str, &[u8])],
    into: &Path,
) -> Result<bool> {
    let workdir = box_with(sandbox, others)?;
    for source in graders {
        let object = format!(".ioi-obj-{}", object_name(source));
        let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        args.extend(["-c", "-o", &object, source].map(String::from));
        if !gcc(sandbox, runs, &workdir, args, Vec::new())? {
            return Ok(false);
        }
        take(&workdir.join(&object), &into.join(object_name(source)))?;
    }
    Ok(true)
}

/// The submission compile proper; `Ok(None)` when it failed and the plain compile must run.
/// `code` is the submission as compiled: its precompiled lines blank when `pch` is given.
#[allow(clippy::too_many_arguments)]
fn compile_with(
    sandbox: &Sandbox,
    workdir: &BoxDir,
    request: &Request,
    source: &str,
    code: &str,
    others: &[(&str, &[u8])],
    graders: &[&str],
    pch: Option<&Path>,
    objects: Option<PathBuf>,
    max_program_bytes: u64,
) -> Result<Option<BuildResult>> {
    let mut names: Vec<String> = graders.iter().map(|g| object_name(g)).collect();
    names.sort();
    names.dedup();
    if names.len() != graders.len() {
        return Ok(None);
    }
    for (name, content) in others {
        workdir.write(name, content)?;
    }
    workdir.write(source, code.as_bytes())?;
    let mut args: Vec<String> = request.flags.iter().map(|s| s.to_string()).collect();
    let mut binds = Vec::new();
    if let Some(pch) = pch {
        args.extend(
            [
                "-Winvalid-pch",
                "-Werror=invalid-pch",
                "-include",
                &format!("{PCH_DIR}/{PCH_NAME}"),
            ]
            .map(String::from),
        );
        binds.push(Bind::read_only(pch, PCH_DIR));
    }
    args.extend(["-o", request.output, source].map(String::from));
    if let Some(objects) = objects {
        binds.push(Bind::read_only(objects, OBJ_DIR));
        args.extend(
            graders
                .iter()
                .map(|g| format!("{OBJ_DIR}/{}", object_name(g))),
        );
    }
    let mut argv = vec!["g++".to_string()];
    argv.extend(args);
    let mut spec = RunSpec::new(workdir.path(), argv);
    spec.limits = compile_limits(max_program_bytes);
    spec.binds = binds;
    let stderr_path = workdir.stream("compile-stderr");
    spec.stderr = Stdio::Path(stderr_path.clone());
    let outcome = sandbox.run(&spec);
    // A compile that ioi-run stopped is not a verdict (and never cached).
    stop::check_outcome(&outcome)?;
    Ok(match outcome.status {
        Termination::Ok => {
            // Checked before anything reads it; the plain compile reports an oversized program.
            let program = workdir.join(request.output);
            match fs::symlink_metadata(&program) {
                Ok(meta) if meta.is_file() && meta.len() <= max_program_bytes => {
                    Some(BuildResult::Binary(program))
                }
                _ => None,
            }
        }
        // The compiler's own verdict on the source, reported from this one compile. Without a
        // precompiled header it is the plain compile's word for word: the same source, flags
        // and file names, the graders only linked from objects. With one, a diagnostic that
        // shows the header (an include chain through it, the command line's `-include`) would
        // read differently from the plain compile's: the plain compile gives it.
        Termination::RuntimeError => {
            let stderr = read_diagnostics(&stderr_path, MAX_COMPILER_STDERR)?;
            if pch.is_some() && shows_the_header(&stderr) {
                None
            } else {
                Some(compiler_failed(
                    outcome.exit_code.unwrap_or(1),
                    stderr,
                    max_program_bytes,
                ))
            }
        }
        // The plain compile does strictly more work: it would be stopped too. These limits are
        // measured on the compiler alone, so they are its verdict (cached, as in `build`).
        Termination::TimeLimit | Termination::MemoryLimit => Some(BuildResult::Error {
            error: CompileError::stopped(format!(
                "{}\ncompiler stopped: {}",
                read_diagnostics(&stderr_path, MAX_COMPILER_STDERR)?,
                outcome.message
            )),
            cacheable: true,
        }),
        _ => None,
    })
}

/// Whether compiler diagnostics name the precompiled header or how it was included, which a
/// plain compile's never do.
fn shows_the_header(stderr: &str) -> bool {
    [PCH_SOURCE, PCH_DIR, "<command-line>"]
        .iter()
        .any(|trace| stderr.contains(trace))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &[&str] = &["orchard.h"];

    #[test]
    fn the_usual_prefix_is_split_and_line_numbers_hold() {
        let code = "#include \"orchard.h\"\n#include <bits/stdc++.h>\nusing namespace std;\nint main(){}\n";
        let s = split(code, H).unwrap();
        assert_eq!(
            s.header,
            "#include \"orchard.h\"\n#include <bits/stdc++.h>\n"
        );
        assert_eq!(s.rest, "\n\nusing namespace std;\nint main(){}\n");
        assert_eq!(s.rest.lines().count(), code.lines().count());
    }

    #[test]
    fn spacing_comments_and_crlf_are_accepted() {
        let code = "// solution\r\n\r\n#  include<bits/stdc++.h> // all\r\n#include \"orchard.h\"\r\nint x;\r\n";
        let s = split(code, H).unwrap();
        assert_eq!(
            s.header,
            "#include <bits/stdc++.h>\n#include \"orchard.h\"\n"
        );
        assert_eq!(s.rest, "\r\n\r\n\r\n\r\nint x;\r\n");
    }

    #[test]
    fn the_prefix_stops_at_the_first_other_line() {
        // <ext/rope> is not precompiled: it stays in the source, where it was.
        let code = "#include \"orchard.h\"\n#include <bits/stdc++.h>\n#include <ext/rope>\n#include <vector>\n";
        let s = split(code, H).unwrap();
        assert_eq!(
            s.header,
            "#include \"orchard.h\"\n#include <bits/stdc++.h>\n"
        );
        assert_eq!(s.rest, "\n\n#include <ext/rope>\n#include <vector>\n");
    }

    #[test]
    fn submissions_that_do_not_start_with_a_standard_include_are_left_alone() {
        for code in [
            "#include \"orchard.h\"\n#include <ext/rope>\n#include <bits/stdc++.h>\n",
            "#include \"orchard.h\"\nint x;\n#include <bits/stdc++.h>\n",
            "#pragma GCC optimize(\"O3\")\n#include <bits/stdc++.h>\n",
            "#define int long long\n#include <bits/stdc++.h>\n",
            "int x;\n#include <bits/stdc++.h>\n",
            "",
        ] {
            assert_eq!(split(code, H), None, "{code:?}");
        }
    }

    #[test]
    fn lines_that_could_mean_something_else_end_the_prefix() {
        for code in [
            // A lone CR ends a line for g++: the #error would be hidden in a "comment".
            "// x\r#error no\n#include <bits/stdc++.h>\n",
            // A backslash joins the include below into the comment.
            "// x \\\n#include <bits/stdc++.h>\n",
            "/* a\n#include <bits/stdc++.h>\n*/\n",
            "#include <bits/stdc++.h> int y;\n",
            "#include \"other.h\"\n#include <bits/stdc++.h>\n",
            "#include \"../orchard.h\"\n#include <bits/stdc++.h>\n",
            "#include <bits/stdc++.h\n",
            "#include_next <bits/stdc++.h>\n",
        ] {
            assert_eq!(split(code, H), None, "{code:?}");
        }
        // After a valid prefix, such a line just ends it.
        let s = split("#include <bits/stdc++.h>\n/* x */\n", H).unwrap();
        assert_eq!(s.rest, "\n/* x */\n");
    }

    #[test]
    fn standard_headers_make_a_prefix_of_their_own() {
        let code = "#include <vector>\n#include \"orchard.h\"\n#include <map>\nint x;\n";
        let s = split(code, H).unwrap();
        assert_eq!(
            s.header,
            "#include <vector>\n#include \"orchard.h\"\n#include <map>\n"
        );
        assert_eq!(s.rest, "\n\n\nint x;\n");
    }

    #[test]
    fn the_number_of_includes_is_bounded() {
        let code = "#include <bits/stdc++.h>\n".repeat(MAX_INCLUDES + 3);
        let s = split(&code, H).unwrap();
        assert_eq!(s.header.lines().count(), MAX_INCLUDES);
        assert_eq!(s.rest.lines().filter(|l| !l.is_empty()).count(), 3);
    }

    #[test]
    fn keys_differ_by_flags_header_and_files() {
        let files: &[(&str, &[u8])] = &[("graders/orchard.h", b"int f();")];
        let base = key("pch", &["-O2"], &["#include <bits/stdc++.h>\n"], files);
        assert_ne!(
            base,
            key(
                "pch",
                &["-O2", "-static"],
                &["#include <bits/stdc++.h>\n"],
                files
            )
        );
        assert_ne!(
            base,
            key("pch", &["-O2"], &["#include \"orchard.h\"\n"], files)
        );
        assert_ne!(
            base,
            key(
                "pch",
                &["-O2"],
                &["#include <bits/stdc++.h>\n"],
                &[("graders/orchard.h", b"int g();")]
            )
        );
        assert_eq!(
            base,
            key("pch", &["-O2"], &["#include <bits/stdc++.h>\n"], files)
        );
    }
}
