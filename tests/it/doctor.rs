//! End-to-end: `ioi-run doctor` speaks the words `ioi-run sandbox` prints, and logs carry no
//! colour codes when stderr is not a terminal.

use std::process::Command;

use crate::common;

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
        .find_map(|l| l.split("suggested --time-scale ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no suggested --time-scale in {stdout}"));
    assert!(factor.parse::<f64>().is_ok_and(|f| f > 0.0), "{stdout}");
}

/// A task folder whose memory limit looks like MiB (a warning when loaded) and one submission
/// for it, in `work`.
fn task_with_a_warning(work: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let task = work.join("sumpairs");
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
    let subs = work.join("subs.jsonl");
    std::fs::write(
        &subs,
        "{\"uuid\": \"a\", \"problem_id\": \"sumpairs\", \"code\": \"\"}\n",
    )
    .unwrap();
    (task, subs)
}

#[test]
fn log_colours_at_a_terminal_follow_color_and_no_color() {
    if Command::new("script").arg("--version").output().is_err() {
        common::skip("`script` (util-linux) is missing: no terminal to test colours at");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (task, subs) = task_with_a_warning(work.path());
    let cases = [
        ("auto", false, true),
        ("auto", true, false),
        ("never", false, false),
        ("always", true, true),
    ];
    for (k, (color, no_color, coloured)) in cases.into_iter().enumerate() {
        let command = format!(
            "{} --color {color} evaluate {} {} --problems {} --dry-run",
            env!("CARGO_BIN_EXE_ioi-run"),
            subs.display(),
            work.path().join(format!("out{k}")).display(),
            task.display()
        );
        // `script` gives the command a terminal and copies what it shows to stdout.
        let mut script = Command::new("script");
        script
            .args(["-qec", &command, "/dev/null"])
            .env_remove("IOI_RUN_LOG");
        match no_color {
            true => script.env("NO_COLOR", "1"),
            false => script.env_remove("NO_COLOR"),
        };
        let out = script.output().unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(shown.contains("memory limits are in bytes"), "{shown}");
        assert_eq!(
            shown.contains("\x1b["),
            coloured,
            "--color {color}, NO_COLOR {no_color}: {shown:?}"
        );
    }
}

#[test]
fn warnings_into_a_pipe_carry_no_colour_codes() {
    // A task folder whose memory limit looks like MiB gets a warning when loaded.
    let work = tempfile::tempdir().unwrap();
    let (task, subs) = task_with_a_warning(work.path());
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
    assert!(stderr.contains("warning: "), "{stderr}");
    assert!(!stderr.contains('\x1b'), "colour codes in {stderr:?}");
}

#[test]
fn doctor_json_reports_every_check_and_whether_the_host_can_judge() {
    let out = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    let can_judge = report["can_judge"]
        .as_bool()
        .expect("can_judge is a boolean");
    assert_eq!(can_judge, out.status.success(), "{report}");
    let checks = report["checks"].as_array().expect("a list of checks");
    let named = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name:?} in {report}"))
    };
    assert!(named("g++")["detail"].is_string(), "{report}");
    for check in checks.iter().chain(report["timing"].as_array().unwrap()) {
        let status = check["status"].as_str().unwrap_or_default();
        assert!(
            ["ok", "warn", "fail", "unknown"].contains(&status),
            "{check}"
        );
    }
    let failed = checks.iter().any(|c| c["status"] == "fail");
    assert_eq!(failed, !can_judge, "{report}");
    if can_judge {
        assert_eq!(named("run /bin/true")["status"], "ok", "{report}");
        assert_eq!(named("CPU time limit")["status"], "ok", "{report}");
    }
}
