//! End-to-end: what `ioi-run judge` shows a person (not `--json`): the compiler's messages once,
//! tests as they finish, a table that fits the terminal, and hints for misplaced arguments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::{bin_shared_cache, is_root_or_skip, problem_dir, text};

fn bin() -> Command {
    bin_shared_cache()
}

fn sumpairs() -> PathBuf {
    problem_dir("sumpairs")
}

fn judge(args: &[&Path], columns: Option<&str>) -> Output {
    let mut cmd = bin();
    cmd.arg("judge").args(args);
    match columns {
        Some(c) => cmd.env("COLUMNS", c),
        None => cmd.env_remove("COLUMNS"),
    };
    cmd.output().expect("ioi-run runs")
}

/// Judging needs root (namespaces, cgroups): without it the test says so and passes, except
/// in CI, where it must fail loudly.
fn can_judge() -> bool {
    is_root_or_skip("judging")
}

#[test]
fn a_compile_error_shows_the_compiler_messages_once() {
    if !can_judge() {
        return;
    }
    let dir = sumpairs();
    let out = judge(&[&dir, &dir.join("solutions/ce.cpp")], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.matches("the compiler says").count(), 1, "{stdout}");
    assert!(
        stdout.contains("error:"),
        "the messages are shown: {stdout}"
    );
    assert!(
        !stdout.contains("Compilation error exit code"),
        "no per-test rows repeating the feedback: {stdout}"
    );
    // The compiler's messages appear once, not once per test or subtask.
    let first_error = stdout
        .lines()
        .find(|l| l.contains("error:"))
        .unwrap()
        .to_string();
    assert_eq!(stdout.matches(first_error.as_str()).count(), 1, "{stdout}");
    assert!(stdout.contains("total 0/100"), "{stdout}");
    // The messages name the file the user gave, not its name in the judge's folder.
    let given = dir.join("solutions/ce.cpp").display().to_string();
    assert!(first_error.contains(&given), "{stdout}");
    assert!(!stdout.contains("graders/sumpairs.cpp"), "{stdout}");
    // Something is said while the compiler runs.
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(&format!("compiling {given}\n")),
        "{stderr}"
    );
}

#[test]
fn judge_json_gives_one_compile_error_per_submission_naming_the_users_file() {
    if !can_judge() {
        return;
    }
    let dir = sumpairs();
    let solution = dir.join("solutions/ce.cpp");
    let out = bin()
        .arg("judge")
        .arg("--json")
        .arg(&dir)
        .arg(&solution)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let message = report["compile_error"].as_str().expect("a compile_error");
    assert!(message.contains("error:"), "{message}");
    assert!(
        message.contains(&solution.display().to_string()),
        "{message}"
    );
    let tests: Vec<&serde_json::Value> = report["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["tests"].as_array().unwrap())
        .collect();
    assert!(tests.len() > 1, "{report}");
    for test in &tests {
        assert!(
            test["status"] == "CE" || test["status"] == "SKIPPED",
            "{test}"
        );
        assert!(
            test["feedback"].is_null(),
            "the message is not repeated: {test}"
        );
    }
    // Nothing on stderr for a script reading --json but the log (no progress lines).
    assert!(
        !text(&out.stderr).contains("compiling"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn tests_are_shown_as_they_finish_and_the_table_fits_the_terminal() {
    if !can_judge() {
        return;
    }
    let dir = sumpairs();
    let out = judge(&[&dir, &dir.join("solutions/int_overflow.cpp")], Some("60"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    // Each test that ran has its live line on stderr (05 is the wrong answer).
    for test in ["01", "02", "03", "04", "05"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("done {test} "))),
            "no live line for test {test}: {stderr}"
        );
    }
    assert!(stderr.contains("WA"), "{stderr}");
    for line in stdout.lines() {
        assert!(
            line.chars().count() <= 60,
            "wider than 60 columns: {line:?}"
        );
    }
    // The shared test 01 belongs to every subtask: one short label, not the list.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("01") && l.contains(" all ")),
        "{stdout}"
    );
    assert!(stdout.contains("total 40/100"), "{stdout}");
}

#[test]
fn swapped_arguments_get_a_hint() {
    let dir = sumpairs();
    let solution = dir.join("solutions/ac.cpp");
    let out = judge(&[&solution, &dir], None);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the problem comes first")
            && stderr.contains(&format!("judge {} {}", dir.display(), solution.display())),
        "{stderr}"
    );
}

#[test]
fn the_usage_line_names_the_two_positionals() {
    let out = bin().args(["judge", "--help"]).output().unwrap();
    let help = text(&out.stdout);
    assert!(
        help.contains("Usage: ioi-run judge [OPTIONS] [PROBLEM] <SOLUTION.cpp>"),
        "{help}"
    );
    // Without a problem and without --problems: a clear error, not a usage puzzle.
    let out = judge(&[&sumpairs().join("solutions/ac.cpp")], None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("give a CMS or TPS task folder and a solution"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_year_that_does_not_match_says_which_years_exist() {
    let dir = sumpairs();
    let work = tempfile::tempdir().unwrap();
    let (problems, tests) = (
        work.path().join("problems.parquet"),
        work.path().join("tests.parquet"),
    );
    let status = bin()
        .arg("convert")
        .arg(&dir)
        .args(["--year", "2023", "--problems-out"])
        .arg(&problems)
        .arg("--tests-out")
        .arg(&tests)
        .status()
        .unwrap();
    assert!(status.success());
    let out = bin()
        .arg("judge")
        .arg("--problems")
        .arg(&problems)
        .arg("--tests")
        .arg(&tests)
        .args(["--problem-id", "sumpairs", "--year", "2024"])
        .arg(dir.join("solutions/ac.cpp"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("of year 2024") && stderr.contains("it exists for 2023"),
        "{stderr}"
    );
}
