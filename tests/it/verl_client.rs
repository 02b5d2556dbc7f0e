//! verl's code reward against `ioi-run serve`, end to end: verl's own SandboxFusion client
//! (`tests/verl_client/sandbox_fusion/utils.py`, copied unchanged) calls `check_correctness` on
//! `POST /run_code` for C++ and Python programs that are correct, wrong, crash, exit non-zero,
//! run out of time or memory, or do not compile, and gets the results verl expects; each C++
//! program is compiled once for all its test cases. The server gets fewer slots than verl sends
//! requests at once (all test cases of a program together), so requests wait for room: none
//! may be lost.

use std::path::Path;
use std::process::Command;

use crate::common;

/// `python3` with `requests` (verl's client needs it), or `None` (the test then skips, unless
/// `CI` is set).
fn python3_with_requests() -> Option<&'static str> {
    let found = Command::new("python3")
        .args(["-c", "import requests"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("python3");
    }
    common::skip("python3 with the requests package is not installed");
    None
}

#[test]
fn verls_check_correctness_gets_the_expected_results_from_run_code() {
    let Some(python) = python3_with_requests() else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let server = common::ServeProcess::start("0", cache.path(), "SANDBOX_FUSION_URL");
    let url = server.announced.clone();
    assert!(url.ends_with("/run_code"), "{url}");

    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verl_client/check_correctness.py");
    let output = Command::new(python)
        .arg(&script)
        .args(["--url", &url])
        .output()
        .expect("python3 runs verl's client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let server_log = server.stop();
    assert!(
        output.status.success(),
        "verl's client saw unexpected results:\n{stdout}\nserver:\n{server_log}"
    );
    assert!(stdout.contains("all results as expected"), "{stdout}");
    for line in [
        "cpp correct: [True, True, True]",
        "cpp timeout: [-3, -3, -3]",
        "cpp compile_error: [-4, -4, -4]",
        "python runtime_error: [-2, -2, -2]",
        "compiles: 7 for 7 C++ programs",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "no line {line:?} in:\n{stdout}"
        );
    }
}
