//! The problem model: a problem with its subtasks, limits, task type, grader files and tests,
//! whatever layout it was loaded from (a CMS task folder, open-r1/ioi rows, Piston requests).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::name::RelativePath;

pub mod cms;
pub mod config;
pub mod convert;
pub mod openr1;
pub mod package;
pub mod testcases;
pub mod tps;

/// Which problem of a catalog: its year (0 for a task folder without one) and id. Ordered by
/// year, then id; shown as `2024/nile`, or `nile` without a year.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProblemKey {
    pub year: i64,
    pub id: String,
}

impl ProblemKey {
    /// The key of `problem`.
    pub fn of(problem: &Problem) -> ProblemKey {
        ProblemKey {
            year: problem.year,
            id: problem.id.clone(),
        }
    }

    /// Whether this is the key of `problem`.
    pub fn is(&self, problem: &Problem) -> bool {
        problem.year == self.year && problem.id == self.id
    }
}

impl std::fmt::Display for ProblemKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.year {
            0 => f.write_str(&self.id),
            year => write!(f, "{year}/{}", self.id),
        }
    }
}

/// One IOI problem, ready to judge. Subtasks are in their sorted (judging) order.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Contest year (0 when the source does not say).
    pub year: i64,
    /// Problem id: the base name of the submission file `graders/<id>.cpp`, lowercase.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Contest day; `"practice"` problems are excluded from yearly totals.
    pub day: String,
    pub task: TaskType,
    /// CPU time limit per test and per user process, in seconds.
    pub time_limit: f64,
    /// Memory limit per user process, in bytes.
    pub memory_limit: u64,
    pub subtasks: Vec<Subtask>,
    /// Every grader file with its path relative to the task root (`graders/grader.cpp`,
    /// `checker/checker.cpp`, ...).
    pub grader_files: Vec<GraderFile>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskType {
    Batch,
    Communication(Communication),
}

/// Parameters of a Communication task (docs/judging.md#communication).
#[derive(Debug, Clone, PartialEq)]
pub struct Communication {
    /// Number of user processes (at least 1).
    pub num_processes: usize,
    pub user_io: UserIo,
    /// Extra arguments for the manager, after the FIFO paths.
    pub manager_args: Vec<String>,
}

/// How a Communication user process talks to the manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserIo {
    /// stdin/stdout are the FIFOs.
    StdIo,
    /// The FIFO paths are passed as arguments.
    FifoIo,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subtask {
    /// e.g. `00-samples`, `01-N2`.
    pub name: String,
    /// Points of the subtask.
    pub points: f64,
    /// Decimals used when rounding scores.
    pub score_precision: u32,
    /// Tests of the subtask, in order (a test may belong to several subtasks).
    pub test_names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraderFile {
    /// Path relative to the task root, with `/` separators (docs/data.md#names).
    pub path: RelativePath,
    pub content: Vec<u8>,
}

impl Problem {
    /// The grader file at `path`, if the problem has one.
    pub fn grader_file(&self, path: &str) -> Option<&GraderFile> {
        self.grader_files.iter().find(|f| f.path == path)
    }

    /// The checker source (`checker/checker.cpp`), if any; without it outputs are compared by
    /// white-diff.
    pub fn checker(&self) -> Option<&GraderFile> {
        self.grader_file("checker/checker.cpp")
    }

    /// The manager source (`graders/manager.cpp`), required by Communication tasks.
    pub fn manager(&self) -> Option<&GraderFile> {
        self.grader_file("graders/manager.cpp")
    }

    /// Grader sources compiled together with the submission (`graders/grader.cpp` and/or
    /// `graders/stub.cpp`), in that order.
    pub fn compiled_graders(&self) -> Vec<&GraderFile> {
        ["graders/grader.cpp", "graders/stub.cpp"]
            .iter()
            .filter_map(|p| self.grader_file(p))
            .collect()
    }

    /// The grader files at `paths` that the problem has, in that order.
    pub fn grader_files_at(&self, paths: &[&str]) -> Vec<&GraderFile> {
        paths.iter().filter_map(|p| self.grader_file(p)).collect()
    }

    /// Every distinct test name, in the order subtasks first use them.
    pub fn test_names(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.subtasks
            .iter()
            .flat_map(|s| s.test_names.iter())
            .filter(|t| seen.insert(t.as_str()))
            .map(|t| t.as_str())
            .collect()
    }

    /// The subtask named `name`.
    pub fn subtask(&self, name: &str) -> Option<&Subtask> {
        self.subtasks.iter().find(|s| s.name == name)
    }
}

/// The problem id told by the grader files: the stem of the first (sorted) `graders/*.h` that is
/// not `testlib.h`, lowercased (docs/judging.md#compile). `None` when there is no such header.
pub fn id_from_headers(files: &[GraderFile]) -> Option<String> {
    let mut headers: Vec<&str> = files
        .iter()
        .filter_map(|f| f.path.strip_prefix("graders/"))
        .filter(|name| !name.contains('/') && name.ends_with(".h") && *name != "testlib.h")
        .collect();
    headers.sort_unstable();
    headers
        .first()
        .map(|name| name.trim_end_matches(".h").to_lowercase())
        .filter(|id| crate::name::SafeName::parse(id).is_ok())
}

/// One test: where its input and expected output are on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    pub name: String,
    pub input: PathBuf,
    pub output: PathBuf,
}

/// The tests of one problem, as files on disk. Tests that came from parquet are written to a
/// temporary folder owned by the set and removed with it.
#[derive(Debug, Default)]
pub struct TestSet {
    pub cases: BTreeMap<String, TestCase>,
    /// Keeps materialised tests alive as long as the set.
    pub _storage: Option<tempfile::TempDir>,
}

impl TestSet {
    pub fn get(&self, name: &str) -> Option<&TestCase> {
        self.cases.get(name)
    }
}
