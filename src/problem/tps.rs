//! TPS task folders: the format IOI committees prepare tasks in and publish them as (IOI 2017's
//! Task Preparation System; IOI 2022 onward publishes its tasks this way):
//!
//! ```text
//! problem.json     name, title, type, time_limit (s), memory_limit (MB), num_processes,
//!                  grader_name, has_checker, has_manager, score_precision
//! subtasks.json    {"subtasks": {"<name>": {"index": I, "score": S, ...}, ...}, validators}
//! gen/             generators (<program>.cpp, testlib.h), manual/<file>, input.header|footer,
//!                  and `data` (or `data.py`, which prints it) saying how to make every test
//! grader/cpp/      <grader_name>.cpp and <name>.h;  grader/manager.cpp (Communication)
//! grader/c/        <grader_name>.c (optional: `.c` solutions are linked with it)
//! checker/         checker.cpp (+ testlib.h)
//! solution/        solutions;  solutions.json: expected verdict of each, per subtask
//! ```
//!
//! Test inputs are not in the package: they are generated. This module reads the package and
//! the `gen/data` grammar (`@subtask`, `@testset`, `@include`, `manual FILE`, `PROGRAM ARGS`)
//! exactly as TPS does, test names and subtask→test mapping included, so that the problem it
//! describes is the one TPS's CMS exporter would have produced. Running generators and the
//! model solution is the judge's job (`judge::tps`); nothing here executes anything.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

use super::{Communication, GraderFile, Problem, Subtask, TaskType, UserIo};
use crate::dataset::kind;
use crate::name::{RelativePath, SafeName};

/// Whether `dir` looks like a TPS task folder (`problem.json` with `subtasks.json` beside it;
/// a CMS folder has a `subtasks/` folder instead).
pub fn is_tps(dir: &Path) -> bool {
    dir.join("problem.json").is_file() && dir.join("subtasks.json").is_file()
}

/// Where the text of `gen/data` comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum GenData {
    /// `gen/data` itself.
    Text(String),
    /// `gen/data.py`, whose standard output is `gen/data` (IOI 2022 keeps only the script).
    Script(Vec<u8>),
}

/// A subtask as `subtasks.json` declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtaskSpec {
    pub name: String,
    pub index: u32,
    pub score: f64,
    /// Validator commands of this subtask (`validators`).
    pub validators: Vec<String>,
}

/// Validator commands of `subtasks.json` besides the per-subtask ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validators {
    /// `global_validators`: run on every test.
    pub global: Vec<String>,
    /// `subtask_sensitive_validators`: run for every subtask of a test, `{subtask}` replaced by
    /// the subtask's name (IOI 2022: `validator.cpp {subtask}`).
    pub subtask_sensitive: Vec<String>,
}

/// The expected verdict of an official solution (`solutions.json`): one verdict for every
/// subtask, with exceptions per subtask.
#[derive(Debug, Clone, PartialEq)]
pub struct SolutionSpec {
    /// File name in `solution/`.
    pub file: String,
    /// `model_solution`, `correct`, `incorrect`, `time_limit`, `memory_limit`,
    /// `runtime_error`, `failed`, `time_limit_and_runtime_error`, `partially_correct`.
    pub verdict: String,
    pub except: BTreeMap<String, String>,
}

impl SolutionSpec {
    /// The verdict expected on subtask `name` (a TPS subtask name, without the index prefix).
    pub fn verdict_for(&self, name: &str) -> &str {
        let v = self.except.get(name).unwrap_or(&self.verdict);
        if v == "model_solution" {
            "correct"
        } else {
            v
        }
    }
}

/// A TPS package as read from disk (nothing generated yet).
#[derive(Debug, Clone)]
pub struct TpsPackage {
    pub dir: PathBuf,
    /// The raw `problem.json` (part of the test cache key).
    pub problem_json: Vec<u8>,
    /// `problem.json` `name`: the problem id (submission file `<name>.cpp`).
    pub name: String,
    pub title: String,
    pub task: TaskType,
    /// `problem.json` `type`, as written (test names depend on it).
    pub task_type: String,
    pub time_limit: f64,
    /// Bytes (`problem.json` says megabytes).
    pub memory_limit: u64,
    pub score_precision: u32,
    /// In `index` order.
    pub subtasks: Vec<SubtaskSpec>,
    pub validators: Validators,
    /// Every file directly in `validator/`.
    pub validator_files: Vec<GraderFile>,
    /// Grader, header, manager and checker files, at the paths of TPS's CMS export
    /// (`graders/...`, `checker/...`).
    pub grader_files: Vec<GraderFile>,
    /// Every file directly in `gen/` (generators, headers, `input.header`, ...), by file name.
    pub gen_files: Vec<GraderFile>,
    pub gen_data: GenData,
    pub solutions: Vec<SolutionSpec>,
    /// File name of the model solution in `solution/`.
    pub model_solution: String,
}

/// How one test's input is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenCommand {
    /// `manual FILE`: a copy of `gen/manual/FILE`.
    Manual(RelativePath),
    /// `PROGRAM ARGS...`: the standard output of `gen/PROGRAM.cpp` run with ARGS.
    Generator { program: String, args: Vec<String> },
}

/// One test of `gen/data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenTest {
    /// The name as exported to CMS (lowercase, `_` for spaces), e.g. `1-03`, `randomab-02`;
    /// a file name of the tests' folder.
    pub name: SafeName,
    /// Line of `gen/data` it comes from (1-based).
    pub line: usize,
    pub command: GenCommand,
}

/// What `gen/data` says: every test in order, and the tests of every subtask.
#[derive(Debug, Clone, PartialEq)]
pub struct GenPlan {
    pub tests: Vec<GenTest>,
    /// Subtask name → its tests, sorted by their TPS names (the order of TPS's mapping file,
    /// which the CMS export keeps).
    pub subtask_tests: BTreeMap<String, Vec<String>>,
}

/// `tests_util.make_clean_name` of TPS's CMS exporter.
fn clean_name(name: &str) -> String {
    name.replace(' ', "_").to_lowercase()
}

/// The most test memberships `gen/data` may make over all its testsets and subtasks. An IOI
/// package has a few hundred tests in a dozen subtasks, a few thousand memberships.
pub const MAX_MEMBERSHIPS: usize = 100_000;

/// Parses `gen/data` as TPS's `gen_data_parser.py` does. `task_type` is `problem.json`'s
/// `type` (OutputOnly tasks number their tests differently). `origin` names the file in errors.
pub fn parse_gen_data(text: &str, task_type: &str, origin: &str) -> Result<GenPlan> {
    let mut tests = Vec::new();
    // Testset (or subtask) name → its tests by TPS name; subtasks in order of appearance.
    let mut sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut subtasks: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut subtask_index: i64 = -1;
    let mut subtask_counter: i64 = -1;
    let (mut test_index, mut test_offset) = (1usize, 0usize);
    let mut seen_names = HashSet::new();
    let mut memberships = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{origin}: line {line_no}");
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let args: Vec<&str> = words.collect();
        if let Some(directive) = command.strip_prefix('@') {
            match directive {
                "subtask" | "testset" => {
                    let Some(name) = args.first() else {
                        bail!("{}: @{directive} needs a name", at());
                    };
                    // It becomes part of test names, which are file names.
                    SafeName::parse(name).with_context(|| format!("{}: @{directive}", at()))?;
                    test_offset = 1;
                    sets.insert(name.to_string(), BTreeSet::new());
                    if directive == "subtask" {
                        subtasks.push(name.to_string());
                        subtask_counter += 1;
                        subtask_index = subtask_counter;
                    } else {
                        subtask_index = -1;
                    }
                    current = Some(name.to_string());
                }
                "include" => {
                    let Some(into) = &current else {
                        bail!("{}: @include before any @subtask or @testset", at());
                    };
                    for included in &args {
                        let Some(tests) = sets.get(*included).cloned() else {
                            bail!("{}: @include of undefined testset {included:?}", at());
                        };
                        // Each include copies a set: a small file of includes of one large set
                        // would otherwise hold the product of the two in memory.
                        memberships += tests.len();
                        if memberships > MAX_MEMBERSHIPS {
                            bail!(
                                "{}: over {MAX_MEMBERSHIPS} tests counted over every testset and \
                                 subtask (@include copies a set into another): no package needs \
                                 that many",
                                at()
                            );
                        }
                        sets.entry(into.clone()).or_default().extend(tests);
                    }
                }
                _ => bail!("{}: unknown command {command:?}", at()),
            }
            continue;
        }
        let Some(set) = &current else {
            bail!("{}: a test before any @subtask or @testset", at());
        };
        let tps_name = if task_type == "OutputOnly" {
            format!("{test_index:02}")
        } else if subtask_index < 0 {
            format!("{set}-{test_offset:02}")
        } else {
            format!("{subtask_index}-{test_offset:02}")
        };
        let command = gen_command(line, &at())?;
        let name = SafeName::parse(&clean_name(&tps_name))
            .with_context(|| format!("{}: test name", at()))?;
        if !seen_names.insert(name.clone()) {
            bail!("{}: test name {name:?} is used twice", at());
        }
        sets.entry(set.clone()).or_default().insert(tps_name);
        tests.push(GenTest {
            name,
            line: line_no,
            command,
        });
        test_index += 1;
        test_offset += 1;
    }
    let subtask_tests = subtasks
        .iter()
        .map(|s| {
            let names = sets
                .get(s)
                .map(|t| t.iter().map(|n| clean_name(n)).collect())
                .unwrap_or_default();
            (s.clone(), names)
        })
        .collect();
    Ok(GenPlan {
        tests,
        subtask_tests,
    })
}

/// The command of one test line of `gen/data` (`at` names the line in errors): `manual FILE`,
/// or a generator of `gen/` with its arguments, split as a shell would.
fn gen_command(line: &str, at: &str) -> Result<GenCommand> {
    let parts =
        shlex::split(line).with_context(|| format!("{at}: unbalanced quotes in {line:?}"))?;
    match parts.split_first() {
        Some((m, rest)) if m == "manual" => match rest {
            [file] => Ok(GenCommand::Manual(RelativePath::parse(file).with_context(
                || format!("{at}: `manual` takes a file of gen/manual"),
            )?)),
            _ => bail!(
                "{at}: `manual` takes exactly one file name, found {}",
                rest.len()
            ),
        },
        Some((program, rest)) => {
            if program.contains('/') || program.starts_with('.') {
                bail!("{at}: generator name {program:?} must be a file in gen/");
            }
            Ok(GenCommand::Generator {
                program: program.clone(),
                args: rest.to_vec(),
            })
        }
        None => bail!("{at}: empty test line"),
    }
}

/// The fields of a package's `problem.json`, each error naming the file and the field.
struct Fields<'a> {
    top: &'a serde_json::Map<String, Value>,
    path: &'a Path,
}

impl Fields<'_> {
    fn at(&self, field: &str) -> String {
        format!("{}: field `{field}`", self.path.display())
    }

    fn missing(&self, field: &str) -> String {
        format!("{} is missing", self.at(field))
    }

    fn string(&self, field: &str) -> Result<Option<String>> {
        match self.top.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => bail!("{} must be a string, found {}", self.at(field), kind(other)),
        }
    }

    fn boolean(&self, field: &str, default: bool) -> Result<bool> {
        match self.top.get(field) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => bail!(
                "{} must be true or false, found {}",
                self.at(field),
                kind(other)
            ),
        }
    }

    fn positive(&self, field: &str) -> Result<f64> {
        self.top
            .get(field)
            .with_context(|| self.missing(field))?
            .as_f64()
            .filter(|v| *v > 0.0)
            .with_context(|| format!("{} must be a positive number", self.at(field)))
    }
}

/// The task type `type` names: Batch, or Communication with its `num_processes`.
fn read_task_type(fields: &Fields, task_type: &str) -> Result<TaskType> {
    match task_type {
        "Batch" => Ok(TaskType::Batch),
        "Communication" => {
            let processes = match fields.top.get("num_processes") {
                None | Some(Value::Null) => 1,
                Some(v) => v.as_u64().filter(|n| *n >= 1).with_context(|| {
                    format!("{} must be a positive integer", fields.at("num_processes"))
                })? as usize,
            };
            Ok(TaskType::Communication(Communication {
                num_processes: processes,
                user_io: UserIo::StdIo,
                manager_args: Vec::new(),
            }))
        }
        other => bail!(
            "{}: task type {other:?} is not supported (Batch and Communication are)",
            fields.at("type")
        ),
    }
}

/// The grader, manager and checker files the package's `problem.json` says it has, sorted by
/// path: what TPS's CMS exporter copies.
fn read_grader_files(
    dir: &Path,
    name: &str,
    fields: &Fields,
    task_type: &str,
) -> Result<Vec<GraderFile>> {
    let is_comm = task_type.starts_with("Communicat");
    let has_grader = fields.boolean("has_grader", !task_type.starts_with("Output"))?;
    let has_manager = fields.boolean("has_manager", is_comm)?;
    let has_checker = fields.boolean("has_checker", !is_comm)?;
    let grader_name = fields
        .string("grader_name")?
        .unwrap_or_else(|| "grader".into());
    let mut grader_files = Vec::new();
    if has_grader {
        if grader_name != "grader" && grader_name != "stub" {
            bail!(
                "{}: {grader_name:?} is not supported (the judge compiles grader.cpp or stub.cpp)",
                fields.at("grader_name")
            );
        }
        // The grader and the task header only (the C grader too, which `.c` solutions are
        // linked with; the header is the C++ one).
        for (from, to) in [
            (
                format!("grader/cpp/{grader_name}.cpp"),
                format!("graders/{grader_name}.cpp"),
            ),
            (
                format!("grader/c/{grader_name}.c"),
                format!("graders/{grader_name}.c"),
            ),
            (format!("grader/cpp/{name}.h"), format!("graders/{name}.h")),
        ] {
            let path = dir.join(&from);
            if path.is_file() || path.is_symlink() {
                grader_files.push(GraderFile {
                    path: RelativePath::parse(&to)?,
                    content: read_file(dir, &path)?,
                });
            }
        }
    }
    // A manager or checker the task declares: its folder's sources, which must hold its main.
    let declared = |folder: &str, into: &str, main: &str, declared_by: &str| -> Result<_> {
        let files = cpp_and_headers(dir, folder, into)?;
        if !files.iter().any(|f| f.path == format!("{into}/{main}")) {
            bail!(
                "{}: the task has a {} (problem.json {declared_by}) but there is no {main}",
                dir.join(folder).display(),
                main.trim_end_matches(".cpp"),
            );
        }
        Ok(files)
    };
    if has_manager {
        grader_files.extend(declared(
            "grader",
            "graders",
            "manager.cpp",
            "`type`/`has_manager`",
        )?);
    }
    if has_checker {
        grader_files.extend(declared(
            "checker",
            "checker",
            "checker.cpp",
            "`has_checker`",
        )?);
    }
    grader_files.sort_by(|a, b| a.path.cmp(&b.path));
    grader_files.dedup_by(|a, b| a.path == b.path);
    Ok(grader_files)
}

/// How the tests are generated: `gen/data`, or the script `gen/data.py` that writes it.
fn read_gen_data(gen_dir: &Path, gen_files: &[GraderFile]) -> Result<GenData> {
    if let Some(f) = gen_files.iter().find(|f| f.path == "data") {
        return Ok(GenData::Text(
            String::from_utf8(f.content.clone())
                .with_context(|| format!("{}: not UTF-8", gen_dir.join("data").display()))?,
        ));
    }
    if let Some(f) = gen_files.iter().find(|f| f.path == "data.py") {
        return Ok(GenData::Script(f.content.clone()));
    }
    bail!(
        "{}: neither `data` nor `data.py`: nothing says how to generate the tests",
        gen_dir.display()
    )
}

impl TpsPackage {
    /// Reads a TPS task folder. Errors name the file and field at fault.
    pub fn read(dir: &Path) -> Result<TpsPackage> {
        let json_path = dir.join("problem.json");
        let problem_json = read_file(dir, &json_path)?;
        let top = json_object(&problem_json, &json_path)?;
        let fields = Fields {
            top: &top,
            path: &json_path,
        };
        let name = fields
            .string("name")?
            .with_context(|| fields.missing("name"))?;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!(
                "{} must be a C identifier, found {name:?}",
                fields.at("name")
            );
        }
        let title = fields.string("title")?.unwrap_or_else(|| name.clone());
        let task_type = fields
            .string("type")?
            .with_context(|| fields.missing("type"))?;
        let time_limit = fields.positive("time_limit")?;
        let memory_mb = fields.positive("memory_limit")?;
        let score_precision = match top.get("score_precision") {
            None | Some(Value::Null) => super::cms::DEFAULT_SCORE_PRECISION,
            Some(v) => v
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .with_context(|| {
                    format!(
                        "{} must be a non-negative integer",
                        fields.at("score_precision")
                    )
                })?,
        };
        let task = read_task_type(&fields, &task_type)?;
        let grader_files = read_grader_files(dir, &name, &fields, &task_type)?;
        let (subtasks, validators) = read_subtasks_json(dir, &dir.join("subtasks.json"))?;
        let validator_files = top_level_files(dir, &dir.join("validator"))?;
        let gen_files = top_level_files(dir, &dir.join("gen"))?;
        let gen_data = read_gen_data(&dir.join("gen"), &gen_files)?;
        let (solutions, model_solution) = read_solutions_json(dir, &dir.join("solutions.json"))?;
        Ok(TpsPackage {
            dir: dir.to_path_buf(),
            problem_json,
            name,
            title,
            task,
            task_type,
            time_limit,
            memory_limit: (memory_mb * 1024.0 * 1024.0).round() as u64,
            score_precision,
            subtasks,
            validators,
            validator_files,
            grader_files,
            gen_files,
            gen_data,
            solutions,
            model_solution,
        })
    }

    /// The problem with no subtasks: what is known before `gen/data` is read (id, name,
    /// limits), enough to match submissions to it.
    pub fn header(&self) -> Problem {
        let mut problem = Problem {
            year: 0,
            id: self.name.to_lowercase(),
            name: self.title.clone(),
            day: String::new(),
            task: self.task.clone(),
            time_limit: self.time_limit,
            memory_limit: self.memory_limit,
            subtasks: Vec::new(),
            grader_files: self.grader_files.clone(),
        };
        super::config::ensure_grader_config(&mut problem);
        problem
    }

    /// The problem described by `gen/data` (its text): subtasks named `NN-name` as TPS's CMS
    /// export names them, with their tests; and how to make each test.
    pub fn plan(&self, gen_data: &str) -> Result<(Problem, GenPlan)> {
        let origin = self.dir.join("gen/data");
        let origin = origin.display().to_string();
        let plan = parse_gen_data(gen_data, &self.task_type, &origin)?;
        for name in plan.subtask_tests.keys() {
            if !self.subtasks.iter().any(|s| &s.name == name) {
                bail!(
                    "{origin}: @subtask {name} is not in {}",
                    self.dir.join("subtasks.json").display()
                );
            }
        }
        let mut subtasks = Vec::new();
        for spec in &self.subtasks {
            let tests = plan
                .subtask_tests
                .get(&spec.name)
                .cloned()
                .unwrap_or_default();
            if tests.is_empty() {
                bail!("{origin}: subtask {} has no tests", spec.name);
            }
            subtasks.push(Subtask {
                name: format!("{:02}-{}", spec.index, spec.name),
                points: spec.score,
                score_precision: self.score_precision,
                test_names: tests,
            });
        }
        subtasks.sort_by(|a, b| a.name.cmp(&b.name));
        for test in &plan.tests {
            match &test.command {
                GenCommand::Manual(file) => {
                    let path = self.dir.join("gen/manual").join(file);
                    if !path.is_file() {
                        bail!(
                            "{origin}: line {}: {} does not exist",
                            test.line,
                            path.display()
                        );
                    }
                    super::package::check_readable(&self.dir, &path)
                        .with_context(|| format!("{origin}: line {}", test.line))?;
                }
                GenCommand::Generator { program, .. } => {
                    let source = format!("{program}.cpp");
                    if !self.gen_files.iter().any(|f| f.path == source) {
                        bail!(
                            "{origin}: line {}: generator {program:?} has no gen/{source}",
                            test.line
                        );
                    }
                }
            }
        }
        let mut problem = self.header();
        problem.subtasks = subtasks;
        problem
            .check_bounds()
            .with_context(|| format!("{}", self.dir.display()))?;
        Ok((problem, plan))
    }

    /// The validator commands of a test in the given subtasks (TPS names), in TPS's order
    /// (global, then per subtask the subtask-sensitive ones and its own), each once.
    pub fn validator_commands(&self, subtasks: &[&str]) -> Vec<String> {
        let mut commands = self.validators.global.clone();
        for name in subtasks {
            for v in &self.validators.subtask_sensitive {
                commands.push(v.replace("{subtask}", name));
            }
            if let Some(spec) = self.subtasks.iter().find(|s| s.name == *name) {
                commands.extend(spec.validators.iter().cloned());
            }
        }
        let mut seen = HashSet::new();
        commands.retain(|c| seen.insert(c.clone()));
        commands
    }

    /// The path of a solution file named in `solutions.json`.
    pub fn solution_path(&self, file: &str) -> PathBuf {
        self.dir.join("solution").join(file)
    }
}

/// A file of the package at `root`, links out of it read as an unprivileged user.
fn read_file(root: &Path, path: &Path) -> Result<Vec<u8>> {
    super::package::read(root, path)
}

fn json_object(bytes: &[u8], path: &Path) -> Result<Map<String, Value>> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => bail!(
            "{}: expected a JSON object, found {}",
            path.display(),
            kind(&other)
        ),
        Err(e) => bail!("{}: malformed JSON: {e}", path.display()),
    }
}

/// `*.cpp` and `*.h` directly in `dir`, as `<prefix>/<name>` (what the CMS exporter copies
/// for managers and checkers).
fn cpp_and_headers(root: &Path, folder: &str, prefix: &str) -> Result<Vec<GraderFile>> {
    top_level_files(root, &root.join(folder))?
        .into_iter()
        .filter(|f| f.path.ends_with(".cpp") || f.path.ends_with(".h"))
        .map(|f| {
            Ok(GraderFile {
                path: RelativePath::parse(&format!("{prefix}/{}", f.path))?,
                content: f.content,
            })
        })
        .collect()
}

/// Regular files (or links to them) directly in `dir`, by file name, sorted; none when the
/// folder is missing. Build products of TPS (`*.exe`, `._*`) are skipped.
fn top_level_files(root: &Path, dir: &Path) -> Result<Vec<GraderFile>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || name.ends_with(".exe") || name == "Makefile" {
            continue;
        }
        // A dangling link is an error (read_file says which submodule is missing).
        if path.is_dir() {
            continue;
        }
        files.push(GraderFile {
            content: read_file(root, &path)?,
            path: RelativePath::parse(&name)
                .with_context(|| format!("{}: a file name breaks the rules", path.display()))?,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn read_subtasks_json(root: &Path, path: &Path) -> Result<(Vec<SubtaskSpec>, Validators)> {
    let top = json_object(&read_file(root, path)?, path)?;
    let strings = |value: Option<&Value>, field: &str| -> Result<Vec<String>> {
        match value {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).with_context(|| {
                        format!("{}: field `{field}` must hold strings", path.display())
                    })
                })
                .collect(),
            Some(other) => bail!(
                "{}: field `{field}` must be a list, found {}",
                path.display(),
                kind(other)
            ),
        }
    };
    let validators = Validators {
        global: strings(top.get("global_validators"), "global_validators")?,
        subtask_sensitive: strings(
            top.get("subtask_sensitive_validators"),
            "subtask_sensitive_validators",
        )?,
    };
    let Some(Value::Object(subtasks)) = top.get("subtasks") else {
        bail!("{}: field `subtasks` must be an object", path.display());
    };
    let mut specs = Vec::new();
    for (name, data) in subtasks {
        let at = |field: &str| format!("{}: field `subtasks.{name}.{field}`", path.display());
        let index = data
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok())
            .with_context(|| format!("{} must be a non-negative integer", at("index")))?;
        let score = data
            .get("score")
            .and_then(Value::as_f64)
            .with_context(|| format!("{} must be a number", at("score")))?;
        specs.push(SubtaskSpec {
            name: name.clone(),
            index,
            score,
            validators: strings(
                data.get("validators"),
                &format!("subtasks.{name}.validators"),
            )?,
        });
    }
    specs.sort_by_key(|s| s.index);
    if let Some(w) = specs.windows(2).find(|w| w[0].index == w[1].index) {
        bail!(
            "{}: subtasks {} and {} have the same index {}",
            path.display(),
            w[0].name,
            w[1].name,
            w[0].index
        );
    }
    Ok((specs, validators))
}

fn read_solutions_json(root: &Path, path: &Path) -> Result<(Vec<SolutionSpec>, String)> {
    let top = json_object(&read_file(root, path)?, path)?;
    let mut solutions = Vec::new();
    for (file, data) in &top {
        let at = |field: &str| format!("{}: field `{file}.{field}`", path.display());
        // A file of `solution/`, read to be judged.
        SafeName::parse(file).with_context(|| format!("{}: solution {file:?}", path.display()))?;
        let verdict = data
            .get("verdict")
            .and_then(Value::as_str)
            .with_context(|| format!("{} must be a string", at("verdict")))?
            .to_string();
        let mut except = BTreeMap::new();
        match data.get("except") {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (subtask, v) in map {
                    let v = v.as_str().with_context(|| {
                        format!("{} must be a string", at(&format!("except.{subtask}")))
                    })?;
                    except.insert(subtask.clone(), v.to_string());
                }
            }
            Some(other) => bail!("{} must be an object, found {}", at("except"), kind(other)),
        }
        solutions.push(SolutionSpec {
            file: file.clone(),
            verdict,
            except,
        });
    }
    let models: Vec<&SolutionSpec> = solutions
        .iter()
        .filter(|s| s.verdict == "model_solution")
        .collect();
    let model = match models.as_slice() {
        [one] => one.file.clone(),
        _ => bail!(
            "{}: exactly one solution must have the verdict `model_solution` (found {})",
            path.display(),
            models.len()
        ),
    };
    Ok((solutions, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: &str = "\
# shared random tests
@testset Small
gen rnd 1 10
gen rnd 2 10

@subtask samples
manual sample-1.in

@subtask small
@include samples Small
gen rnd 3 'a b'

@subtask full
@include small
gen-big 5
";

    #[test]
    fn names_and_mapping_follow_tps() {
        let plan = parse_gen_data(DATA, "Batch", "data").unwrap();
        let names: Vec<&str> = plan.tests.iter().map(|t| t.name.as_str()).collect();
        // Testset tests are named after the set, subtask tests after the subtask's position.
        assert_eq!(names, ["small-01", "small-02", "0-01", "1-01", "2-01"]);
        assert_eq!(plan.tests[0].line, 3);
        assert_eq!(
            plan.tests[3].command,
            GenCommand::Generator {
                program: "gen".into(),
                args: vec!["rnd".into(), "3".into(), "a b".into()]
            }
        );
        assert_eq!(
            plan.tests[2].command,
            GenCommand::Manual("sample-1.in".parse().unwrap())
        );
        assert_eq!(
            plan.tests[4].command,
            GenCommand::Generator {
                program: "gen-big".into(),
                args: vec!["5".into()]
            }
        );
        // Sorted by TPS name ("0-01" < "1-01" < "Small-01"), then cleaned.
        assert_eq!(plan.subtask_tests["samples"], ["0-01"]);
        assert_eq!(
            plan.subtask_tests["small"],
            ["0-01", "1-01", "small-01", "small-02"]
        );
        assert_eq!(
            plan.subtask_tests["full"],
            ["0-01", "1-01", "2-01", "small-01", "small-02"]
        );
        assert!(!plan.subtask_tests.contains_key("Small"));
    }

    #[test]
    fn output_only_numbers_tests_globally() {
        let plan = parse_gen_data(
            "@subtask a\nmanual x\n@subtask b\nmanual y\n",
            "OutputOnly",
            "d",
        )
        .unwrap();
        let names: Vec<&str> = plan.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["01", "02"]);
    }

    #[test]
    fn grammar_errors_name_the_line() {
        for (text, want) in [
            ("gen 1\n", "line 1: a test before any @subtask"),
            (
                "@subtask a\n@include b\n",
                "line 2: @include of undefined testset \"b\"",
            ),
            ("@subtask a\n@frobnicate\n", "line 2: unknown command"),
            (
                "@subtask a\nmanual x y\n",
                "line 2: `manual` takes exactly one",
            ),
            ("@subtask a\ngen 'x\n", "line 2: unbalanced quotes"),
            ("@subtask a\n../evil 1\n", "must be a file in gen/"),
        ] {
            let err = format!(
                "{:#}",
                parse_gen_data(text, "Batch", "gen/data").unwrap_err()
            );
            assert!(
                err.contains("gen/data") && err.contains(want),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn includes_that_multiply_a_large_testset_are_refused() {
        // 1000 tests included by 200 testsets: 200 000 memberships from 3000 lines.
        let mut text = String::from("@testset big\n");
        for i in 0..1000 {
            text.push_str(&format!("gen {i}\n"));
        }
        for i in 0..200 {
            text.push_str(&format!("@testset t{i}\n@include big\n"));
        }
        let err = format!(
            "{:#}",
            parse_gen_data(&text, "Batch", "gen/data").unwrap_err()
        );
        assert!(err.contains("over 100000 tests counted"), "{err}");
        // A real package's includes pass.
        let mut text = String::from("@testset big\n");
        for i in 0..300 {
            text.push_str(&format!("gen {i}\n"));
        }
        for i in 0..10 {
            text.push_str(&format!("@subtask s{i}\n@include big\n"));
        }
        parse_gen_data(&text, "Batch", "gen/data").unwrap();
    }

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn package(root: &Path) {
        write(
            root,
            "problem.json",
            r#"{"name": "sum", "title": "Sum", "type": "Communication", "time_limit": 1.5,
                "memory_limit": 256, "num_processes": 2, "grader_name": "stub", "has_checker": true}"#,
        );
        write(
            root,
            "subtasks.json",
            r#"{"subtasks": {"full": {"index": 1, "score": 60}, "samples": {"index": 0, "score": 40}}}"#,
        );
        write(
            root,
            "solutions.json",
            r#"{"model.cpp": {"verdict": "model_solution"},
                "slow.cpp": {"verdict": "time_limit", "except": {"samples": "correct"}}}"#,
        );
        write(root, "grader/cpp/stub.cpp", "stub");
        write(root, "grader/cpp/sum.h", "header");
        write(root, "grader/cpp/other.h", "not exported");
        write(root, "grader/manager.cpp", "manager");
        write(root, "grader/testlib.h", "testlib");
        write(root, "checker/checker.cpp", "checker");
        write(root, "gen/gen.cpp", "gen");
        write(
            root,
            "gen/data",
            "@subtask samples\nmanual a.in\n@subtask full\n@include samples\ngen 1\n",
        );
        write(root, "gen/manual/a.in", "1\n");
    }

    #[test]
    fn reads_a_package_like_the_cms_exporter() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        let pkg = TpsPackage::read(dir.path()).unwrap();
        assert!(is_tps(dir.path()));
        assert_eq!(pkg.memory_limit, 256 << 20);
        assert_eq!(
            pkg.task,
            TaskType::Communication(Communication {
                num_processes: 2,
                user_io: UserIo::StdIo,
                manager_args: vec![]
            })
        );
        let paths: Vec<&str> = pkg.grader_files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "checker/checker.cpp",
                "graders/manager.cpp",
                "graders/stub.cpp",
                "graders/sum.h",
                "graders/testlib.h"
            ]
        );
        assert_eq!(pkg.model_solution, "model.cpp");
        let slow = &pkg.solutions[1];
        assert_eq!(
            (slow.verdict_for("samples"), slow.verdict_for("full")),
            ("correct", "time_limit")
        );
        let GenData::Text(text) = &pkg.gen_data else {
            panic!("gen/data is text")
        };
        let (problem, plan) = pkg.plan(text).unwrap();
        assert_eq!(problem.id, "sum");
        assert_eq!(problem.name, "Sum");
        let subtasks: Vec<(&str, f64, &[String])> = problem
            .subtasks
            .iter()
            .map(|s| (s.name.as_str(), s.points, s.test_names.as_slice()))
            .collect();
        assert_eq!(
            subtasks,
            [
                ("00-samples", 40.0, &["0-01".to_string()][..]),
                (
                    "01-full",
                    60.0,
                    &["0-01".to_string(), "1-01".to_string()][..]
                )
            ]
        );
        assert_eq!(plan.tests.len(), 2);
        assert!(problem.grader_file("graders/grader_config.json").is_some());
    }

    #[test]
    fn a_declared_manager_or_checker_without_its_source_is_refused() {
        for (missing, folder, wanted) in [
            (
                "grader/manager.cpp",
                "grader",
                "has a manager (problem.json `type`/`has_manager`) but there is no manager.cpp",
            ),
            (
                "checker/checker.cpp",
                "checker",
                "has a checker (problem.json `has_checker`) but there is no checker.cpp",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            package(dir.path());
            std::fs::remove_file(dir.path().join(missing)).unwrap();
            let err = format!("{:#}", TpsPackage::read(dir.path()).unwrap_err());
            assert!(err.contains(wanted), "{err}");
            assert!(
                err.contains(&dir.path().join(folder).display().to_string()),
                "{err}"
            );
        }
    }

    #[test]
    fn package_errors_name_file_and_field() {
        let cases: [(&str, &str, &str); 6] = [
            (
                "problem.json",
                r#"{"name": "sum", "type": "Batch", "time_limit": 1}"#,
                "field `memory_limit` is missing",
            ),
            (
                "problem.json",
                r#"{"name": "sum", "type": "TwoSteps", "time_limit": 1, "memory_limit": 1}"#,
                "\"TwoSteps\" is not supported",
            ),
            (
                "solutions.json",
                r#"{"a.cpp": {"verdict": "correct"}}"#,
                "exactly one solution must have the verdict `model_solution`",
            ),
            (
                "subtasks.json",
                r#"{"subtasks": {"a": {"score": 1}}}"#,
                "field `subtasks.a.index`",
            ),
            (
                "gen/data",
                "@subtask samples\nmanual zzz.in\n@subtask full\ngen 1\n",
                "zzz.in does not exist",
            ),
            (
                "gen/data",
                "@subtask samples\nmanual a.in\n@subtask full\nother 1\n",
                "generator \"other\" has no gen/other.cpp",
            ),
        ];
        for (file, content, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            package(dir.path());
            write(dir.path(), file, content);
            let err = TpsPackage::read(dir.path()).and_then(|p| {
                let GenData::Text(t) = &p.gen_data else {
                    unreachable!()
                };
                p.plan(t).map(|_| ())
            });
            let err = format!("{:#}", err.unwrap_err());
            assert!(err.contains(file) && err.contains(want), "{file}: {err}");
        }
    }

    #[test]
    fn validators_of_a_test_follow_tps_order_once_each() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        write(
            dir.path(),
            "subtasks.json",
            r#"{"global_validators": ["global.cpp"],
                "subtask_sensitive_validators": ["validator.cpp {subtask}", "global.cpp"],
                "subtasks": {"samples": {"index": 0, "score": 0, "validators": ["extra.cpp 1"]},
                             "full": {"index": 1, "score": 100}}}"#,
        );
        let pkg = TpsPackage::read(dir.path()).unwrap();
        assert_eq!(
            pkg.validator_commands(&["samples", "full"]),
            [
                "global.cpp",
                "validator.cpp samples",
                "extra.cpp 1",
                "validator.cpp full"
            ]
        );
        assert_eq!(pkg.validator_commands(&[]), ["global.cpp"]);
    }

    #[test]
    fn dangling_link_mentions_the_submodule() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        std::os::unix::fs::symlink(
            "../../tps/problem-assets/testlib.h",
            dir.path().join("checker/testlib.h"),
        )
        .unwrap();
        let err = format!("{:#}", TpsPackage::read(dir.path()).unwrap_err());
        assert!(
            err.contains("checker/testlib.h") && err.contains("submodule"),
            "{err}"
        );
    }
}
