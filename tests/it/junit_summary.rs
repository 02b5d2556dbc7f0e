//! `tools/junit-summary`, the closing line of `tools/test` that CI reads: a test that printed
//! `SKIPPED: <why>` and passed counts as skipped, with its reason, not as passed; a failure
//! counts as failed even when it printed `SKIPPED:` on its way (under `CI` a skip fails).

use std::process::Command;

/// A report as nextest writes it with `store-success-output`.
const REPORT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="4" failures="1" errors="0" uuid="0" timestamp="2026-01-01T00:00:00Z" time="1.0">
    <testsuite name="ioi-run::judge" tests="2" disabled="0" errors="0" failures="0">
        <testcase name="judges_the_fixture" classname="ioi-run::judge" timestamp="2026-01-01T00:00:00Z" time="0.5">
            <system-out>
running 1 test
test judges_the_fixture ... ok
</system-out>
            <system-err></system-err>
        </testcase>
        <testcase name="v2_root_in_a_session_scope" classname="ioi-run::cgroup_v2" timestamp="2026-01-01T00:00:00Z" time="0.1">
            <system-out>running 1 test</system-out>
            <system-err>SKIPPED: the v2 VM is not installed (run tools/v2vm/run.sh --prepare &amp; retry &quot;here&quot;)
</system-err>
        </testcase>
    </testsuite>
    <testsuite name="ioi-run::slurm" tests="2" disabled="0" errors="0" failures="1">
        <testcase name="array_job_runs" classname="ioi-run::slurm" timestamp="2026-01-01T00:00:00Z" time="0.1">
            <failure type="test failure">thread panicked</failure>
            <system-err>SKIPPED: no Slurm cluster
thread &apos;array_job_runs&apos; panicked: CI must be able to run this test</system-err>
        </testcase>
        <testcase name="quiet" classname="ioi-run::slurm" timestamp="2026-01-01T00:00:00Z" time="0.1"/>
    </testsuite>
</testsuites>
"#;

#[test]
fn skipped_tests_are_counted_and_named_apart_from_passed_ones() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let report = dir.path().join("junit.xml");
    std::fs::write(&report, REPORT).expect("the report");
    let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tools/junit-summary"))
        .arg(&report)
        .output()
        .expect("tools/junit-summary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines,
        [
            "Skipped tests (each prints why; install what it names to run it):",
            "  ioi-run::cgroup_v2::v2_root_in_a_session_scope: the v2 VM is not installed \
             (run tools/v2vm/run.sh --prepare & retry \"here\")",
            "4 tests run: 2 passed, 1 failed, 1 skipped",
        ]
    );
}
