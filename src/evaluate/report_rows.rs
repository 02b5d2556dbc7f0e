//! What reports read from a results row: a judged submission with its subtasks and their
//! tests, read strictly (errors name the file, row and field), and numbers written as Python
//! writes them, so that reports match the reference pipeline's.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::report_source::RowSpan;
use super::roundrobin::Candidate;
use super::submissions::{reasoning_length, SubmissionKey};
use crate::dataset::Row;
use crate::score::Verdict;

/// One subtask of a judged submission, as reports show it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtaskCell {
    pub name: String,
    /// Unweighted 0–1 score.
    pub score: f64,
    pub weighted_score: f64,
    pub points: f64,
    pub status: Verdict,
    /// `weighted/points (STATUS)`, numbers written as Python writes them.
    pub text: String,
    pub tests: Vec<TestMeasure>,
    /// The most CPU seconds and bytes of memory its tests used.
    pub max_time: Option<f64>,
    pub max_memory: Option<u64>,
}

/// One test of a subtask as the HTML report plots it: its verdict and what it used.
#[derive(Debug, Clone, PartialEq)]
pub struct TestMeasure {
    pub name: String,
    pub status: Verdict,
    /// CPU seconds (absent for a test that did not run, or in results of the Python pipeline).
    pub time: Option<f64>,
    /// Peak memory in bytes.
    pub memory: Option<u64>,
    /// The unweighted 0–1 score.
    pub score: f64,
    /// The checker's or judge's message (for a compile error, the compiler's output).
    pub feedback: Option<String>,
}

/// What reports need from one results row.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedSubmission {
    pub id: String,
    /// A readable name for the submission (a `label` or `description` field), shown next to
    /// the id in reports.
    pub label: Option<String>,
    pub year: i64,
    /// Lowercase problem id.
    pub problem_id: String,
    /// Contest day (`practice` problems are left out of yearly totals), when known.
    pub day: Option<String>,
    pub target_subtask: Option<String>,
    pub has_code: bool,
    pub code_compiles: bool,
    pub first_subtask_status: Verdict,
    /// `all_subtasks_points`.
    pub total: f64,
    pub subtasks: Vec<SubtaskCell>,
    pub reasoning_length: i64,
    /// The problem's CPU time limit in seconds (`problem_time_limit`), when the row says.
    pub time_limit: Option<f64>,
    /// The problem's memory limit in bytes (`problem_memory_limit`), when the row says.
    pub memory_limit: Option<u64>,
    /// A hash of every test's name, status and score, in order: two runs of the same
    /// submission whose verdicts differ have different ones.
    pub verdicts: blake3::Hash,
    /// The most CPU seconds and bytes of memory any of its tests used.
    pub max_time: Option<f64>,
    pub max_memory: Option<u64>,
    /// Where the row lies in its results file, to read its code and tests again.
    pub span: RowSpan,
}

impl JudgedSubmission {
    /// Reads a results row, whose id is in `id_column` (for results of the Python pipeline),
    /// `submission_id` (written by ioi-run) or `uuid`; errors name the file, row and field.
    pub fn from_row(row: &Row, id_column: &str) -> Result<JudgedSubmission> {
        let id_column = [id_column, "submission_id", "uuid"]
            .into_iter()
            .find(|c| row.get(c).is_some())
            .with_context(|| {
                format!(
                    "{}: a results row needs `{id_column}`, `submission_id` or `uuid` (see --id-column)",
                    row.location()
                )
            })?;
        let key = SubmissionKey::of_row(row, id_column)?;
        let text = |field: &str| -> Result<Option<String>> {
            match row.get(field) {
                None => Ok(None),
                Some(_) => Ok(Some(row.str(field)?.to_string())),
            }
        };
        // A task folder that does not say its day has an empty one: shown as unknown.
        let day = match text("problem_day")? {
            Some(day) => Some(day),
            None => text("day")?,
        }
        .filter(|day| !day.trim().is_empty());
        let code_compiles = match row.get("code_compiles") {
            Some(Value::Bool(b)) => *b,
            _ => bail!(
                "{}: field `code_compiles` must be true or false",
                row.location()
            ),
        };
        let subtasks = subtask_cells(row)?;
        let max_time = subtasks.iter().filter_map(|s| s.max_time).reduce(f64::max);
        let max_memory = subtasks.iter().filter_map(|s| s.max_memory).max();
        let mut verdicts = blake3::Hasher::new();
        for cell in &subtasks {
            verdicts
                .update(cell.name.as_bytes())
                .update(&[0, cell.status as u8]);
            verdicts.update(&cell.score.to_le_bytes());
            for test in &cell.tests {
                verdicts
                    .update(test.name.as_bytes())
                    .update(&[0, test.status as u8]);
                verdicts.update(&test.score.to_le_bytes());
            }
        }
        let first_subtask_status = subtasks.first().map_or(Verdict::Skipped, |c| c.status);
        let label = match text("label")? {
            Some(label) => Some(label),
            None => text("description")?,
        };
        // A problem without a year (a task folder that does not say) is reported without one,
        // not under the year a submission defaulted to.
        let year = match row.get("problem_year").and_then(Value::as_i64) {
            Some(0) => 0,
            _ => key.year,
        };
        Ok(JudgedSubmission {
            id: key.id,
            label,
            year,
            problem_id: key.problem_id,
            day,
            target_subtask: text("target_subtask")?,
            has_code: matches!(row.get("code"), Some(Value::String(c)) if !c.is_empty()),
            code_compiles,
            first_subtask_status,
            total: points_field(row, "all_subtasks_points")?,
            subtasks,
            reasoning_length: reasoning_length(&row.fields),
            time_limit: optional_number(row, "problem_time_limit")?,
            memory_limit: optional_number(row, "problem_memory_limit")?.map(|m| m as u64),
            verdicts: verdicts.finalize(),
            max_time,
            max_memory,
            span: RowSpan::default(),
        })
    }

    /// Forgets the tests of every subtask: what a report keeps of a submission once its tests
    /// are counted (they are read again from the row when shown).
    pub fn forget_tests(&mut self) {
        for cell in &mut self.subtasks {
            cell.tests = Vec::new();
        }
    }

    pub(super) fn candidate(&self) -> Candidate {
        Candidate {
            target_subtask: self.target_subtask.clone(),
            has_code: self.has_code,
            first_subtask_status: self.first_subtask_status,
            subtask_scores: self.subtasks.iter().map(|s| s.score).collect(),
            reasoning_length: self.reasoning_length,
        }
    }
}

/// The subtasks of a results row with their tests, in order; errors name the file, row and
/// field.
pub fn subtask_cells(row: &Row) -> Result<Vec<SubtaskCell>> {
    match row.get("all_subtasks_results") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| subtask_cell(row, i, item))
            .collect(),
        _ => bail!(
            "{}: field `all_subtasks_results` must be a list",
            row.location()
        ),
    }
}

/// The most points a results row may give anything: far above any contest's (an IOI problem
/// has 100), and low enough that totals, means and plots of them stay finite numbers.
pub const MAX_POINTS: f64 = 1e9;

/// A field of points (or a score): a number from 0 to [`MAX_POINTS`]. A row of a results file
/// is data anyone may have written: `1e308` points would make sums infinite and the plots'
/// axes endless.
fn points_field(row: &Row, field: &str) -> Result<f64> {
    let x = row.float(field)?;
    if !(x.is_finite() && (0.0..=MAX_POINTS).contains(&x)) {
        bail!(
            "{}: field `{field}` must be a number from 0 to {MAX_POINTS:e}, not {x:e}",
            row.location()
        );
    }
    Ok(x)
}

/// A number field that may be absent (or null); anything else but a number is an error.
fn optional_number(row: &Row, field: &str) -> Result<Option<f64>> {
    match row.get(field) {
        None => Ok(None),
        Some(Value::Number(n)) if n.as_f64().is_some_and(|x| x >= 0.0) => Ok(n.as_f64()),
        Some(other) => bail!(
            "{}: field `{field}` must be a non-negative number, not {other}",
            row.location()
        ),
    }
}

/// A nested object of a row, located at the row, for errors naming the field.
fn nested(row: &Row, item: &Value, field: &str) -> Result<Row> {
    match item {
        Value::Object(fields) => Ok(Row {
            file: Arc::clone(&row.file),
            index: row.index,
            fields: fields.clone(),
        }),
        _ => bail!("{}: `{field}` must be an object", row.location()),
    }
}

fn subtask_cell(row: &Row, i: usize, item: &Value) -> Result<SubtaskCell> {
    let field = format!("all_subtasks_results[{i}]");
    let sub = nested(row, item, &field)?;
    let cell = || -> Result<SubtaskCell> {
        let word = sub.str("status")?;
        let status =
            Verdict::parse(word).with_context(|| format!("`status` is not a status: {word:?}"))?;
        let (Some(weighted), Some(points)) = (sub.get("weighted_score"), sub.get("points")) else {
            bail!("`weighted_score` and `points` are required");
        };
        let tests = match sub.get("test_results") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(j, item)| test_measure(&sub, j, item))
                .collect::<Result<Vec<_>>>()?,
            Some(_) => bail!("`test_results` must be a list"),
        };
        Ok(SubtaskCell {
            max_time: tests.iter().filter_map(|t| t.time).reduce(f64::max),
            max_memory: tests.iter().filter_map(|t| t.memory).max(),
            tests,
            name: sub.str("subtask")?.to_string(),
            score: points_field(&sub, "score")?,
            weighted_score: points_field(&sub, "weighted_score")?,
            points: points_field(&sub, "points")?,
            status,
            text: format!(
                "{}/{} ({word})",
                python_number(weighted),
                python_number(points)
            ),
        })
    };
    cell().with_context(|| format!("{}: in `{field}`", row.location()))
}

fn test_measure(sub: &Row, j: usize, item: &Value) -> Result<TestMeasure> {
    let field = format!("test_results[{j}]");
    let test = nested(sub, item, &field)?;
    let measure = || -> Result<TestMeasure> {
        let word = test.str("status")?;
        Ok(TestMeasure {
            name: test.str("test_name")?.to_string(),
            status: Verdict::parse(word)
                .with_context(|| format!("`status` is not a status: {word:?}"))?,
            time: optional_number(&test, "time")?,
            memory: optional_number(&test, "memory")?.map(|m| m as u64),
            score: match test.get("score") {
                None => 0.0,
                Some(_) => test.float("score")?,
            },
            feedback: match test.get("feedback") {
                None => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(other) => Some(other.to_string()),
            },
        })
    };
    measure().with_context(|| format!("in `{field}`"))
}

/// A number as Python's `str` writes it: integers plainly, floats with their shortest repr.
fn python_number(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => python_float(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, positional for exponents in [-4, 16),
/// scientific (`1e-05`, `1e+16`) otherwise, and always a `.0` on integral values.
pub fn python_float(x: f64) -> String {
    if !x.is_finite() {
        return match x {
            x if x.is_nan() => "nan".into(),
            x if x > 0.0 => "inf".into(),
            _ => "-inf".into(),
        };
    }
    let scientific = format!("{x:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if x == 0.0 || (-4..16).contains(&exponent) {
        let plain = format!("{x}");
        match plain.contains('.') {
            true => plain,
            false => plain + ".0",
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_floats_are_written_like_python() {
        assert_eq!(python_float(7.0), "7.0");
        assert_eq!(python_float(2.33), "2.33");
        assert_eq!(python_float(0.0), "0.0");
        assert_eq!(python_float(1e-5), "1e-05");
        assert_eq!(python_float(1.5e16), "1.5e+16");
        assert_eq!(python_float(0.0001), "0.0001");
        assert_eq!(python_number(&json!(7)), "7");
        assert_eq!(python_number(&json!(7.5)), "7.5");
    }
}
