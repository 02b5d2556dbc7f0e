//! End-to-end: a closed stdout (`ioi-run report x.jsonl | head -0`) ends the command quietly
//! with success instead of a panic (exit 101).

use std::process::{Command, Stdio};

#[test]
fn report_into_a_closed_pipe_exits_zero_without_a_panic() {
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("r.jsonl");
    std::fs::write(
        &results,
        r#"{"uuid":"a","problem_id":"x","year":2024,"code":null,"target_subtask":null,"code_compiles":false,"all_subtasks_points":0,"all_subtasks_results":[]}"#.to_string() + "\n",
    )
    .unwrap();
    // A pipe whose read end is closed before the command writes: every write is EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .arg("report")
        .arg(&results)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "a closed pipe ends quietly: {stderr}");
    // The reports were still written: the pipe only carried their paths.
    assert!(work.path().join("reports/r/README.md").is_file());
}
