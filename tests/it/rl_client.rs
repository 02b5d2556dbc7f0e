//! RL training against `ioi-run serve`, end to end: the real binary on eight free ports, and
//! the Python client of `tests/rl_client/` (open-r1's behaviour, standard library only) with
//! two training processes, two requests in flight per endpoint, IOI rewards compared with
//! `ioi-run judge`, and Codeforces rewards for C++ and Python, with and without `checker.py`,
//! `INPUT_MODE=file`, compile error, TLE, MLE, RE and the reward hacks. The server gets fewer
//! slots than the client sends requests, so requests wait for room: none may be lost.

use std::path::Path;
use std::process::Command;

use crate::common;

/// `python3`, or `None` (the test then skips, unless `CI` is set).
fn python3() -> Option<&'static str> {
    let found = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("python3");
    }
    common::skip("python3 is not installed");
    None
}

#[test]
fn the_python_rl_client_gets_the_expected_rewards_from_many_endpoints() {
    let Some(python) = python3() else { return };
    let binary = env!("CARGO_BIN_EXE_ioi-run");
    let cache = tempfile::tempdir().unwrap();
    let server = common::ServeProcess::start("0,0,0,0,0,0,0,0", cache.path(), "PISTON_ENDPOINTS");
    let endpoints = server.announced.clone();
    assert_eq!(endpoints.split(',').count(), 8, "{endpoints}");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rl_client/run_tests.py");
    let output = Command::new(python)
        .arg(&script)
        .args(["--endpoints", &endpoints, "--ioi-run", binary])
        .arg("--cache-dir")
        .arg(cache.path())
        .env("PISTON_MAX_REQUESTS_PER_ENDPOINT", "2")
        .output()
        .expect("python3 runs the client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let server_log = server.stop();
    assert!(
        output.status.success(),
        "the RL client saw unexpected rewards:\n{stdout}\nserver:\n{server_log}"
    );
    assert!(stdout.contains("all rewards as expected"), "{stdout}");
    // The hack this test exists for, named: printing 1 passes nothing.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("codeforces sumparity/print1.cpp")
                && l.contains("passed 0 (expected 0)")),
        "{stdout}"
    );
}
