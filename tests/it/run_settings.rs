//! End-to-end: what a caller may ask of `judge`, `evaluate` and `serve` (workers, time scale),
//! and the settings every result records so that results made differently never mix.

use std::path::Path;

use serde_json::Value;

use crate::common;
use common::{bin_shared_cache, failed, is_root_or_skip, problem_dir, subtask_statuses, text};

/// The wdiff fixture's canonical solution after burning `seconds` of its own CPU time: TLE or
/// AC depending on the time limit alone (CPU time does not depend on the machine's load).
fn slow_wdiff_solution(dir: &Path, seconds: f64) -> std::path::PathBuf {
    let canonical = std::fs::read_to_string(problem_dir("wdiff").join("solutions/ac.cpp")).unwrap();
    let source = canonical.replace(
        "int main() {",
        &format!(
            "#include <ctime>\nint main() {{\n    volatile unsigned long spin = 0;\n    \
             while (std::clock() < {seconds} * CLOCKS_PER_SEC) spin++;"
        ),
    );
    let path = dir.join("slow.cpp");
    std::fs::write(&path, source).unwrap();
    path
}

#[test]
fn a_solution_over_the_time_limit_passes_with_a_large_time_scale() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solution = slow_wdiff_solution(work.path(), 1.3);
    let judge = |scale: &str| {
        let out = bin_shared_cache()
            .args(["judge", "--json", "--time-scale", scale])
            .arg(problem_dir("wdiff"))
            .arg(&solution)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let statuses = |report: &Value| -> Vec<String> {
        subtask_statuses(report)
            .into_iter()
            .map(|(_, status)| status)
            .collect()
    };
    // wdiff's limit is 1 s of CPU: 1.3 s is over it, and under it × 3.
    let plain = judge("1");
    assert_eq!(statuses(&plain), ["TLE", "TLE"], "{plain}");
    let scaled = judge("3");
    assert_eq!(statuses(&scaled), ["AC", "AC"], "{scaled}");
    assert_eq!(scaled["total"], 100.0, "{scaled}");
}

#[test]
fn a_time_scale_out_of_range_is_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    for bad in ["0", "-2", "1000", "abc"] {
        let out = bin_shared_cache()
            .arg("judge")
            .arg(format!("--time-scale={bad}"))
            .arg(problem_dir("wdiff"))
            .arg(work.path().join("none.cpp"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = failed(out);
        assert!(err.contains("from 0.1 to 100"), "{bad}: {err}");
    }
}

#[test]
fn too_many_workers_are_refused_at_once() {
    let work = tempfile::tempdir().unwrap();
    for args in [
        vec!["judge", "--jobs", "100000", "p", "s.cpp"],
        vec!["evaluate", "-j", "100000", "d.jsonl", "out"],
        vec!["serve", "--jobs", "100000", "--port", "0"],
    ] {
        let out = bin_shared_cache()
            .current_dir(work.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = failed(out);
        assert!(
            err.contains("100000 workers is more than this host can use: at most"),
            "{args:?}: {err}"
        );
    }
}

/// A dataset of `ids` submissions of the wdiff fixture's canonical solution.
fn wdiff_dataset(dir: &Path, ids: &[&str]) -> std::path::PathBuf {
    let code = std::fs::read_to_string(problem_dir("wdiff").join("solutions/ac.cpp")).unwrap();
    let rows: String = ids
        .iter()
        .map(|id| {
            serde_json::json!({"uuid": id, "problem_id": "wdiff", "code": code}).to_string() + "\n"
        })
        .collect();
    let path = dir.join("model.jsonl");
    std::fs::write(&path, rows).unwrap();
    path
}

fn evaluate(work: &Path, problems: &Path, dataset: &Path, extra: &[&str]) -> std::process::Output {
    bin_shared_cache()
        .current_dir(work)
        .arg("evaluate")
        .arg(dataset)
        .arg("out")
        .arg("--problems")
        .arg(problems)
        .args(extra)
        .output()
        .unwrap()
}

fn result_ids(work: &Path) -> Vec<String> {
    std::fs::read_to_string(work.join("out/model.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["uuid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn a_resume_with_other_settings_or_other_tests_is_refused() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problems = work.path().join("wdiff");
    common::copy_dir(&problem_dir("wdiff"), &problems);
    let dataset = wdiff_dataset(work.path(), &["a"]);
    let first = evaluate(work.path(), &problems, &dataset, &[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let sidecar: Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join("out/model.settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        sidecar["settings"]["compile_profile"], "reference",
        "{sidecar}"
    );
    assert_eq!(sidecar["settings"]["time_scale"], 1.0, "{sidecar}");
    assert!(
        sidecar["settings"]["compiler"]
            .as_str()
            .unwrap()
            .contains("g++"),
        "{sidecar}"
    );

    // Another profile, another time scale: refused before anything is judged, every
    // difference named, the way on given.
    let dataset = wdiff_dataset(work.path(), &["a", "b"]);
    let other = evaluate(
        work.path(),
        &problems,
        &dataset,
        &["--compile-profile", "ioi", "--time-scale", "2"],
    );
    assert_eq!(other.status.code(), Some(2), "a usage error");
    let err = text(&other.stderr);
    assert!(
        err.contains("compile_profile: \"reference\" vs \"ioi\"")
            && err.contains("time_scale: 1.0 vs 2.0")
            && err.contains("--override"),
        "{err}"
    );
    assert_eq!(result_ids(work.path()), ["a"]);

    // Same settings, other tests: the problem is not judged against the new data.
    let output = problems.join("tests/01.out");
    let mut expected = std::fs::read_to_string(&output).unwrap();
    expected.push_str("1\n");
    std::fs::write(&output, expected).unwrap();
    let changed = evaluate(work.path(), &problems, &dataset, &[]);
    assert!(!changed.status.success());
    let err = text(&changed.stderr);
    assert!(
        err.contains("other content") && err.contains("problem_hash"),
        "{err}"
    );
    assert_eq!(result_ids(work.path()), ["a"]);

    // --override starts over with the new settings; the old results are kept.
    let over = evaluate(
        work.path(),
        &problems,
        &dataset,
        &["--compile-profile", "ioi", "--override"],
    );
    assert!(over.status.success(), "{}", text(&over.stderr));
    let mut ids = result_ids(work.path());
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    assert!(work.path().join("out/model.jsonl.bak").is_file());
}
