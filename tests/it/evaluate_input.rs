//! End-to-end: `ioi-run evaluate` facing what goes wrong in real use: two runs into one results
//! folder, bad rows, a broken task folder, missing files, empty datasets, interrupts, and the
//! summary it ends with.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{is_root_or_skip, text};

/// The binary with its cache and temporary folder in `work`, online unless a test says not.
fn bin(work: &Path) -> Command {
    let mut cmd = common::bin(work);
    cmd.env_remove("HF_HUB_OFFLINE");
    cmd
}

fn demo_problems(work: &Path) -> PathBuf {
    let demo = work.join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    demo.join("problems")
}

const ORCHARD_AC: &str = "#include \"orchard.h\"\n#include <bits/stdc++.h>\nusing namespace std;\nvector<long long> split_orchard(vector<int> A) {\n  long long t = 0, l = 0, best = LLONG_MAX, k = 1;\n  for (int a : A) t += a;\n  for (size_t i = 0; i + 1 < A.size(); i++) { l += A[i]; long long d = llabs(2 * l - t); if (d < best) { best = d; k = i + 1; } }\n  return {best, k};\n}\n";

fn row(id: &str, problem: &str, code: &str) -> String {
    serde_json::json!({"uuid": id, "problem_id": problem, "year": 2025, "code": code}).to_string()
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn evaluate(work: &Path, subs: &Path, out: &Path, problems: &Path, extra: &[&str]) -> Output {
    bin(work)
        .arg("evaluate")
        .arg(subs)
        .arg(out)
        .arg("--problems")
        .arg(problems)
        .args(extra)
        .output()
        .unwrap()
}

/// Judging needs root (namespaces, cgroups): without it the test says so and passes, except
/// in CI, where it must fail loudly.
fn can_judge() -> bool {
    is_root_or_skip("judging")
}

#[test]
fn a_bad_row_and_a_broken_task_folder_do_not_refuse_the_dataset() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = demo_problems(work.path());
    // An unrelated task folder whose problem.json is broken.
    let broken = problems.join("zz-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("problem.json"), "{ not json").unwrap();
    let subs = work.path().join("subs.jsonl");
    std::fs::write(
        &subs,
        format!(
            "{}\n{}\n",
            row("good", "orchard", ORCHARD_AC),
            row("bad", "nosuch", "int main(){}")
        ),
    )
    .unwrap();
    let out_dir = work.path().join("out");
    let dry = evaluate(work.path(), &subs, &out_dir, &problems, &["--dry-run"]);
    let dry_text = text(&dry.stdout);
    assert!(
        dry_text.contains("1 to judge") && dry_text.contains("zz-broken"),
        "{dry_text}{}",
        text(&dry.stderr)
    );
    let out = evaluate(work.path(), &subs, &out_dir, &problems, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // Bad input makes the exit code 1, but what could be judged was judged.
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("judged 1 submission(s)"),
        "{stdout}{stderr}"
    );
    let rows = lines(&out_dir.join("subs.jsonl"));
    assert_eq!(rows.len(), 1, "the bad row is written nowhere");
    assert_eq!(rows[0]["uuid"], "good");
    assert_eq!(rows[0]["all_subtasks_points"].as_f64(), Some(100.0));
    // The bad row is named by file, row (counted from 1, as the line number) and field.
    assert!(
        stderr.contains("subs.jsonl row 2")
            && stderr.contains("`problem_id`")
            && stderr.contains("nosuch")
            && stderr.contains("1 row(s)"),
        "{stderr}"
    );
    // The broken folder is named, with why.
    assert!(stderr.contains("zz-broken"), "{stderr}");
}

#[test]
fn rows_over_the_byte_bounds_are_skipped_naming_the_field_and_never_written_back() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = demo_problems(work.path());
    // One `code` of 17 MiB (over the 16 MiB a field holds), one line of 70 MiB (over the
    // 64 MiB a row takes, never parsed), and a good row after each.
    let padded = |mib: usize| format!("// {}\n{ORCHARD_AC}", "x".repeat(mib << 20));
    let subs = work.path().join("subs.jsonl");
    std::fs::write(
        &subs,
        format!(
            "{}\n{}\n{}\n{}\n",
            row("big-field", "orchard", &padded(17)),
            row("good", "orchard", ORCHARD_AC),
            row("big-line", "orchard", &padded(70)),
            row("good-too", "orchard", ORCHARD_AC),
        ),
    )
    .unwrap();
    let out_dir = work.path().join("out");
    let out = evaluate(work.path(), &subs, &out_dir, &problems, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("2 row(s) skipped"), "{stderr}");
    assert!(
        stdout.contains("judged 2 submission(s)"),
        "{stdout}{stderr}"
    );
    let judged: Vec<String> = lines(&out_dir.join("subs.jsonl"))
        .iter()
        .map(|r| r["uuid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(judged, ["good", "good-too"]);
    let results_bytes = std::fs::metadata(out_dir.join("subs.jsonl")).unwrap().len();
    assert!(results_bytes < 1 << 20, "{results_bytes} bytes of results");
    let skipped = lines(&out_dir.join("subs.skipped.jsonl"));
    let named: Vec<(u64, &str)> = skipped
        .iter()
        .map(|r| (r["row"].as_u64().unwrap(), r["field"].as_str().unwrap()))
        .collect();
    assert_eq!(named, [(1, "code"), (3, "code")], "{skipped:?}");
    let errors: Vec<&str> = skipped
        .iter()
        .map(|r| r["error"].as_str().unwrap())
        .collect();
    assert!(
        errors[0].contains("over the 16 MiB a field may hold"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("over the 64 MiB a row may take"),
        "{errors:?}"
    );
}

#[test]
fn a_second_run_into_the_same_results_stops_and_names_the_first() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("out");
    let results = out_dir.join("submissions.jsonl");
    let mut first = bin(work.path())
        .args(["evaluate", "--demo", "--jobs", "1"])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill the first run whatever happens below.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let pid = first.id();
    let start = Instant::now();
    while lines(&results).is_empty() && start.elapsed() < Duration::from_secs(300) {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first run ended early"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = Kill(first);
    let second = bin(work.path())
        .args(["evaluate", "--demo"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = text(&second.stderr);
    assert!(!second.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {pid}")) && stderr.contains("another ioi-run"),
        "{stderr}"
    );
    drop(first);
    // No line was written twice.
    let rows = lines(&results);
    let mut ids: Vec<&str> = rows.iter().map(|r| r["uuid"].as_str().unwrap()).collect();
    ids.sort();
    let before = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), before);
}

#[test]
fn a_missing_file_is_no_such_file_and_offline_mode_does_not_touch_the_hub() {
    let work = tempfile::tempdir().unwrap();
    let problems = demo_problems(work.path());
    let missing = work.path().join("results/model.jsonl");
    let out = evaluate(
        work.path(),
        &missing,
        &work.path().join("out"),
        &problems,
        &[],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no such file") && !stderr.contains("huggingface.co"),
        "{stderr}"
    );
    // A hub id with HF_HUB_OFFLINE set: said at once, without a network attempt.
    let out = bin(work.path())
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .args(["evaluate", "some-org/some-dataset"])
        .arg(work.path().join("out"))
        .arg("--problems")
        .arg(&problems)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("HF_HUB_OFFLINE") && !stderr.contains("127.0.0.1"),
        "{stderr}"
    );
}

#[test]
fn empty_datasets_and_generations_without_code_are_warned_with_counts() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = demo_problems(work.path());
    let empty = work.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = evaluate(
        work.path(),
        &empty,
        &work.path().join("out1"),
        &problems,
        &[],
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("holds no submission"), "{stderr}");
    let subs = work.path().join("nocode.jsonl");
    let rows = [
        serde_json::json!({"uuid": "a", "problem_id": "orchard", "year": 2025, "code": "", "generation": "I give up"}),
        serde_json::json!({"uuid": "b", "problem_id": "orchard", "year": 2025, "code": "", "generation": "thinking..."}),
        serde_json::json!({"uuid": "c", "problem_id": "orchard", "year": 2025, "code": ORCHARD_AC}),
    ];
    let text_rows: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    std::fs::write(&subs, text_rows.join("\n") + "\n").unwrap();
    let out = evaluate(
        work.path(),
        &subs,
        &work.path().join("out2"),
        &problems,
        &[],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 of 3 submission(s) have no code and no ```cpp block"),
        "{stderr}"
    );
}

#[test]
fn cache_hits_are_counted_apart_from_compiles() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = demo_problems(work.path());
    let subs = work.path().join("subs.jsonl");
    std::fs::write(&subs, row("a", "orchard", ORCHARD_AC) + "\n").unwrap();
    let out_dir = work.path().join("out");
    let first = evaluate(work.path(), &subs, &out_dir, &problems, &[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let second = evaluate(work.path(), &subs, &out_dir, &problems, &["--override"]);
    let stdout = text(&second.stdout);
    assert!(second.status.success(), "{}", text(&second.stderr));
    // Everything (the submission and the checker) came from the cache the first run filled.
    assert!(stdout.contains("; 0 compiled, "), "{stdout}");
    assert!(!stdout.contains(" 0 from the compile cache"), "{stdout}");
}

#[test]
fn an_interrupted_run_says_so_once_and_leaves_no_temporary_file() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("out");
    let results = out_dir.join("submissions.jsonl");
    let child = bin(work.path())
        .args(["evaluate", "--demo", "--jobs", "2"])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while lines(&results).len() < 2 && start.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    for scary in ["judge side", "init died", "not judged"] {
        assert!(!stderr.contains(scary), "{scary:?} in {stderr}");
    }
    let leftovers: Vec<PathBuf> = walk(&out_dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[test]
fn the_demo_defaults_to_an_ignored_folder() {
    let work = tempfile::tempdir().unwrap();
    let out = bin(work.path())
        .current_dir(work.path())
        .args(["evaluate", "--demo", "--dry-run"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(work
        .path()
        .join("ioi-run-demo/demo-input/submissions.jsonl")
        .is_file());
    let gitignore =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".gitignore")).unwrap();
    assert!(
        gitignore.lines().any(|l| l.trim() == "/ioi-run-demo/"),
        "{gitignore}"
    );
}

#[test]
fn a_task_folder_without_a_year_is_named_by_its_id_in_the_plan() {
    let work = tempfile::tempdir().unwrap();
    let sumpairs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/problems/sumpairs");
    let subs = work.path().join("subs.jsonl");
    std::fs::write(
        &subs,
        serde_json::json!({"uuid": "a", "problem_id": "sumpairs", "code": "int main(){}"})
            .to_string()
            + "\n",
    )
    .unwrap();
    let out = evaluate(
        work.path(),
        &subs,
        &work.path().join("out"),
        &sumpairs,
        &["--dry-run"],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.lines().any(|l| l.trim() == "sumpairs: 1") && !stdout.contains("0/sumpairs"),
        "{stdout}"
    );
}

#[test]
fn reports_of_a_task_folder_without_year_or_day_invent_neither() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let sumpairs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/problems/sumpairs");
    let subs = work.path().join("subs.jsonl");
    // No `year`: the submission defaults to 2024, but the problem does not say its year.
    std::fs::write(
        &subs,
        serde_json::json!({"uuid": "a", "problem_id": "sumpairs", "code": ""}).to_string() + "\n",
    )
    .unwrap();
    let out_dir = work.path().join("out");
    let out = evaluate(work.path(), &subs, &out_dir, &sumpairs, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reports = out_dir.join("reports/subs");
    assert!(reports.join("sumpairs.md").is_file());
    let readme = std::fs::read_to_string(reports.join("README.md")).unwrap();
    assert!(
        readme.contains("# Problems without a year") && !readme.contains("2024"),
        "{readme}"
    );
    let row = readme
        .lines()
        .find(|l| l.contains("sumpairs"))
        .unwrap_or_else(|| panic!("{readme}"));
    assert!(row.starts_with("| -"), "an unknown day is `-`: {row}");
}
