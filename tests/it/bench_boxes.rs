//! `ioi-run bench boxes --trace`, smallest: two thread counts for a fraction of a second each.
//! Read from what it prints: every thread count ran boxes, the trace found each box's phases
//! (its cgroups made and removed, its namespaces cloned, its `pivot_root`), the projection was
//! made, and nothing of the trace is left (its tracefs instances, a tracefs mount it made).
//! Nothing here looks at a time.

use crate::common;
use common::is_root_or_skip;

/// The calls per box of `phase` in the table printed after `threads N:`.
fn calls_per_box(report: &str, threads: usize, phase: &str) -> f64 {
    let table = report
        .split(&format!("threads {threads}: lock waits"))
        .nth(1)
        .unwrap_or_else(|| panic!("no trace for {threads} threads in:\n{report}"));
    let row = table
        .lines()
        .find(|line| line.trim_start().starts_with(phase))
        .unwrap_or_else(|| panic!("no phase {phase:?} for {threads} threads in:\n{report}"));
    row.trim_start()[phase.len()..]
        .split_whitespace()
        .next()
        .and_then(|calls| calls.parse().ok())
        .unwrap_or_else(|| panic!("no count in {row:?}"))
}

fn tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .any(|line| line.split_whitespace().nth(1) == Some("/sys/kernel/tracing"))
}

/// Our tracefs instances left (none when tracefs is not mounted).
fn instances_left() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("ioi-run-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_traced_box_loop_finds_every_phase_and_leaves_nothing_behind() {
    if !is_root_or_skip("tracing boxes") {
        return;
    }
    if !std::path::Path::new("/sys/kernel/tracing").is_dir() {
        common::skip("this kernel has no tracefs");
        return;
    }
    let mounted_before = tracefs_mounted();
    let work = tempfile::tempdir().unwrap();
    let out = common::bin(work.path())
        .args([
            "bench",
            "boxes",
            "--threads",
            "1,3",
            "--seconds",
            "0.3",
            "--trace",
        ])
        .output()
        .unwrap();
    let report = common::ok(out);
    for threads in [1, 3] {
        let boxes: u64 = report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("threads {threads}: boxes ")))
            .and_then(|rest| rest.split(',').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no box count for {threads} threads in:\n{report}"));
        assert!(boxes > 0, "{report}");
        // A run's cgroup in each hierarchy (one on cgroup v2), made and removed; a clone into
        // new namespaces a box, and more for the boxes built ahead and not run yet; one
        // pivot_root a box, on its run's path.
        assert!(
            calls_per_box(&report, threads, "cgroup mkdir") >= 0.5,
            "{report}"
        );
        assert!(
            calls_per_box(&report, threads, "cgroup rmdir") >= 0.5,
            "{report}"
        );
        let clones = calls_per_box(&report, threads, "clone (new namespaces)");
        assert!(clones >= 0.5, "{report}");
        let pivots = calls_per_box(&report, threads, "pivot_root");
        assert!((0.5..1.5).contains(&pivots), "{report}");
    }
    assert!(
        report.contains("serialized per box (ms, upper bound) cgroup_mutex"),
        "{report}"
    );
    assert_eq!(
        report.matches("saturates at").count(),
        3,
        "a projection per workload:\n{report}"
    );
    assert_eq!(instances_left(), Vec::<String>::new());
    assert_eq!(
        tracefs_mounted(),
        mounted_before,
        "the tracefs mount changed"
    );
}
