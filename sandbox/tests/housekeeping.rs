//! What the sandbox does off a run's latency (see the `housekeeper` module): cgroups made
//! ahead of need, and runs finished after their outcome is known. Nothing it defers may change
//! an outcome or outlive the sandbox.

mod common;
use std::path::PathBuf;
use std::time::Duration;

use common::*;
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Termination};

/// Cgroup directories of runs of this process (named `<pid namespace>-<pid>-<n>`), in every
/// hierarchy.
fn own_run_cgroups() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let prefix = format!("{ns}-{}-", std::process::id());
    walkdir::WalkDir::new("/sys/fs/cgroup")
        .max_depth(6)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_dir())
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            name.strip_prefix(&prefix)
                .is_some_and(|n| n.parse::<u64>().is_ok())
        })
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// Processes whose parent is this process, with their state (`Z` for a zombie).
fn own_children() -> Vec<(i32, String)> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            (fields.get(1) == Some(&me.as_str())).then(|| (pid, fields[0].to_string()))
        })
        .collect()
}

fn shell(sandbox: &Sandbox, script: &str, wall: f64) -> ioi_sandbox::Outcome {
    let mut spec = RunSpec::in_tmpfs(16 << 20, ["/bin/sh", "-c", script]);
    spec.limits = Limits {
        cpu_time: Some(Duration::from_secs(5)),
        wall_time: Some(Duration::from_secs_f64(wall * time_scale())),
        memory: Some(64 << 20),
        processes: Some(16),
        ..Limits::default()
    };
    sandbox.run(&spec)
}

/// Runs that end each way (the program last to go, a process outliving it, a limit), then the
/// sandbox is dropped: its spare cgroups existed while it lived, and afterwards no cgroup of
/// this process and no child process (running or zombie) is left. Fails if a deferred init is
/// never reaped, or a spare or deferred cgroup never removed.
#[test]
fn a_dropped_sandbox_leaves_no_cgroup_and_no_process() {
    if sandbox_missing() {
        return;
    }
    // Only this sandbox in this test process (the shared one of `common` is never created
    // here), so every run cgroup named with its pid is its own.
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    for _ in 0..5 {
        let o = shell(&sandbox, "exit 0", 5.0);
        assert_eq!(o.status, Termination::Ok, "{o:?}");
    }
    let o = shell(&sandbox, "sleep 30 & exit 0", 5.0);
    assert_eq!(
        o.status,
        Termination::Ok,
        "an orphan outlived the program: {o:?}"
    );
    let o = shell(&sandbox, "sleep 30", 0.3);
    assert_eq!(o.status, Termination::WallTimeLimit, "{o:?}");
    let o = shell(&sandbox, "exit 3", 5.0);
    assert_eq!(o.exit_code, Some(3), "{o:?}");
    // The housekeeper makes spares in the background, however long a loaded host makes it take
    // (the bound is liveness, never speed).
    wait_until(
        "a spare cgroup made ahead of the next run",
        LIVENESS,
        || !own_run_cgroups().is_empty(),
    );
    drop(sandbox);
    assert_eq!(
        own_run_cgroups(),
        Vec::<PathBuf>::new(),
        "cgroups left behind"
    );
    assert_eq!(own_children(), vec![], "processes left behind");
}

/// The outcome counts every process of the box: a child that burnt CPU and was waited for by
/// the program, the last thing the program did, is in the CPU time.
/// No two inits are children of one thread. An init shares the memory of the thread that
/// cloned it, and so that thread's `errno`, which the init reads after calls that fail on its
/// normal path (a `mkdir` that finds its folder, an `execve` of a `PATH` candidate that does not
/// exist): two inits of one thread could read each other's. Checked on runs in progress and the
/// boxes built ahead beside them, with `/proc/self/task/*/children`.
#[test]
fn no_two_inits_share_the_thread_that_cloned_them() {
    if sandbox_missing() {
        return;
    }
    let children_by_thread = || -> Vec<(String, Vec<String>)> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .map(|task| {
                let children = std::fs::read_to_string(task.path().join("children"))
                    .expect("/proc/self/task/*/children (CONFIG_PROC_CHILDREN)");
                let tid = task.file_name().to_string_lossy().into_owned();
                (tid, children.split_whitespace().map(String::from).collect())
            })
            .collect()
    };
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    // Runs in progress, and the boxes built ahead beside them.
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| shell(&sandbox, "sleep 3", 60.0)))
            .collect();
        let deadline = std::time::Instant::now() + LIVENESS;
        while own_children().len() < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "the runs did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        for (tid, children) in children_by_thread() {
            assert!(
                children.len() <= 1,
                "thread {tid} has the inits {children:?}"
            );
        }
        for run in runs {
            let o = run.join().unwrap();
            assert_eq!(o.status, Termination::Ok, "{o:?}");
        }
    });
}

#[test]
fn the_outcome_counts_a_child_the_program_waited_for() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <ctime>
        #include <sys/wait.h>
        #include <unistd.h>
        int main(){
          pid_t child = fork();
          if (child == 0) { while (clock() < CLOCKS_PER_SEC * 3 / 10) {} _exit(0); }
          waitpid(child, nullptr, 0);
          return 0; }"#,
        limits(5.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert!(
        o.cpu_time >= 0.29,
        "the child's 0.3 s of CPU are missing: {o:?}"
    );
}

/// Boxes built ahead carry nothing from one run to the next: what a run leaves in `/tmp`,
/// `/dev/shm` and its environment is gone, and the next run's CPU time and peak memory start
/// from zero (each box has a cgroup of its own, made for it).
#[test]
fn nothing_carries_over_from_one_run_to_the_next() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let stdout = out.path().join("stdout");
    let run = |script: &str| {
        let mut spec = RunSpec::in_tmpfs(64 << 20, ["/bin/sh", "-c", script]);
        spec.limits = Limits {
            cpu_time: Some(Duration::from_secs(5)),
            wall_time: Some(Duration::from_secs_f64(10.0 * time_scale())),
            memory: Some(256 << 20),
            processes: Some(16),
            ..Limits::default()
        };
        spec.stdout = ioi_sandbox::Stdio::Path(stdout.clone());
        let outcome = sandbox.run(&spec);
        assert_eq!(outcome.status, Termination::Ok, "{script}: {outcome:?}");
        (outcome, std::fs::read_to_string(&stdout).unwrap())
    };
    // Leaves files behind, fills 48 MiB of memory, burns CPU.
    let (first, _) = run("echo secret > /tmp/left; echo secret > /dev/shm/left; \
         head -c 50331648 /dev/zero > /dev/shm/big; \
         i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done");
    assert!(first.memory >= 48 << 20, "{first:?}");
    assert!(first.cpu_time >= 0.05, "{first:?}");
    for _ in 0..3 {
        let (next, seen) = run("ls -A /tmp /dev/shm; echo pid $$");
        assert_eq!(seen, "/dev/shm:\n\n/tmp:\npid 2\n", "{next:?}");
        assert!(next.memory < 16 << 20, "the peak carried over: {next:?}");
        assert!(
            next.cpu_time < first.cpu_time / 2.0,
            "CPU carried over: {next:?}"
        );
    }
}

/// A box built before a mount on the host would not see it: once the host's mount table
/// changes, the next run gets a box that does.
#[test]
fn a_host_mount_made_after_boxes_were_built_is_seen() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    let spec = RunSpec::in_tmpfs(16 << 20, ["/bin/true"]);
    assert_eq!(sandbox.run(&spec).status, Termination::Ok);
    // Let the housekeeper build the next boxes now, before the mount.
    std::thread::sleep(Duration::from_millis(200));
    let data = tempfile::tempdir().unwrap();
    let mounted = Mounted::tmpfs(data.path());
    std::fs::write(data.path().join("file"), "after the mount").unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut spec = RunSpec::in_tmpfs(16 << 20, ["/bin/cat", "/data/file"]);
    spec.binds
        .push(ioi_sandbox::Bind::read_only(data.path(), "/data"));
    spec.stdout = ioi_sandbox::Stdio::Path(out.path().join("stdout"));
    let outcome = sandbox.run(&spec);
    drop(mounted);
    assert_eq!(outcome.status, Termination::Ok, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(out.path().join("stdout")).unwrap(),
        "after the mount"
    );
}

/// A tmpfs mounted on the host for a test, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(at: &std::path::Path) -> Mounted {
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(at)
            .status()
            .unwrap();
        assert!(status.success(), "cannot mount a tmpfs on {}", at.display());
        Mounted(at.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A tmpfs mounted on the host at once (the mount(2) system call, not the `mount` command, so
/// that it lands while the housekeeper is still building the box after a run), unmounted
/// when dropped.
struct MountedNow(PathBuf);

impl MountedNow {
    fn tmpfs(at: &std::path::Path) -> MountedNow {
        nix::mount::mount(
            Some("tmpfs"),
            at,
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            Some("size=1m"),
        )
        .unwrap_or_else(|e| panic!("cannot mount a tmpfs on {}: {e}", at.display()));
        MountedNow(at.to_path_buf())
    }
}

impl Drop for MountedNow {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// A box whose build began before a host mount and ended after a run noticed the change
/// (that run found no box ready and built its own) must not be used either: every run that
/// starts after the mount sees it. Another thread's run sets the housekeeper building while
/// this thread mounts and runs at once, at delays that sweep the build. Fails when the box
/// being built at the moment of the mount is put on the shelf after the change was noticed
/// and a later run takes it (its bind of the mount point shows the directory under the mount).
#[test]
fn a_box_being_built_when_the_host_mounts_is_not_used_after_the_mount() {
    if sandbox_missing() {
        return;
    }
    if !nix::unistd::geteuid().is_root() && skip("mounting a tmpfs on the host needs root") {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions {
        ready_boxes: 1,
        ..SandboxOptions::default()
    })
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let cat = |data: &std::path::Path, name: &str| {
        let stdout = out.path().join(name);
        let mut spec = RunSpec::in_tmpfs(16 << 20, ["/bin/cat", "/data/file"]);
        spec.binds.push(ioi_sandbox::Bind::read_only(data, "/data"));
        spec.stdout = ioi_sandbox::Stdio::Path(stdout.clone());
        let outcome = sandbox.run(&spec);
        (
            outcome,
            std::fs::read_to_string(&stdout).unwrap_or_default(),
        )
    };
    let mut stale = Vec::new();
    for round in 0..100u64 {
        // The mount point exists before any box of this round is built.
        let data = tempfile::tempdir().unwrap();
        std::thread::scope(|scope| {
            // This run takes the box ready: the housekeeper starts building the next one.
            scope.spawn(|| sandbox.run(&RunSpec::in_tmpfs(16 << 20, ["/bin/true"])));
            std::thread::sleep(Duration::from_micros(100 * (round % 20)));
            let mounted = MountedNow::tmpfs(data.path());
            std::fs::write(data.path().join("file"), "after the mount").unwrap();
            for run in 0..3 {
                let (outcome, seen) = cat(data.path(), &format!("{round}-{run}"));
                if (outcome.status, seen.as_str()) != (Termination::Ok, "after the mount") {
                    stale.push(format!("round {round}, run {run}: {outcome:?}"));
                }
            }
            drop(mounted);
        });
    }
    assert_eq!(
        stale,
        Vec::<String>::new(),
        "runs after the mount got a box built before it"
    );
}

/// A box built ahead whose init died while it waited for its run (killed from outside) is not
/// handed a run: the run gets a box that works. Fails when the run is answered "the sandbox
/// init died without reporting" (an internal error) instead.
#[test]
fn a_run_is_not_given_a_box_whose_init_died_while_waiting() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions {
        ready_boxes: 1,
        ..SandboxOptions::default()
    })
    .unwrap();
    let spec = RunSpec::in_tmpfs(16 << 20, ["/bin/true"]);
    assert_eq!(sandbox.run(&spec).status, Termination::Ok);
    // The next box is built and waits; the last run's init is reaped: one child is left.
    let deadline = std::time::Instant::now() + LIVENESS;
    let waiting = loop {
        let children = own_children();
        if let [(pid, state)] = children.as_slice() {
            if state == "S" {
                break *pid;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no box waits alone for its run: {children:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Only this process's own child, started by the sandbox of this test.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(waiting),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Dead before the run comes (a zombie: the sandbox reaps its inits itself).
    while !own_children().contains(&(waiting, "Z".to_string())) {
        assert!(std::time::Instant::now() < deadline, "the init did not die");
        std::thread::sleep(Duration::from_millis(20));
    }
    let outcome = sandbox.run(&spec);
    assert_eq!(outcome.status, Termination::Ok, "{outcome:?}");
    drop(sandbox);
    assert_eq!(own_children(), vec![], "processes left behind");
}

/// Many runs at once, far more than the cores: what they leave (a uid of the host's range, a
/// mount namespace, a cgroup each) waits to be finished off their path at most
/// [`ioi_sandbox::MAX_UNFINISHED`] at a time, so that a busy host never holds every uid of the
/// range in leftovers; every run still ends well, and nothing is left once the sandbox goes.
#[test]
fn leftovers_waiting_to_be_finished_are_bounded_however_many_runs_at_once() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    let failed = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..48 {
            scope.spawn(|| {
                for _ in 0..12 {
                    if shell(&sandbox, "exit 0", 20.0).status != Termination::Ok {
                        failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(failed.into_inner(), 0, "every run ends well");
    let most = sandbox.most_unfinished();
    assert!(
        (1..=ioi_sandbox::MAX_UNFINISHED as u64).contains(&most),
        "{most} leftovers waited at once"
    );
    drop(sandbox);
    assert_eq!(own_children(), vec![], "processes left behind");
    assert_eq!(
        own_run_cgroups(),
        Vec::<PathBuf>::new(),
        "cgroups left behind"
    );
}

/// An idle sandbox lets its boxes go: each waiting init holds a uid, a cgroup and memory, and
/// shows the host as it was, so none waits more than a few seconds
/// (2 s, checked at least every 2 s). The next run still gets a box.
#[test]
fn an_idle_sandbox_keeps_no_box_waiting() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    assert_eq!(shell(&sandbox, "exit 0", 5.0).status, Termination::Ok);
    wait_until("a box built ahead", LIVENESS, || !own_children().is_empty());
    wait_until("a box counted as ready", LIVENESS, || {
        sandbox.boxes_ready() >= 1
    });
    assert!(sandbox.boxes_ready() <= SandboxOptions::default().ready_boxes as u64);
    // Let go however loaded the host is; a box that is never let go fails at the bound.
    wait_until("no box waiting once idle", LIVENESS, || {
        own_children().is_empty()
    });
    assert_eq!(sandbox.boxes_ready(), 0);
    assert_eq!(shell(&sandbox, "exit 0", 5.0).status, Termination::Ok);
}

/// Every run takes a box of its own, built ahead or on demand, and holds it exactly while it
/// runs: `boxes_in_use` is 1 during a run (seen from another thread while the run waits for
/// the test) and 0 once every run has returned, whatever way it ended.
#[test]
fn a_box_is_in_use_while_its_run_lasts_and_every_run_had_one_built() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    assert_eq!(sandbox.boxes_in_use(), 0);
    let built = sandbox.boxes_built();
    let gate = tempfile::tempdir().unwrap();
    // Every box uid may look for the file.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(gate.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut spec = RunSpec::in_tmpfs(
        16 << 20,
        [
            "/bin/sh",
            "-c",
            "while [ ! -e /gate/open ]; do sleep 0.01; done",
        ],
    );
    spec.binds
        .push(ioi_sandbox::Bind::read_only(gate.path(), "/gate"));
    spec.limits = Limits {
        cpu_time: Some(Duration::from_secs(60)),
        wall_time: Some(Duration::from_secs(120)),
        memory: Some(64 << 20),
        processes: Some(16),
        ..Limits::default()
    };
    let seen = std::thread::scope(|s| {
        let run = s.spawn(|| sandbox.run(&spec));
        let start = std::time::Instant::now();
        while sandbox.boxes_in_use() == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the run never showed as a box in use"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let seen = sandbox.boxes_in_use();
        std::fs::write(gate.path().join("open"), "").unwrap();
        let outcome = run.join().unwrap();
        assert_eq!(outcome.status, Termination::Ok, "{outcome:?}");
        seen
    });
    assert_eq!(seen, 1);
    assert_eq!(sandbox.boxes_in_use(), 0);
    let limited = shell(&sandbox, "while :; do :; done", 0.3);
    assert_eq!(limited.status, Termination::WallTimeLimit, "{limited:?}");
    let failed = shell(&sandbox, "exit 3", 5.0);
    assert_eq!(failed.status, Termination::RuntimeError, "{failed:?}");
    assert_eq!(sandbox.boxes_in_use(), 0);
    let built = sandbox.boxes_built() - built;
    assert!(built >= 3, "{built} boxes built for 3 runs");
}

/// A run's output files hold what the program wrote and nothing else: a missing one is created,
/// one that exists with a longer content is truncated first.
#[test]
fn output_files_hold_only_what_the_program_wrote() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let old = "an older and much longer content\n".repeat(100);
    std::fs::write(b.path().join("stderr"), &old).unwrap();
    assert!(!b.path().join("stdout").exists());
    let outcome = b.run(
        &["/bin/sh", "-c", "echo fresh; echo again >&2"],
        limits(5.0, 256),
    );
    assert_eq!(outcome.status, Termination::Ok, "{}", outcome.message);
    assert_eq!(b.read("stdout"), "fresh\n");
    assert_eq!(b.read("stderr"), "again\n");
}

/// The names of the files in `dir` that were modified (`IN_MODIFY`: a write or a truncation)
/// while `f` ran, and of those created, as inotify saw them.
fn modified_and_created(dir: &std::path::Path, f: impl FnOnce()) -> (Vec<String>, Vec<String>) {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: inotify calls on a descriptor of our own, a buffer of ours, a NUL-terminated path.
    unsafe {
        let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
        assert!(fd >= 0, "inotify_init1 failed");
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        let mask = libc::IN_MODIFY | libc::IN_CREATE;
        assert!(libc::inotify_add_watch(fd, path.as_ptr(), mask) >= 0);
        f();
        let (mut modified, mut created) = (Vec::new(), Vec::new());
        let mut buf = [0u8; 8192];
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < n as usize {
                let event = &*(buf.as_ptr().add(at) as *const libc::inotify_event);
                let name_at = at + std::mem::size_of::<libc::inotify_event>();
                let name = std::ffi::CStr::from_bytes_until_nul(
                    &buf[name_at..name_at + event.len as usize],
                )
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
                if event.mask & libc::IN_MODIFY != 0 {
                    modified.push(name.clone());
                }
                if event.mask & libc::IN_CREATE != 0 {
                    created.push(name);
                }
                at = name_at + event.len as usize;
            }
        }
        libc::close(fd);
        (modified, created)
    }
}

/// An output file made for a run is opened without truncating it again (on ext4 a truncation
/// to zero writes the file to the disk at its last close, an output of every test written for
/// nothing); one that was there is truncated. Seen by inotify, around a program that writes
/// nothing: a truncation is a modification.
#[test]
fn an_output_file_made_for_the_run_is_not_truncated_again() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    std::fs::write(b.path().join("stderr"), "older content\n").unwrap();
    let (modified, created) = modified_and_created(b.path(), || {
        let outcome = b.run(&["/bin/true"], limits(5.0, 256));
        assert_eq!(outcome.status, Termination::Ok, "{}", outcome.message);
    });
    assert!(created.contains(&"stdout".to_string()), "{created:?}");
    assert!(modified.contains(&"stderr".to_string()), "{modified:?}");
    assert!(!modified.contains(&"stdout".to_string()), "{modified:?}");
    assert_eq!(b.read("stderr"), "");
}

/// On cgroup v1 a run's `cpuacct` and `pids` cgroups serve later runs once its tasks are gone;
/// each run still counts only its own CPU time and has only its own process limit. Runs that
/// burn CPU under a limit of one process come first, so the runs after them take their
/// cgroups: those start several processes with no process limit and burn almost nothing.
/// Fails if a reused CPU counter is not reset (a later run would report the burners' CPU time)
/// or a reused `pids` limit is kept (its processes could not start).
#[test]
fn reused_cgroups_count_and_limit_each_run_alone() {
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    if sandbox.cgroup_version() != ioi_sandbox::CgroupVersion::V1 {
        skip("cgroup v2 makes a run's cgroup anew each time");
        return;
    }
    let run = |script: &str, processes: Option<u64>| {
        let mut spec = RunSpec::in_tmpfs(16 << 20, ["/bin/sh", "-c", script]);
        spec.limits = Limits {
            cpu_time: Some(Duration::from_secs(10)),
            wall_time: Some(Duration::from_secs_f64(30.0 * time_scale())),
            memory: Some(64 << 20),
            processes,
            ..Limits::default()
        };
        sandbox.run(&spec)
    };
    let reused_before = sandbox.cgroups_reused();
    let mut burnt = 0.0;
    for _ in 0..6 {
        let o = run("i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done", Some(1));
        assert_eq!(o.status, Termination::Ok, "{o:?}");
        burnt += o.cpu_time;
    }
    for _ in 0..6 {
        let o = run("/bin/true; /bin/true; /bin/true | /bin/true", None);
        assert_eq!(
            o.status,
            Termination::Ok,
            "a reused limit of one process: {o:?}"
        );
        assert!(
            o.cpu_time < burnt / 6.0 / 2.0,
            "{} s of CPU for four /bin/true, where a burner took {} s: a reused counter \
             kept an earlier run's time",
            o.cpu_time,
            burnt / 6.0
        );
    }
    assert!(
        sandbox.cgroups_reused() > reused_before,
        "no run took a finished run's cgroups"
    );
}

/// The folders of this process's sandboxes' mount points (see `keeper::mount_points`).
fn own_mount_point_folders() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let prefix = format!("ioi-sandbox-{ns}-{}-", std::process::id());
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// A box's mounts are made on paths in a folder of its sandbox's own, which no other user may
/// change (in a folder such as `/tmp` itself, another user could put a folder of theirs in place
/// of a mount point between two of a box's mounts, and the box would bind it as its `/usr`):
/// owned by the keeper, `rwx--x--x`, removed with the sandbox. A folder that a dead keeper of
/// this pid namespace left is removed by the next sandbox.
#[test]
fn the_boxes_mount_points_are_in_a_folder_no_other_user_can_change() {
    use std::os::unix::fs::MetadataExt;
    if sandbox_missing() {
        return;
    }
    let sandbox = Sandbox::new(SandboxOptions::default()).unwrap();
    let o = shell(&sandbox, "exit 0", 5.0);
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let folders = own_mount_point_folders();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let meta = std::fs::symlink_metadata(&folders[0]).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
    assert_eq!(meta.mode() & 0o7777, 0o711, "{:o}", meta.mode());
    // A dead keeper's: the pid of a child reaped just now.
    let dead = std::process::Command::new("true")
        .spawn()
        .and_then(|mut child| child.wait().map(|_| child.id()))
        .unwrap();
    let ns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let stale = std::env::temp_dir().join(format!("ioi-sandbox-{ns}-{dead}-test"));
    for inner in ["root", "skeleton"] {
        std::fs::create_dir_all(stale.join(inner)).unwrap();
    }
    let second = Sandbox::new(SandboxOptions::default()).unwrap();
    let left = stale.exists();
    let _ = std::fs::remove_dir_all(&stale);
    assert!(!left, "the folder of a dead keeper was kept");
    assert_eq!(own_mount_point_folders().len(), 2);
    drop(second);
    drop(sandbox);
    assert_eq!(own_mount_point_folders(), Vec::<PathBuf>::new());
}

/// A host file system unmounted while a sandbox runs boxes is not held by the sandbox's
/// threads: the threads that clone inits enter the mount template (a copy of the host's mounts)
/// only for each clone, so that none keeps an old template, and with it the unmounted file
/// system, busy while it waits.
#[test]
fn no_thread_keeps_a_host_mount_after_the_host_unmounts_it() {
    if sandbox_missing() {
        return;
    }
    let sandbox = std::sync::Arc::new(Sandbox::new(SandboxOptions::default()).unwrap());
    let data = tempfile::tempdir().unwrap();
    let mounted = Mounted::tmpfs(data.path());
    // Several at once, so that several threads clone inits from the template holding it.
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let sandbox = sandbox.clone();
            std::thread::spawn(move || shell(&sandbox, "exit 0", 5.0))
        })
        .collect();
    for run in runs {
        let o = run.join().unwrap();
        assert_eq!(o.status, Termination::Ok, "{o:?}");
    }
    drop(mounted);
    // A box after the unmount: the template is made again without it.
    let o = shell(&sandbox, "exit 0", 5.0);
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let point = data.path().to_string_lossy().into_owned();
    let holders: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("mountinfo"))
                .is_ok_and(|table| table.lines().any(|l| l.split(' ').nth(4) == Some(&point)))
        })
        .map(|task| task.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        holders.is_empty(),
        "threads {holders:?} still see {point}, unmounted on the host"
    );
}
