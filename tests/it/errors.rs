//! End-to-end: errors a user can act on. A bad row is skipped, counted and recorded (or, with
//! `--strict`, refuses the dataset naming its file, row and field); mistakes in `sandbox`'s
//! arguments are usage errors; errors point to the right flag; the exit code tells the class
//! (docs/exit-codes.md); `judge --min-score` fails a script on a score.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::{problem_dir, text};

/// The binary with its cache in `work`, asking the hub nothing (a closed port, an empty cache).
fn bin(work: &Path) -> Command {
    let mut cmd = common::bin(work);
    cmd.env("HF_HOME", work.join("no-hf-home"))
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE");
    cmd
}

/// The same, sharing one compile cache between the tests of this file that judge.
fn judging_bin(work: &Path) -> Command {
    let mut cmd = bin(work);
    cmd.env(
        "IOI_RUN_CACHE",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("errors-cache"),
    );
    cmd
}

fn can_judge() -> bool {
    common::is_root_or_skip("judging")
}

fn solution(name: &str) -> PathBuf {
    problem_dir("sumpairs").join("solutions").join(name)
}

fn code(name: &str) -> String {
    std::fs::read_to_string(solution(name)).unwrap()
}

/// The exit code, after checking that the command failed with a message and printed nothing
/// on stdout.
fn refused(out: &Output) -> (i32, String) {
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success() && out.stdout.is_empty(),
        "stdout: {}\nstderr: {stderr}",
        text(&out.stdout)
    );
    (
        out.status.code().expect("an exit code, not a signal"),
        stderr,
    )
}

/// Good sumpairs submissions around every kind of bad row: malformed JSON, a missing field, a
/// field of the wrong type, a duplicate id.
fn dataset_with_bad_rows(work: &Path) -> PathBuf {
    let row = |id: &str, name: &str| {
        serde_json::json!({"uuid": id, "problem_id": "sumpairs", "code": code(name)}).to_string()
    };
    let lines = [
        row("good-ac", "ac.cpp"),
        "{\"uuid\": \"broken\", \"problem_id\": ".to_string(),
        serde_json::json!({"uuid": "no-problem", "code": "int main() {}"}).to_string(),
        row("good-wa", "int_overflow.cpp"),
        row("good-ac", "ce.cpp"),
        serde_json::json!({"uuid": "bad-year", "problem_id": "sumpairs", "year": "soon",
                           "code": "int main() {}"})
        .to_string(),
    ];
    let path = work.join("subs.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn bad_rows_are_skipped_counted_and_recorded_and_the_rest_is_judged() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let subs = dataset_with_bad_rows(work.path());
    let out_dir = work.path().join("out");
    let out = judging_bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(&out_dir)
        .arg("--problems")
        .arg(problem_dir("sumpairs"))
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // Skipped rows are warnings: everything that could be read was judged.
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("judged 2 submission(s)"),
        "{stdout}{stderr}"
    );
    let results = jsonl(&out_dir.join("subs.jsonl"));
    // Rows are written as submissions finish: in any order.
    let mut scores: Vec<(String, f64)> = results
        .iter()
        .map(|r| {
            (
                r["uuid"].as_str().unwrap().to_string(),
                r["all_subtasks_points"].as_f64().unwrap(),
            )
        })
        .collect();
    scores.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        scores,
        [
            ("good-ac".to_string(), 100.0),
            ("good-wa".to_string(), 40.0)
        ],
        "the first of two rows with one id is judged, the second skipped"
    );
    // Each skipped row is named (file, row, field) as it is skipped, and counted at the end.
    for named in [
        "subs.jsonl row 2: malformed JSON",
        "subs.jsonl row 3: required field `problem_id` is missing",
        "subs.jsonl row 5: duplicate submission `good-ac`",
        "subs.jsonl row 6: field `year` must be an integer",
        "4 row(s) skipped",
    ] {
        assert!(stderr.contains(named), "{named:?} in {stderr}");
    }
    // ... and recorded beside the results.
    let record = jsonl(&out_dir.join("subs.skipped.jsonl"));
    let rows: Vec<(u64, Option<&str>)> = record
        .iter()
        .map(|r| (r["row"].as_u64().unwrap(), r["field"].as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            (2, None),
            (3, Some("problem_id")),
            (5, Some("uuid")),
            (6, Some("year"))
        ]
    );
    assert!(record
        .iter()
        .all(|r| r["file"].as_str().unwrap().ends_with("subs.jsonl")
            && r["error"].as_str().unwrap().contains("subs.jsonl row")));
    // `report` reads the results folder without taking the record for results.
    let report = bin(work.path())
        .arg("report")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    // Once the input is fixed, the next run leaves no stale record.
    let good: Vec<String> = std::fs::read_to_string(&subs)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(i, _)| [0, 3].contains(i))
        .map(|(_, l)| l.to_string())
        .collect();
    std::fs::write(&subs, good.join("\n") + "\n").unwrap();
    let again = judging_bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(&out_dir)
        .arg("--problems")
        .arg(problem_dir("sumpairs"))
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(!out_dir.join("subs.skipped.jsonl").exists());
}

#[test]
fn strict_refuses_a_bad_row_naming_file_row_and_field() {
    let work = tempfile::tempdir().unwrap();
    let subs = dataset_with_bad_rows(work.path());
    // The malformed line is the first bad row: drop it to see a field named too.
    let text_in = std::fs::read_to_string(&subs).unwrap();
    let without_malformed: Vec<&str> = text_in.lines().filter(|l| !l.contains("broken")).collect();
    std::fs::write(&subs, without_malformed.join("\n") + "\n").unwrap();
    let out_dir = work.path().join("out");
    // `--dry-run` judges nothing, so this needs no sandbox; a real run loads the same way.
    for extra in [&["--dry-run"][..], &[]] {
        let out = bin(work.path())
            .arg("evaluate")
            .arg(&subs)
            .arg(&out_dir)
            .arg("--problems")
            .arg(problem_dir("sumpairs"))
            .arg("--strict")
            .args(extra)
            .output()
            .unwrap();
        let (code, stderr) = refused(&out);
        assert_eq!(code, 3, "bad input: {stderr}");
        assert!(
            stderr.contains("subs.jsonl row 2: required field `problem_id` is missing"),
            "{stderr}"
        );
        assert!(!out_dir.join("subs.jsonl").exists(), "nothing judged");
    }
}

#[test]
fn strict_judge_refuses_a_bad_test_row_that_is_otherwise_skipped() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = work.path().join("p.parquet");
    let tests = work.path().join("t.parquet");
    let converted = bin(work.path())
        .arg("convert")
        .arg(problem_dir("sumpairs"))
        .args(["--year", "2024", "--problems-out"])
        .arg(&problems)
        .arg("--tests-out")
        .arg(&tests)
        .output()
        .unwrap();
    assert!(converted.status.success(), "{}", text(&converted.stderr));
    // The same tests as JSON Lines, with a malformed line among them.
    let dir = problem_dir("sumpairs").join("tests");
    let mut lines = Vec::new();
    for name in ["01", "02", "03", "04", "05", "06"] {
        let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap();
        lines.push(
            serde_json::json!({"year": 2024, "problem_id": "sumpairs", "test_name": name,
                               "test_input": read("in"), "test_output": read("out")})
            .to_string(),
        );
        if name == "02" {
            lines.push("{\"year\": 2024, \"problem_id\": \"other\", \"test_name\": 7".into());
        }
    }
    let tests = work.path().join("t.jsonl");
    std::fs::write(&tests, lines.join("\n") + "\n").unwrap();
    let judge = |strict: bool| {
        let mut cmd = judging_bin(work.path());
        cmd.args(["judge", "--json", "--problems"])
            .arg(&problems)
            .arg("--tests")
            .arg(&tests)
            .args(["--problem-id", "sumpairs"])
            .arg(solution("ac.cpp"));
        if strict {
            cmd.arg("--strict");
        }
        cmd.output().unwrap()
    };
    let out = judge(false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["total"], 100.0);
    assert!(
        text(&out.stderr).contains("skipped a bad row: ")
            && text(&out.stderr).contains("t.jsonl row 3: malformed JSON"),
        "{}",
        text(&out.stderr)
    );
    let (code, stderr) = refused(&judge(true));
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("t.jsonl row 3: malformed JSON"), "{stderr}");
}

#[test]
fn sandbox_argument_mistakes_are_usage_errors_before_anything_runs() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::write(w.join("data.txt"), "not a program").unwrap();
    std::fs::create_dir(w.join("box")).unwrap();
    let path = |name: &str| w.join(name).display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--".into(), "./a.out".into()],
            "./a.out: no such file: without --box the box is a fresh empty folder",
        ),
        (
            vec!["--box".into(), path("box"), "--".into(), "./a.out".into()],
            "./a.out: no such file in the box folder",
        ),
        (
            vec!["--".into(), "no-such-command-here".into()],
            "no-such-command-here: not found in PATH",
        ),
        (
            vec!["--".into(), "/home/prog".into()],
            "/home/prog: no such file inside the box",
        ),
        (
            vec!["--box".into(), path(""), "--".into(), "./data.txt".into()],
            "is not executable",
        ),
        (
            vec![
                "--stdin".into(),
                path("missing.in"),
                "--".into(),
                "/bin/true".into(),
            ],
            "--stdin",
        ),
        (
            vec![
                "--box".into(),
                path("nobox"),
                "--".into(),
                "/bin/true".into(),
            ],
            "no such folder",
        ),
        (
            vec![
                "--box".into(),
                path("data.txt"),
                "--".into(),
                "/bin/true".into(),
            ],
            "a file; the box is a folder",
        ),
        (
            vec![
                "--stdout".into(),
                path("no/such/out"),
                "--".into(),
                "/bin/true".into(),
            ],
            "--stdout",
        ),
        (
            vec![
                "--dir".into(),
                format!("{}:/data", path("nodir")),
                "--".into(),
                "/bin/true".into(),
            ],
            "does not exist",
        ),
        (
            vec![
                "--memory".into(),
                "0".into(),
                "--".into(),
                "/bin/true".into(),
            ],
            "--memory 0",
        ),
        (
            vec![
                "--processes".into(),
                "0".into(),
                "--".into(),
                "/bin/true".into(),
            ],
            "--processes 0",
        ),
        (
            vec![
                "--time".into(),
                "1e30".into(),
                "--".into(),
                "/bin/true".into(),
            ],
            "more than can be waited for",
        ),
        (
            vec![
                "--env".into(),
                "NOEQUALS".into(),
                "--".into(),
                "/bin/true".into(),
            ],
            "expected NAME=VALUE",
        ),
    ];
    for (args, message) in cases {
        let out = bin(w).arg("sandbox").args(&args).output().unwrap();
        let (code, stderr) = refused(&out);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains(message),
            "{args:?}: {message:?} in {stderr}"
        );
        assert!(!stderr.contains("internal_error"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_task_folder_given_as_a_dataset_says_where_it_goes() {
    let work = tempfile::tempdir().unwrap();
    for (given, what) in [
        (problem_dir("sumpairs"), "a task folder (CMS or TPS)"),
        (
            common::project().join("tests/problems"),
            "a folder of task folders",
        ),
    ] {
        let out = bin(work.path())
            .arg("evaluate")
            .arg(&given)
            .arg(work.path().join("out"))
            .arg("--problems")
            .arg(problem_dir("sumpairs"))
            .output()
            .unwrap();
        let (code, stderr) = refused(&out);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(what)
                && stderr.contains("not a dataset of submissions")
                && stderr.contains(&format!("--problems {}", given.display()))
                && stderr.contains("ioi-run judge TASK SOLUTION.cpp"),
            "{stderr}"
        );
    }
}

#[test]
fn the_default_tests_are_named_as_the_default_with_the_way_to_local_ones() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let problems = data.join("ioi-problems.jsonl");
    std::fs::write(&problems, "{}\n").unwrap();
    let local_tests = data.join("ioi-test-cases.jsonl");
    std::fs::write(&local_tests, "").unwrap();
    let subs = data.join("subs.jsonl");
    std::fs::write(&subs, "").unwrap();
    let out = bin(work.path())
        .env("HF_HUB_OFFLINE", "1")
        .arg("evaluate")
        .arg(&subs)
        .arg(work.path().join("out"))
        .arg("--problems")
        .arg(&problems)
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--tests was not given, so its default, the Hugging Face dataset open-r1/ioi-test-cases, was tried")
            && stderr.contains("--tests FILE or FOLDER")
            && stderr.contains(&format!("--tests {}", local_tests.display()))
            && stderr.contains("HF_HUB_OFFLINE"),
        "{stderr}"
    );
}

#[test]
fn a_results_name_that_is_a_file_says_so() {
    let work = tempfile::tempdir().unwrap();
    let subs = work.path().join("subs.jsonl");
    std::fs::write(&subs, "").unwrap();
    let taken = work.path().join("results");
    std::fs::write(&taken, "").unwrap();
    let out = bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(&taken)
        .arg("--problems")
        .arg(problem_dir("sumpairs"))
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "RESULTS_NAME {}: an existing file, not a folder",
            taken.display()
        )),
        "{stderr}"
    );
}

#[test]
fn judge_takes_a_folder_of_task_folders_as_problems() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = common::project().join("tests/problems");
    let report = common::judge_json(
        judging_bin(work.path()),
        [
            "--problems".as_ref(),
            problems.as_os_str(),
            "--problem-id".as_ref(),
            "SumPairs".as_ref(),
            solution("int_overflow.cpp").as_os_str(),
        ],
    );
    assert_eq!(report["problem"], "sumpairs");
    assert_eq!(report["total"], 40.0);
    let out = judging_bin(work.path())
        .args(["judge", "--problems"])
        .arg(&problems)
        .args(["--problem-id", "nosuch"])
        .arg(solution("ac.cpp"))
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no task folder of problem \"nosuch\"") && stderr.contains("sumpairs"),
        "{stderr}"
    );
}

#[test]
fn exit_codes_tell_usage_bad_input_and_host_apart() {
    let work = tempfile::tempdir().unwrap();
    // Usage: clap's own, and ioi-run's.
    let out = bin(work.path())
        .args(["judge", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(refused(&out).0, 2);
    let out = bin(work.path())
        .args(["evaluate", "no-such-file.jsonl", "out"])
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 2, "{stderr}");
    // Bad input: a row without `problem_id` under --strict, and a broken task folder.
    let subs = work.path().join("subs.jsonl");
    std::fs::write(&subs, "{\"uuid\": \"a\"}\n").unwrap();
    let out = bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(work.path().join("out"))
        .arg("--problems")
        .arg(problem_dir("sumpairs"))
        .args(["--dry-run", "--strict"])
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 3, "{stderr}");
    let broken = work.path().join("broken-task");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("problem.json"), "{ not json").unwrap();
    let out = bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(work.path().join("out"))
        .arg("--problems")
        .arg(&broken)
        .arg("--dry-run")
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("problem.json"), "{stderr}");
    // Host: the sandbox cannot start with the uid range it is given.
    let out = bin(work.path())
        .env("IOI_RUN_UID_RANGE", "nonsense")
        .args(["sandbox", "--", "/bin/true"])
        .output()
        .unwrap();
    let (code, stderr) = refused(&out);
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("IOI_RUN_UID_RANGE"), "{stderr}");
}

#[test]
fn min_score_fails_the_command_only_below_the_threshold() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let judge = |name: &str, min: &str| {
        judging_bin(work.path())
            .arg("judge")
            .arg(problem_dir("sumpairs"))
            .arg(solution(name))
            .args(["--json", "--min-score", min])
            .output()
            .unwrap()
    };
    // int_overflow scores 40: the results are printed either way.
    for (min, code) in [("40", 0), ("40.5", 1), ("100", 1), ("0", 0)] {
        let out = judge("int_overflow.cpp", min);
        assert_eq!(
            out.status.code(),
            Some(code),
            "--min-score {min}: {}",
            text(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["total"], 40.0);
        assert_eq!(
            text(&out.stderr).contains("total 40 is below --min-score"),
            code == 1,
            "{}",
            text(&out.stderr)
        );
    }
    assert_eq!(judge("ac.cpp", "100").status.code(), Some(0));
    let out = bin(work.path())
        .arg("judge")
        .arg(problem_dir("sumpairs"))
        .arg(solution("ac.cpp"))
        .args(["--min-score", "-1"])
        .output()
        .unwrap();
    assert_eq!(refused(&out).0, 2);
}

#[test]
fn judge_says_where_a_misplaced_problem_goes() {
    let work = tempfile::tempdir().unwrap();
    let rows = work.path().join("ioi.parquet");
    std::fs::write(&rows, "").unwrap();
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let folders = common::project().join("tests/problems");
    for (problem, message) in [
        (
            rows.clone(),
            format!(
                "{0} is a file of problem rows, not a task folder: give it as --problems {0} \
                 --problem-id ID",
                rows.display()
            ),
        ),
        (
            folders.clone(),
            format!(
                "{0} holds task folders, not one task: give one of them (ioi-run judge \
                 {0}/TASK SOLUTION.cpp), or pick one with --problems {0} --problem-id ID",
                folders.display()
            ),
        ),
        (
            empty.clone(),
            format!(
                "{}: not a task folder (no problem.json in it",
                empty.display()
            ),
        ),
    ] {
        let out = bin(work.path())
            .arg("judge")
            .arg(&problem)
            .arg(solution("ac.cpp"))
            .output()
            .unwrap();
        let (code, stderr) = refused(&out);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(&message), "{message:?} in {stderr}");
    }
}
