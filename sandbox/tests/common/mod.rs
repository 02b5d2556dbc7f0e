//! Shared helpers for the sandbox tests: one sandbox per test process, C++ programs compiled
//! once per test into a box directory owned by the sandbox user.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use ioi_sandbox::{Limits, Outcome, RunSpec, Sandbox, SandboxOptions, Stdio};

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

    /// Runs `argv` in the box with the given limits, its stdout and stderr in the box's files
    /// `stdout` and `stderr` (see [`TestBox::read`]).
    pub fn run(&self, argv: &[&str], limits: Limits) -> Outcome {
        let mut spec = self.spec(argv);
        spec.limits = limits;
        spec.stdout = ioi_sandbox::Stdio::Path(self.path().join("stdout"));
        spec.stderr = ioi_sandbox::Stdio::Path(self.path().join("stderr"));
        sandbox().run(&spec)
    }

    /// Compiles and runs `source` with the given limits.
    pub fn run_cpp(&self, source: &str, limits: Limits) -> Outcome {
        self.compile(source);
        self.run(&["./prog"], limits)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }
}

/// Multiplies the time limits of [`limits`]: `IOI_TEST_TIME_SCALE` (default 1), set where system
/// calls and page faults are slow (the user-mode-Linux kernel of tests/it/cgroup_v2.rs).
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

pub fn pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap()
}

/// Runs `holder` in a box until it prints its first line (it is then "holding" something),
/// calls `meanwhile`, then writes a line to the holder's stdin and waits for it. Returns the
/// holder's outcome, everything it printed, and what `meanwhile` returned.
pub fn while_holding<R>(
    holder: &str,
    limits: Limits,
    meanwhile: impl FnOnce() -> R,
) -> (Outcome, String, R) {
    let b = TestBox::new();
    b.compile(holder);
    let (in_read, in_write) = pipe();
    let (out_read, out_write) = pipe();
    let mut spec = b.spec(&["./prog"]);
    spec.limits = limits;
    spec.stdin = Stdio::Fd(Arc::new(in_read));
    spec.stdout = Stdio::Fd(Arc::new(out_write));
    std::thread::scope(|s| {
        let run = s.spawn(move || sandbox().run(&spec));
        let mut out = BufReader::new(std::fs::File::from(out_read));
        let mut text = String::new();
        let _ = out.read_line(&mut text);
        let r = meanwhile();
        let mut to_holder = std::fs::File::from(in_write);
        let _ = to_holder.write_all(b"go\n");
        drop(to_holder);
        let outcome = run.join().unwrap();
        let _ = std::io::Read::read_to_string(&mut out, &mut text);
        (outcome, text, r)
    })
}

/// Compiles and runs `source` in a fresh box; returns the outcome and its stdout.
pub fn run_program(source: &str, limits: Limits) -> (Outcome, String) {
    let b = TestBox::new();
    let o = b.run_cpp(source, limits);
    (o, b.read("stdout"))
}

/// CPU-bound loops on the host, each a session of its own (as independent work is, so that
/// each takes a full share where the kernel groups tasks by session), stopped by pid when
/// dropped, even if the test fails.
pub struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    pub fn start(n: usize) -> BusyLoops {
        use std::os::unix::process::CommandExt;
        let mut loops = BusyLoops(Vec::new());
        for _ in 0..n {
            let mut cmd = std::process::Command::new("sh");
            cmd.args(["-c", "while :; do :; done"]);
            // SAFETY: setsid is async-signal-safe and touches no memory.
            unsafe {
                cmd.pre_exec(|| {
                    nix::unistd::setsid()
                        .map(|_| ())
                        .map_err(std::io::Error::from)
                });
            }
            loops.0.push(cmd.spawn().expect("sh runs"));
        }
        loops
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The number of cores the tests may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The bound of [`wait_until`]: how long a test waits for something that must happen, however
/// loaded the host is. Reaching it is a failure of liveness, never a measure of speed.
pub const LIVENESS: Duration = Duration::from_secs(120);

/// Polls `done` until it holds; fails the test after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
