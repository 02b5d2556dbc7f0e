//! End-to-end: TPS task packages (tests/problems/tps/) read as published: `judge` on the
//! folder gives every official solution the verdicts its `solutions.json` expects; tests are
//! generated deterministically and cached by content; `convert` then `judge` on the parquet
//! gives the same result; `evaluate --problems` takes a folder of TPS tasks.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use common::{bin, failed, is_root_or_skip, ok};

fn tasks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/problems/tps")
}

/// The sandbox needs root: elsewhere the tests say so and pass, except under CI.
fn can_run() -> bool {
    is_root_or_skip("TPS tests")
}

fn judge(work: &Path, args: &[&Path]) -> Value {
    common::judge_json(bin(work), args)
}

/// Subtask → status of a `judge --json` report.
fn statuses(report: &Value) -> BTreeMap<String, String> {
    common::subtask_statuses(report).into_iter().collect()
}

/// What `solutions.json` expects, as subtask statuses (`00-samples` → `AC`, ...).
fn expected(task: &Path, solution: &str, subtasks: &[&str]) -> BTreeMap<String, String> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(task.join("solutions.json")).unwrap())
            .unwrap();
    let spec = &doc[solution];
    subtasks
        .iter()
        .map(|full| {
            let name = full.split_once('-').unwrap().1;
            let verdict = spec["except"][name]
                .as_str()
                .unwrap_or(spec["verdict"].as_str().unwrap());
            let status = match verdict {
                "model_solution" | "correct" => "AC",
                "incorrect" => "WA",
                "time_limit" => "TLE",
                "runtime_error" => "RE",
                "partially_correct" => "PA",
                other => panic!("no status for {other}"),
            };
            (full.to_string(), status.to_string())
        })
        .collect()
}

fn check_official_solutions(task: &str, subtasks: &[&str], totals: &[(&str, f64)]) {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = tasks().join(task);
    for (solution, total) in totals {
        let report = judge(work.path(), &[&dir, &dir.join("solution").join(solution)]);
        assert_eq!(
            statuses(&report),
            expected(&dir, solution, subtasks),
            "{task}/{solution}: {report:#}"
        );
        assert_eq!(report["total"].as_f64(), Some(*total), "{task}/{solution}");
    }
}

#[test]
fn batch_package_official_solutions_get_their_expected_verdicts() {
    check_official_solutions(
        "sum",
        &["00-samples", "01-small", "02-full"],
        &[
            ("model.cpp", 100.0),
            ("int_sum.cpp", 40.0),
            ("quadratic.cpp", 40.0),
            ("off_by_one.cpp", 0.0),
        ],
    );
}

#[test]
fn communication_package_with_checker_official_solutions_get_their_expected_verdicts() {
    check_official_solutions(
        "guess",
        &["00-samples", "01-small", "02-full"],
        &[
            ("binary.cpp", 100.0),
            ("linear.cpp", 15.0),
            ("crash.cpp", 0.0),
            ("off_by_one.cpp", 0.0),
            // Linked with grader/c/stub.c.
            ("binary.c", 100.0),
        ],
    );
}

/// The generated tests of a task, from the cache entry: name → (input, output, inode).
fn generated(work: &Path) -> BTreeMap<String, (Vec<u8>, Vec<u8>, u64)> {
    let compile = work.join("cache/compile");
    let entries: Vec<PathBuf> = std::fs::read_dir(&compile)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tps-tests-")
        })
        .collect();
    assert_eq!(entries.len(), 1, "one cache entry: {entries:?}");
    let mut tests = BTreeMap::new();
    for f in std::fs::read_dir(&entries[0]).unwrap().flatten() {
        let path = f.path();
        if path.extension().is_some_and(|e| e == "in") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let output = std::fs::read(path.with_extension("out")).unwrap();
            let inode = std::fs::metadata(&path).unwrap().ino();
            tests.insert(name, (std::fs::read(&path).unwrap(), output, inode));
        }
    }
    tests
}

#[test]
fn tests_are_generated_as_tps_does_deterministically_and_once() {
    if !can_run() {
        return;
    }
    let dir = tasks().join("sum");
    let solution = dir.join("solution/model.cpp");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    judge(a.path(), &[&dir, &solution]);
    let first = generated(a.path());
    // gen/data.py printed: a testset of 3, then subtasks 0..2 numbered by position.
    let names: Vec<&str> = first.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "0-01",
            "1-01",
            "2-01",
            "2-02",
            "random-small-01",
            "random-small-02",
            "random-small-03"
        ]
    );
    // The manual sample: input.header prepended, CRLF made LF (dos2unix); the expected output
    // is what the model solution printed through the grader.
    assert_eq!(first["0-01"].0, b"tpssum-input-secret\n3\n1 2 3\n");
    assert_eq!(first["0-01"].1, b"tpssum-output-secret\nOK\n6\n");
    // A generated test: header, then the generator's `n` numbers.
    let big = String::from_utf8(first["2-02"].0.clone()).unwrap();
    let mut lines = big.lines();
    assert_eq!(lines.next(), Some("tpssum-input-secret"));
    assert_eq!(lines.next(), Some("200000"));
    assert_eq!(lines.next().unwrap().split(' ').count(), 200000);

    // Judging again reuses the entry (same files, not rewritten).
    judge(a.path(), &[&dir, &dir.join("solution/int_sum.cpp")]);
    assert_eq!(generated(a.path()), first);

    // Another cache makes byte-identical tests (generators are seeded by their arguments).
    judge(b.path(), &[&dir, &solution]);
    let second = generated(b.path());
    assert_eq!(second.len(), first.len());
    for (name, (input, output, _)) in &second {
        assert_eq!((input, output), (&first[name].0, &first[name].1), "{name}");
    }
}

#[test]
fn a_changed_package_makes_new_tests() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("sum");
    copy_tree(&tasks().join("sum"), &copy);
    let solution = copy.join("solution/model.cpp");
    judge(work.path(), &[&copy, &solution]);
    let before = generated(work.path());
    // A different sample: a new cache entry with the new content.
    std::fs::write(copy.join("gen/manual/sample-1.in"), "2\n5 5\n").unwrap();
    let report = judge(work.path(), &[&copy, &solution]);
    assert_eq!(report["total"].as_f64(), Some(100.0));
    let compile = work.path().join("cache/compile");
    let mut entries: Vec<_> = std::fs::read_dir(&compile)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tps-tests-"))
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 2);
    entries.retain(|p| std::fs::read(p.join("0-01.in")).unwrap() != before["0-01"].0);
    assert_eq!(
        std::fs::read(entries[0].join("0-01.out")).unwrap(),
        b"tpssum-output-secret\nOK\n10\n"
    );
}

/// Copies a folder, keeping symbolic links (made absolute, so that they still resolve).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_symlink() {
            std::os::unix::fs::symlink(src.canonicalize().unwrap(), &dst).unwrap();
        } else if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn convert_then_judge_on_parquet_gives_the_same_result() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (problems, tests) = (
        work.path().join("problems.parquet"),
        work.path().join("tests.parquet"),
    );
    let mut cmd = bin(work.path());
    cmd.args(["convert", "--year", "2030", "--day", "1", "--problems-out"])
        .arg(&problems)
        .arg("--tests-out")
        .arg(&tests)
        .arg(tasks().join("sum"))
        .arg(tasks().join("guess"));
    let stdout = ok(cmd.output().unwrap());
    assert!(stdout.contains("wrote 2 problem(s)"), "{stdout}");
    for (task, id, solution) in [
        ("sum", "tpssum", "int_sum.cpp"),
        ("guess", "tpsguess", "linear.cpp"),
    ] {
        let dir = tasks().join(task);
        let solution = dir.join("solution").join(solution);
        let direct = judge(work.path(), &[&dir, &solution]);
        let mut cmd = bin(work.path());
        cmd.args(["judge", "--json", "--problems"])
            .arg(&problems)
            .arg("--tests")
            .arg(&tests)
            .args(["--problem-id", id])
            .arg(&solution);
        let converted: Value = serde_json::from_str(&ok(cmd.output().unwrap())).unwrap();
        assert_eq!(converted["total"], direct["total"], "{task}");
        let tests_of = |report: &Value| -> Vec<(String, String, String, f64)> {
            report["subtasks"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| {
                    let subtask = s["subtask"].as_str().unwrap().to_string();
                    s["tests"].as_array().unwrap().iter().map(move |t| {
                        (
                            subtask.clone(),
                            t["test_name"].as_str().unwrap().to_string(),
                            t["status"].as_str().unwrap().to_string(),
                            t["score"].as_f64().unwrap(),
                        )
                    })
                })
                .collect()
        };
        assert_eq!(tests_of(&converted), tests_of(&direct), "{task}");
        assert_eq!(statuses(&converted), statuses(&direct), "{task}");
    }
}

#[test]
fn evaluate_takes_a_folder_of_tps_tasks() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let subs = work.path().join("subs.jsonl");
    let mut lines = String::new();
    for (uuid, problem, task, solution) in [
        ("s1", "tpssum", "sum", "model.cpp"),
        ("s2", "tpssum", "sum", "int_sum.cpp"),
        ("g1", "tpsguess", "guess", "linear.cpp"),
    ] {
        let code =
            std::fs::read_to_string(tasks().join(task).join("solution").join(solution)).unwrap();
        lines.push_str(
            &serde_json::json!({"uuid": uuid, "problem_id": problem, "year": 2030, "code": code})
                .to_string(),
        );
        lines.push('\n');
    }
    std::fs::write(&subs, lines).unwrap();
    let out = work.path().join("out");
    ok(bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(&out)
        .arg("--problems")
        .arg(tasks())
        .output()
        .unwrap());
    let rows: BTreeMap<String, Value> = std::fs::read_to_string(out.join("subs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["uuid"].as_str().unwrap().to_string(), v)
        })
        .collect();
    let points = |id: &str| rows[id]["all_subtasks_points"].as_f64().unwrap();
    assert_eq!(
        (points("s1"), points("s2"), points("g1")),
        (100.0, 40.0, 15.0)
    );
    let subtasks: Vec<&str> = rows["g1"]["all_subtasks_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(subtasks, ["AC", "PA", "WA"]);
}

#[test]
fn an_input_the_validator_refuses_is_an_error_naming_test_and_validator() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("sum");
    copy_tree(&tasks().join("sum"), &copy);
    // 1001 numbers: too many for subtask `small` (its validator allows 1000).
    let data = std::fs::read_to_string(copy.join("gen/data.py"))
        .unwrap()
        .replace("gen(1000, 1000000)", "gen(1001, 1000000)");
    std::fs::write(copy.join("gen/data.py"), data).unwrap();
    let out = bin(work.path())
        .args(["judge", "--json"])
        .arg(&copy)
        .arg(copy.join("solution/model.cpp"))
        .output()
        .unwrap();
    let err = failed(out);
    assert!(
        err.contains("test 1-01")
            && err.contains("validator.cpp small")
            && err.contains("n = 1001 is outside [1, 1000]"),
        "{err}"
    );
}

#[test]
fn script_mode_refuses_a_communication_task_with_a_checker() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = tasks().join("guess");
    let out = bin(work.path())
        .args(["judge", "--runner", "scripts"])
        .arg(&dir)
        .arg(dir.join("solution/binary.cpp"))
        .output()
        .unwrap();
    let err = failed(out);
    assert!(
        err.contains("tpsguess") && err.contains("native runner only"),
        "{err}"
    );
}

/// A repository cloned where others cannot enter (root's home, `mktemp -d`): its tasks link
/// `testlib.h` out of their folder to one beside them, as IOI 2022's do. Judged as from a
/// world-readable folder once it is a git checkout; before, the links out read as `nobody`.
#[test]
fn a_package_cloned_into_a_private_folder_follows_links_inside_its_repository() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let repository = home.join("tasks");
    std::fs::create_dir_all(&home).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(tasks())
        .arg(&repository)
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let task = repository.join("sum");
    let solution = task.join("solution/model.cpp");
    let refused = failed(
        bin(work.path())
            .args(["judge", "--json"])
            .arg(&task)
            .arg(&solution)
            .output()
            .unwrap(),
    );
    assert!(refused.contains("link out of its package"), "{refused}");
    std::fs::create_dir(repository.join(".git")).unwrap();
    let report = judge(work.path(), &[&task, &solution]);
    assert_eq!(report["total"].as_f64(), Some(100.0), "{report:#}");
}
