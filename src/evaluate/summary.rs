//! The short table `evaluate` ends with: per problem, how many submissions, their mean score
//! and how many ended with each verdict, read back from the results files (so a resumed run
//! summarises everything judged, not only its own part).
//!
//! A submission's verdict is its worst subtask status (`AC` only when every subtask is), `CE`
//! when it does not compile, and `no code` when it has none.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;

use super::report_rows::JudgedSubmission;
use crate::problem::ProblemKey;
use crate::score::Verdict;

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemSummary {
    /// `2025/orchard`.
    pub problem: String,
    pub submissions: usize,
    /// Mean of `all_subtasks_points`.
    pub mean_score: f64,
    /// Verdict → number of submissions, worst verdict first.
    pub verdicts: Vec<(String, usize)>,
}

/// Summarises every results row of `results_files`, one line per problem.
pub fn summarize(results_files: &[PathBuf], id_column: &str) -> Result<Vec<ProblemSummary>> {
    let mut by_problem: BTreeMap<ProblemKey, Vec<JudgedSubmission>> = BTreeMap::new();
    for path in results_files {
        for row in super::read_results(path)? {
            let judged = JudgedSubmission::from_row(&row, id_column)?;
            by_problem
                .entry(ProblemKey {
                    year: judged.year,
                    id: judged.problem_id.clone(),
                })
                .or_default()
                .push(judged);
        }
    }
    Ok(by_problem
        .into_iter()
        .map(|(key, submissions)| summary(&key, &submissions))
        .collect())
}

fn summary(key: &ProblemKey, submissions: &[JudgedSubmission]) -> ProblemSummary {
    // Keyed by a rank so that verdicts come worst first, as statuses are ordered.
    let mut counts: BTreeMap<(u8, String), usize> = BTreeMap::new();
    for s in submissions {
        let verdict = verdict(s);
        let rank = match verdict {
            Some(status) => status as u8,
            None => u8::MAX,
        };
        let word = verdict.map_or("no code", Verdict::as_str).to_string();
        *counts.entry((rank, word)).or_default() += 1;
    }
    let total: f64 = submissions.iter().map(|s| s.total).sum();
    ProblemSummary {
        problem: key.to_string(),
        submissions: submissions.len(),
        mean_score: total / submissions.len().max(1) as f64,
        verdicts: counts.into_iter().map(|((_, w), n)| (w, n)).collect(),
    }
}

/// The verdict of one submission; `None` when it has no code.
fn verdict(s: &JudgedSubmission) -> Option<Verdict> {
    if !s.has_code {
        return None;
    }
    if !s.code_compiles {
        return Some(Verdict::CompilationError);
    }
    Some(
        s.subtasks
            .iter()
            .map(|c| c.status)
            .filter(|&status| status != Verdict::Skipped)
            .min()
            .unwrap_or(Verdict::Skipped),
    )
}

/// The table, as text.
pub fn render(summaries: &[ProblemSummary]) -> String {
    let width = summaries
        .iter()
        .map(|s| s.problem.len())
        .max()
        .unwrap_or(0)
        .max("problem".len());
    let mut out = format!(
        "{:<width$}  {:>11}  {:>10}  verdicts\n",
        "problem", "submissions", "mean score"
    );
    for s in summaries {
        let verdicts: Vec<String> = s.verdicts.iter().map(|(w, n)| format!("{w} {n}")).collect();
        out.push_str(&format!(
            "{:<width$}  {:>11}  {:>10.2}  {}\n",
            s.problem,
            s.submissions,
            s.mean_score,
            verdicts.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, code: Option<&str>, compiles: bool, points: f64, statuses: &[&str]) -> String {
        let subtasks: Vec<_> = statuses
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({"problem": "p", "subtask": format!("0{i}"), "score": 0.0,
                       "weighted_score": 0.0, "points": 50, "score_precision": 2,
                       "status": s, "test_results": []})
            })
            .collect();
        json!({"uuid": id, "problem_id": "p", "year": 2025, "code": code,
               "code_compiles": compiles, "all_subtasks_points": points,
               "all_subtasks_results": subtasks})
        .to_string()
    }

    #[test]
    fn verdicts_are_counted_worst_first_with_the_mean_score() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let rows = [
            row("a", Some("x"), true, 100.0, &["AC", "AC"]),
            row("b", Some("x"), true, 50.0, &["AC", "TLE"]),
            row("c", Some("x"), false, 0.0, &["CE", "CE"]),
            row("d", None, false, 0.0, &["SKIPPED", "SKIPPED"]),
            row("e", Some("x"), true, 30.0, &["PA", "TLE"]),
        ];
        std::fs::write(&path, rows.join("\n") + "\n").unwrap();
        let summaries = summarize(&[path], "uuid").unwrap();
        assert_eq!(
            summaries,
            vec![ProblemSummary {
                problem: "2025/p".into(),
                submissions: 5,
                mean_score: 36.0,
                verdicts: vec![
                    ("CE".into(), 1),
                    ("TLE".into(), 2),
                    ("AC".into(), 1),
                    ("no code".into(), 1)
                ],
            }]
        );
        let table = render(&summaries);
        assert!(
            table.contains("2025/p") && table.contains("36.00") && table.contains("TLE 2"),
            "{table}"
        );
    }
}
