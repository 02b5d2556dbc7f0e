//! End-to-end: `ioi-run doctor` speaks the words `ioi-run sandbox` prints, and logs carry no
//! colour codes when stderr is not a terminal.

use std::process::Command;

mod common;

#[test]
fn doctor_uses_the_sandbox_words_and_logs_without_colour_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .arg("doctor")
        .env("IOI_RUN_LOG", "debug")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for internal in [
        "Ok:",
        "TimeLimit",
        "MemoryLimit",
        "RuntimeError",
        "Signaled",
    ] {
        assert!(!stdout.contains(internal), "{internal:?} in {stdout}");
    }
    if !out.status.success() {
        common::skip(&format!("doctor reports this host cannot judge:\n{stdout}"));
        return;
    }
    assert!(
        stdout.contains("time_limit after") && stdout.contains("memory_limit, peak"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("run /bin/true") && l.trim_end().ends_with(" ok")),
        "{stdout}"
    );
    assert!(!stderr.contains('\x1b'), "colour codes in {stderr}");
    // The speed line: the reference workload ran in the sandbox and gave a factor.
    let factor = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("suggested --time-scale "))
        .unwrap_or_else(|| panic!("no suggested --time-scale in {stdout}"));
    assert!(factor.parse::<f64>().is_ok_and(|f| f > 0.0), "{stdout}");
}

#[test]
fn warnings_into_a_pipe_carry_no_colour_codes() {
    // A task folder whose memory limit looks like MiB gets a warning when loaded.
    let work = tempfile::tempdir().unwrap();
    let task = work.path().join("sumpairs");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/problems/sumpairs");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&source)
        .arg(&task)
        .status()
        .unwrap();
    assert!(status.success());
    let json = std::fs::read_to_string(task.join("problem.json")).unwrap();
    std::fs::write(task.join("problem.json"), json.replace("268435456", "256")).unwrap();
    let subs = work.path().join("subs.jsonl");
    std::fs::write(
        &subs,
        "{\"uuid\": \"a\", \"problem_id\": \"sumpairs\", \"code\": \"\"}\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .arg("evaluate")
        .arg(&subs)
        .arg(work.path().join("out"))
        .arg("--problems")
        .arg(&task)
        .arg("--dry-run")
        .env_remove("NO_COLOR")
        .env_remove("IOI_RUN_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("memory limits are in bytes"), "{stderr}");
    assert!(stderr.contains("WARN"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "colour codes in {stderr:?}");
}
