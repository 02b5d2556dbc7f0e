//! `ioi-run keeper` with `ioi-run sandbox` handing runs to it: outcomes and output identical to
//! the command's own runs, a box killed with the client that hangs up or with the keeper that
//! dies, runs in parallel, one keeper per socket, silent clients timed out, and no terminal of
//! the caller for the program.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::common;
use common::{is_root_or_skip, wait_until, Guard, Stopping};

const LIVENESS: Duration = Duration::from_secs(60);

/// `ioi-run sandbox` in `work`, handing its run to the keeper at `socket` (none: its own run).
fn sandbox(work: &Path, socket: Option<&Path>) -> Command {
    let mut cmd = common::bin(work);
    cmd.current_dir(work)
        .env("IOI_RUN_KEEPER", socket.unwrap_or(Path::new("")))
        .arg("sandbox")
        .stdin(Stdio::null());
    cmd
}

/// A keeper on a socket in `work`, listening when returned; stopped by pid when dropped.
fn keeper(work: &Path) -> (Stopping, PathBuf) {
    keeper_with(work, &[])
}

/// [`keeper`] with more options.
fn keeper_with(work: &Path, options: &[&str]) -> (Stopping, PathBuf) {
    let socket = work.join("run/keeper.sock");
    let child = common::bin(work)
        .args(["keeper", "--socket"])
        .arg(&socket)
        .args(options)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut keeper = Stopping(child);
    wait_until("the keeper to listen", LIVENESS, || {
        assert!(keeper.0.try_wait().unwrap().is_none(), "the keeper stopped");
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    (keeper, socket)
}

/// The host pid of a process whose command line is `argv`, if one runs.
fn find_process(argv: &[&str]) -> Option<i32> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            (std::fs::read(entry.path().join("cmdline")).ok()? == wanted).then_some(pid)
        })
}

/// The memory cgroup folder of process `pid` (cgroup v1 or v2).
fn memory_cgroup(pid: i32) -> PathBuf {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        if controllers.split(',').any(|c| c == "memory") {
            return PathBuf::from("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'));
        }
    }
    let path = text.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
    PathBuf::from("/sys/fs/cgroup").join(path.trim_start_matches('/'))
}

/// Starts `sandbox -- sleep <tag>` through the keeper and returns the client and the sleeper's
/// host pid once it runs.
fn start_sleeper(work: &Path, socket: &Path, tag: &str) -> (Guard, i32) {
    let client = sandbox(work, Some(socket))
        .args(["--", "sleep", tag])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let client = Guard(client);
    let mut pid = None;
    wait_until("the sandboxed sleep to start", LIVENESS, || {
        pid = find_process(&["sleep", tag]);
        pid.is_some()
    });
    (client, pid.unwrap())
}

fn gone(pid: i32) -> bool {
    // A zombie has no command line left: it is gone for our purposes.
    std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |c| c.is_empty())
}

/// What a run shows its user: the exit code, the program's stdout, the status line, the
/// outcome's verdict fields (times and memory vary from run to run).
fn shown(out: &Output, meta: &Path) -> (Option<i32>, Vec<u8>, String, [serde_json::Value; 3]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let status = stderr
        .lines()
        .find(|l| l.starts_with("status "))
        .unwrap_or_else(|| panic!("no status line: {stderr}"))
        .to_string();
    let outcome: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(meta).unwrap()).unwrap();
    let verdict = ["status", "exit_code", "signal"].map(|k| outcome[k].clone());
    (out.status.code(), out.stdout.clone(), status, verdict)
}

#[test]
fn outcomes_and_output_are_the_same_with_and_without_a_keeper() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::write(w.join("input.txt"), "3 4\n").unwrap();
    std::fs::create_dir(w.join("data")).unwrap();
    std::fs::write(w.join("data/x"), "from a --dir\n").unwrap();
    std::fs::create_dir(w.join("box")).unwrap();
    // The box user writes there.
    std::fs::set_permissions(
        w.join("box"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let (_keeper, socket) = keeper(w);
    let cases: &[&[&str]] = &[
        &["--", "echo", "hello"],
        &["--time", "0.3", "--", "sh", "-c", "while :; do :; done"],
        // One process (tail keeps the whole newline-free input): with two, which one the
        // kernel kills at the limit, and so the reported exit, is the kernel's choice.
        &["--memory", "16M", "--", "tail", "/dev/zero"],
        &["--", "sh", "-c", "echo partial; exit 3"],
        &["--", "sh", "-c", "kill -SEGV $$"],
        &[
            "--output-limit",
            "100K",
            "--",
            "head",
            "-c",
            "5000000",
            "/dev/zero",
        ],
        &["--stdin", "input.txt", "--", "cat"],
        &[
            "--box",
            "box",
            "--",
            "sh",
            "-c",
            "echo written > /box/f; cat /box/f",
        ],
        &["--dir", "data:/data", "--", "cat", "/data/x"],
        &["--env", "A=1", "--", "sh", "-c", "echo $A >&2; echo $A"],
    ];
    for case in cases {
        let mut seen = Vec::new();
        for socket in [None, Some(socket.as_path())] {
            let _ = std::fs::remove_file(w.join("box/f"));
            let out = sandbox(w, socket)
                .args(["--meta", "meta.json"])
                .args(*case)
                .output()
                .unwrap();
            seen.push(shown(&out, &w.join("meta.json")));
        }
        assert_eq!(seen[0], seen[1], "{case:?}: without, then with a keeper");
    }
    // The verdicts are the ones each case is about, not the same failure twice.
    let verdict = |case: &[&str]| {
        let out = sandbox(w, Some(&socket))
            .args(["--meta", "meta.json"])
            .args(case)
            .output()
            .unwrap();
        shown(&out, &w.join("meta.json")).3[0].clone()
    };
    let expected = [
        "ok",
        "time_limit",
        "memory_limit",
        "runtime_error",
        "signaled",
        "output_limit",
        "ok",
        "ok",
        "ok",
        "ok",
    ];
    for (case, status) in cases.iter().zip(expected) {
        assert_eq!(verdict(case), status, "{case:?}");
    }
    assert_eq!(
        std::fs::read_to_string(w.join("box/f")).unwrap(),
        "written\n"
    );
    // --json with --stdout: the outcome alone on stdout, the program's output in the file.
    for socket in [None, Some(socket.as_path())] {
        let out = sandbox(w, socket)
            .args(["--json", "--stdout", "out.txt", "--", "echo", "hi"])
            .output()
            .unwrap();
        let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(outcome["status"], "ok", "{outcome}");
        assert_eq!(std::fs::read_to_string(w.join("out.txt")).unwrap(), "hi\n");
    }
}

#[test]
fn a_client_that_hangs_up_mid_run_loses_its_box() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (_keeper, socket) = keeper(work.path());
    let (mut client, sleeper) = start_sleeper(work.path(), &socket, "987651");
    let cgroup = memory_cgroup(sleeper);
    assert!(cgroup.exists(), "{}", cgroup.display());
    client.0.kill().unwrap();
    client.0.wait().unwrap();
    wait_until("the box to die with its client", LIVENESS, || gone(sleeper));
    wait_until("the box's cgroup to go", LIVENESS, || !cgroup.exists());
    // The keeper serves the next client.
    let out = sandbox(work.path(), Some(&socket))
        .args(["--", "echo", "next"])
        .output()
        .unwrap();
    assert_eq!(common::ok(out), "next\n");
}

/// Clients that connect and send nothing hold the keeper's threads (four with `--jobs 1`) for
/// a bounded time only: each gets a failure, and a real client is served after them.
#[test]
fn silent_clients_do_not_hold_the_keeper() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    use std::io::Read;
    let work = tempfile::tempdir().unwrap();
    let (_keeper, socket) = keeper_with(work.path(), &["--jobs", "1"]);
    let silent: Vec<_> = (0..4)
        .map(|_| std::os::unix::net::UnixStream::connect(&socket).unwrap())
        .collect();
    let mut client = Guard(
        sandbox(work.path(), Some(&socket))
            .args(["--", "echo", "served"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_until("the client to be served", LIVENESS, || {
        client.0.try_wait().unwrap().is_some()
    });
    let mut stdout = String::new();
    client
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(client.0.wait().unwrap().success());
    assert_eq!(stdout, "served\n");
    for mut conn in silent {
        conn.set_read_timeout(Some(LIVENESS)).unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        assert!(answer.contains("cannot read the request"), "{answer}");
    }
}

/// Clients that send their request a byte at a time (four with `--jobs 1`: every thread of the
/// keeper) are cut off when the whole request has not come within the deadline, however often
/// a byte arrives; a real client is served after them.
#[test]
fn trickling_clients_have_a_deadline_for_the_whole_request() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    let work = tempfile::tempdir().unwrap();
    let (_keeper, socket) = keeper_with(work.path(), &["--jobs", "1"]);
    let null = std::fs::File::create("/dev/null").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tricklers: Vec<_> = (0..4)
        .map(|_| {
            let conn = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            let fds = [null.as_raw_fd(), null.as_raw_fd()];
            // A length of 1000 bytes, then one byte every 500 ms.
            let head = 1000u32.to_le_bytes();
            sendmsg::<()>(
                conn.as_raw_fd(),
                &[std::io::IoSlice::new(&head)],
                &[ControlMessage::ScmRights(&fds)],
                MsgFlags::empty(),
                None,
            )
            .unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut conn = conn;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if conn.write_all(b" ").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                conn.set_read_timeout(Some(LIVENESS)).unwrap();
                let mut answer = String::new();
                let _ = conn.read_to_string(&mut answer);
                answer
            })
        })
        .collect();
    let out = sandbox(work.path(), Some(&socket))
        .args(["--", "echo", "served"])
        .output()
        .unwrap();
    assert_eq!(common::ok(out), "served\n");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for trickler in tricklers {
        let answer = trickler.join().unwrap();
        assert!(answer.contains("did not come whole"), "{answer}");
    }
}

/// Clients killed mid-run whose stdout is a pipe nobody reads (its reader lives on and never
/// reads) free the keeper: with `--jobs 1`, four of them (every thread of the keeper) and the
/// next client is served.
#[test]
fn a_killed_client_whose_stdout_nobody_reads_frees_the_keeper() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (_keeper, socket) = keeper_with(work.path(), &["--jobs", "1"]);
    // Our ends of the pipes stay open and unread for the whole test.
    let mut unread = Vec::new();
    for tag in ["987652", "987653", "987654", "987655"] {
        let (read, write) = nix::unistd::pipe().unwrap();
        unread.push(read);
        let mut client = Guard(
            sandbox(work.path(), Some(&socket))
                .args(["--", "yes", tag])
                .stdout(Stdio::from(write))
                .spawn()
                .unwrap(),
        );
        wait_until("the program to run", LIVENESS, || {
            find_process(&["yes", tag]).is_some()
        });
        client.0.kill().unwrap();
        client.0.wait().unwrap();
    }
    let mut next = Guard(
        sandbox(work.path(), Some(&socket))
            .args(["--", "echo", "next"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_until("the next client to be served", LIVENESS, || {
        next.0.try_wait().unwrap().is_some()
    });
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut next.0.stdout.take().unwrap(), &mut stdout).unwrap();
    assert_eq!(stdout, "next\n");
}

#[test]
fn a_keeper_that_dies_mid_run_fails_the_command_and_takes_the_box_along() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (mut keeper, socket) = keeper(work.path());
    let (client, sleeper) = start_sleeper(work.path(), &socket, "987652");
    keeper.0.kill().unwrap();
    keeper.0.wait().unwrap();
    let mut client = client;
    let out = std::mem::replace(&mut client.0, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("stopped before the run ended"), "{stderr}");
    assert!(!stderr.contains("status "), "{stderr}");
    wait_until("the box to die with its keeper", LIVENESS, || gone(sleeper));
    // A stale socket: the command runs the program itself (and its sandbox removes the dead
    // keeper's cgroups).
    let out = sandbox(work.path(), Some(&socket))
        .args(["--", "echo", "alone"])
        .output()
        .unwrap();
    assert_eq!(common::ok(out), "alone\n");
}

#[test]
fn clients_at_once_each_get_their_own_run() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (running, socket) = keeper(work.path());
    let clients: Vec<Child> = (0..6)
        .map(|i| {
            sandbox(work.path(), Some(&socket))
                .args(["--", "sh", "-c", &format!("sleep 0.2; echo client {i}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, client) in clients.into_iter().enumerate() {
        let out = client.wait_with_output().unwrap();
        assert_eq!(common::ok(out), format!("client {i}\n"));
    }
    // Each run's box and FIFO folders are removed once it is answered, wherever the keeper
    // made them (its temporary folder, or /dev/shm for the FIFOs); one empty box folder, made
    // ahead for the next run, may be left.
    let pid = running.0.id();
    let left = || -> Vec<PathBuf> {
        common::scratch_folders_of(pid, &[work.path().join("tmp"), PathBuf::from("/dev/shm")])
    };
    wait_until(
        "the runs' folders to be removed",
        LIVENESS,
        || match left().as_slice() {
            [] => true,
            [spare] => {
                let name = spare.file_name().unwrap().to_string_lossy().into_owned();
                name.starts_with("ioi-box-") && std::fs::read_dir(spare).unwrap().next().is_none()
            }
            _ => false,
        },
    );
}

#[test]
fn a_second_keeper_on_one_socket_is_refused() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (first, socket) = keeper(work.path());
    let out = common::bin(work.path())
        .args(["keeper", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let pid = first.0.id();
    assert!(
        stderr.contains(&format!(
            "a keeper already serves {} (pid {pid})",
            socket.display()
        )),
        "{stderr}"
    );
    // The first keeper still serves.
    let out = sandbox(work.path(), Some(&socket))
        .args(["--", "echo", "still"])
        .output()
        .unwrap();
    assert_eq!(common::ok(out), "still\n");
}

#[test]
fn a_keeper_refuses_a_folder_open_to_others() {
    let work = tempfile::tempdir().unwrap();
    let open = work.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = common::bin(work.path())
        .args(["keeper", "--socket"])
        .arg(open.join("keeper.sock"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("must be yours and closed to others"),
        "{stderr}"
    );
    assert!(!open.join("keeper.sock").exists());
}

#[test]
fn a_program_run_by_the_keeper_never_holds_the_callers_terminal() {
    if !is_root_or_skip("the keeper") {
        return;
    }
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let work = tempfile::tempdir().unwrap();
    let (_keeper, socket) = keeper(work.path());
    // The command's stdout and stderr are a terminal, which the keeper receives: the program
    // must still see pipes and have no controlling terminal to inject keystrokes into.
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
    let status = sandbox(work.path(), Some(&socket))
        .args(["--", "sh", "-c", script])
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .status()
        .unwrap();
    let mut master = std::fs::File::from(master);
    // SAFETY: fcntl on our own descriptor: read what is there without waiting.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&master);
        libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
    }
    let (mut text, mut buf) = (Vec::new(), [0u8; 4096]);
    while let Ok(n @ 1..) = master.read(&mut buf) {
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&text).replace('\r', "");
    assert_eq!(status.code(), Some(0), "{text}");
    assert!(text.contains("PIPE1\nPIPE2\nNO-CTTY\n"), "{text}");
}
