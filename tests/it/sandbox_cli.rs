//! `ioi-run sandbox` through the binary: the program never holds the caller's terminal,
//! `--output-limit` holds when the output goes to ioi-run's own stdout (discarded or not), and
//! the outcome never mixes with the program's output.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

use crate::common;
use common::skip;

fn sandbox_cmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ioi-run"));
    cmd.args(["sandbox", "--time", "5"])
        .env("IOI_RUN_KEEPER", "");
    cmd
}

/// True (after printing SKIPPED) when the sandbox cannot start here, unless CI is set.
fn sandbox_missing(stderr: &str) -> bool {
    if !stderr.contains("cannot start on this host") {
        return false;
    }
    skip(&format!("the sandbox cannot start here: {stderr}"));
    true
}

#[test]
fn output_limit_applies_to_inherited_stdout() {
    let out = sandbox_cmd()
        .args([
            "--output-limit",
            "1M",
            "--",
            "head",
            "-c",
            "5000000",
            "/dev/zero",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if sandbox_missing(&stderr) {
        return;
    }
    assert!(stderr.contains("output_limit"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(out.stdout.len(), 1 << 20, "{stderr}");
    // Under the limit, everything comes through untouched.
    let out = sandbox_cmd()
        .args([
            "--output-limit",
            "1M",
            "--",
            "head",
            "-c",
            "300000",
            "/dev/zero",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout.len(), 300000);
}

/// A stream the caller discards (`/dev/null`) is the box's own `/dev/null`, not relayed; with
/// an output limit it is relayed all the same, so that the limit holds.
#[test]
fn a_discarded_stream_is_not_relayed_unless_a_limit_counts_it() {
    // What the box's stdout is, on its stderr (relayed: a pipe from the test).
    let script = "if [ -c /dev/stdout ]; then echo CHAR >&2; elif [ -p /dev/stdout ]; then \
                  echo FIFO >&2; else echo OTHER >&2; fi; head -c 3000 /dev/zero";
    let run = |limit: &[&str]| {
        let out = sandbox_cmd()
            .args(limit)
            .args(["--", "sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::from(std::fs::File::create("/dev/null").unwrap()))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, stderr) = run(&[]);
    if sandbox_missing(&stderr) {
        return;
    }
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.starts_with("CHAR\n"), "{stderr}");
    let (code, stderr) = run(&["--output-limit", "1000"]);
    assert!(stderr.starts_with("FIFO\n"), "{stderr}");
    assert!(stderr.contains("output_limit"), "{stderr}");
    assert_eq!(code, Some(1), "{stderr}");
}

#[test]
fn the_program_never_holds_the_callers_terminal() {
    // ioi-run's stdout and stderr are a terminal: the program must see pipes, lead its own
    // session, and have no controlling terminal to inject keystrokes into.
    // SAFETY: libc pty calls on descriptors this test owns.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0);
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let slave = libc::open(
            libc::ptsname(master),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(slave >= 0);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    };
    let script = "for fd in 1 2; do if [ -t $fd ]; then echo TTY$fd; else echo PIPE$fd; fi; done; \
                  if (exec 3</dev/tty) 2>/dev/null; then echo HAS-CTTY; else echo NO-CTTY; fi";
    let status = sandbox_cmd()
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .status()
        .unwrap();
    let mut text = Vec::new();
    let mut master = std::fs::File::from(master);
    // Read what is there (the pty stays open as long as the master; non-blocking read).
    // SAFETY: fcntl on our own descriptor.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&master);
        libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
    }
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&text).replace('\r', "");
    if sandbox_missing(&text) {
        return;
    }
    assert_eq!(status.code(), Some(0), "{text}");
    assert!(text.contains("PIPE1\nPIPE2\nNO-CTTY\n"), "{text}");
}

/// `--meta FILE` gets the outcome as JSON, and stdout carries only what the program printed,
/// even when the program prints something that looks like an outcome.
#[test]
fn the_outcome_goes_to_the_meta_file_apart_from_the_programs_output() {
    let dir = tempfile::tempdir().unwrap();
    let meta = dir.path().join("meta.json");
    let fake = r#"{"status": "ok", "exit_code": 0}"#;
    let out = sandbox_cmd()
        .arg("--meta")
        .arg(&meta)
        .args(["--", "sh", "-c", &format!("echo '{fake}'; exit 3")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if sandbox_missing(&stderr) {
        return;
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{fake}\n"));
    let outcome: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    assert_eq!(outcome["status"], "runtime_error", "{outcome}");
    assert_eq!(outcome["exit_code"], 3, "{outcome}");
}

/// `--json` would print the outcome where the program's output goes: without `--stdout` it is
/// refused before anything runs; with it, stdout holds the outcome alone.
#[test]
fn json_on_stdout_needs_the_programs_output_elsewhere() {
    let out = sandbox_cmd()
        .args(["--json", "--", "echo", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("--meta FILE"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let program_out = dir.path().join("out.txt");
    let out = sandbox_cmd()
        .arg("--json")
        .arg("--stdout")
        .arg(&program_out)
        .args(["--", "echo", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if sandbox_missing(&stderr) {
        return;
    }
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["status"], "ok", "{outcome}");
    assert_eq!(std::fs::read_to_string(&program_out).unwrap(), "hello\n");
}
