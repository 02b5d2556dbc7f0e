//! The fidelity report: every official solution of a folder of official packages judged, and
//! each subtask's status compared with what the package itself expects (TPS's
//! `solutions.json`, the categories of a CMS export), by the package's own rules.
//!
//! `packages` finds the task folders and their expectations, `rules` says which statuses fit
//! an expectation, `run` judges (resumably: every judged solution is a line of
//! `judged.jsonl` in the output folder) and `report` writes the table, markdown and JSON. A
//! deviation is a fact to explain (a slower machine, an environment difference, a bug), never
//! hidden: the report lists each with the test that decided it.

pub mod packages;
pub mod report;
pub mod rules;
pub mod run;

use serde::{Deserialize, Serialize};

use crate::score::Verdict;

/// One subtask of a judged solution, as kept in `judged.jsonl` and the JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubtaskOutcome {
    /// As the problem names it (`02-full`).
    pub subtask: String,
    pub status: Verdict,
    /// Unweighted, 0–1.
    pub score: f64,
    /// CPU seconds of its slowest test that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<f64>,
    /// The test that decided a status other than AC (the first of the worst status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deciding_test: Option<DecidingTest>,
}

/// The test behind a subtask's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecidingTest {
    pub test: String,
    pub status: Verdict,
    /// First line of the feedback.
    pub feedback: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
}

fn unscaled() -> f64 {
    1.0
}

/// One judged solution: a line of `judged.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedSolution {
    /// The package as the report names it.
    pub task: String,
    /// Path inside the task folder.
    pub solution: String,
    /// blake3 of the source: a changed file is judged again.
    pub source_hash: String,
    pub compile_profile: String,
    /// The `--time-scale` the solution was judged with (rows written without one: 1).
    #[serde(default = "unscaled")]
    pub time_scale: f64,
    pub time_limit: f64,
    pub subtasks: Vec<SubtaskOutcome>,
}

impl SubtaskOutcome {
    /// The outcome of a judged subtask.
    pub fn of(result: &crate::score::SubtaskResult) -> SubtaskOutcome {
        let status = result.status();
        let deciding_test = (status != Verdict::Accepted)
            .then(|| result.test_results.iter().find(|t| t.status == status))
            .flatten()
            .map(|t| DecidingTest {
                test: t.test_name.clone(),
                status: t.status,
                feedback: t
                    .feedback
                    .as_deref()
                    .and_then(|f| f.lines().next())
                    .unwrap_or("")
                    .to_string(),
                time: t.time,
                wall_time: t.wall_time,
                memory: t.memory,
            });
        SubtaskOutcome {
            subtask: result.subtask.clone(),
            status,
            score: result.score(),
            max_time: result
                .test_results
                .iter()
                .filter_map(|t| t.time)
                .reduce(f64::max),
            deciding_test,
        }
    }
}
