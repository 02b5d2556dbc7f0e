//! The results of a dataset: one JSON line per judged submission in
//! `<local-results-path>/<dataset>.jsonl` (docs/results.md#results-file). The file is also the
//! resume cache: a restart skips the submissions already in it.
//!
//! Each row is written with a single `write` and synced before the next one, so a run killed at
//! any moment leaves at most one truncated last line, which the next open drops (that submission
//! is then judged again). A row is never lost once `append` returned, and never written twice.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::settings::JudgedProblems;
use super::submissions::{Submission, SubmissionKey};
use crate::dataset::{kind, Row};
use crate::problem::Problem;
use crate::score::{SubtaskResult, Verdict};

/// Builds the results row of a judged submission (docs/results.md#results-file): every submission
/// field but
/// `subtask`, then the target subtask's score and status, whether the code compiles, the total and
/// every subtask's results.
///
/// Extra fields beyond the reference: `submission_id` (the id, so reports need no `--id-column`),
/// `problem_name`, `problem_day` and `problem_year` (reports group by day and year, and leave
/// out practice problems), `problem_time_limit` (seconds) and `problem_memory_limit` (bytes)
/// (the HTML report plots each test's time and memory against them).
pub fn result_row(
    submission: &Submission,
    problem: &Problem,
    results: &[SubtaskResult],
) -> Map<String, Value> {
    let mut row = submission.fields.clone();
    row.remove("subtask");
    // Extra fields never replace a column of the submission (docs/results.md#results-file keeps
    // them all).
    row.entry("submission_id").or_insert(json!(submission.id));
    row.entry("problem_name").or_insert(json!(problem.name));
    row.entry("problem_day").or_insert(json!(problem.day));
    // 0 for a task folder that does not say its year: reports then show no year rather than
    // the submission's default one.
    row.entry("problem_year").or_insert(json!(problem.year));
    row.entry("problem_time_limit")
        .or_insert(json!(problem.time_limit));
    row.entry("problem_memory_limit")
        .or_insert(json!(problem.memory_limit));
    let target = submission
        .target_subtask
        .as_deref()
        .and_then(|name| results.iter().find(|r| r.subtask == name));
    row.insert("target_subtask".into(), json!(submission.target_subtask));
    row.insert(
        "target_subtask_score".into(),
        json!(target.map(SubtaskResult::score)),
    );
    row.insert(
        "target_subtask_status".into(),
        json!(target.map(|t| t.status().as_str())),
    );
    let compiles = submission.code.is_some()
        && results
            .iter()
            .all(|r| r.status() != Verdict::CompilationError);
    row.insert("code_compiles".into(), json!(compiles));
    let total: f64 = results.iter().map(SubtaskResult::weighted_score).sum();
    row.insert("all_subtasks_points".into(), json!(total));
    row.insert(
        "all_subtasks_results".into(),
        Value::Array(results.iter().map(subtask_json).collect()),
    );
    row
}

fn subtask_json(result: &SubtaskResult) -> Value {
    json!({
        "problem": result.problem,
        "subtask": result.subtask,
        "score": result.score(),
        "weighted_score": result.weighted_score(),
        "points": number_like_python(result.points),
        "score_precision": result.score_precision,
        "status": result.status().as_str(),
        "test_results": result.test_results,
    })
}

/// Points come from integer columns: written back as integers (`7`, not `7.0`) when integral.
fn number_like_python(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// The results JSONL of one dataset, open for appending, with the keys already in it.
#[derive(Debug)]
pub struct ResultsFile {
    path: PathBuf,
    file: File,
    id_column: String,
    done: HashSet<SubmissionKey>,
    /// The content each problem's rows were judged on.
    judged: JudgedProblems,
    /// Held while this file is open: one writer per results file.
    _lock: super::lock::ResultsLock,
}

impl ResultsFile {
    /// Opens `<dir>/<config_name>.jsonl`, creating it if needed. With `override_existing`, an
    /// existing file is first moved to `<config_name>.jsonl.bak` (replacing an older backup).
    /// Otherwise the keys it holds are read; a truncated last line left by a killed run is
    /// dropped from the file.
    pub fn open(
        dir: &Path,
        config_name: &str,
        id_column: &str,
        override_existing: bool,
    ) -> Result<ResultsFile> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Before anything is read or moved: another run may be writing this file.
        let lock = super::lock::ResultsLock::acquire(dir, config_name)?;
        let path = dir.join(format!("{config_name}.jsonl"));
        if override_existing && path.exists() {
            let backup = dir.join(format!("{config_name}.jsonl.bak"));
            std::fs::rename(&path, &backup).with_context(|| {
                format!("cannot move {} to {}", path.display(), backup.display())
            })?;
            tracing::info!("moved {} to {}", path.display(), backup.display());
        }
        let mut done = HashSet::new();
        let mut judged = JudgedProblems::default();
        if path.exists() {
            for row in repair_and_read(&path)? {
                let key = SubmissionKey::of_row(&row, id_column).with_context(|| {
                    format!(
                        "{}: cannot tell which submission this results row is",
                        path.display()
                    )
                })?;
                let at = format!("{} line {}", path.display(), row.index + 1);
                judged.note(key.year, &key.problem_id, &row.fields, at)?;
                done.insert(key);
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {} for appending", path.display()))?;
        Ok(ResultsFile {
            path,
            file,
            id_column: id_column.to_string(),
            done,
            judged,
            _lock: lock,
        })
    }

    /// Where the results are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a submission already has results (skip it when resuming).
    pub fn is_done(&self, key: &SubmissionKey) -> bool {
        self.done.contains(key)
    }

    /// Keys of every submission with results.
    pub fn done(&self) -> &HashSet<SubmissionKey> {
        &self.done
    }

    /// The content (`problem_hash`) the rows of each problem were judged on.
    pub fn judged_problems(&self) -> &JudgedProblems {
        &self.judged
    }

    /// Appends one results row and syncs it to disk. Returns `false`, writing nothing, when the
    /// submission already has a row, so that a row is never doubled.
    pub fn append(&mut self, row: &Map<String, Value>) -> Result<bool> {
        let located = Row {
            file: Arc::new(self.path.clone()),
            index: self.done.len(),
            fields: row.clone(),
        };
        let key = SubmissionKey::of_row(&located, &self.id_column)?;
        if self.done.contains(&key) {
            return Ok(false);
        }
        let mut line = serde_json::to_string(row).context("cannot serialise a results row")?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .and_then(|_| self.file.sync_data())
            .with_context(|| format!("cannot write to {}", self.path.display()))?;
        self.done.insert(key);
        Ok(true)
    }
}

/// Reads every row of a results JSONL. A last line without its newline that is not valid JSON is
/// a row cut by a kill, and is ignored; any other malformed line is an error naming it.
pub fn read_results(path: &Path) -> Result<Vec<Row>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(parse_lines(path, &text)?.0)
}

/// Rows of the file, and whether its last line lacks its newline (the file needs repair).
fn parse_lines(path: &Path, text: &str) -> Result<(Vec<Row>, bool)> {
    let file = Arc::new(path.to_path_buf());
    let mut rows = Vec::new();
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(fields)) => rows.push(Row {
                file: file.clone(),
                index,
                fields,
            }),
            // Only the last line can lack its newline: a row cut by a kill, dropped.
            _ if !line.ends_with('\n') => {}
            Ok(other) => bail!(
                "{} line {}: expected a JSON object, found {}",
                path.display(),
                index + 1,
                kind(&other)
            ),
            Err(e) => bail!(
                "{} line {}: malformed results row: {e}",
                path.display(),
                index + 1
            ),
        }
    }
    Ok((rows, !text.is_empty() && !text.ends_with('\n')))
}

/// Reads the rows of a results file. When its last line lacks its newline (a kill during a
/// write), the file is rewritten with only its complete rows, so that the next append starts on a
/// fresh line; rows already there are kept byte for byte.
fn repair_and_read(path: &Path) -> Result<Vec<Row>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (rows, unterminated) = parse_lines(path, &text)?;
    if unterminated {
        let kept = text.rfind('\n').map_or(0, |i| i + 1);
        let mut clean = text[..kept].to_string();
        let last = &text[kept..];
        if rows
            .last()
            .is_some_and(|r| r.index == text[..kept].matches('\n').count())
        {
            clean.push_str(last);
            clean.push('\n');
        } else {
            tracing::warn!(
                "{}: dropping a truncated last line left by an interrupted run",
                path.display()
            );
        }
        let tmp = path.with_extension("jsonl.tmp");
        let mut out =
            File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        out.write_all(clean.as_bytes())
            .and_then(|_| out.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::submissions::SubmissionOptions;
    use crate::problem::{Subtask, TaskType};
    use crate::score::TestResult;

    fn problem() -> Problem {
        Problem {
            year: 2024,
            id: "nile".into(),
            name: "Nile".into(),
            day: "1".into(),
            task: TaskType::Batch,
            time_limit: 2.0,
            memory_limit: 1 << 30,
            subtasks: vec![Subtask {
                name: "00-samples".into(),
                points: 0.0,
                score_precision: 2,
                test_names: vec!["0-01".into()],
            }],
            grader_files: vec![],
        }
    }

    fn submission(id: &str, target: Option<&str>, code: Option<&str>) -> Submission {
        let mut fields = json!({"uuid": id, "problem_id": "Nile", "subtask": target,
                                "generation": "g"});
        if let Some(code) = code {
            fields["code"] = json!(code);
        }
        let row = Row {
            file: Arc::new(PathBuf::from("s.jsonl")),
            index: 0,
            fields: fields.as_object().unwrap().clone(),
        };
        Submission::from_row(&row, &SubmissionOptions::default()).unwrap()
    }

    fn test(name: &str, score: f64, status: Verdict, feedback: &str) -> TestResult {
        TestResult {
            score,
            status,
            feedback: Some(feedback.into()),
            time: Some(0.5),
            wall_time: Some(0.6),
            memory: Some(1024),
            ..TestResult::skipped(name)
        }
    }

    fn subtask(name: &str, points: f64, tests: Vec<TestResult>) -> SubtaskResult {
        SubtaskResult {
            problem: "nile".into(),
            subtask: name.into(),
            points,
            score_precision: 2,
            test_results: tests,
        }
    }

    #[test]
    fn row_has_the_spec_shape() {
        let s = submission("u1", Some("01-a"), Some("int x;"));
        let results = vec![
            subtask(
                "00-samples",
                0.0,
                vec![test("0-01", 1.0, Verdict::Accepted, "Output is correct")],
            ),
            subtask(
                "01-a",
                7.0,
                vec![
                    test("1-01", 1.0, Verdict::Accepted, "Output is correct"),
                    test("1-02", 0.5, Verdict::Partial, "half"),
                ],
            ),
            subtask("02-b", 12.5, vec![TestResult::skipped("2-01")]),
        ];
        let row = result_row(&s, &problem(), &results);
        let expected = json!({
            "uuid": "u1", "problem_id": "Nile", "generation": "g", "code": "int x;",
            "year": 2024,
            "submission_id": "u1", "problem_name": "Nile", "problem_day": "1", "problem_year": 2024,
            "problem_time_limit": 2.0, "problem_memory_limit": 1u64 << 30,
            "target_subtask": "01-a", "target_subtask_score": 0.5, "target_subtask_status": "PA",
            "code_compiles": true, "all_subtasks_points": 3.5,
            "all_subtasks_results": [
                {"problem": "nile", "subtask": "00-samples", "score": 1.0, "weighted_score": 0.0,
                 "points": 0, "score_precision": 2, "status": "AC",
                 "test_results": [{"test_name": "0-01", "score": 1.0, "status": "AC",
                                   "feedback": "Output is correct", "time": 0.5,
                                   "wall_time": 0.6, "memory": 1024}]},
                {"problem": "nile", "subtask": "01-a", "score": 0.5, "weighted_score": 3.5,
                 "points": 7, "score_precision": 2, "status": "PA",
                 "test_results": [
                     {"test_name": "1-01", "score": 1.0, "status": "AC",
                      "feedback": "Output is correct", "time": 0.5, "wall_time": 0.6,
                      "memory": 1024},
                     {"test_name": "1-02", "score": 0.5, "status": "PA", "feedback": "half",
                      "time": 0.5, "wall_time": 0.6, "memory": 1024}]},
                {"problem": "nile", "subtask": "02-b", "score": 0.0, "weighted_score": 0.0,
                 "points": 12.5, "score_precision": 2, "status": "SKIPPED",
                 "test_results": [{"test_name": "2-01", "score": 0.0, "status": "SKIPPED",
                                   "feedback": null}]},
            ],
        });
        assert_eq!(Value::Object(row.clone()), expected);
        // Integers stay integers and scores stay floats in the JSON text.
        let text = serde_json::to_string(&row).unwrap();
        assert!(
            text.contains("\"points\":7,") && text.contains("\"weighted_score\":3.5"),
            "{text}"
        );
        assert!(text.contains("\"score\":1.0"), "{text}");

        // No target, no code: nulls, and a submission without code does not compile.
        let s = submission("u2", None, None);
        let results = vec![subtask(
            "00-samples",
            0.0,
            vec![TestResult::skipped("0-01")],
        )];
        let row = result_row(&s, &problem(), &results);
        assert_eq!(row["target_subtask"], Value::Null);
        assert_eq!(row["target_subtask_score"], Value::Null);
        assert_eq!(row["target_subtask_status"], Value::Null);
        assert_eq!(row["code_compiles"], json!(false));
        assert!(!row.contains_key("subtask"));
    }

    #[test]
    fn compile_errors_clear_code_compiles() {
        let s = submission("u3", Some("zz"), Some("int x"));
        let ce = test(
            "0-01",
            0.0,
            Verdict::CompilationError,
            "Compilation error exit code 1",
        );
        let row = result_row(&s, &problem(), &[subtask("00-samples", 0.0, vec![ce])]);
        assert_eq!(row["code_compiles"], json!(false));
        assert_eq!(
            row["target_subtask_score"],
            Value::Null,
            "unknown target subtask"
        );
    }

    fn row_for(id: &str) -> Map<String, Value> {
        json!({"uuid": id, "problem_id": "nile", "year": 2024, "all_subtasks_points": 1.0})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn resume_skips_done_ids_and_drops_a_truncated_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut results = ResultsFile::open(dir.path(), "model", "uuid", false).unwrap();
        assert!(results.append(&row_for("a")).unwrap());
        assert!(results.append(&row_for("b")).unwrap());
        assert!(!results.append(&row_for("a")).unwrap(), "never doubled");
        drop(results);
        let path = dir.path().join("model.jsonl");
        // A kill -9 in the middle of writing row c.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"uuid\": \"c\", \"problem_id\": \"ni");
        std::fs::write(&path, text).unwrap();

        let mut results = ResultsFile::open(dir.path(), "model", "uuid", false).unwrap();
        let key = |id: &str| SubmissionKey {
            year: 2024,
            problem_id: "nile".into(),
            id: id.into(),
        };
        assert!(results.is_done(&key("a")) && results.is_done(&key("b")));
        assert!(!results.is_done(&key("c")));
        assert_eq!(results.done().len(), 2);
        assert!(results.append(&row_for("c")).unwrap());
        let rows = read_results(&path).unwrap();
        let ids: Vec<_> = rows.iter().map(|r| r.str("uuid").unwrap()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3);
    }

    #[test]
    fn a_complete_row_missing_only_its_newline_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.jsonl");
        let a = "{\"uuid\": \"a\", \"problem_id\": \"p\"}";
        std::fs::write(&path, a).unwrap();
        let mut results = ResultsFile::open(dir.path(), "model", "uuid", false).unwrap();
        assert_eq!(results.done().len(), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{a}\n"));
        results.append(&row_for("b")).unwrap();
        assert_eq!(read_results(&path).unwrap().len(), 2);
    }

    #[test]
    fn corrupt_middle_line_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.jsonl");
        std::fs::write(&path, "{\"uuid\": \"a\", \"problem_id\": \"p\"}\n{oops\n{\"uuid\": \"b\", \"problem_id\": \"p\"}\n").unwrap();
        let err = ResultsFile::open(dir.path(), "model", "uuid", false).unwrap_err();
        assert!(format!("{err:#}").contains("model.jsonl line 2"), "{err:#}");
        // A results row without the id column names the field and the row.
        std::fs::write(&path, "{\"label\": \"a\", \"problem_id\": \"p\"}\n").unwrap();
        let err = ResultsFile::open(dir.path(), "model", "uuid", false).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("row 1") && msg.contains("`uuid`"), "{msg}");
        assert!(ResultsFile::open(dir.path(), "model", "label", false).is_ok());
    }

    #[test]
    fn override_moves_the_results_to_bak() {
        let dir = tempfile::tempdir().unwrap();
        let mut results = ResultsFile::open(dir.path(), "model", "uuid", false).unwrap();
        results.append(&row_for("a")).unwrap();
        drop(results);
        let results = ResultsFile::open(dir.path(), "model", "uuid", true).unwrap();
        assert!(results.done().is_empty());
        assert_eq!(std::fs::read_to_string(results.path()).unwrap(), "");
        let bak = std::fs::read_to_string(dir.path().join("model.jsonl.bak")).unwrap();
        assert!(bak.contains("\"uuid\":\"a\""), "{bak}");
    }
}
