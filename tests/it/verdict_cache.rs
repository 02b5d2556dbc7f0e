//! The verdict cache (src/judge/verdicts.rs): a program judged before on the same problem,
//! test, limits and settings is answered with the same verdict, and nothing else is: not
//! another program, not another problem, test or limit.

use std::path::Path;
use std::time::Duration;

use ioi_run::problem::{GraderFile, TaskType};
use ioi_run::server::piston::IoiOutcome;
use ioi_run::server::IoiJob;

use crate::common;
use common::{is_root_or_skip, text};

const GRADER: &str = "#include \"add.h\"\n#include <cstdio>\nint main() { int a, b; if (scanf(\"%d %d\", &a, &b) != 2) return 1; printf(\"%d\\n\", add(a, b)); }\n";

fn job(submission: &str) -> IoiJob {
    IoiJob {
        problem_id: "add".into(),
        submission: submission.as_bytes().to_vec(),
        input: b"2 3\n".to_vec(),
        expected_output: Some(b"5\n".to_vec()),
        grader_files: vec![
            GraderFile {
                path: ioi_run::name::RelativePath::parse("graders/add.h").unwrap(),
                content: b"int add(int a, int b);\n".to_vec(),
            },
            GraderFile {
                path: ioi_run::name::RelativePath::parse("graders/grader.cpp").unwrap(),
                content: GRADER.as_bytes().to_vec(),
            },
        ],
        time_limit: 1.0,
        memory_limit: 256 << 20,
        task: TaskType::Batch,
        run_timeout: Duration::from_secs(4),
        compile_timeout: None,
    }
}

const ADD: &str = "#include \"add.h\"\nint add(int a, int b) { return a + b; }\n";

fn score(outcome: &IoiOutcome) -> f64 {
    match outcome {
        IoiOutcome::Judged { score, .. } => *score,
        other => panic!("not judged: {other:?}"),
    }
}

#[test]
fn the_server_answers_the_same_request_from_the_cache_and_nothing_else() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let executor = common::judge_executor(dir.path().join("cache"));
    let first = executor.judge_ioi(job(ADD)).unwrap();
    assert_eq!(score(&first), 1.0);
    assert_eq!(executor.verdict_hits(), 0);
    assert_eq!(executor.judge_ioi(job(ADD)).unwrap(), first);
    assert_eq!(executor.verdict_hits(), 1);

    // Another program, the same test: judged, and wrong.
    let wrong = ADD.replace("a + b", "a - b");
    assert_eq!(score(&executor.judge_ioi(job(&wrong)).unwrap()), 0.0);
    // The same program against another expected output: judged afresh, not the cached 1.
    let mut other_test = job(ADD);
    other_test.expected_output = Some(b"6\n".to_vec());
    assert_eq!(score(&executor.judge_ioi(other_test).unwrap()), 0.0);
    // Another limit, another grader: judged afresh.
    let mut other_limit = job(ADD);
    other_limit.time_limit = 2.0;
    assert_eq!(score(&executor.judge_ioi(other_limit).unwrap()), 1.0);
    let mut other_grader = job(ADD);
    other_grader.grader_files[1].content = GRADER.replace("add(a, b)", "add(a, b) + 1").into();
    assert_eq!(score(&executor.judge_ioi(other_grader).unwrap()), 0.0);
    assert_eq!(executor.verdict_hits(), 1, "only the identical request");

    // The answer from the cache is a fresh judgement's.
    let fresh = common::judge_executor(dir.path().join("other-cache"));
    assert_eq!(fresh.judge_ioi(job(ADD)).unwrap(), first);
}

/// A checker that accepts and says so at length: 1 MiB of message on stderr.
const VERBOSE_CHECKER: &str = r#"#include <cstdio>
#include <cstring>
int main() {
    static char message[1 << 20];
    memset(message, 'm', sizeof message);
    printf("1\n");
    fwrite(message, 1, sizeof message, stderr);
}
"#;

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}

#[test]
fn verdicts_with_long_checker_messages_are_kept_within_the_bound_in_bytes() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let executor = common::judge_executor(dir.path().join("cache"));
    let verbose = |n: usize| {
        let mut job = job(ADD);
        job.input = format!("{n} 0\n").into_bytes();
        job.expected_output = Some(format!("{n}\n").into_bytes());
        job.grader_files.push(GraderFile {
            path: ioi_run::name::RelativePath::parse("checker/checker.cpp").unwrap(),
            content: VERBOSE_CHECKER.as_bytes().to_vec(),
        });
        job
    };
    let feedback = |outcome: IoiOutcome| match outcome {
        IoiOutcome::Judged { score, feedback } => (score, feedback.len()),
        other => panic!("not judged: {other:?}"),
    };
    assert_eq!(
        feedback(executor.judge_ioi(verbose(0)).unwrap()),
        (1.0, 1 << 20)
    );
    let before = resident_bytes();
    // 300 distinct requests, each with a verdict of 1 MiB.
    for n in 1..=300 {
        assert_eq!(
            feedback(executor.judge_ioi(verbose(n)).unwrap()),
            (1.0, 1 << 20)
        );
        let bytes = executor.verdict_bytes();
        assert!(
            bytes <= ioi_run::judge::verdicts::DEFAULT_BYTES,
            "{bytes} bytes after {n}"
        );
    }
    let kept = executor.verdict_entries();
    assert!((50..=64).contains(&kept), "{kept} verdicts of 1 MiB kept");
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 200 << 20, "the judge grew by {} MiB", grown >> 20);
    // The newest are answered from the cache, the oldest were let go and are judged again.
    let hits = executor.verdict_hits();
    executor.judge_ioi(verbose(300)).unwrap();
    assert_eq!(executor.verdict_hits(), hits + 1);
    executor.judge_ioi(verbose(1)).unwrap();
    assert_eq!(executor.verdict_hits(), hits + 1);
}

const ORCHARD_AC: &str = "#include \"orchard.h\"\n#include <bits/stdc++.h>\nusing namespace std;\nvector<long long> split_orchard(vector<int> A) {\n  long long t = 0, l = 0, best = LLONG_MAX, k = 1;\n  for (int a : A) t += a;\n  for (size_t i = 0; i + 1 < A.size(); i++) { l += A[i]; long long d = llabs(2 * l - t); if (d < best) { best = d; k = i + 1; } }\n  return {best, k};\n}\n";

fn row(id: &str, problem: &str, code: &str) -> String {
    serde_json::json!({"uuid": id, "problem_id": problem, "year": 2025, "code": code}).to_string()
}

/// The rows of a results file by id, without their ids and the timings of every test.
fn rows_without_timings(path: &Path) -> std::collections::HashMap<String, serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = row["uuid"].as_str().unwrap().to_string();
            for subtask in row["all_subtasks_results"].as_array_mut().unwrap() {
                for test in subtask["test_results"].as_array_mut().unwrap() {
                    let test = test.as_object_mut().unwrap();
                    for timing in ["time", "wall_time", "memory"] {
                        test.remove(timing);
                    }
                }
            }
            for own in ["uuid", "submission_id"] {
                row.as_object_mut().unwrap().remove(own);
            }
            (id, row)
        })
        .collect()
}

#[test]
fn evaluate_answers_copies_with_the_first_verdict_and_judges_the_rest() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let demo = work.path().join("demo");
    ioi_run::evaluate::demo::extract(&demo).unwrap();
    let wrong = ORCHARD_AC.replace("return {best, k};", "return {best, k + 1};");
    let commented = format!("{ORCHARD_AC}// the same program, another source\n");
    let subs = work.path().join("subs.jsonl");
    let rows = [
        row("ac", "orchard", ORCHARD_AC),
        row("ac-copy", "orchard", ORCHARD_AC),
        row("ac-commented", "orchard", &commented),
        row("wrong", "orchard", &wrong),
        row("wrong-copy", "orchard", &wrong),
        // The same code on another problem: a verdict of its own.
        row("elsewhere", "skyline", ORCHARD_AC),
    ];
    std::fs::write(&subs, rows.join("\n") + "\n").unwrap();
    let out_dir = work.path().join("out");
    let out = common::bin(work.path())
        .arg("evaluate")
        .arg(&subs)
        .arg(&out_dir)
        .arg("--problems")
        .arg(demo.join("problems"))
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("judged 6 submission(s)")
            && stdout.contains("(2 answered with the verdict of an identical one;"),
        "{stdout}"
    );
    let results = rows_without_timings(&out_dir.join("subs.jsonl"));
    assert_eq!(results.len(), 6);
    assert_eq!(results["ac"]["all_subtasks_points"].as_f64(), Some(100.0));
    // The copy and a fresh judgement of the same program (another source) agree with the
    // first in every field but timings (and their code).
    assert_eq!(results["ac-copy"], results["ac"]);
    let mut fresh = results["ac-commented"].clone();
    fresh["code"] = results["ac"]["code"].clone();
    assert_eq!(fresh, results["ac"]);
    assert_eq!(results["wrong-copy"], results["wrong"]);
    assert_ne!(
        results["wrong"]["all_subtasks_points"],
        results["ac"]["all_subtasks_points"]
    );
    assert_eq!(results["elsewhere"]["code_compiles"], false);
}
