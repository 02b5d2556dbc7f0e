//! Shared helpers for the sandbox tests: one sandbox per test process, C++ programs compiled
//! once per test into a box directory owned by the sandbox user.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ioi_sandbox::{Limits, Outcome, RunSpec, Sandbox, SandboxOptions};

pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| Sandbox::new(SandboxOptions::default()).expect("sandbox setup"))
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
