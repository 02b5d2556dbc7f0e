//! The numbers of a result set that every report shows: each problem's overview (its
//! submissions, its best submission, its score with no limit and with the 50 submissions chosen
//! by [`roundrobin::select`](super::roundrobin::select)), and a results file read into a
//! [`ResultSet`] for the markdown reports, the HTML report and the comparison page alike.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::report_rows::{python_float, JudgedSubmission};
use super::report_source::ResultsFiles;
use super::report_stats::ProblemStats;
use super::roundrobin::{self, Candidate};
use crate::name::SafeName;
use crate::score::round_like_python;

/// A score for display: rounded to 2 decimals, written as Python writes floats (`37.0`).
pub fn points(x: f64) -> String {
    python_float(round_like_python(x, 2))
}

/// Per subtask, the best weighted score over `chosen`, summed (0 for none).
pub fn problem_score<'a>(chosen: impl IntoIterator<Item = &'a JudgedSubmission>) -> f64 {
    let mut best: Vec<(&str, f64)> = Vec::new();
    for submission in chosen {
        for cell in &submission.subtasks {
            match best.iter_mut().find(|(name, _)| *name == cell.name) {
                Some((_, score)) => *score = score.max(cell.weighted_score),
                None => best.push((&cell.name, cell.weighted_score.max(0.0))),
            }
        }
    }
    best.iter().map(|(_, s)| s).sum()
}

/// The numbers of one problem, for its report and the dataset overview.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemOverview {
    pub year: i64,
    pub problem_id: String,
    pub day: Option<String>,
    pub submissions: usize,
    pub compiling: usize,
    pub best_submission: f64,
    pub no_limit_score: f64,
    pub limit_50_score: f64,
}

impl ProblemOverview {
    fn of(submissions: &[&JudgedSubmission]) -> ProblemOverview {
        let first = submissions[0];
        let subtasks = subtask_names(submissions);
        let candidates: Vec<Candidate> = submissions.iter().map(|s| s.candidate()).collect();
        let chosen = roundrobin::select(&subtasks, &candidates);
        ProblemOverview {
            year: first.year,
            problem_id: first.problem_id.clone(),
            day: submissions.iter().find_map(|s| s.day.clone()),
            submissions: submissions.len(),
            compiling: submissions.iter().filter(|s| s.code_compiles).count(),
            best_submission: submissions
                .iter()
                .map(|s| s.total)
                .fold(f64::NEG_INFINITY, f64::max),
            no_limit_score: problem_score(submissions.iter().copied()),
            limit_50_score: problem_score(chosen.iter().map(|&i| submissions[i])),
        }
    }

    /// The markdown report's file name: `<year>_<problem>.md`, or `<problem>.md` without a year.
    /// A problem id that is no plain name (docs/data.md#names) or starts with `.` gives
    /// `problem-<hash>.md` instead: a results file names no file outside its reports folder.
    pub fn report_name(&self) -> String {
        let name = match self.year {
            0 => format!("{}.md", self.problem_id),
            year => format!("{year}_{}.md", self.problem_id),
        };
        match SafeName::parse(&name) {
            Ok(safe) if !name.starts_with('.') => safe.to_string(),
            _ => format!(
                "problem-{}.md",
                &blake3::hash(self.problem_id.as_bytes()).to_hex()[..16]
            ),
        }
    }

    /// The report's file name as a relative link: the name itself when it holds only letters,
    /// digits and `-._~` (as the reference writes it), else `./` and the name percent-encoded,
    /// so that no problem id becomes a `javascript:` (or any other scheme's) link.
    pub fn report_link(&self) -> String {
        let name = self.report_name();
        let plain = |byte: u8| byte.is_ascii_alphanumeric() || b"-._~".contains(&byte);
        if name.bytes().all(plain) {
            return name;
        }
        let mut link = String::from("./");
        for byte in name.bytes() {
            match plain(byte) {
                true => link.push(byte as char),
                false => link.push_str(&format!("%{byte:02X}")),
            }
        }
        link
    }

    /// The anchor of the problem's section in the HTML report: its report's name without `.md`,
    /// letters, digits, `-` and `_` only.
    pub fn anchor(&self) -> String {
        let name = self.report_name();
        let stem = name.strip_suffix(".md").unwrap_or(&name);
        stem.chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    true => c,
                    false => '_',
                },
            )
            .collect()
    }

    /// The problem's title: `2024: nile`, or the id alone without a year.
    pub fn title(&self) -> String {
        match self.year {
            0 => self.problem_id.clone(),
            year => format!("{year}: {}", self.problem_id),
        }
    }

    pub fn is_practice(&self) -> bool {
        self.day.as_deref() == Some("practice")
    }
}

/// Subtask names in order of first appearance (every row of a problem normally has them all).
pub fn subtask_names(submissions: &[&JudgedSubmission]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for cell in submissions.iter().flat_map(|s| &s.subtasks) {
        if !names.contains(&cell.name) {
            names.push(cell.name.clone());
        }
    }
    names
}

/// Each problem's overview and submissions, newest year first, then by problem id. Rows
/// repeating a submission already seen are ignored, as on resume.
pub fn problems(
    submissions: &[JudgedSubmission],
) -> Vec<(ProblemOverview, Vec<&JudgedSubmission>)> {
    let mut seen = HashSet::new();
    let mut by_problem: BTreeMap<(std::cmp::Reverse<i64>, &str), Vec<&JudgedSubmission>> =
        BTreeMap::new();
    for s in submissions {
        if seen.insert((s.year, &s.problem_id, &s.id)) {
            by_problem
                .entry((std::cmp::Reverse(s.year), &s.problem_id))
                .or_default()
                .push(s);
        }
    }
    by_problem
        .into_values()
        .map(|problem| (ProblemOverview::of(&problem), problem))
        .collect()
}

/// One result set of a report: a results file (a dataset) and what the report keeps of it, its
/// submissions without their tests and each problem's tests counted.
pub struct ResultSet {
    /// The dataset's name: the file's stem, made unique among the report's sets.
    pub name: String,
    pub path: PathBuf,
    /// Its submissions in file order, each once (a row repeating a submission is ignored, as on
    /// resume).
    pub submissions: Vec<JudgedSubmission>,
    /// Per `(year, problem id)`, its tests' time and memory.
    pub stats: HashMap<(i64, String), ProblemStats>,
}

/// Streams the rows of `path` into a [`ResultSet`]: each row is read, its tests counted and
/// forgotten, so that memory grows with the submissions, not with their tests or code.
pub fn read_result_set(
    files: &mut ResultsFiles,
    name: String,
    path: &Path,
    id_column: &str,
) -> Result<ResultSet> {
    let mut set = ResultSet {
        name,
        path: path.to_path_buf(),
        submissions: Vec::new(),
        stats: HashMap::new(),
    };
    let mut seen = HashSet::new();
    files.stream(path, |row, span| {
        let mut judged = JudgedSubmission::from_row(&row, id_column)?;
        if !seen.insert((judged.year, judged.problem_id.clone(), judged.id.clone())) {
            return Ok(());
        }
        judged.span = span;
        set.stats
            .entry(stats_key(judged.year, &judged.problem_id))
            .or_default()
            .add(&judged);
        judged.forget_tests();
        set.submissions.push(judged);
        Ok(())
    })?;
    Ok(set)
}

/// The key of a problem's [`ProblemStats`].
pub fn stats_key(year: i64, problem_id: &str) -> (i64, String) {
    (year, problem_id.to_string())
}
