//! The harness every integration test shares: the binary with a private cache, the fixture
//! folders, `judge --json`, the rule for tests that need what a machine may lack (they print
//! `SKIPPED: <reason>` and pass, except under `CI`, where they fail), children killed when a test
//! fails, and a Piston server on an ephemeral port spoken to over blocking HTTP.

pub mod fuzz;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ioi_run::judge::JudgeOptions;
use ioi_run::server::{Executor, JudgeExecutor, ServeOptions, Server};
use serde_json::Value;

/// The project folder (the workspace root).
pub fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture problem under `tests/problems/`.
pub fn problem_dir(name: &str) -> PathBuf {
    project().join("tests/problems").join(name)
}

/// The binary with its compile cache and temporary folder inside `work`, so that even a killed
/// run leaves nothing outside the test's own folder.
pub fn bin(work: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ioi-run"));
    let tmp = work.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    cmd.env("IOI_RUN_CACHE", work.join("cache"))
        .env("TMPDIR", &tmp);
    cmd
}

/// The binary with one compile cache for every test process, inside the build folder: results
/// must not depend on whether an entry was compiled by this process, another one, or earlier.
pub fn bin_shared_cache() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ioi-run"));
    cmd.env(
        "IOI_RUN_CACHE",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache"),
    );
    cmd
}

/// A copy of the folder `from` (a fixture problem, say) at `to`, made with its parents.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Bytes a program wrote, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The stdout of a command that must have succeeded (else the test fails showing both streams).
pub fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The stderr of a command that must have failed (else the test fails showing its stdout).
pub fn failed(out: Output) -> String {
    assert!(
        !out.status.success(),
        "succeeded unexpectedly: {}",
        text(&out.stdout)
    );
    text(&out.stderr)
}

/// (subtask, status) of each subtask of a `judge --json` report, in order.
pub fn subtask_statuses(report: &Value) -> Vec<(String, String)> {
    report["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["subtask"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `cmd judge --json ARGS...`: the report, after asserting the command succeeded.
pub fn judge_json<A: AsRef<OsStr>>(mut cmd: Command, args: impl IntoIterator<Item = A>) -> Value {
    let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = cmd
        .args(["judge", "--json"])
        .args(&args)
        .output()
        .expect("ioi-run runs");
    assert!(
        out.status.success(),
        "ioi-run judge {args:?} failed: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// Says why a test does not run here: prints `SKIPPED: <reason>` (the test then returns and
/// passes), except under `CI`, where everything is installed and the test fails loudly instead.
pub fn skip(reason: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must be able to run this test, but: {reason}"
    );
    eprintln!("SKIPPED: {reason}");
}

/// Whether this process is root, as the sandbox (namespaces, cgroups) needs; if not, the test
/// is skipped with `what` as the reason (see [`skip`]).
pub fn is_root_or_skip(what: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    skip(&format!("{what} needs root (the sandbox)"));
    false
}

/// Polls `done` until it holds; fails the test after `limit` (generous: a liveness bound, never
/// a speed assertion).
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child process, killed and reaped when dropped, even when the test fails.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child process stopped gracefully when dropped, even when the test fails: SIGTERM by pid
/// (so a server finishes its runs and removes its boxes), then SIGKILL after 30 s.
pub struct Stopping(pub Child);

impl Drop for Stopping {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        for _ in 0..300 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server on an ephemeral port, on its own runtime, so tests speak blocking HTTP to it;
/// stopped when dropped, even when the test fails.
pub struct TestServer {
    pub runtime: tokio::runtime::Runtime,
    pub server: Option<Server>,
    /// `http://ADDR/api/v2`.
    pub base: String,
}

impl TestServer {
    /// Starts with two slots on 127.0.0.1, after `configure` changed the options.
    pub fn start(
        executor: Arc<dyn Executor>,
        configure: impl FnOnce(&mut ServeOptions),
    ) -> TestServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), 2);
        configure(&mut options);
        let server = runtime.block_on(Server::start(options, executor)).unwrap();
        let base = format!("http://{}/api/v2", server.local_addr());
        TestServer {
            runtime,
            server: Some(server),
            base,
        }
    }

    /// The URL of an API route, such as `execute`.
    pub fn url(&self, route: &str) -> String {
        format!("{}/{route}", self.base)
    }

    /// Asks the server to stop and waits for it.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let server = self.server.take().unwrap();
        server.shutdown_handle().shutdown();
        self.runtime.block_on(server.wait())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown_handle().shutdown();
            let _ = self.runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(10), server.wait()).await
            });
        }
    }
}

/// An HTTP client whose timeout only catches a hung server (judging under load takes a while).
pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(120))
        .build()
}

/// Status and JSON body of a response, whatever the status.
pub fn answer(result: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
    let response = match result {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        Err(e) => panic!("HTTP transport error: {e}"),
    };
    let status = response.status();
    (status, response.into_json().expect("the body is JSON"))
}

/// GET: status and JSON body.
pub fn get(url: &str) -> (u16, Value) {
    answer(agent().get(url).call())
}

/// POST of a JSON body: status and JSON body.
pub fn post(url: &str, body: &str) -> (u16, Value) {
    answer(
        agent()
            .post(url)
            .set("Content-Type", "application/json")
            .send_string(body),
    )
}

/// An executor with the real judge and its compile cache in `cache_dir`.
pub fn judge_executor(cache_dir: PathBuf) -> Arc<JudgeExecutor> {
    Arc::new(
        JudgeExecutor::new(JudgeOptions {
            cache_dir,
            ..JudgeOptions::default()
        })
        .expect("the judge starts (root, cgroups)"),
    )
}

/// A door that executions wait at until the test opens it.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    pub fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
    }

    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

/// `ioi-run serve` as a process: started with `--cache-dir`, two jobs and a queue of two (fewer
/// slots than the clients send), stopped when dropped; its stderr is read on a thread so that it
/// never blocks on a full pipe, and kept for a failure's message.
pub struct ServeProcess {
    server: Option<Stopping>,
    log: Option<std::thread::JoinHandle<Vec<String>>>,
    /// The value of the line `<variable>=...` the server printed at start.
    pub announced: String,
}

impl ServeProcess {
    /// Starts `serve --ports <ports>` and waits for its line `<variable>=...`.
    pub fn start(ports: &str, cache: &Path, variable: &str) -> ServeProcess {
        ServeProcess::start_with(
            &["--ports", ports, "-j", "2", "--max-queue", "2"],
            cache,
            variable,
        )
    }

    /// Starts `serve <options> --cache-dir <cache>` and waits for its line `<variable>=...`.
    pub fn start_with(options: &[&str], cache: &Path, variable: &str) -> ServeProcess {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
            .arg("serve")
            .args(options)
            .arg("--cache-dir")
            .arg(cache)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ioi-run serve starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let server = Stopping(child);
        let mut lines = BufReader::new(stderr).lines();
        let prefix = format!("{variable}=");
        let announced = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("ioi-run serve prints {variable}"))
                .expect("serve's stderr is text");
            if let Some(value) = line.strip_prefix(&prefix) {
                break value.to_string();
            }
        };
        let log = std::thread::spawn(move || lines.map_while(Result::ok).collect());
        ServeProcess {
            server: Some(server),
            log: Some(log),
            announced,
        }
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.server.as_ref().map_or(0, |server| server.0.id())
    }

    /// Stops the server and returns what it logged after its start.
    pub fn stop(mut self) -> String {
        drop(self.server.take());
        self.log()
    }

    /// Sends the server `signal`.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.pid() as i32);
        nix::sys::signal::kill(pid, signal).expect("the server can be signalled");
    }

    /// Waits for the server to exit (after [`ServeProcess::signal`]): its exit code (`None`
    /// for a signal) and what it logged after its start.
    pub fn wait(mut self) -> (Option<i32>, String) {
        let mut server = self.server.take().expect("a running server");
        let status = wait_for_exit(&mut server.0, Duration::from_secs(120));
        // Reaped: its pid may be another process's now, which the guard must not signal.
        std::mem::forget(server);
        (status.code(), self.log())
    }

    fn log(&mut self) -> String {
        self.log
            .take()
            .and_then(|log| log.join().ok())
            .unwrap_or_default()
            .join("\n")
    }
}

/// Waits for `child` to exit (a liveness bound, see [`wait_until`]); killed and the test failed
/// when it outlives `limit`.
fn wait_for_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The scratch folders of process `pid` (`ioi-<kind>-<pid>-…`) in `dirs`.
pub fn scratch_folders_of(pid: u32, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let infix = format!("-{pid}-");
    dirs.iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            // Not the sandbox's folder of mount points (`ioi-sandbox-<pid ns>-<pid>-…`): empty
            // of files, it lives as long as the process, as its cgroup parents do.
            name.starts_with("ioi-") && name.contains(&infix) && !name.starts_with("ioi-sandbox-")
        })
        .collect()
}
