//! Tests of the open-r1 loaders, with fixtures written by each test.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use serde_json::json;

use super::*;
use crate::problem::{Communication, UserIo};

fn write_jsonl(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn row(id: &str, subtask: &str, tests: &[&str], graders: Value) -> Value {
    json!({
        "year": 2024, "id": id, "name": id.to_uppercase(), "day": "1", "subtask": subtask,
        "score": 10, "time_limit": 1.5, "memory_limit": 1073741824, "score_precision": 2,
        "task_type": "Batch", "test_names": tests, "grader_files": graders,
        "statement": "", "problem": "", "starting_code": "",
    })
}

fn batch_graders(id: &str) -> Value {
    json!([
        [format!("graders/{id}.h"), "int f();"],
        ["graders/grader.cpp", "int main(){}"]
    ])
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

fn load_err(rows: &[Value]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    write_jsonl(&path, rows);
    format!("{:#}", load_problems(&[path]).unwrap_err())
}

#[test]
fn groups_rows_by_problem_and_sorts_subtasks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    write_jsonl(
        &path,
        &[
            row("Nile", "01-N2", &["1-01", "0-01"], batch_graders("nile")),
            row("tree", "00-samples", &["0-01"], batch_graders("tree")),
            row("Nile", "00-samples", &["0-01"], batch_graders("nile")),
        ],
    );
    let problems = load_problems(&[path]).unwrap();
    assert_eq!(problems.len(), 2);
    let nile = &problems[0];
    assert_eq!(
        (nile.year, nile.id.as_str(), nile.name.as_str()),
        (2024, "nile", "NILE")
    );
    assert_eq!(nile.task, TaskType::Batch);
    assert_eq!((nile.time_limit, nile.memory_limit), (1.5, 1 << 30));
    let names: Vec<_> = nile.subtasks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["00-samples", "01-N2"]);
    assert_eq!(nile.subtasks[1].test_names, ["1-01", "0-01"]);
    assert_eq!(nile.compiled_graders().len(), 1);
    assert_eq!(problems[1].id, "tree");
}

#[test]
fn communication_params_come_from_grader_config() {
    let config = r#"{"task_type": "Communication", "time_limit": 9, "memory_limit": 5000000,
        "task_type_params": "{\"num_processes\": 2, \"user_io\": \"fifo_io\", \"manager_args\": [\"-x\"]}"}"#;
    let graders = json!([
        ["graders/grader_config.json", config],
        ["graders/manager.cpp", "int main(){}"],
        ["graders/stub.cpp", ""],
        ["graders/xor.h", ""],
    ]);
    let mut r = row("xor", "00-samples", &["a"], graders);
    r["time_limit"] = Value::Null; // falls back to the config
    r["task_type"] = json!("Communication");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    write_jsonl(&path, &[r]);
    let p = &load_problems(&[path]).unwrap()[0];
    assert_eq!(
        p.task,
        TaskType::Communication(Communication {
            num_processes: 2,
            user_io: UserIo::FifoIo,
            manager_args: vec!["-x".into()],
        })
    );
    assert_eq!(p.time_limit, 9.0);
    assert_eq!(p.memory_limit, 1 << 30, "the row's memory limit wins");
}

#[test]
fn row_task_type_wins_over_config() {
    let graders = json!([
        [
            "graders/grader_config.json",
            r#"{"task_type": "Communication"}"#
        ],
        ["graders/x.h", ""],
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    write_jsonl(&path, &[row("x", "00", &["a"], graders)]);
    let p = &load_problems(&[path]).unwrap()[0];
    assert_eq!(p.task, TaskType::Batch);
    // The stale config is rewritten so that script-mode graders agree with the row.
    let cfg = p.grader_file(GRADER_CONFIG_PATH).unwrap();
    let cfg = config::parse_config(std::str::from_utf8(&cfg.content).unwrap(), "g").unwrap();
    assert_eq!(cfg.task(None), Some(TaskType::Batch));
}

#[test]
fn inconsistent_rows_name_file_row_and_field() {
    let mut second = row("nile", "01-N2", &["a"], batch_graders("nile"));
    second["time_limit"] = json!(3.0);
    let err = load_err(&[
        row("nile", "00-samples", &["a"], batch_graders("nile")),
        second,
    ]);
    assert!(
        err.contains("p.jsonl row 1") && err.contains("`time_limit`") && err.contains("row 0"),
        "{err}"
    );
}

#[test]
fn duplicate_subtask_is_an_error() {
    let err = load_err(&[
        row("nile", "01-N2", &["a"], batch_graders("nile")),
        row("nile", "01-N2", &["a"], batch_graders("nile")),
    ]);
    assert!(
        err.contains("subtask 01-N2") && err.contains("again"),
        "{err}"
    );
}

#[test]
fn id_must_agree_with_header() {
    let err = load_err(&[row("nile", "00", &["a"], batch_graders("river"))]);
    assert!(
        err.contains("\"nile\"") && err.contains("graders/river.h"),
        "{err}"
    );
}

#[test]
fn communication_without_manager_is_an_error() {
    let mut r = row("nile", "00", &["a"], batch_graders("nile"));
    r["task_type"] = json!("Communication");
    let err = load_err(&[r]);
    assert!(
        err.contains("p.jsonl row 0") && err.contains("graders/manager.cpp"),
        "{err}"
    );
}

#[test]
fn unsupported_task_type_names_the_row_and_field() {
    let mut r = row("nile", "00", &["a"], batch_graders("nile"));
    r["task_type"] = json!("OutputOnly");
    let err = load_err(&[r]);
    assert!(
        err.contains("p.jsonl row 0") && err.contains("`task_type`") && err.contains("OutputOnly"),
        "{err}"
    );
}

#[test]
fn bad_grader_config_names_row_and_file() {
    let graders = json!([
        ["graders/grader_config.json", "{oops"],
        ["graders/nile.h", ""]
    ]);
    let err = load_err(&[row("nile", "00", &["a"], graders)]);
    assert!(
        err.contains("p.jsonl row 0") && err.contains("grader_config.json"),
        "{err}"
    );
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
    let tests = load_tests(&[path], &problem_with_tests("nile", 2024, &["a"])).unwrap();
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
        let tests = load_tests(&[dir.path().to_path_buf()], &problem).unwrap();
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
        load_tests(&[dir.path().to_path_buf()], &problem).unwrap_err()
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
    let any_year = load_tests(&[path], &problem_with_tests("nile", 0, &["a"])).unwrap();
    assert_eq!(read(&any_year.get("a").unwrap().input), "old-nile-a");
}

#[test]
fn parquet_without_the_test_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write_test_parquet(&path, &[(2024, "tree", "a", "x")]);
    let err = format!(
        "{:#}",
        load_tests(&[path], &problem_with_tests("nile", 2024, &["a"])).unwrap_err()
    );
    assert!(
        err.contains("subtask 01-all") && err.contains("\"a\"") && err.contains("t.parquet"),
        "{err}"
    );
}
