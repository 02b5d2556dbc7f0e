//! The open-r1 layouts (SPEC §1.1, §1.2): problems as one row per subtask ("open-r1/ioi"), and
//! tests as one row per test ("open-r1/ioi-test-cases"), in parquet or JSON Lines.
//!
//! Test files are large (a year is up to 1.8 GB, one input up to 22 MB), so [`load_tests`]
//! streams them: a row filter on the small key columns picks the rows of the problem being
//! judged, only those rows' inputs and outputs are decoded, a few at a time, and each is written
//! straight to a temporary folder owned by the returned [`TestSet`].

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Int64Array, LargeBinaryArray,
    LargeStringArray, StringArray, StringViewArray,
};
use arrow::datatypes::DataType;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::{ArrowPredicateFn, ParquetRecordBatchReaderBuilder, RowFilter};
use parquet::arrow::ProjectionMask;
use serde_json::Value;

use super::cms::{read_test_folder, DEFAULT_SCORE_PRECISION};
use super::config::{self, TaskKind, GRADER_CONFIG_PATH};
use super::{id_from_headers, GraderFile, Problem, Subtask, TaskType, TestCase, TestSet};
use crate::dataset::{files_under, kind, read_rows, Format, Row};

/// The problem columns ioi-run reads (the statement columns are skipped).
const PROBLEM_COLUMNS: &[&str] = &[
    "year",
    "id",
    "name",
    "day",
    "subtask",
    "score",
    "time_limit",
    "memory_limit",
    "score_precision",
    "task_type",
    "test_names",
    "grader_files",
];

/// Rows decoded at once from a tests parquet file: a few tests of up to ~30 MB each.
const TEST_BATCH_ROWS: usize = 4;

/// Loads problems from open-r1/ioi files (or folders of them), grouping the subtask rows of
/// each (year, id). Problems come back sorted by (year, id), subtasks sorted by name.
pub fn load_problems(paths: &[PathBuf]) -> Result<Vec<Problem>> {
    let mut groups: BTreeMap<(i64, String), Vec<SubtaskRow>> = BTreeMap::new();
    for path in paths {
        for file in files_under(path)? {
            for row in read_rows(&file, Some(PROBLEM_COLUMNS))? {
                let row = SubtaskRow::parse(&row?)?;
                groups
                    .entry((row.year, row.id.clone()))
                    .or_default()
                    .push(row);
            }
        }
    }
    if groups.is_empty() {
        bail!("no problem rows found in {}", list(paths));
    }
    groups.into_values().map(build_problem).collect()
}

/// One open-r1/ioi row: one subtask of a problem, plus the problem's fields.
struct SubtaskRow {
    location: String,
    year: i64,
    id: String,
    name: String,
    day: String,
    subtask: Subtask,
    time_limit: Option<f64>,
    memory_limit: Option<u64>,
    task_kind: Option<TaskKind>,
    grader_files: Vec<GraderFile>,
}

impl SubtaskRow {
    fn parse(row: &Row) -> Result<SubtaskRow> {
        let location = row.location();
        let at = |field: &str| format!("{location}: field `{field}`");
        let score_precision = match row.get("score_precision") {
            None => DEFAULT_SCORE_PRECISION,
            Some(_) => u32::try_from(row.int("score_precision")?)
                .with_context(|| format!("{} must not be negative", at("score_precision")))?,
        };
        let test_names = match row.get("test_names") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| match t {
                    Value::String(s) => Ok(s.clone()),
                    other => bail!(
                        "{} must hold strings, found {}",
                        at("test_names"),
                        kind(other)
                    ),
                })
                .collect::<Result<Vec<_>>>()?,
            Some(other) => bail!("{} must be a list, found {}", at("test_names"), kind(other)),
            None => bail!("{} is missing", at("test_names")),
        };
        let id = row.str("id")?.to_lowercase();
        Ok(SubtaskRow {
            year: row
                .get("year")
                .map(|_| row.int("year"))
                .transpose()?
                .unwrap_or(0),
            name: row
                .get("name")
                .map(|_| row.str("name"))
                .transpose()?
                .unwrap_or(&id)
                .to_string(),
            day: match row.get("day") {
                None => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            },
            subtask: Subtask {
                name: row.str("subtask")?.to_string(),
                points: row.float("score")?,
                score_precision,
                test_names,
            },
            time_limit: row
                .get("time_limit")
                .map(|v| config::seconds(v, &at("time_limit")))
                .transpose()?,
            memory_limit: row
                .get("memory_limit")
                .map(|v| config::bytes(v, &at("memory_limit")))
                .transpose()?,
            task_kind: row
                .get("task_type")
                .map(|_| TaskKind::parse(row.str("task_type")?, &at("task_type")))
                .transpose()?,
            grader_files: grader_files(row.get("grader_files"), &at("grader_files"))?,
            id,
            location,
        })
    }
}

/// `grader_files`: a list of `[path, content]` pairs (or of `{path, content}` objects).
fn grader_files(value: Option<&Value>, at: &str) -> Result<Vec<GraderFile>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        bail!(
            "{at} must be a list of [path, content] pairs, found {}",
            kind(value)
        );
    };
    items
        .iter()
        .map(|item| {
            let pair = match item {
                Value::Array(pair) if pair.len() == 2 => (&pair[0], &pair[1]),
                Value::Object(o) => match (o.get("path"), o.get("content")) {
                    (Some(p), Some(c)) => (p, c),
                    _ => bail!("{at}: an entry lacks `path` or `content`"),
                },
                other => bail!("{at} must hold [path, content] pairs, found {other}"),
            };
            match pair {
                (Value::String(path), Value::String(content)) => Ok(GraderFile {
                    path: path.clone(),
                    content: content.clone().into_bytes(),
                }),
                _ => bail!("{at}: paths and contents must be strings"),
            }
        })
        .collect()
}

fn build_problem(mut rows: Vec<SubtaskRow>) -> Result<Problem> {
    rows.sort_by(|a, b| a.subtask.name.cmp(&b.subtask.name));
    let first = &rows[0];
    for pair in rows.windows(2) {
        if pair[0].subtask.name == pair[1].subtask.name {
            bail!(
                "{}: subtask {} of problem {} appears again (first in {})",
                pair[1].location,
                pair[1].subtask.name,
                first.id,
                pair[0].location
            );
        }
    }
    for row in &rows[1..] {
        check_same(first, row)?;
    }
    let origin = format!("{}: grader file {GRADER_CONFIG_PATH}", first.location);
    let cfg = match first
        .grader_files
        .iter()
        .find(|f| f.path == GRADER_CONFIG_PATH)
    {
        Some(f) => Some(config::parse_config(
            &String::from_utf8_lossy(&f.content),
            &origin,
        )?),
        None => None,
    };
    let cfg = cfg.as_ref();
    let task = match (cfg, first.task_kind) {
        (Some(cfg), kind) => cfg.task(kind),
        (None, Some(TaskKind::Batch)) => Some(TaskType::Batch),
        (None, Some(TaskKind::Communication)) => {
            config::parse_config("{}", &origin)?.task(Some(TaskKind::Communication))
        }
        (None, None) => None,
    }
    .with_context(|| {
        format!(
            "{}: field `task_type` is missing (and not in {GRADER_CONFIG_PATH})",
            first.location
        )
    })?;
    let time_limit = first
        .time_limit
        .or(cfg.and_then(|c| c.time_limit))
        .with_context(|| {
            format!(
                "{}: field `time_limit` is missing (and not in {GRADER_CONFIG_PATH})",
                first.location
            )
        })?;
    let memory_limit = first
        .memory_limit
        .or(cfg.and_then(|c| c.memory_limit))
        .with_context(|| {
            format!(
                "{}: field `memory_limit` is missing (and not in {GRADER_CONFIG_PATH})",
                first.location
            )
        })?;
    if let Some(header_id) = id_from_headers(&first.grader_files) {
        if header_id != first.id {
            bail!(
                "{}: problem id {:?} disagrees with its header graders/{header_id}.h, which says \
                 {header_id:?}",
                first.location,
                first.id
            );
        }
    }
    if matches!(task, TaskType::Communication(_))
        && !first
            .grader_files
            .iter()
            .any(|f| f.path == "graders/manager.cpp")
    {
        bail!(
            "{}: problem {} is a Communication task but its grader_files lack graders/manager.cpp",
            first.location,
            first.id
        );
    }
    let mut rows = rows.into_iter();
    let first = rows.next().context("unreachable: empty problem group")?;
    let mut subtasks = vec![first.subtask];
    subtasks.extend(rows.map(|r| r.subtask));
    let mut problem = Problem {
        year: first.year,
        id: first.id,
        name: first.name,
        day: first.day,
        task,
        time_limit,
        memory_limit,
        subtasks,
        grader_files: first.grader_files,
    };
    config::ensure_grader_config(&mut problem);
    Ok(problem)
}

/// Rows of one problem must agree on everything but the subtask.
fn check_same(first: &SubtaskRow, row: &SubtaskRow) -> Result<()> {
    let differs = if first.time_limit != row.time_limit {
        Some("time_limit")
    } else if first.memory_limit != row.memory_limit {
        Some("memory_limit")
    } else if first.task_kind != row.task_kind {
        Some("task_type")
    } else if first.grader_files != row.grader_files {
        Some("grader_files")
    } else if first.name != row.name {
        Some("name")
    } else if first.day != row.day {
        Some("day")
    } else {
        None
    };
    match differs {
        Some(field) => bail!(
            "{}: field `{field}` of problem {} (year {}) differs from {}",
            row.location,
            row.id,
            row.year,
            first.location
        ),
        None => Ok(()),
    }
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Loads the tests of `problem` from test sources: open-r1/ioi-test-cases parquet or jsonl
/// files (or folders of them), or folders of `<name>.in`/`<name>.out` files (directly, in
/// `tests/`, or in a `<problem id>/` subfolder). Only the tests that the problem's subtasks
/// name are kept; every one of them must be found.
pub fn load_tests(sources: &[PathBuf], problem: &Problem) -> Result<TestSet> {
    let mut sink = TestSink::new(problem);
    for source in sources {
        if sink.complete() {
            break;
        }
        if source.is_dir() {
            if let Some(folder) = test_folder(source, &problem.id)? {
                for (name, case) in read_test_folder(&folder)? {
                    sink.add_existing(name, case);
                }
                continue;
            }
            let files = files_under(source)?;
            if files.is_empty() {
                bail!(
                    "{}: no tests for {} (neither .in/.out files nor parquet/jsonl files)",
                    source.display(),
                    problem.id
                );
            }
            for file in files {
                sink.read_file(&file)?;
            }
        } else {
            sink.read_file(source)?;
        }
    }
    for subtask in &problem.subtasks {
        for test in &subtask.test_names {
            if !sink.cases.contains_key(test) {
                bail!(
                    "subtask {} of problem {} names test {test:?}, which is in none of: {}",
                    subtask.name,
                    problem.id,
                    list(sources)
                );
            }
        }
    }
    Ok(TestSet {
        cases: sink.cases,
        _storage: sink.storage,
    })
}

/// The folder holding `.in` files among `<id>/tests`, `<id>`, `tests` and `dir` itself (the
/// `<id>` folder may be spelled in any case).
fn test_folder(dir: &Path, id: &str) -> Result<Option<PathBuf>> {
    let mut candidates = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list {}", dir.display()))?
            .path();
        if path.is_dir()
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().to_lowercase() == id)
        {
            candidates.push(path.join("tests"));
            candidates.push(path);
        }
    }
    candidates.push(dir.join("tests"));
    candidates.push(dir.to_path_buf());
    for candidate in candidates {
        if has_inputs(&candidate) {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

fn has_inputs(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "in") && e.path().is_file())
        })
        .unwrap_or(false)
}

/// Collects the wanted tests of one problem, writing streamed ones to a temporary folder.
struct TestSink<'a> {
    problem: &'a Problem,
    wanted: HashSet<String>,
    cases: BTreeMap<String, TestCase>,
    storage: Option<tempfile::TempDir>,
}

impl<'a> TestSink<'a> {
    fn new(problem: &'a Problem) -> Self {
        TestSink {
            problem,
            wanted: problem
                .test_names()
                .into_iter()
                .map(str::to_string)
                .collect(),
            cases: BTreeMap::new(),
            storage: None,
        }
    }

    fn complete(&self) -> bool {
        self.cases.len() == self.wanted.len()
    }

    fn wants(&self, name: &str) -> bool {
        self.wanted.contains(name) && !self.cases.contains_key(name)
    }

    fn add_existing(&mut self, name: String, case: TestCase) {
        if self.wants(&name) {
            self.cases.insert(name, case);
        }
    }

    fn matches(&self, problem_id: &str, year: Option<i64>) -> bool {
        problem_id.eq_ignore_ascii_case(&self.problem.id)
            && (self.problem.year == 0 || year.is_none_or(|y| y == self.problem.year))
    }

    /// Writes one test's input and output to the temporary folder.
    fn write(&mut self, name: &str, input: &[u8], output: &[u8]) -> Result<()> {
        if self.storage.is_none() {
            let dir = tempfile::Builder::new()
                .prefix(&format!("ioi-tests-{}-", self.problem.id))
                .tempdir()
                .context("cannot create a temporary folder for tests")?;
            self.storage = Some(dir);
        }
        let dir = self
            .storage
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default();
        // Test names become file names only when they are plain names.
        let safe = !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0']);
        let stem = if safe {
            name.to_string()
        } else {
            format!("test-{}", self.cases.len())
        };
        let case = TestCase {
            name: name.to_string(),
            input: dir.join(format!("{stem}.in")),
            output: dir.join(format!("{stem}.out")),
        };
        std::fs::write(&case.input, input)
            .with_context(|| format!("cannot write {}", case.input.display()))?;
        std::fs::write(&case.output, output)
            .with_context(|| format!("cannot write {}", case.output.display()))?;
        self.cases.insert(name.to_string(), case);
        Ok(())
    }

    fn read_file(&mut self, path: &Path) -> Result<()> {
        match Format::of(path) {
            Some(Format::Parquet) => self.read_parquet(path),
            Some(Format::JsonLines) => self.read_jsonl(path),
            None => bail!(
                "{}: unknown test source (expected a folder, .parquet or .jsonl)",
                path.display()
            ),
        }
    }

    fn read_jsonl(&mut self, path: &Path) -> Result<()> {
        for row in read_rows(path, None)? {
            let row = row?;
            let year = row.get("year").map(|_| row.int("year")).transpose()?;
            if !self.matches(row.str("problem_id")?, year) {
                continue;
            }
            let name = row.str("test_name")?;
            if self.wants(name) {
                let name = name.to_string();
                let input = row.str("test_input")?.as_bytes();
                let output = row.str("test_output")?.as_bytes();
                self.write(&name, input, output)?;
                if self.complete() {
                    break;
                }
            }
        }
        Ok(())
    }

    fn read_parquet(&mut self, path: &Path) -> Result<()> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .with_context(|| format!("{}: not a readable parquet file", path.display()))?;
        let schema = builder.parquet_schema();
        let leaves = |names: &[&str]| -> Vec<usize> {
            (0..schema.num_columns())
                .filter(|&i| names.contains(&schema.column(i).path().parts()[0].as_str()))
                .collect()
        };
        for column in ["problem_id", "test_name", "test_input", "test_output"] {
            if leaves(&[column]).is_empty() {
                bail!("{}: column `{column}` is missing", path.display());
            }
        }
        let key_mask = ProjectionMask::leaves(schema, leaves(&["problem_id", "year", "test_name"]));
        let data_mask =
            ProjectionMask::leaves(schema, leaves(&["test_name", "test_input", "test_output"]));
        let (id, year) = (self.problem.id.clone(), self.problem.year);
        let wanted: HashSet<String> = self
            .wanted
            .iter()
            .filter(|n| !self.cases.contains_key(*n))
            .cloned()
            .collect();
        let predicate = ArrowPredicateFn::new(key_mask, move |batch: RecordBatch| {
            select_rows(&batch, &id, year, &wanted)
        });
        let reader = builder
            .with_row_filter(RowFilter::new(vec![Box::new(predicate)]))
            .with_projection(data_mask)
            .with_batch_size(TEST_BATCH_ROWS)
            .build()
            .with_context(|| format!("{}: cannot decode parquet", path.display()))?;
        for batch in reader {
            let batch =
                batch.with_context(|| format!("{}: corrupt parquet data", path.display()))?;
            let names = as_utf8(column(&batch, "test_name")?)?;
            let inputs = column(&batch, "test_input")?;
            let outputs = column(&batch, "test_output")?;
            for i in 0..batch.num_rows() {
                let name = names.value(i);
                if !self.wants(name) {
                    continue;
                }
                let (Some(input), Some(output)) = (bytes_at(inputs, i), bytes_at(outputs, i))
                else {
                    bail!(
                        "{}: test {name:?} of problem {} has no test_input or test_output \
                         (null or not a string column)",
                        path.display(),
                        self.problem.id
                    );
                };
                self.write(name, input, output)?;
            }
            if self.complete() {
                break;
            }
        }
        Ok(())
    }
}

/// The row-filter predicate: rows of this problem (and year) holding a wanted test.
fn select_rows(
    batch: &RecordBatch,
    id: &str,
    year: i64,
    wanted: &HashSet<String>,
) -> Result<BooleanArray, ArrowError> {
    let ids = as_utf8_arrow(key_column(batch, "problem_id")?)?;
    let names = as_utf8_arrow(key_column(batch, "test_name")?)?;
    let years = match batch.column_by_name("year") {
        Some(y) => Some(arrow::compute::cast(y, &DataType::Int64)?),
        None => None,
    };
    let years = years
        .as_ref()
        .and_then(|y| y.as_any().downcast_ref::<Int64Array>());
    Ok((0..batch.num_rows())
        .map(|i| {
            let year_ok = year == 0 || years.is_none_or(|ys| ys.is_null(i) || ys.value(i) == year);
            Some(
                !ids.is_null(i)
                    && !names.is_null(i)
                    && ids.value(i).eq_ignore_ascii_case(id)
                    && year_ok
                    && wanted.contains(names.value(i)),
            )
        })
        .collect())
}

fn key_column<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b ArrayRef, ArrowError> {
    batch
        .column_by_name(name)
        .ok_or_else(|| ArrowError::SchemaError(format!("column `{name}` is missing")))
}

fn as_utf8_arrow(array: &ArrayRef) -> Result<StringArray, ArrowError> {
    let cast = arrow::compute::cast(array, &DataType::Utf8)?;
    cast.as_any()
        .downcast_ref::<StringArray>()
        .cloned()
        .ok_or_else(|| ArrowError::CastError("expected a string column".into()))
}

fn column<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b ArrayRef> {
    batch
        .column_by_name(name)
        .with_context(|| format!("column `{name}` is missing"))
}

fn as_utf8(array: &ArrayRef) -> Result<StringArray> {
    as_utf8_arrow(array).context("column `test_name` must hold strings")
}

/// The bytes of a string or binary value, without copying; `None` for nulls and other types.
fn bytes_at(array: &ArrayRef, i: usize) -> Option<&[u8]> {
    if array.is_null(i) {
        return None;
    }
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<StringArray>() {
        Some(a.value(i).as_bytes())
    } else if let Some(a) = any.downcast_ref::<LargeStringArray>() {
        Some(a.value(i).as_bytes())
    } else if let Some(a) = any.downcast_ref::<StringViewArray>() {
        Some(a.value(i).as_bytes())
    } else if let Some(a) = any.downcast_ref::<BinaryArray>() {
        Some(a.value(i))
    } else if let Some(a) = any.downcast_ref::<LargeBinaryArray>() {
        Some(a.value(i))
    } else if let Some(a) = any.downcast_ref::<BinaryViewArray>() {
        Some(a.value(i))
    } else {
        None
    }
}

#[cfg(test)]
#[path = "openr1_tests.rs"]
mod tests;
