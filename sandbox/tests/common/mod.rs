//! Shared helpers for the sandbox tests: one sandbox per test process, C++ programs compiled
//! once per test into a box directory owned by the sandbox user.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ioi_sandbox::{Limits, Outcome, RunSpec, Sandbox, SandboxOptions};

fn shared() -> &'static Result<Sandbox, String> {
    static SANDBOX: OnceLock<Result<Sandbox, String>> = OnceLock::new();
    SANDBOX.get_or_init(|| Sandbox::new(SandboxOptions::default()).map_err(|e| format!("{e:#}")))
}

/// The sandbox shared by the tests of this process (check [`sandbox_missing`] first).
pub fn sandbox() -> &'static Sandbox {
    match shared() {
        Ok(sandbox) => sandbox,
        Err(e) => panic!("sandbox setup: {e}"),
    }
}

/// Prints `SKIPPED: <reason>` and returns true, so that a test that cannot run here says so
/// instead of passing in silence; panics instead when `CI` is set (CI installs everything).
pub fn skip(reason: &str) -> bool {
    if std::env::var_os("CI").is_some() {
        panic!("{reason} (required when CI is set)");
    }
    eprintln!("SKIPPED: {reason}");
    true
}

/// Whether the sandbox cannot work here for want of privilege: as a normal user on cgroup v1
/// (or without a delegated cgroup v2 subtree) it needs root. Then the test is skipped, loudly
/// (see [`skip`]). As root the sandbox must work, so nothing is ever skipped: a failure fails.
pub fn sandbox_missing() -> bool {
    static WHY_NOT: OnceLock<Option<String>> = OnceLock::new();
    let why_not = WHY_NOT.get_or_init(|| {
        if nix::unistd::geteuid().is_root() {
            return None;
        }
        let sandbox = match shared() {
            Ok(sandbox) => sandbox,
            Err(e) => return Some(e.clone()),
        };
        // Starting is not enough (the cgroup parent may exist, made by root): try a run.
        let probe = sandbox.run(&RunSpec::in_tmpfs(1 << 20, ["/bin/true"]));
        (probe.status == ioi_sandbox::Termination::InternalError).then_some(probe.message)
    });
    match why_not {
        None => false,
        Some(e) => skip(&format!("the sandbox needs root here: {e}")),
    }
}

/// A box directory writable by the sandbox user, removed at drop.
pub struct TestBox {
    pub dir: tempfile::TempDir,
}

impl TestBox {
    pub fn new() -> TestBox {
        let dir = tempfile::tempdir().unwrap();
        sandbox().give_to_box(dir.path()).unwrap();
        TestBox { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Compiles C++ source with the host g++ into the box as `prog`.
    pub fn compile(&self, source: &str) -> PathBuf {
        let src = self.path().join("prog.cpp");
        std::fs::write(&src, source).unwrap();
        let exe = self.path().join("prog");
        let out = std::process::Command::new("g++")
            .args(["-O2", "-std=gnu++17", "-pthread", "-o"])
            .arg(&exe)
            .arg(&src)
            .output()
            .expect("g++ runs");
        assert!(
            out.status.success(),
            "compile failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    }

    pub fn spec(&self, argv: &[&str]) -> RunSpec {
        RunSpec::new(self.path(), argv.iter().copied())
    }

    /// Compiles and runs `source` with the given limits.
    pub fn run_cpp(&self, source: &str, limits: Limits) -> Outcome {
        self.compile(source);
        let mut spec = self.spec(&["./prog"]);
        spec.limits = limits;
        spec.stdout = ioi_sandbox::Stdio::Path(self.path().join("stdout"));
        spec.stderr = ioi_sandbox::Stdio::Path(self.path().join("stderr"));
        sandbox().run(&spec)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }
}

/// Multiplies the time limits of [`limits`]: `IOI_TEST_TIME_SCALE` (default 1), set where system
/// calls and page faults are slow (the user-mode-Linux kernel of tests/cgroup_v2.rs).
pub fn time_scale() -> f64 {
    std::env::var("IOI_TEST_TIME_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

pub fn limits(cpu: f64, memory_mib: u64) -> Limits {
    let cpu = cpu * time_scale();
    Limits {
        cpu_time: Some(Duration::from_secs_f64(cpu)),
        wall_time: Some(Duration::from_secs_f64(cpu * 3.0 + 1.0)),
        memory: Some(memory_mib << 20),
        processes: Some(64),
        output_size: Some(64 << 20),
        ..Limits::default()
    }
}
