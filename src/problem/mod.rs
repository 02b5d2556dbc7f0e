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

impl TaskType {
    /// Refuses a Communication task of more user processes than [`bounds::PROCESSES`] (or
    /// none), naming the field: the part of [`Problem::check_bounds`] a task type alone holds.
    pub fn check_bounds(&self) -> anyhow::Result<()> {
        if let TaskType::Communication(c) = self {
            if c.num_processes == 0 || c.num_processes > bounds::PROCESSES {
                anyhow::bail!(
                    "field `num_processes` is {}: a Communication task has 1 to {} user processes",
                    c.num_processes,
                    bounds::PROCESSES
                );
            }
        }
        Ok(())
    }
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

/// Bounds far beyond any real problem's, that keep a package's numbers inside what the judge
/// can represent: a time limit of `1e300` s is no duration, points of `5e307` sum to infinity,
/// a precision of four billion decimals is no number, and ten thousand user processes would
/// hold a worker for minutes.
pub mod bounds {
    /// The longest time limit, in seconds.
    pub const TIME_LIMIT: f64 = 3600.0;
    /// The largest memory limit, in bytes (1 TiB).
    pub const MEMORY_LIMIT: u64 = 1 << 40;
    /// The smallest memory limit, in bytes: the sandbox raises a lower one to this, since its
    /// program could not start in less and the kernel would fail it before it runs
    /// (the sandbox's `MIN_MEMORY_LIMIT`).
    pub const MIN_MEMORY_LIMIT: u64 = 4 << 20;
    /// The most points of one subtask.
    pub const POINTS: f64 = 1e6;
    /// The most decimals of a score.
    pub const SCORE_PRECISION: u32 = 9;
    /// The most user processes of a Communication test.
    pub const PROCESSES: usize = 64;
}

impl Problem {
    /// Refuses a limit, a number of points or of processes out of [`bounds`], naming the
    /// field (the caller names the file or row).
    pub fn check_bounds(&self) -> anyhow::Result<()> {
        use anyhow::bail;
        let time = self.time_limit;
        if !(time.is_finite() && time > 0.0 && time <= bounds::TIME_LIMIT) {
            bail!(
                "field `time_limit` is {time} s: a time limit is more than 0 and at most {} s",
                bounds::TIME_LIMIT
            );
        }
        if self.memory_limit < bounds::MIN_MEMORY_LIMIT || self.memory_limit > bounds::MEMORY_LIMIT
        {
            bail!(
                "field `memory_limit` is {} bytes: at least {} (4 MiB) and at most {} (1 TiB)",
                self.memory_limit,
                bounds::MIN_MEMORY_LIMIT,
                bounds::MEMORY_LIMIT
            );
        }
        self.task.check_bounds()?;
        for s in &self.subtasks {
            if !(s.points.is_finite() && (0.0..=bounds::POINTS).contains(&s.points)) {
                bail!(
                    "subtask {}: its points ({}) must be from 0 to {:e}",
                    s.name,
                    s.points,
                    bounds::POINTS
                );
            }
            if s.score_precision > bounds::SCORE_PRECISION {
                bail!(
                    "subtask {}: field `score_precision` is {}: at most {} decimals",
                    s.name,
                    s.score_precision,
                    bounds::SCORE_PRECISION
                );
            }
        }
        Ok(())
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(task: TaskType) -> Problem {
        Problem {
            year: 2024,
            id: "p".into(),
            name: "p".into(),
            day: String::new(),
            task,
            time_limit: 1.0,
            memory_limit: 1 << 28,
            subtasks: vec![Subtask {
                name: "01".into(),
                points: 100.0,
                score_precision: 2,
                test_names: vec!["01".into()],
            }],
            grader_files: Vec::new(),
        }
    }

    #[test]
    fn numbers_out_of_bounds_are_refused_naming_the_field() {
        let communication = |n| {
            TaskType::Communication(Communication {
                num_processes: n,
                user_io: UserIo::StdIo,
                manager_args: Vec::new(),
            })
        };
        problem(TaskType::Batch).check_bounds().unwrap();
        problem(communication(2)).check_bounds().unwrap();
        let refused = |p: Problem, field: &str| {
            let error = p.check_bounds().unwrap_err().to_string();
            assert!(error.contains(field), "{field}: {error}");
        };
        refused(problem(communication(3000)), "num_processes");
        for time in [f64::NAN, f64::INFINITY, 0.0, 1e300] {
            refused(
                Problem {
                    time_limit: time,
                    ..problem(TaskType::Batch)
                },
                "time_limit",
            );
        }
        refused(
            Problem {
                memory_limit: 0,
                ..problem(TaskType::Batch)
            },
            "memory_limit",
        );
        let mut p = problem(TaskType::Batch);
        p.subtasks[0].points = 5e307;
        refused(p, "points");
        let mut p = problem(TaskType::Batch);
        p.subtasks[0].score_precision = u32::MAX;
        refused(p, "score_precision");
    }
}
