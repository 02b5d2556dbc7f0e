//! End-to-end: what a caller may ask of `judge`, `evaluate` and `serve` (workers, time scale),
//! and the settings every result records so that results made differently never mix.

use std::path::Path;

use serde_json::Value;

mod common;
use common::{bin_shared_cache, failed, is_root_or_skip, problem_dir, subtask_statuses, text};

/// The wdiff fixture's canonical solution after burning `seconds` of its own CPU time: TLE or
/// AC depending on the time limit alone (CPU time does not depend on the machine's load).
fn slow_wdiff_solution(dir: &Path, seconds: f64) -> std::path::PathBuf {
    let canonical =
        std::fs::read_to_string(problem_dir("wdiff").join("solutions/ac.cpp")).unwrap();
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
