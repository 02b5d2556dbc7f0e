//! Writes problems and tests in the open-r1 parquet layouts (docs/data.md#problems, #tests), so
//! that a CMS task folder can be published or judged like the Hugging Face datasets.
//!
//! Tests are written a bounded batch at a time, each batch closing its own row group, so that
//! converting a large task never holds more than one batch of test data in memory.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow::array::{ArrayRef, Float64Array, Int64Array, ListBuilder, StringArray, StringBuilder};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::config::{self, TaskKind};
use super::{GraderFile, Problem, TestSet};

/// Test data gathered before a batch is written out as its own row group.
const TEST_BATCH_BYTES: usize = 64 << 20;

/// Writes the problems as open-r1/ioi rows (one per subtask) to `problems_out`, and their
/// tests as open-r1/ioi-test-cases rows to `tests_out`.
pub fn write_openr1(
    problems: &[(Problem, TestSet)],
    problems_out: &Path,
    tests_out: &Path,
) -> Result<()> {
    let batch = problem_rows(problems.iter().map(|(p, _)| p))?;
    let mut writer = create_writer(problems_out, &batch)?;
    writer
        .write(&batch)
        .with_context(|| format!("cannot write {}", problems_out.display()))?;
    writer
        .close()
        .with_context(|| format!("cannot write {}", problems_out.display()))?;
    write_tests(problems, tests_out)
}

fn create_writer(path: &Path, batch: &RecordBatch) -> Result<ArrowWriter<File>> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    ArrowWriter::try_new(file, batch.schema(), Some(props))
        .with_context(|| format!("cannot write {}", path.display()))
}

fn utf8<'a>(problem: &Problem, file: &'a GraderFile) -> Result<&'a str> {
    std::str::from_utf8(&file.content).with_context(|| {
        format!(
            "problem {}: grader file {} is not UTF-8 text",
            problem.id, file.path
        )
    })
}

fn problem_rows<'a>(problems: impl Iterator<Item = &'a Problem>) -> Result<RecordBatch> {
    let mut year = Vec::new();
    let mut id = Vec::new();
    let mut name = Vec::new();
    let mut day = Vec::new();
    let mut subtask = Vec::new();
    let mut score = Vec::new();
    let mut time_limit = Vec::new();
    let mut memory_limit = Vec::new();
    let mut precision = Vec::new();
    let mut task_type = Vec::new();
    let mut test_names = ListBuilder::new(StringBuilder::new());
    let mut graders = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
    for problem in problems {
        let mut published = problem.clone();
        config::ensure_grader_config(&mut published);
        let files = &published.grader_files;
        for st in &problem.subtasks {
            year.push(problem.year);
            id.push(problem.id.clone());
            name.push(problem.name.clone());
            day.push(problem.day.clone());
            subtask.push(st.name.clone());
            score.push(st.points);
            time_limit.push(problem.time_limit);
            memory_limit.push(problem.memory_limit as i64);
            precision.push(i64::from(st.score_precision));
            task_type.push(TaskKind::of(&problem.task).as_str());
            for t in &st.test_names {
                test_names.values().append_value(t);
            }
            test_names.append(true);
            for f in files {
                let pair = graders.values();
                pair.values().append_value(&f.path);
                pair.values().append_value(utf8(problem, f)?);
                pair.append(true);
            }
            graders.append(true);
        }
    }
    let rows = year.len();
    // `score` is an integer column in the real data; keep it so unless a subtask has a fraction.
    let score: ArrayRef = if score.iter().all(|s| s.fract() == 0.0) {
        Arc::new(Int64Array::from(
            score.iter().map(|&s| s as i64).collect::<Vec<_>>(),
        ))
    } else {
        Arc::new(Float64Array::from(score))
    };
    let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as ArrayRef;
    let empty = || Arc::new(StringArray::from(vec![""; rows])) as ArrayRef;
    RecordBatch::try_from_iter(vec![
        ("year", Arc::new(Int64Array::from(year)) as ArrayRef),
        ("id", text(id)),
        ("name", text(name)),
        ("day", text(day)),
        ("subtask", text(subtask)),
        ("score", score),
        ("time_limit", Arc::new(Float64Array::from(time_limit))),
        ("memory_limit", Arc::new(Int64Array::from(memory_limit))),
        ("score_precision", Arc::new(Int64Array::from(precision))),
        ("task_type", Arc::new(StringArray::from(task_type))),
        ("test_names", Arc::new(test_names.finish())),
        ("grader_files", Arc::new(graders.finish())),
        ("statement", empty()),
        ("problem", empty()),
        ("starting_code", empty()),
    ])
    .context("cannot assemble the problem rows")
}

/// Columns of one batch of test rows.
#[derive(Default)]
struct TestRows {
    year: Vec<i64>,
    day: Vec<String>,
    problem_name: Vec<String>,
    problem_id: Vec<String>,
    test_name: Vec<String>,
    test_input: Vec<String>,
    test_output: Vec<String>,
    bytes: usize,
}

impl TestRows {
    fn take_batch(&mut self) -> Result<RecordBatch> {
        let rows = std::mem::take(self);
        let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as ArrayRef;
        RecordBatch::try_from_iter(vec![
            ("year", Arc::new(Int64Array::from(rows.year)) as ArrayRef),
            ("day", text(rows.day)),
            ("problem_name", text(rows.problem_name)),
            ("problem_id", text(rows.problem_id)),
            ("test_name", text(rows.test_name)),
            ("test_input", text(rows.test_input)),
            ("test_output", text(rows.test_output)),
        ])
        .context("cannot assemble the test rows")
    }
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", path.display()))
}

/// Writes the gathered rows as one row group (opening the file on the first call).
fn flush(rows: &mut TestRows, writer: &mut Option<ArrowWriter<File>>, out: &Path) -> Result<()> {
    let batch = rows.take_batch()?;
    if writer.is_none() {
        *writer = Some(create_writer(out, &batch)?);
    }
    if let Some(w) = writer.as_mut() {
        w.write(&batch)
            .and_then(|()| w.flush())
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    Ok(())
}

fn write_tests(problems: &[(Problem, TestSet)], out: &Path) -> Result<()> {
    let mut rows = TestRows::default();
    let mut writer: Option<ArrowWriter<File>> = None;
    for (problem, tests) in problems {
        for case in tests.cases.values() {
            let input = read_text(&case.input)?;
            let output = read_text(&case.output)?;
            rows.bytes += input.len() + output.len();
            rows.year.push(problem.year);
            rows.day.push(problem.day.clone());
            rows.problem_name.push(problem.name.clone());
            rows.problem_id.push(problem.id.clone());
            rows.test_name.push(case.name.clone());
            rows.test_input.push(input);
            rows.test_output.push(output);
            if rows.bytes >= TEST_BATCH_BYTES {
                flush(&mut rows, &mut writer, out)?;
            }
        }
    }
    if !rows.year.is_empty() || writer.is_none() {
        flush(&mut rows, &mut writer, out)?;
    }
    match writer {
        Some(w) => w
            .close()
            .map(|_| ())
            .with_context(|| format!("cannot write {}", out.display())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::cms::{load_cms, tests::batch_fixture};
    use crate::problem::config::GRADER_CONFIG_PATH;
    use crate::problem::openr1::{load_problems, load_tests};
    use crate::problem::{Communication, TaskType, UserIo};

    fn round_trip(dir: &Path) -> (Problem, TestSet, Problem, TestSet) {
        let (problem, tests) = load_cms(dir).unwrap();
        let out = tempfile::tempdir().unwrap();
        let problems_out = out.path().join("problems/train.parquet");
        let tests_out = out.path().join("tests/2024.parquet");
        write_openr1(&[(problem.clone(), tests)], &problems_out, &tests_out).unwrap();
        let loaded = load_problems(&[problems_out]).unwrap().problems;
        assert_eq!(loaded.len(), 1);
        let loaded_tests = load_tests(
            &[tests_out],
            &loaded[0],
            &crate::dataset::RowPolicy::new(true),
        )
        .unwrap();
        let (_, tests) = load_cms(dir).unwrap();
        (
            problem,
            tests,
            loaded.into_iter().next().unwrap(),
            loaded_tests,
        )
    }

    fn same_contents(a: &TestSet, b: &TestSet) {
        let names: Vec<_> = a.cases.keys().collect();
        assert_eq!(names, b.cases.keys().collect::<Vec<_>>());
        for (name, case) in &a.cases {
            let other = b.get(name).unwrap();
            assert_eq!(
                std::fs::read(&case.input).unwrap(),
                std::fs::read(&other.input).unwrap()
            );
            assert_eq!(
                std::fs::read(&case.output).unwrap(),
                std::fs::read(&other.output).unwrap()
            );
        }
    }

    #[test]
    fn cms_batch_folder_round_trips_through_parquet() {
        let dir = tempfile::tempdir().unwrap();
        batch_fixture(dir.path());
        let (problem, tests, loaded, loaded_tests) = round_trip(dir.path());
        assert_eq!(loaded, problem);
        same_contents(&tests, &loaded_tests);
    }

    #[test]
    fn cms_communication_folder_round_trips_through_parquet() {
        let dir = tempfile::tempdir().unwrap();
        batch_fixture(dir.path());
        std::fs::write(
            dir.path().join("problem.json"),
            r#"{"name": "Nile", "time_limit": 0.5, "memory_limit": 536870912,
                "task_type": "Communication",
                "task_type_params": "{\"task_type_parameters_Communication_num_processes\": 2, \"task_type_parameters_Communication_user_io\": \"fifo_io\", \"task_type_parameters_Communication_manager_args\": \"7\"}"}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("graders/manager.cpp"), "int main(){}\n").unwrap();
        std::fs::write(
            dir.path().join("subtasks/02-half.json"),
            r#"{"score": 12.5, "testcases": ["1-01"]}"#,
        )
        .unwrap();
        let (problem, tests, loaded, loaded_tests) = round_trip(dir.path());
        assert_eq!(
            loaded.task,
            TaskType::Communication(Communication {
                num_processes: 2,
                user_io: UserIo::FifoIo,
                manager_args: vec!["7".into()],
            })
        );
        assert_eq!(loaded.subtasks[2].points, 12.5);
        assert_eq!(loaded, problem);
        same_contents(&tests, &loaded_tests);
    }

    #[test]
    fn stale_grader_config_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        batch_fixture(dir.path());
        // The folder's config claims Communication; problem.json says Batch and wins.
        std::fs::write(
            dir.path().join("graders/grader_config.json"),
            r#"{"task_type": "Communication", "task_type_parameters_Communication_num_processes": 4}"#,
        )
        .unwrap();
        let task_in_config = |p: &Problem| {
            let cfg = p.grader_file(GRADER_CONFIG_PATH).unwrap();
            config::parse_config(std::str::from_utf8(&cfg.content).unwrap(), "g")
                .unwrap()
                .task(None)
        };
        let (mut problem, _) = load_cms(dir.path()).unwrap();
        assert_eq!(task_in_config(&problem), Some(TaskType::Batch));
        assert_eq!(problem.grader_files.len(), 5, "replaced, not added");

        problem.task = TaskType::Communication(Communication {
            num_processes: 3,
            user_io: UserIo::StdIo,
            manager_args: vec![],
        });
        config::ensure_grader_config(&mut problem);
        assert_eq!(task_in_config(&problem), Some(problem.task.clone()));
        assert_eq!(problem.grader_files.len(), 5);
    }
}
