//! End-to-end: `ioi-run evaluate` and `ioi-run report` on the embedded demo and on small
//! datasets written by the tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::common;
use common::{bin, failed, ok, project};

fn root() -> PathBuf {
    project().to_path_buf()
}

fn read_rows(path: &Path) -> Vec<Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap()
                .as_object()
                .unwrap()
                .clone()
        })
        .collect()
}

fn expected() -> HashMap<String, Value> {
    let text = std::fs::read_to_string(root().join("demo/expected.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["submissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["uuid"].as_str().unwrap().to_string(), s.clone()))
        .collect()
}

/// Compares results rows with demo/expected.json at the subtask level.
fn assert_matches_expected(rows: &[Map<String, Value>]) {
    let expected = expected();
    let mut problems = Vec::new();
    for row in rows {
        let id = row["uuid"].as_str().unwrap();
        let want = &expected[id];
        for field in [
            "code_compiles",
            "target_subtask_status",
            "target_subtask_score",
            "all_subtasks_points",
        ] {
            assert_eq!(
                row[field], want[field],
                "{id} ({}) field {field}",
                want["problem_id"]
            );
        }
        let got: Vec<(String, String, f64)> = row["all_subtasks_results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["subtask"].as_str().unwrap().into(),
                    s["status"].as_str().unwrap().into(),
                    s["weighted_score"].as_f64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, String, f64)> = want["subtasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["subtask"].as_str().unwrap().into(),
                    s["status"].as_str().unwrap().into(),
                    s["weighted_score"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{id}");
        problems.push(row["problem_id"].as_str().unwrap().to_string());
    }
    assert!(!problems.is_empty());
}

#[test]
fn demo_evaluates_to_the_expected_results_and_reports() {
    if !common::is_root_or_skip("evaluating") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("demo-results");
    let stdout = ok(bin(work.path())
        .args(["evaluate", "--demo"])
        .arg(&out_dir)
        .output()
        .unwrap());
    assert!(stdout.contains("judged 26 submission(s)"), "{stdout}");
    // The summary table: one line per problem with its count, mean score and verdicts.
    assert!(
        stdout.contains("submissions  mean score  verdicts"),
        "{stdout}"
    );
    let orchard_line = stdout
        .lines()
        .find(|l| l.starts_with("2025/orchard "))
        .unwrap_or_else(|| panic!("no summary line for orchard: {stdout}"));
    let fields: Vec<&str> = orchard_line.split_whitespace().collect();
    assert_eq!(fields[1], "9", "{orchard_line}");
    // The mean of the expected totals of demo/expected.json (200 / 9).
    assert_eq!(fields[2], "22.22", "{orchard_line}");
    assert!(
        orchard_line.contains("CE 1") && orchard_line.contains("no code 1"),
        "{orchard_line}"
    );
    let rows = read_rows(&out_dir.join("submissions.jsonl"));
    assert_eq!(rows.len(), 26);
    assert_matches_expected(&rows);
    // A submission with code that does not compile: CE on every test of every subtask.
    let ce = rows
        .iter()
        .find(|r| r["code_compiles"] == false && r["code"].is_string())
        .unwrap();
    for subtask in ce["all_subtasks_results"].as_array().unwrap() {
        for test in subtask["test_results"].as_array().unwrap() {
            assert_eq!(test["status"], "CE");
            assert!(test["feedback"]
                .as_str()
                .unwrap()
                .starts_with("Compilation error exit code "));
        }
    }
    // Reports and parquet.
    let readme = std::fs::read_to_string(out_dir.join("reports/submissions/README.md")).unwrap();
    assert!(readme.contains("**200.00/600**"), "{readme}");
    let orchard =
        std::fs::read_to_string(out_dir.join("reports/submissions/2025_orchard.md")).unwrap();
    assert!(
        orchard.contains("Number of submissions: **9**")
            && orchard.contains("Submissions compiling: **7**"),
        "{orchard}"
    );
    // Submissions are told apart by their labels, next to the uuid.
    assert!(
        orchard.contains("(orchard/mle)") && orchard.contains("(orchard/bsearch_tle)"),
        "{orchard}"
    );
    assert!(out_dir
        .join("submissions/train-00000-of-00001.parquet")
        .is_file());
    // The HTML report beside them: the same mean score, and the limits the rows carry.
    let html = std::fs::read_to_string(out_dir.join("reports/submissions/report.html")).unwrap();
    let orchard_html = &html[html
        .find("<section id=\"2025_orchard\">")
        .expect("orchard section")..];
    assert!(
        html.contains(
            "<td class=\"num\">9</td><td class=\"num\">7</td><td class=\"num\">22.22</td>"
        ) && orchard_html.contains("Total score of 9 submissions")
            && orchard_html.contains("CPU time per test (limit: 1.000 s)")
            && orchard_html.contains("Peak memory per test (limit: 256.0 MiB)"),
        "{html}"
    );
    // `report` rebuilds the same reports from the results alone.
    let again = work.path().join("again");
    ok(bin(work.path())
        .args(["report", "--out"])
        .arg(&again)
        .arg(out_dir.join("submissions.jsonl"))
        .output()
        .unwrap());
    assert_eq!(
        std::fs::read_to_string(again.join("reports/submissions/2025_orchard.md")).unwrap(),
        orchard
    );
}

/// Writes the orchard submissions of the demo as a parquet dataset and the demo problems in
/// the open-r1 parquet layout.
fn parquet_inputs(work: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let demo = work.join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    let rows: Vec<Map<String, Value>> = read_rows(&demo.join("submissions.jsonl"))
        .into_iter()
        .filter(|r| r["problem_id"] == "orchard")
        .collect();
    let subs = work.join("subs");
    ioi_run::evaluate::write_parquet_dataset(&rows, &subs, "orchard-model").unwrap();
    let (problems, tests) = (work.join("problems.parquet"), work.join("tests.parquet"));
    let mut cmd = bin(work);
    cmd.args(["convert", "--year", "2025", "--day", "1", "--problems-out"])
        .arg(&problems)
        .arg("--tests-out")
        .arg(&tests);
    for p in ["orchard", "skyline", "scales"] {
        cmd.arg(demo.join("problems").join(p));
    }
    ok(cmd.output().unwrap());
    (subs.join("orchard-model"), problems, tests)
}

#[test]
fn parquet_submissions_and_problems_give_the_expected_results() {
    if !common::is_root_or_skip("evaluating") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (subs, problems, tests) = parquet_inputs(work.path());
    let out = work.path().join("out");
    ok(bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(&out)
        .arg("--problems")
        .arg(&problems)
        .arg("--tests")
        .arg(&tests)
        .output()
        .unwrap());
    let rows = read_rows(&out.join("orchard-model.jsonl"));
    assert_eq!(rows.len(), 9);
    assert_matches_expected(&rows);
}

#[test]
fn a_killed_run_resumes_without_losing_or_doubling_lines() {
    if !common::is_root_or_skip("evaluating") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let results = out.join("submissions.jsonl");
    let mut child = bin(work.path())
        .args(["evaluate", "--demo", "--jobs", "1"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&results)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines >= 4 || start.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up or finish a line
    child.wait().unwrap();
    let partial = std::fs::read_to_string(&results).unwrap();
    let complete_lines = partial
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok())
        .count();
    assert!(
        (4..26).contains(&complete_lines),
        "killed too late to test resuming: {complete_lines} lines"
    );
    let stdout = ok(bin(work.path())
        .args(["evaluate", "--demo"])
        .arg(&out)
        .output()
        .unwrap());
    assert!(
        stdout.contains(&format!("judged {} submission(s)", 26 - complete_lines)),
        "{stdout}"
    );
    let rows = read_rows(&results);
    let mut ids: Vec<&str> = rows.iter().map(|r| r["uuid"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((rows.len(), ids.len()), (26, 26));
    assert_matches_expected(&rows);
    // No process of the killed run survived it.
    let leftovers = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path().join("cwd")).ok())
        .filter(|cwd| cwd.starts_with(work.path()))
        .count();
    assert_eq!(leftovers, 0, "processes of the killed run are still alive");
}

#[test]
fn override_keeps_a_backup_and_dry_run_judges_nothing() {
    if !common::is_root_or_skip("evaluating") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (subs, problems, tests) = parquet_inputs(work.path());
    let out = work.path().join("out");
    let args = |extra: &[&str]| {
        let mut cmd = bin(work.path());
        cmd.arg("evaluate")
            .arg(&subs)
            .arg(&out)
            .arg("--problems")
            .arg(&problems)
            .arg("--tests")
            .arg(&tests)
            .args(extra);
        cmd
    };
    let dry = ok(args(&["--dry-run"]).output().unwrap());
    assert!(
        dry.contains("9 to judge") && dry.contains("2025/orchard: 9"),
        "{dry}"
    );
    assert!(!out.exists(), "a dry run must not write anything");
    ok(args(&[]).output().unwrap());
    // After a real run, a dry run sees what is done and leaves the results untouched.
    let results = out.join("orchard-model.jsonl");
    let before = std::fs::read(&results).unwrap();
    let dry = ok(args(&["--dry-run"]).output().unwrap());
    assert!(dry.contains("9 already judged, 0 to judge"), "{dry}");
    assert_eq!(std::fs::read(&results).unwrap(), before);
    let second = ok(args(&[]).output().unwrap());
    assert!(
        second.contains("judged 0 submission(s)"),
        "a rerun must skip what is done: {second}"
    );
    ok(args(&["--override"]).output().unwrap());
    assert_eq!(read_rows(&out.join("orchard-model.jsonl.bak")).len(), 9);
    assert_eq!(read_rows(&out.join("orchard-model.jsonl")).len(), 9);
}

#[test]
fn code_is_extracted_from_generation_and_includes_added() {
    if !common::is_root_or_skip("evaluating") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let demo = work.path().join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    let correct = read_rows(&demo.join("submissions.jsonl"))
        .into_iter()
        .find(|r| r["uuid"] == "222b94c4-7bc3-5fc2-a647-cd4036272664")
        .unwrap();
    let code =
        ioi_run::evaluate::submissions::extract_code(correct["generation"].as_str().unwrap())
            .unwrap();
    // Strip the includes and `using namespace std;` a model might forget.
    let bare: String = code
        .lines()
        .filter(|l| !l.starts_with("#include") && !l.contains("using namespace std"))
        .collect::<Vec<_>>()
        .join("\n");
    let generation =
        format!("Here is my solution.\n```cpp\nint broken(\n```\nFinal:\n```cpp\n{bare}\n```\n");
    let row = serde_json::json!({"uuid": "x1", "problem_id": "orchard", "year": 2025, "code": "", "generation": generation});
    let subs = work.path().join("subs.jsonl");
    std::fs::write(&subs, format!("{row}\n")).unwrap();
    let run = |extra: &[&str], out: &str| {
        let out_dir = work.path().join(out);
        ok(bin(work.path())
            .arg("evaluate")
            .arg(&subs)
            .arg(&out_dir)
            .arg("--problems")
            .arg(demo.join("problems"))
            .args(extra)
            .output()
            .unwrap());
        read_rows(&out_dir.join("subs.jsonl")).remove(0)
    };
    let plain = run(&[], "plain");
    assert_eq!(
        plain["code_compiles"], false,
        "the bare code should not compile without includes"
    );
    let fixed = run(&["--add-includes"], "fixed");
    assert_eq!(fixed["all_subtasks_points"].as_f64(), Some(100.0));
    assert!(fixed["code"]
        .as_str()
        .unwrap()
        .starts_with("#include <bits/stdc++.h>"));
}

#[test]
fn unknown_problem_is_an_error_naming_file_row_and_field() {
    let work = tempfile::tempdir().unwrap();
    let demo = work.path().join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    let subs = work.path().join("subs.jsonl");
    std::fs::write(&subs, "{\"uuid\": \"a\", \"problem_id\": \"orchard\", \"year\": 2025, \"code\": \"int main(){}\"}\n{\"uuid\": \"b\", \"problem_id\": \"nosuch\", \"year\": 2025, \"code\": \"\"}\n").unwrap();
    let out = bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(work.path().join("out"))
        .arg("--problems")
        .arg(demo.join("problems"))
        .output()
        .unwrap();
    let err = failed(out);
    assert!(
        err.contains("subs.jsonl")
            && err.contains("row 2")
            && err.contains("problem_id")
            && err.contains("nosuch"),
        "{err}"
    );
}
