//! End-to-end: C solutions (`.c`, gcc, CMS's C flags) judged by `ioi-run judge` in the same
//! sandbox and compile cache as C++: linked with the task's C grader, on their own for a task
//! without a grader, a compilation error when gcc refuses the code or the task's graders are
//! C++ only, and never served a C++ compile of the same text.

use std::path::Path;

use serde_json::Value;

use crate::common;
use common::{bin, is_root_or_skip, problem_dir, subtask_statuses};

fn judge(work: &Path, problem: &str, solution: &Path) -> Value {
    common::judge_json(
        bin(work),
        [problem_dir(problem).as_os_str(), solution.as_os_str()],
    )
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    subtask_statuses(report)
}

fn pair(a: &str, b: &str) -> Vec<(String, String)> {
    vec![
        ("00-samples".to_string(), a.to_string()),
        ("01-all".to_string(), b.to_string()),
    ]
}

#[test]
fn c_solutions_are_linked_with_the_c_grader() {
    if !is_root_or_skip("judging C") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solutions = problem_dir("csum").join("solutions");
    for (solution, total, want) in [
        ("ac.c", 100.0, pair("AC", "AC")),
        ("ac.cpp", 100.0, pair("AC", "AC")),
        ("int_sum.c", 40.0, pair("AC", "WA")),
    ] {
        let report = judge(work.path(), "csum", &solutions.join(solution));
        assert_eq!(statuses(&report), want, "{solution}: {report:#}");
        assert_eq!(report["total"].as_f64(), Some(total), "{solution}");
    }
}

#[test]
fn a_c_solution_without_a_grader_reads_stdin() {
    if !is_root_or_skip("judging C") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solution = problem_dir("wdiff").join("solutions/ac_c.c");
    let report = judge(work.path(), "wdiff", &solution);
    assert_eq!(statuses(&report), pair("AC", "AC"), "{report:#}");
    assert_eq!(report["total"].as_f64(), Some(100.0));
}

#[test]
fn cpp_in_a_c_file_is_a_compilation_error_naming_the_file() {
    if !is_root_or_skip("judging C") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solution = problem_dir("csum").join("solutions/cpp_only_ce.c");
    let report = judge(work.path(), "csum", &solution);
    assert_eq!(statuses(&report), pair("CE", "CE"), "{report:#}");
    let message = report["compile_error"].as_str().unwrap();
    // gcc compiled it as C: <vector> is no C header.
    assert!(message.contains("vector"), "{message}");
    assert!(
        message.contains(&solution.display().to_string()),
        "{message}"
    );
}

#[test]
fn a_c_solution_to_a_task_with_cpp_graders_only_is_refused_clearly() {
    if !is_root_or_skip("judging C") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solution = work.path().join("sumpairs.c");
    std::fs::write(
        &solution,
        "long long count_pairs(int T, int *a) { return 0; }\n",
    )
    .unwrap();
    // Refused before compiling, as a usage error, not shown as the compiler's words.
    let out = bin(work.path())
        .args(["judge", "--json"])
        .arg(problem_dir("sumpairs"))
        .arg(&solution)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let message = String::from_utf8_lossy(&out.stderr);
    assert!(
        message.contains("graders/grader.c") && message.contains("graders/grader.cpp"),
        "{message}"
    );
    assert!(out.stdout.is_empty(), "no report");
}

#[test]
fn the_same_text_as_c_and_as_cpp_is_compiled_twice() {
    if !is_root_or_skip("judging C") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // A character constant is an int in C (4 bytes) and a char in C++ (1 byte): the C program
    // is off by 3 everywhere, the C++ one correct. One compile cache serves both runs.
    let code = "#include \"csum.h\"\n\
                long long sum_all(int n, const int *a) {\n\
                    long long s = 0;\n\
                    for (int i = 0; i < n; i++) s += a[i];\n\
                    return s + (long long)sizeof('a') - 1;\n\
                }\n";
    let as_cpp = work.path().join("both.cpp");
    let as_c = work.path().join("both.c");
    std::fs::write(&as_cpp, code).unwrap();
    std::fs::write(&as_c, code).unwrap();
    let cpp = judge(work.path(), "csum", &as_cpp);
    assert_eq!(statuses(&cpp), pair("AC", "AC"), "{cpp:#}");
    let c = judge(work.path(), "csum", &as_c);
    assert_eq!(statuses(&c), pair("WA", "WA"), "{c:#}");
    let cpp_again = judge(work.path(), "csum", &as_cpp);
    assert_eq!(statuses(&cpp_again), pair("AC", "AC"), "{cpp_again:#}");
}
