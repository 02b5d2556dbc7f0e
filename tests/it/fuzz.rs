//! Fuzz targets for every parser of untrusted input (docs/threat-model.md#fuzzing), each run for
//! a bounded number of mutated inputs from the seeds in `tests/fuzz/<target>/` (see
//! `common/fuzz.rs`). Each input must give a value or an error, never a panic, and whatever a
//! loader writes stays in its folder. The keeper's request is fuzzed beside its decoder
//! (`src/keeper/protocol.rs`), which is private to the library.

use ioi_run::dataset::RowPolicy;
use ioi_run::name::{RelativePath, SafeName};
use ioi_run::problem::{self, Problem, Subtask, TaskType};

use crate::common;
use common::fuzz;

/// Splits an input into the files of a package at a `#---` line.
fn parts(input: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let text = input;
    let marker = b"\n#---\n";
    match text.windows(marker.len()).position(|w| w == marker) {
        Some(at) => (text[..at].to_vec(), text[at + marker.len()..].to_vec()),
        None => (text.to_vec(), Vec::new()),
    }
}

/// Every grader file of a loaded problem has a checked path, and its id is a name.
fn check_problem(problem: &Problem) {
    for file in &problem.grader_files {
        RelativePath::parse(&file.path).expect("a grader file's path is checked");
    }
    SafeName::parse(&problem.id).expect("a problem id is a name");
}

#[test]
fn fuzz_openr1_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("problems.jsonl");
    fuzz::run("openr1_rows", |input| {
        std::fs::write(&path, input).unwrap();
        if let Ok(rows) = problem::openr1::load_problems(std::slice::from_ref(&path)) {
            rows.problems.iter().for_each(check_problem);
        }
    });
}

#[test]
fn fuzz_test_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tests.jsonl");
    let problem = Problem {
        year: 2024,
        id: "nile".into(),
        name: "Nile".into(),
        day: "1".into(),
        task: TaskType::Batch,
        time_limit: 1.0,
        memory_limit: 1 << 28,
        subtasks: vec![Subtask {
            name: "01-all".into(),
            points: 100.0,
            score_precision: 2,
            test_names: vec!["1".into(), "2".into(), "3".into(), "../x".into()],
        }],
        grader_files: Vec::new(),
    };
    fuzz::run("test_rows", |input| {
        std::fs::write(&path, input).unwrap();
        for strict in [false, true] {
            let policy = RowPolicy::new(strict);
            if let Ok(tests) =
                problem::testcases::load_tests(std::slice::from_ref(&path), &problem, &policy)
            {
                // Each test's files are in the set's own folder.
                for case in tests.cases.values() {
                    let folder = case.input.parent().unwrap();
                    assert_eq!(case.output.parent(), Some(folder));
                    assert!(folder != dir.path(), "tests written beside their source");
                }
            }
        }
    });
}

#[test]
fn fuzz_grader_config() {
    fuzz::run("grader_config", |input| {
        let text = String::from_utf8_lossy(input);
        if let Err(e) = problem::config::parse_config(&text, "problem.json") {
            assert!(format!("{e:#}").contains("problem.json"), "{e:#}");
        }
    });
}

#[test]
fn fuzz_tps_gen_data() {
    fuzz::run("tps_gen_data", |input| {
        let text = String::from_utf8_lossy(input);
        for task_type in ["Batch", "OutputOnly"] {
            match problem::tps::parse_gen_data(&text, task_type, "gen/data") {
                Ok(plan) => {
                    for test in &plan.tests {
                        SafeName::parse(&test.name).expect("a test name is a name");
                    }
                }
                Err(e) => assert!(format!("{e:#}").starts_with("gen/data"), "{e:#}"),
            }
        }
    });
}

#[test]
fn fuzz_tps_package() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("sum");
    common::copy_dir(&common::problem_dir("tps/sum"), &dir);
    let before = fuzz::files_under(work.path());
    let gen_data = "@subtask samples\nmanual sample-1.in\n@subtask small\ngen 1 2\n\
                    @subtask full\n@include small\ngen 3 4\n";
    fuzz::run("tps_package", |input| {
        let (problem_json, subtasks_json) = parts(input);
        std::fs::write(dir.join("problem.json"), problem_json).unwrap();
        std::fs::write(dir.join("subtasks.json"), subtasks_json).unwrap();
        if let Ok(package) = problem::tps::TpsPackage::read(&dir) {
            if let Ok((problem, _)) = package.plan(gen_data) {
                check_problem(&problem);
            }
        }
    });
    assert_eq!(
        fuzz::files_under(work.path()),
        before,
        "a loader wrote a file"
    );
}

#[test]
fn fuzz_cms_folder() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("sumpairs");
    common::copy_dir(&common::problem_dir("sumpairs"), &dir);
    let before = fuzz::files_under(work.path());
    fuzz::run("cms_folder", |input| {
        let (problem_json, subtask) = parts(input);
        std::fs::write(dir.join("problem.json"), problem_json).unwrap();
        std::fs::write(dir.join("subtasks/01-small.json"), subtask).unwrap();
        if let Ok((problem, tests)) = problem::cms::load_cms(&dir) {
            check_problem(&problem);
            for case in tests.cases.values() {
                assert!(case.input.starts_with(&dir), "{}", case.input.display());
            }
        }
    });
    assert_eq!(
        fuzz::files_under(work.path()),
        before,
        "a loader wrote a file"
    );
}

#[test]
fn fuzz_piston_requests() {
    fuzz::run("piston_request", |input| {
        if let Err(error) = ioi_run::server::parse_execute(input) {
            let message = match error {
                ioi_run::server::RequestError::BadRequest(message) => message,
                other => panic!("a request's fault is a 400, got {other:?}"),
            };
            assert!(!message.contains('\n'), "{message:?}");
        }
    });
}

#[test]
fn fuzz_results_rows() {
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("model.jsonl");
    let out = work.path().join("out");
    fuzz::run("results_rows", |input| {
        std::fs::write(&results, input).unwrap();
        let _ = ioi_run::evaluate::results::read_results(&results);
        if let Ok(written) =
            ioi_run::evaluate::reports::write_reports(std::slice::from_ref(&results), &out, "uuid")
        {
            for path in written {
                assert_eq!(path.parent(), Some(out.join("reports/model").as_path()));
            }
        }
        for file in fuzz::files_under(work.path()) {
            assert!(
                file == results || file.starts_with(out.join("reports/model")),
                "{} written outside the reports folder",
                file.display()
            );
        }
    });
}
