//! End-to-end: where `judge` and `evaluate` find problems. A bad row in open-r1/ioi problem rows
//! leaves out only the submissions naming its problem; `judge --problems` takes the hub ids
//! `evaluate` takes (here from a fake hub cache, never the network); the upload hint of
//! `evaluate` keeps the results lock home.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common;
use common::text;

/// The shared harness's binary, asking the hub nothing: a fake cache, or a closed port when a
/// test wants a failure. One compile cache for every test of this file.
fn bin(work: &Path) -> Command {
    let mut cmd = common::bin(work);
    cmd.env(
        "IOI_RUN_CACHE",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("problem-sources-cache"),
    )
    .env("HF_HOME", work.join("no-hf-home"))
    .env("HF_ENDPOINT", "http://127.0.0.1:9")
    .env_remove("HF_HUB_CACHE")
    .env_remove("HF_HUB_OFFLINE");
    cmd
}

fn can_judge() -> bool {
    common::is_root_or_skip("judging")
}

fn solution(problem: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("demo/tools/solutions")
        .join(problem)
        .join(name)
}

fn code(problem: &str, name: &str) -> String {
    std::fs::read_to_string(solution(problem, name)).unwrap()
}

/// The demo's orchard and scales as open-r1/ioi rows (year 2025): problems.parquet and
/// tests.parquet, made by `ioi-run convert`.
fn open_r1_demo(work: &Path) -> (PathBuf, PathBuf) {
    let demo = work.join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    let (problems, tests) = (work.join("problems.parquet"), work.join("tests.parquet"));
    let out = bin(work)
        .arg("convert")
        .arg(demo.join("problems/orchard"))
        .arg(demo.join("problems/scales"))
        .args(["--year", "2025", "--problems-out"])
        .arg(&problems)
        .arg("--tests-out")
        .arg(&tests)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (problems, tests)
}

/// The rows of problems.parquet as JSON Lines, with the second row of scales spoiled (its
/// `score` is not a number). Returns the file and the spoiled row's number (from 1).
fn with_a_bad_scales_row(work: &Path, problems: &Path) -> (PathBuf, usize) {
    let mut rows: Vec<serde_json::Map<String, Value>> = ioi_run::dataset::read_rows(problems, None)
        .unwrap()
        .map(|r| r.unwrap().fields)
        .collect();
    let spoiled = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r["id"] == "scales")
        .nth(1)
        .map(|(i, _)| i)
        .expect("scales has two subtasks or more");
    rows[spoiled].insert("score".into(), Value::from("lots"));
    let path = work.join("problems.jsonl");
    let lines: Vec<String> = rows
        .iter()
        .map(|r| Value::from(r.clone()).to_string())
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (path, spoiled + 1)
}

fn submissions(work: &Path, rows: &[(&str, &str, String)]) -> PathBuf {
    let path = work.join("subs.jsonl");
    let lines: Vec<String> = rows
        .iter()
        .map(|(id, problem, code)| {
            serde_json::json!({"uuid": id, "problem_id": problem, "year": 2025, "code": code})
                .to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn results(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn evaluate(
    work: &Path,
    subs: &Path,
    out: &Path,
    problems: &Path,
    tests: &Path,
    extra: &[&str],
) -> Output {
    bin(work)
        .arg("evaluate")
        .arg(subs)
        .arg(out)
        .arg("--problems")
        .arg(problems)
        .arg("--tests")
        .arg(tests)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_bad_problem_row_leaves_out_only_the_submissions_naming_its_problem() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let (parquet, tests) = open_r1_demo(work);
    let (problems, bad_row) = with_a_bad_scales_row(work, &parquet);
    let subs = submissions(
        work,
        &[
            ("good", "orchard", code("orchard", "ac.cpp")),
            ("on-scales", "scales", code("scales", "ac.cpp")),
        ],
    );
    let out_dir = work.join("out");
    // The dry run already names the row, and the submission it leaves out.
    let dry = evaluate(work, &subs, &out_dir, &problems, &tests, &["--dry-run"]);
    let (stdout, stderr) = (text(&dry.stdout), text(&dry.stderr));
    assert_eq!(dry.status.code(), Some(1), "{stdout}{stderr}");
    let row = format!("problems.jsonl row {bad_row}");
    assert!(
        stdout.contains("1 to judge")
            && stdout.contains(&row)
            && stdout.contains("`score`")
            && stdout.contains(
                "subs.jsonl row 2: field `problem_id`: problem 2025/scales could not be loaded"
            ),
        "{stdout}{stderr}"
    );
    if !can_judge() {
        return;
    }
    let out = evaluate(work, &subs, &out_dir, &problems, &tests, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // What could be judged was judged; the bad input makes the exit code 1.
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("judged 1 submission(s)"),
        "{stdout}{stderr}"
    );
    let rows = results(&out_dir.join("subs.jsonl"));
    assert_eq!(
        rows.len(),
        1,
        "the scales submission is written nowhere: {rows:?}"
    );
    assert_eq!(rows[0]["uuid"], "good");
    assert_eq!(rows[0]["all_subtasks_points"].as_f64(), Some(100.0));
    let reports = std::fs::read_to_string(out_dir.join("reports/subs/README.md")).unwrap();
    assert!(!reports.contains("on-scales"), "{reports}");
    // Named (file, row from 1, field) and counted in the summary.
    assert!(
        stderr.contains(&row)
            && stderr.contains("`score`")
            && stderr.contains("1 problem(s) could not be loaded")
            && stderr.contains("1 submission(s) named them"),
        "{stderr}"
    );
}

#[test]
fn a_bad_row_of_a_problem_no_submission_names_only_warns() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let (parquet, tests) = open_r1_demo(work);
    let (problems, bad_row) = with_a_bad_scales_row(work, &parquet);
    let subs = submissions(work, &[("good", "orchard", code("orchard", "ac.cpp"))]);
    let out_dir = work.join("out");
    let out = evaluate(work, &subs, &out_dir, &problems, &tests, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains("warning")
            && stderr.contains(&format!("problems.jsonl row {bad_row}"))
            && stderr.contains("0 submission(s) named them"),
        "{stderr}"
    );
    assert_eq!(results(&out_dir.join("subs.jsonl")).len(), 1);
}

#[test]
fn judge_takes_a_set_with_a_bad_row_and_refuses_only_its_problem() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let (parquet, tests) = open_r1_demo(work);
    let (problems, bad_row) = with_a_bad_scales_row(work, &parquet);
    let judge = |id: &str, sol: &Path| {
        bin(work)
            .arg("judge")
            .arg("--json")
            .arg("--problems")
            .arg(&problems)
            .arg("--tests")
            .arg(&tests)
            .args(["--problem-id", id])
            .arg(sol)
            .output()
            .unwrap()
    };
    let row = format!("problems.jsonl row {bad_row}");
    let out = judge("scales", &solution("scales", "ac.cpp"));
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("problem 2025/scales cannot be judged")
            && stderr.contains(&row)
            && stderr.contains("`score`"),
        "{stderr}"
    );
    if !can_judge() {
        return;
    }
    let out = judge("orchard", &solution("orchard", "ac.cpp"));
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["total"].as_f64(), Some(100.0), "{report}");
    assert!(
        stderr.contains("warning: problem 2025/scales could not be loaded")
            && stderr.contains(&row),
        "{stderr}"
    );
}

/// A hub cache laid out as huggingface_hub and hf-hub lay it out: `refs/main` names a commit,
/// `snapshots/<commit>/` holds links to `blobs/`.
fn cache_dataset(hf_home: &Path, id: &str, file: &Path) {
    let repo = hf_home
        .join("hub")
        .join(format!("datasets--{}", id.replace('/', "--")));
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::copy(file, repo.join("blobs/a1b2c3")).unwrap();
    let data = repo.join("snapshots").join(commit).join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(
        "../../../blobs/a1b2c3",
        data.join("train-00000-of-00001.parquet"),
    )
    .unwrap();
}

#[test]
fn judge_and_evaluate_take_hub_ids_from_the_hub_cache() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let (problems, tests) = open_r1_demo(work);
    let hf_home = work.join("hf");
    cache_dataset(&hf_home, "open-r1/ioi", &problems);
    cache_dataset(&hf_home, "open-r1/ioi-test-cases", &tests);
    let sol = solution("orchard", "ac.cpp");
    // `--problems open-r1/ioi` as in evaluate; the test cases default to their hub id.
    let judge = |offline: bool| {
        let mut cmd = bin(work);
        cmd.env("HF_HOME", &hf_home);
        if offline {
            cmd.env("HF_HUB_OFFLINE", "1");
        }
        cmd.args(["judge", "--json", "--problems", "open-r1/ioi"])
            .args(["--problem-id", "orchard", "--year", "2025"])
            .arg(&sol)
            .output()
            .unwrap()
    };
    let out = judge(true);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["total"].as_f64(), Some(100.0), "{report}");
    assert!(
        !stderr.contains("127.0.0.1"),
        "offline asks no hub: {stderr}"
    );
    // Online but the hub unreachable: the cached copy, with a warning saying so.
    let out = judge(false);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("127.0.0.1") && stderr.contains("hub cache"),
        "{stderr}"
    );
    // evaluate's defaults are the same hub ids.
    let subs = submissions(work, &[("good", "orchard", code("orchard", "ac.cpp"))]);
    let out_dir = work.join("out");
    let out = bin(work)
        .env("HF_HOME", &hf_home)
        .env("HF_HUB_OFFLINE", "1")
        .arg("evaluate")
        .arg(&subs)
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = results(&out_dir.join("subs.jsonl"));
    assert_eq!(rows[0]["all_subtasks_points"].as_f64(), Some(100.0));
    // Not in the cache, offline: said, naming the cache, without asking the hub.
    let out = bin(work)
        .env("HF_HOME", &hf_home)
        .env("HF_HUB_OFFLINE", "1")
        .args([
            "judge",
            "--problems",
            "open-r1/ioi-other",
            "--problem-id",
            "orchard",
        ])
        .arg(&sol)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("HF_HUB_OFFLINE")
            && stderr.contains(&hf_home.join("hub").display().to_string())
            && !stderr.contains("127.0.0.1"),
        "{stderr}"
    );
}

/// Every file under `dir`, relative to it.
fn files(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            e.path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn the_upload_hint_keeps_the_results_lock_home() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let demo = work.join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    let subs = submissions(work, &[("good", "orchard", code("orchard", "ac.cpp"))]);
    // An `org/name` results name, relative to the current folder, as a user types it.
    let out = bin(work)
        .current_dir(work)
        .arg("evaluate")
        .arg(&subs)
        .arg("my-org/results")
        .arg("--problems")
        .arg(demo.join("problems"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let hint = stdout
        .lines()
        .find(|l| l.contains("upload"))
        .unwrap_or_else(|| panic!("no upload hint: {stdout}"));
    assert!(
        hint.contains("hf upload my-org/results my-org/results --repo-type dataset"),
        "{hint}"
    );
    // What the command would send: every file of the folder but those --exclude matches
    // (huggingface_hub matches the relative path with fnmatch, as glob::Pattern does).
    let excludes: Vec<glob::Pattern> = hint
        .split("--exclude '")
        .skip(1)
        .map(|rest| glob::Pattern::new(rest.split('\'').next().unwrap()).unwrap())
        .collect();
    let all = files(&work.join("my-org/results"));
    assert!(
        all.iter().any(|f| f.ends_with(".lock")),
        "the lock file is in the folder: {all:?}"
    );
    let sent: Vec<&String> = all
        .iter()
        .filter(|f| !excludes.iter().any(|p| p.matches(f)))
        .collect();
    assert!(
        sent.iter().all(|f| !f.ends_with(".lock")),
        "{hint} would upload {sent:?}"
    );
    assert!(
        sent.iter().any(|f| f.ends_with(".parquet")) && sent.iter().any(|f| *f == "README.md"),
        "the results themselves are sent: {sent:?}"
    );
}
