//! Interrupting ioi-run leaves nothing behind: the sandboxed processes die and the run's
//! cgroups are removed.

use std::process::Command;
use std::time::Duration;

use crate::common;
use common::{is_root_or_skip, Guard};

/// Sandboxed `sleep MARKER` processes (not ioi-run itself, whose arguments hold the marker too).
fn processes_with(marker: &str) -> usize {
    let wanted = format!("/bin/sleep\0{marker}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c) == wanted)
        .count()
}

fn cgroups_of(pid: u32) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    // Run cgroups are named `<pid namespace inode>-<keeper pid>-<n>`; the command runs in this
    // test's pid namespace.
    let ns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let prefix = format!("{ns}-{pid}-");
    let mut found = Vec::new();
    for root in [
        "/sys/fs/cgroup/memory/ioi-run",
        "/sys/fs/cgroup/pids/ioi-run",
        "/sys/fs/cgroup/ioi-run",
    ] {
        if let Ok(entries) = std::fs::read_dir(root) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(&prefix) {
                    found.push(format!("{root}/{name}"));
                }
            }
        }
    }
    found
}

/// A marker unique to this test process, so leftovers of other runs cannot be mistaken.
fn marker(n: u32) -> String {
    format!("{}.{n:04}", 7000 + std::process::id() % 2000)
}

fn wait_until(what: &str, done: impl FnMut() -> bool) {
    common::wait_until(what, Duration::from_secs(20), done)
}

#[test]
fn sigint_kills_the_sandboxed_program_and_removes_its_cgroup() {
    if !is_root_or_skip("the sandbox") {
        return;
    }
    let marker = &marker(1);
    let mut child = Guard(
        Command::new(env!("CARGO_BIN_EXE_ioi-run"))
            .args(["sandbox", "--time", "100", "--", "/bin/sleep", marker])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    wait_until("the sandboxed sleep to start", || {
        processes_with(marker) > 0
    });
    assert!(
        !cgroups_of(pid).is_empty(),
        "the run should have a cgroup while it runs"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGINT),
        "ioi-run should exit 130 on SIGINT"
    );
    wait_until("the sandboxed sleep to die", || processes_with(marker) == 0);
    assert_eq!(cgroups_of(pid), Vec::<String>::new(), "cgroups left behind");
    let own_prefix = format!("ioi-box-{pid}-");
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&own_prefix))
        .collect();
    assert!(
        left.is_empty(),
        "temporary box folders left behind: {left:?}"
    );
}

#[test]
fn sigkill_of_ioi_run_still_kills_the_sandbox() {
    if !is_root_or_skip("the sandbox") {
        return;
    }
    let marker = &marker(2);
    let mut child = Guard(
        Command::new(env!("CARGO_BIN_EXE_ioi-run"))
            .args(["sandbox", "--time", "100", "--", "/bin/sleep", marker])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the sandboxed sleep to start", || {
        processes_with(marker) > 0
    });
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // The init dies with its parent (parent-death signal) and the pid namespace with it.
    wait_until("the sandboxed sleep to die", || processes_with(marker) == 0);
    // The dead keeper's cgroup is removed by the next sandbox that starts.
    let next = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .args(["sandbox", "--", "/bin/true"])
        .output()
        .unwrap();
    assert!(next.status.success());
    assert_eq!(
        cgroups_of(child.0.id()),
        Vec::<String>::new(),
        "stale cgroups of a killed keeper remain"
    );
}

#[test]
fn the_interrupt_message_stands_on_its_own_line_below_a_progress_bar() {
    if !is_root_or_skip("the sandbox") {
        return;
    }
    if Command::new("script").arg("--version").output().is_err() {
        common::skip("`script` (util-linux) is missing: no terminal to draw a progress bar on");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let task = common::problem_dir("sumpairs");
    let code = std::fs::read_to_string(task.join("solutions/sleep_tle.cpp")).unwrap();
    // Distinct code for each: copies of one program would be judged once.
    let rows: String = (0..8)
        .map(|k| {
            let code = format!("{code}// submission {k}\n");
            serde_json::json!({"uuid": format!("s{k}"), "problem_id": "sumpairs", "code": code})
                .to_string()
                + "\n"
        })
        .collect();
    let subs = work.path().join("subs.jsonl");
    std::fs::write(&subs, rows).unwrap();
    // `timeout` sends the Ctrl-C; `script` gives ioi-run a terminal and copies what it shows.
    let command = format!(
        "timeout -s INT 10 {} evaluate {} {} --problems {}",
        env!("CARGO_BIN_EXE_ioi-run"),
        subs.display(),
        work.path().join("out").display(),
        task.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    let at = shown
        .find("ioi-run: interrupted")
        .unwrap_or_else(|| panic!("no interrupt message: {shown:?}"));
    let before = &shown[..at];
    assert!(
        before.contains("submissions"),
        "the bar was drawn: {shown:?}"
    );
    // The bar is cleared first: the message starts a line (a newline, or a carriage return
    // after the bar's line was erased), never in the middle of the bar.
    let last_line = before.rsplit(['\n', '\r']).next().unwrap_or("");
    let tail: String = shown
        .chars()
        .skip(shown.chars().count().saturating_sub(400))
        .collect();
    assert!(
        last_line.replace("\x1b[2K", "").is_empty(),
        "the message is glued to {last_line:?}; the end of the screen: {tail:?}"
    );
}
