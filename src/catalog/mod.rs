//! Where the problems, tests and submissions a command names are found, for `evaluate`, `judge`
//! and the benchmarks alike: [`sources`] resolves `--problems` and `--tests` (local paths or hub
//! ids, task folders told from open-r1/ioi rows), [`datasets`] the datasets of submissions,
//! `hub` fetches Hugging Face datasets, [`Catalog`] holds the problems of an evaluation as
//! loaded, and [`lookup`] finds the one problem `judge` is asked for. It reads problems and
//! finds files; judging them is the judge's.

pub mod datasets;
mod hub;
pub mod lookup;
pub mod sources;

use std::path::PathBuf;

use anyhow::{bail, Result};

pub use datasets::{resolve_datasets, DatasetSource};
pub use sources::{folder_header, is_cms_source, resolve_sources, resolve_tests, task_folders};

use crate::problem::openr1::ProblemRows;
use crate::problem::{Problem, ProblemKey};

/// Where problems come from: CMS task folders, or open-r1/ioi rows with test-case sources.
pub enum Catalog {
    /// Task folders that loaded, and those that did not with why (a broken folder only matters
    /// to the submissions that name it).
    Cms(Vec<(Problem, PathBuf)>, Vec<(PathBuf, String)>),
    /// open-r1/ioi rows: the problems that loaded, those with a bad row, and the test sources.
    OpenR1 {
        rows: ProblemRows,
        tests: Vec<PathBuf>,
    },
}

impl Catalog {
    /// Loads the problem list from `--problems` sources (CMS folders, a folder of CMS folders,
    /// or open-r1/ioi files) and remembers the `--tests` sources.
    pub fn load(problem_sources: &[PathBuf], tests: &[PathBuf]) -> Result<Catalog> {
        let mut cms = Vec::new();
        let mut rows = Vec::new();
        for source in problem_sources {
            if is_cms_source(source) {
                cms.extend(task_folders(source)?);
            } else {
                rows.push(source.clone());
            }
        }
        match (cms.is_empty(), rows.is_empty()) {
            (false, true) => {
                let mut problems = Vec::new();
                let mut broken = Vec::new();
                for dir in cms {
                    match folder_header(&dir) {
                        Ok(problem) => problems.push((problem, dir)),
                        Err(e) => broken.push((dir, format!("{e:#}"))),
                    }
                }
                if problems.is_empty() && !broken.is_empty() {
                    let (dir, why) = &broken[0];
                    bail!(
                        "no problem folder could be loaded ({} tried); {}: {why}",
                        broken.len(),
                        dir.display()
                    );
                }
                Ok(Catalog::Cms(problems, broken))
            }
            (true, false) => {
                if tests.is_empty() {
                    return Err(crate::error::usage(anyhow::anyhow!(
                        "--tests is required with open-r1/ioi problem rows"
                    )));
                }
                let loaded = crate::problem::openr1::load_problems(&rows)?;
                if loaded.problems.is_empty() {
                    let first = loaded.broken.first().map(|b| b.why.as_str());
                    bail!(
                        "no problem could be loaded ({} with bad rows); {}",
                        loaded.broken.len(),
                        first.unwrap_or("no problem rows")
                    );
                }
                Ok(Catalog::OpenR1 {
                    rows: loaded,
                    tests: tests.to_vec(),
                })
            }
            (true, true) => Err(crate::error::usage(anyhow::anyhow!(
                "no problems given (--problems)"
            ))),
            (false, false) => Err(crate::error::usage(anyhow::anyhow!(
                "--problems mixes CMS task folders and open-r1/ioi files: use one kind"
            ))),
        }
    }

    /// A hash of every problem as loaded (limits, subtasks, grader files): shards judged
    /// against different problems must not be merged. Test data is not part of it (hashing
    /// gigabytes of tests would cost more than judging a shard).
    pub fn fingerprint(&self) -> String {
        let mut h = blake3::Hasher::new();
        for problem in self.problems() {
            h.update(format!("{problem:?}").as_bytes());
        }
        // Which problems are left out changes which submissions a shard judges.
        for broken in self.broken() {
            h.update(broken.as_bytes());
        }
        h.finalize().to_hex()[..16].to_string()
    }

    /// Problems that could not be loaded (task folders, or problems with a bad row), with why,
    /// for messages.
    pub fn broken(&self) -> Vec<String> {
        match self {
            Catalog::Cms(_, broken) => broken
                .iter()
                .map(|(dir, why)| format!("{}: {why}", dir.display()))
                .collect(),
            Catalog::OpenR1 { rows, .. } => rows
                .broken
                .iter()
                .map(|b| format!("problem {}: {}", b.label(), b.why))
                .collect(),
        }
    }

    /// Why a submission for (year, id) cannot be judged when the problem it names failed to
    /// load: a problem with a bad row, or a task folder of that name that is broken.
    pub fn broken_for(&self, year: i64, problem_id: &str) -> Option<String> {
        match self {
            Catalog::Cms(_, broken) => broken
                .iter()
                .find(|(dir, _)| {
                    dir.file_name()
                        .is_some_and(|n| n.to_string_lossy().to_lowercase() == problem_id)
                })
                .map(|(dir, _)| format!("its task folder {} could not be loaded", dir.display())),
            Catalog::OpenR1 { rows, .. } => rows.broken_for(year, problem_id).map(|b| {
                format!(
                    "problem {} could not be loaded: its rows in --problems are bad",
                    b.label()
                )
            }),
        }
    }

    /// The problems that loaded.
    pub fn problems(&self) -> Vec<&Problem> {
        match self {
            Catalog::Cms(list, _) => list.iter().map(|(p, _)| p).collect(),
            Catalog::OpenR1 { rows, .. } => rows.problems.iter().collect(),
        }
    }

    /// The key of the problem a submission is for (CMS folders without a year match any year).
    pub fn key_for(&self, year: i64, problem_id: &str) -> Option<ProblemKey> {
        self.problems()
            .into_iter()
            .find(|p| p.id == problem_id && (p.year == year || p.year == 0))
            .map(ProblemKey::of)
    }
}
