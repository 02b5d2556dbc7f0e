//! The sandbox on a real cgroup v2 kernel, in the host situations our users have: boots
//! `tools/v2vm/run.sh` (a throw-away Debian 6.1 kernel with cgroup v2 only, under whichever back
//! end boots on this host: qemu with KVM, user-mode Linux, or qemu emulating the CPU) and runs
//! `tests/v2vm/guest.sh` there with the already built `ioi-run` and sandbox test binaries:
//! doctor, the hostile tests and the judge fixture (every verdict kind)
//! - as root from a session scope, plus a chroot and the sampled peak memory of kernels before
//!   5.19;
//! - as root in a container-like cgroup namespace whose root holds other processes;
//! - as a normal user in delegated scopes.
//!
//! Needs root and the VM's packages (installed by `tools/v2vm/run.sh --prepare`, which
//! `.ci/v2vm.sh` runs); without them it is skipped (see `common::skip`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::project;

fn vm_script() -> PathBuf {
    project().join("tools/v2vm/run.sh")
}

/// Whether the VM can boot without downloading anything (nothing may download while the tests
/// run).
fn vm_ready() -> bool {
    Command::new(vm_script())
        .arg("--ready")
        .status()
        .is_ok_and(|s| s.success())
}

/// The newest build of the sandbox's hostile tests, beside this test's own binary.
fn hostile_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    std::fs::read_dir(deps)
        .ok()?
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("hostile-")
                .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
}

/// Why the VM cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("the cgroup v2 VM needs root".into());
    }
    if !vm_ready() {
        return Some("the v2 VM is not installed (run tools/v2vm/run.sh --prepare)".into());
    }
    if hostile_binary().is_none() {
        return Some("the sandbox's hostile test binary is not built".into());
    }
    None
}

/// Boots the VM for one scenario; returns the folder of the step results.
fn run_scenario(scenario: &str) -> Option<tempfile::TempDir> {
    if let Some(reason) = missing() {
        common::skip(&reason);
        return None;
    }
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("result folder");
    // The guest's normal user writes its results here too.
    std::fs::set_permissions(
        out.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod the result folder");
    let output = Command::new(vm_script())
        .arg("bash")
        .arg(project().join("tests/v2vm/guest.sh"))
        .arg(scenario)
        .arg(env!("CARGO_BIN_EXE_ioi-run"))
        .arg(hostile_binary().expect("checked"))
        .arg(project())
        .arg(out.path())
        .current_dir(project())
        .env("V2VM_SHARE", out.path())
        .output()
        .expect("the VM script runs");
    let log = String::from_utf8_lossy(&output.stderr);
    eprint!("{}{log}", String::from_utf8_lossy(&output.stdout));
    let status = output.status;
    if !status.success() {
        // The status is the guest script's; a VM that fails after the guest wrote its last
        // marker has done all the work, and each step's result is checked on its own by the
        // caller. A guest that did not finish says why in one line.
        let finished = out.path().join(format!("finished-{scenario}")).exists();
        let why = log
            .lines()
            .find(|line| line.contains("did not finish"))
            .unwrap_or("no reason given");
        assert!(finished, "the {scenario} guest failed ({status}): {why}");
        eprintln!(
            "the VM exited with {status} after the {scenario} guest had finished every step; \
             the steps' results are checked one by one"
        );
    }
    Some(out)
}

/// The output and exit status of one step of the guest.
fn step(out: &Path, name: &str) -> (i32, String) {
    let text = std::fs::read_to_string(out.join(format!("{name}.out")))
        .unwrap_or_else(|e| panic!("step {name} did not run: {e}"));
    let rc = std::fs::read_to_string(out.join(format!("{name}.rc")))
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or(-1);
    (rc, text)
}

fn assert_step_ok(out: &Path, name: &str, wanted: &[&str]) {
    let (rc, text) = step(out, name);
    assert_eq!(rc, 0, "step {name} failed:\n{text}");
    for w in wanted {
        assert!(text.contains(w), "step {name} lacks {w:?}:\n{text}");
    }
}

fn assert_step_fails(out: &Path, name: &str, wanted: &[&str]) {
    let (rc, text) = step(out, name);
    assert_ne!(rc, 0, "step {name} should have failed:\n{text}");
    for w in wanted {
        assert!(text.contains(w), "step {name} lacks {w:?}:\n{text}");
    }
}

/// The hostile tests ran, `count` of them, and all passed.
fn assert_hostile(out: &Path, name: &str, count: usize) {
    assert_step_ok(out, name, &[&format!("test result: ok. {count} passed")]);
}

/// Each solution got the verdicts of the fixture's expected.json.
fn assert_judged(out: &Path, prefix: &str, solutions: &[&str]) {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(project().join("tests/problems/sumpairs/expected.json"))
            .expect("expected.json"),
    )
    .expect("expected.json is JSON");
    for sol in solutions {
        let name = format!("{prefix}{sol}");
        let (rc, text) = step(out, &name);
        assert_eq!(rc, 0, "judging {sol} failed:\n{text}");
        let start = text.find('{').unwrap_or(0);
        let report: Value = serde_json::from_str(&text[start..])
            .unwrap_or_else(|e| panic!("judging {sol}: not JSON ({e}):\n{text}"));
        let got: Vec<(String, String)> = report["subtasks"]
            .as_array()
            .expect("subtasks")
            .iter()
            .map(|s| {
                (
                    s["subtask"].as_str().unwrap_or("?").to_string(),
                    s["status"].as_str().unwrap_or("?").to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expected["solutions"][sol]["subtasks"]
            .as_object()
            .expect("expected subtasks")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("?").to_string()))
            .collect();
        assert_eq!(got, want, "verdicts of {sol}:\n{text}");
    }
}

#[test]
fn v2_root_in_a_session_scope() {
    let Some(out) = run_scenario("session") else {
        return;
    };
    let out = out.path();
    assert_step_ok(out, "doctor", &["cgroup v2", "This host can judge"]);
    assert_hostile(out, "hostile", 13);
    assert_judged(
        out,
        "judge-",
        &[
            "ac.cpp",
            "ordered_pa.cpp",
            "int_overflow.cpp",
            "burn_tle.cpp",
            "mle.cpp",
            "segv.cpp",
            "ce.cpp",
        ],
    );
    // The sampled peak (kernels before 5.19) sees 64 MiB and the memory limit.
    assert_hostile(out, "sampled", 2);
    assert_judged(out, "sampled-judge-", &["mle.cpp"]);
    // In a chroot the kernel refuses user namespaces: doctor names the chroot and the errno.
    assert_step_fails(out, "chroot-doctor", &["chroot", "EPERM"]);
}

#[test]
fn v2_root_in_a_container_whose_root_cgroup_holds_processes() {
    let Some(out) = run_scenario("container") else {
        return;
    };
    let out = out.path();
    // Beside a process it does not own: the real cause, who is in the way, and the fix.
    assert_step_fails(
        out,
        "busy-doctor",
        &["EBUSY", "holds other processes", "(sleep)", "Dockerfile"],
    );
    // Alone (exec), it moves itself into a leaf.
    assert_step_ok(out, "alone-doctor", &["This host can judge"]);
    // Behind the Dockerfile's entrypoint, everything works.
    assert_step_ok(out, "doctor", &["This host can judge"]);
    assert_hostile(out, "hostile", 6);
    assert_judged(out, "judge-", &["ac.cpp", "mle.cpp", "burn_tle.cpp"]);
}

#[test]
fn v2_normal_user_in_a_delegated_scope() {
    let Some(out) = run_scenario("user") else {
        return;
    };
    let out = out.path();
    // The user's shell in the same scope: EBUSY named as such, with the fix.
    assert_step_fails(
        out,
        "busy-doctor",
        &[
            "EBUSY",
            "holds other processes",
            "systemd-run --user --scope",
        ],
    );
    assert_step_ok(out, "doctor", &["This host can judge"]);
    assert_hostile(out, "hostile", 6);
    assert_judged(out, "judge-", &["ac.cpp", "mle.cpp", "burn_tle.cpp"]);
    // doctor detects twice: one leaf at most, never a nested one.
    let leftover = std::fs::read_to_string(out.join("leftover.out")).expect("leftover.out");
    assert!(
        !leftover.contains("ioi-run-keeper/ioi-run-keeper") && !leftover.contains("keeper/keeper"),
        "nested cgroups left behind: {leftover}"
    );
}

/// A guest whose kernel cannot start its init (here: an init that does not exist) is a failure
/// said in one line, the kernel's own reason, never the kernel's panic dump.
#[test]
fn a_guest_that_cannot_boot_says_why_in_one_line() {
    if let Some(reason) = missing() {
        common::skip(&reason);
        return;
    }
    let output = Command::new(vm_script())
        .arg("true")
        .env("V2VM_APPEND", "rdinit=/nonexistent")
        .output()
        .expect("the VM script runs");
    let log = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(125), "{log}");
    let reasons: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("Kernel panic") || line.contains("did not finish"))
        .collect();
    assert_eq!(reasons.len(), 1, "{log}");
    assert!(
        reasons[0].contains("did not finish: Kernel panic - not syncing: "),
        "{log}"
    );
    assert!(!log.contains("Call Trace"), "{log}");
    assert!(output.stdout.is_empty(), "{log}");
}
