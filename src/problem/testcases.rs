//! Tests of a problem (docs/data.md#tests): open-r1/ioi-test-cases rows in parquet or JSON Lines,
//! or folders of `<name>.in`/`<name>.out` files.
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

use super::cms::read_test_folder;
use super::openr1::list;
use super::{Problem, TestCase, TestSet};
use crate::dataset::{files_under, read_rows, Format, RowPolicy};
use crate::name::SafeName;

/// Rows decoded at once from a tests parquet file. Each row holds up to ~30 MB; measured peak
/// memory for loading 32 MB tests is ~110 MB with 1 row per batch and ~240 MB with 4.
const TEST_BATCH_ROWS: usize = 2;

/// Loads the tests of `problem` from test sources: open-r1/ioi-test-cases parquet or jsonl
/// files (or folders of them), or folders of `<name>.in`/`<name>.out` files (directly, in
/// `tests/`, or in a `<problem id>/` subfolder). Only the tests that the problem's subtasks
/// name are kept; every one of them must be found. A jsonl row that cannot be read (malformed,
/// a field missing or of the wrong type) goes to `rows`: skipped (a test it held is then
/// missing, which names the test), or refusing the tests.
pub fn load_tests(sources: &[PathBuf], problem: &Problem, rows: &RowPolicy) -> Result<TestSet> {
    let mut sink = TestSink::new(problem, rows);
    for source in sources {
        if sink.complete() {
            break;
        }
        if source.is_dir() {
            if let Some(folder) = test_folder(source, &problem.id)? {
                for (name, case) in read_test_folder(&folder, &folder)? {
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
                if sink.complete() {
                    break;
                }
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
    rows: &'a RowPolicy,
    wanted: HashSet<String>,
    cases: BTreeMap<String, TestCase>,
    storage: Option<tempfile::TempDir>,
}

impl<'a> TestSink<'a> {
    fn new(problem: &'a Problem, rows: &'a RowPolicy) -> Self {
        TestSink {
            problem,
            rows,
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
            let dir = crate::scratch::tempdir("tests")?;
            self.storage = Some(dir);
        }
        let dir = self
            .storage
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default();
        // A test name becomes a file name only when it is one (docs/data.md#names); any other
        // is named by its hash, which no plain name starting with `~` will equal.
        let stem = match SafeName::parse(name) {
            Ok(safe) => safe.to_string(),
            Err(_) => format!("~{}", &blake3::hash(name.as_bytes()).to_hex()[..32]),
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
            let read = row.and_then(|row| {
                let year = row.get("year").map(|_| row.int("year")).transpose()?;
                if !self.matches(row.str("problem_id")?, year) {
                    return Ok(None);
                }
                let name = row.str("test_name")?;
                if !self.wants(name) {
                    return Ok(None);
                }
                // Both fields are checked before anything is written.
                row.str("test_input")?;
                row.str("test_output")?;
                Ok(Some(row))
            });
            match read {
                Ok(Some(row)) => {
                    let name = row.str("test_name")?.to_string();
                    let input = row.str("test_input")?.as_bytes();
                    let output = row.str("test_output")?.as_bytes();
                    self.write(&name, input, output)?;
                    if self.complete() {
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => self.rows.skip_or_refuse(e)?,
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
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use serde_json::{json, Value};

    use super::*;
    use crate::problem::{Subtask, TaskType};

    fn write_jsonl(path: &Path, rows: &[Value]) {
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    fn problem_with_tests(id: &str, year: i64, tests: &[&str]) -> Problem {
        Problem {
            year,
            id: id.into(),
            name: id.into(),
            day: "1".into(),
            task: TaskType::Batch,
            time_limit: 1.0,
            memory_limit: 1 << 30,
            subtasks: vec![Subtask {
                name: "01-all".into(),
                points: 100.0,
                score_precision: 2,
                test_names: tests.iter().map(|s| s.to_string()).collect(),
            }],
            grader_files: vec![],
        }
    }

    fn test_row(year: i64, id: &str, name: &str, input: &str) -> Value {
        json!({"year": year, "day": "1", "problem_name": id, "problem_id": id, "test_name": name,
           "test_input": input, "test_output": format!("{input}-out")})
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn tests_from_jsonl_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        write_jsonl(
            &path,
            &[
                test_row(2024, "other", "a", "wrong"),
                test_row(2023, "nile", "a", "old year"),
                test_row(2024, "Nile", "a", "A"),
                test_row(2024, "nile", "unused", "U"),
            ],
        );
        let tests = load_tests(
            &[path],
            &problem_with_tests("nile", 2024, &["a"]),
            &RowPolicy::new(true),
        )
        .unwrap();
        assert_eq!(tests.cases.len(), 1);
        let a = tests.get("a").unwrap();
        assert_eq!(
            (read(&a.input), read(&a.output)),
            ("A".into(), "A-out".into())
        );
        assert!(tests._storage.is_some());
    }

    #[test]
    fn tests_from_folders() {
        let problem = problem_with_tests("nile", 2024, &["x"]);
        for sub in ["", "tests", "Nile", "nile/tests"] {
            let dir = tempfile::tempdir().unwrap();
            let folder = dir.path().join(sub);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("x.in"), "in").unwrap();
            std::fs::write(folder.join("x.out"), "out").unwrap();
            let tests =
                load_tests(&[dir.path().to_path_buf()], &problem, &RowPolicy::new(true)).unwrap();
            let x = tests.get("x").unwrap();
            assert_eq!(x.input, folder.join("x.in"), "layout {sub:?}");
            assert_eq!(read(&x.output), "out");
        }
    }

    #[test]
    fn missing_test_names_subtask_and_test() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.in"), "in").unwrap();
        std::fs::write(dir.path().join("x.out"), "out").unwrap();
        let problem = problem_with_tests("nile", 2024, &["x", "y"]);
        let err = format!(
            "{:#}",
            load_tests(&[dir.path().to_path_buf()], &problem, &RowPolicy::new(true)).unwrap_err()
        );
        assert!(
            err.contains("subtask 01-all") && err.contains("\"y\""),
            "{err}"
        );
    }

    /// (year, problem id, test name, input) of one test-cases row.
    type TestRow<'a> = (i64, &'a str, &'a str, &'a str);

    /// A test-cases parquet file with several problems and years, in small row groups.
    fn write_test_parquet(path: &Path, rows: &[TestRow]) {
        let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as ArrayRef;
        let col = |f: &dyn Fn(&TestRow) -> String| text(rows.iter().map(f).collect());
        let batch = RecordBatch::try_from_iter(vec![
            (
                "year",
                Arc::new(Int64Array::from(
                    rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                )) as ArrayRef,
            ),
            ("day", col(&|_| "1".to_string())),
            ("problem_name", col(&|r| r.1.to_string())),
            ("problem_id", col(&|r| r.1.to_string())),
            ("test_name", col(&|r| r.2.to_string())),
            ("test_input", col(&|r| r.3.to_string())),
            ("test_output", col(&|r| format!("{}-out", r.3))),
        ])
        .unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_size(2)
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(
            File::create(path).unwrap(),
            batch.schema(),
            Some(props),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    #[test]
    fn streaming_parquet_keeps_only_one_problems_tests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2024.parquet");
        write_test_parquet(
            &path,
            &[
                (2024, "tree", "a", "tree-a"),
                (2024, "nile", "b", "nile-b"),
                (2023, "nile", "a", "old-nile-a"),
                (2024, "NILE", "a", "nile-a"),
                (2024, "nile", "c", "not-needed"),
                (2024, "tree", "b", "tree-b"),
            ],
        );
        let tests = load_tests(
            std::slice::from_ref(&path),
            &problem_with_tests("nile", 2024, &["a", "b"]),
            &RowPolicy::new(true),
        )
        .unwrap();
        assert_eq!(tests.cases.len(), 2);
        assert_eq!(read(&tests.get("a").unwrap().input), "nile-a");
        assert_eq!(read(&tests.get("a").unwrap().output), "nile-a-out");
        assert_eq!(read(&tests.get("b").unwrap().input), "nile-b");
        let storage = tests._storage.as_ref().unwrap().path();
        let written = std::fs::read_dir(storage).unwrap().count();
        assert_eq!(written, 4, "only the wanted tests are written");

        // Without a year, the first row of the problem wins.
        let any_year = load_tests(
            &[path],
            &problem_with_tests("nile", 0, &["a"]),
            &RowPolicy::new(true),
        )
        .unwrap();
        assert_eq!(read(&any_year.get("a").unwrap().input), "old-nile-a");
    }

    #[test]
    fn parquet_without_the_test_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write_test_parquet(&path, &[(2024, "tree", "a", "x")]);
        let err = format!(
            "{:#}",
            load_tests(
                &[path],
                &problem_with_tests("nile", 2024, &["a"]),
                &RowPolicy::new(true)
            )
            .unwrap_err()
        );
        assert!(
            err.contains("subtask 01-all") && err.contains("\"a\"") && err.contains("t.parquet"),
            "{err}"
        );
    }
}
