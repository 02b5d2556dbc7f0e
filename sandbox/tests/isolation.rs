//! Boxes that cannot reach each other or the caller, and a wall limit that holds on a busy
//! host: each test names the hole it keeps closed.

mod common;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ioi_sandbox::{Limits, RunSpec, Stdio, Termination};

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn every_box_is_a_session_of_its_own_without_a_terminal() {
    if sandbox_missing() {
        return;
    }
    // The init leads a new session and process group (pid 1 inside): kill(0) and the
    // caller's terminal are out of reach; TIOCSTI is refused even on a descriptor that is one.
    let (o, out) = run_program(
        r#"#include <cstdio>
        #include <cerrno>
        #include <fcntl.h>
        #include <unistd.h>
        #include <sys/ioctl.h>
        int main(){
            int tty = open("/dev/tty", O_RDWR);
            char c = 'x';
            errno = 0;
            int sti = ioctl(1, TIOCSTI, &c);
            int sti_errno = errno;
            printf("sid=%d pgrp=%d tty=%d sti=%d/%d\n", (int)getsid(0), (int)getpgrp(), tty, sti, sti_errno);
        }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(
        out.trim(),
        format!("sid=1 pgrp=1 tty=-1 sti=-1/{}", libc::EPERM),
        "{o:?}"
    );
}

/// A pseudo-terminal pair: (master, slave, slave path).
fn pty() -> (OwnedFd, OwnedFd, std::path::PathBuf) {
    use std::os::fd::FromRawFd;
    // SAFETY: libc pty calls on descriptors we own; ptsname's buffer is copied at once.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(master))
            .to_string_lossy()
            .into_owned();
        let c = std::ffi::CString::new(name.clone()).unwrap();
        let slave = libc::open(c.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(slave >= 0, "open {name}");
        (
            OwnedFd::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
            name.into(),
        )
    }
}

#[test]
fn a_terminal_is_never_given_to_a_box() {
    if sandbox_missing() {
        return;
    }
    let (_master, slave, slave_path) = pty();
    let b = TestBox::new();
    let mut spec = b.spec(&["/bin/true"]);
    spec.limits = limits(1.0, 64);
    spec.stdout = Stdio::Fd(Arc::new(slave));
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::InternalError, "{o:?}");
    assert!(o.message.contains("terminal"), "{o:?}");
    // Named by its path, the terminal is refused too.
    let mut spec = b.spec(&["/bin/true"]);
    spec.limits = limits(1.0, 64);
    spec.stderr = Stdio::Existing(slave_path);
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::InternalError, "{o:?}");
    assert!(o.message.contains("terminal"), "{o:?}");
}

#[test]
fn kill_and_renice_from_one_box_do_not_reach_another() {
    if sandbox_missing() {
        return;
    }
    let attacker = r#"#include <csignal>
        #include <sys/resource.h>
        int main(){
            setpriority(PRIO_USER, 0, 19);
            setpriority(PRIO_PGRP, 0, 19);
            kill(-1, SIGKILL);
            kill(0, SIGKILL);
        }"#;
    let (victim, out, attack) = while_holding(
        r#"#include <cstdio>
        #include <iostream>
        #include <string>
        #include <sys/resource.h>
        int main(){ printf("ready\n"); fflush(stdout); std::string s; std::cin >> s; printf("nice=%d\n", getpriority(PRIO_PROCESS, 0)); }"#,
        Limits {
            wall_time: Some(Duration::from_secs(60)),
            ..limits(5.0, 64)
        },
        || run_program(attacker, limits(1.0, 64)),
    );
    // The attacker only reached itself.
    assert_eq!(attack.0.signal, Some(libc::SIGKILL), "{:?}", attack.0);
    assert_eq!(victim.status, Termination::Ok, "{victim:?}");
    // The box starts at the nice value of whoever runs the suite (boxes inherit it), and the
    // attacker's renice must not have moved it.
    // SAFETY: getpriority reads this process's own nice value.
    let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    assert_eq!(out, format!("ready\nnice={own}\n"));
}

#[test]
fn one_box_cannot_shrink_the_pipes_of_another() {
    if sandbox_missing() {
        return;
    }
    // Pipe buffers are budgeted per host user: a box that reserves the whole budget must not
    // leave 8 KiB pipes to the others, which takes a host uid of its own per box.
    if !is_root() && skip("distinct uids per box need root") {
        return;
    }
    let soft: u64 = std::fs::read_to_string("/proc/sys/fs/pipe-user-pages-soft")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if soft == 0 && skip("fs.pipe-user-pages-soft is 0: no per-user pipe budget to exhaust") {
        return;
    }
    let (hog, out, (probe, probe_out)) = while_holding(
        r#"#include <cstdio>
        #include <iostream>
        #include <string>
        #include <fcntl.h>
        #include <unistd.h>
        int main(){
            int big = 0;
            for (int i = 0; i < 2000; i++) { int p[2]; if (pipe(p)) break; if (fcntl(p[0], F_SETPIPE_SZ, 1 << 20) < 0) break; big++; }
            // Default-sized pipes take the budget over its soft limit; the next ones shrink.
            for (int i = 0; i < 100; i++) { int p[2]; if (pipe(p)) break; }
            int p[2]; if (pipe(p)) return 1;
            printf("ready %d %d\n", big, fcntl(p[0], F_GETPIPE_SZ)); fflush(stdout);
            std::string s; std::cin >> s;
        }"#,
        Limits {
            open_files: Some(8192),
            wall_time: Some(Duration::from_secs(60)),
            ..limits(5.0, 256)
        },
        || {
            run_program(
                r#"#include <cstdio>
                #include <fcntl.h>
                #include <unistd.h>
                int main(){ int p[2]; if (pipe(p)) return 1; printf("%d\n", fcntl(p[0], F_GETPIPE_SZ)); }"#,
                limits(1.0, 64),
            )
        },
    );
    assert_eq!(hog.status, Termination::Ok, "{hog:?}");
    let reserved: u64 = out
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    // The hog did exhaust its budget: it could not reserve 2000 MiB, and its own new pipes
    // shrank to the minimum.
    assert!(reserved > 0 && reserved < 2000, "{out:?}");
    assert_eq!(out.split_whitespace().nth(2), Some("8192"), "{out:?}");
    assert_eq!(probe.status, Termination::Ok, "{probe:?}");
    assert_eq!(probe_out.trim(), "65536", "the other box's pipe shrank");
}

#[test]
fn file_locks_leases_and_notifications_are_refused() {
    if sandbox_missing() {
        return;
    }
    let (o, out) = run_program(
        r#"#include <cstdio>
        #include <cerrno>
        #include <fcntl.h>
        #include <unistd.h>
        #include <sys/file.h>
        #include <sys/inotify.h>
        int e(int r){ return r < 0 ? errno : 0; }
        int main(){
            int fd = open("/usr/bin/true", O_RDONLY);
            struct flock l{}; l.l_type = F_RDLCK; l.l_whence = SEEK_SET;
            printf("%d %d %d %d %d %d %d %d\n",
                e(flock(fd, LOCK_SH | LOCK_NB)),
                e(fcntl(fd, F_SETLK, &l)),
                e(fcntl(fd, F_SETLKW, &l)),
                e(fcntl(fd, F_GETLK, &l)),
                e(fcntl(fd, F_OFD_SETLK, &l)),
                e(fcntl(fd, F_SETLEASE, F_RDLCK)),
                e(inotify_init1(0)),
                e(fcntl(fd, F_GETFL)));
        }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let (nolck, perm) = (libc::ENOLCK, libc::EPERM);
    assert_eq!(
        out.trim(),
        format!("{nolck} {nolck} {nolck} {nolck} {nolck} {perm} {perm} 0")
    );
}

#[test]
fn two_boxes_cannot_signal_through_a_lock_on_a_shared_file() {
    if sandbox_missing() {
        return;
    }
    // The finding: two user processes of a Communication test coordinated with flock on a
    // file of the shared read-only /usr.
    let (holder, out, (probe, probe_out)) = while_holding(
        r#"#include <cstdio>
        #include <iostream>
        #include <string>
        #include <fcntl.h>
        #include <sys/file.h>
        int main(){ int fd = open("/usr/bin/true", O_RDONLY); printf("ready %d\n", flock(fd, LOCK_EX | LOCK_NB)); fflush(stdout); std::string s; std::cin >> s; }"#,
        Limits {
            wall_time: Some(Duration::from_secs(60)),
            ..limits(5.0, 64)
        },
        || {
            run_program(
                r#"#include <cstdio>
                #include <cerrno>
                #include <fcntl.h>
                #include <sys/file.h>
                int main(){ int fd = open("/usr/bin/true", O_RDONLY); int r = flock(fd, LOCK_EX | LOCK_NB); printf("%d\n", r < 0 && errno == EWOULDBLOCK ? 1 : 0); }"#,
                limits(1.0, 64),
            )
        },
    );
    assert_eq!(holder.status, Termination::Ok, "{holder:?}");
    assert_eq!(out.trim(), "ready -1", "the holder got a lock");
    assert_eq!(probe.status, Termination::Ok, "{probe:?}");
    assert_eq!(probe_out.trim(), "0", "the probe saw the holder's lock");
}

#[test]
fn ipc_objects_and_abstract_sockets_are_private_to_a_box() {
    if sandbox_missing() {
        return;
    }
    let (holder, out, (probe, probe_out)) = while_holding(
        r#"#include <cstdio>
        #include <cstring>
        #include <iostream>
        #include <string>
        #include <fcntl.h>
        #include <mqueue.h>
        #include <sys/ipc.h>
        #include <sys/shm.h>
        #include <sys/sem.h>
        #include <sys/msg.h>
        #include <sys/socket.h>
        #include <sys/un.h>
        int main(){
            int shm = shmget(0x4242, 4096, IPC_CREAT | 0666);
            int sem = semget(0x4243, 1, IPC_CREAT | 0666);
            int msg = msgget(0x4244, IPC_CREAT | 0666);
            mqd_t mq = mq_open("/ioi-covert", O_CREAT | O_RDWR, 0666, nullptr);
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            sockaddr_un a{}; a.sun_family = AF_UNIX; memcpy(a.sun_path, "\0ioi-covert", 11);
            int b = bind(s, (sockaddr*)&a, sizeof(sa_family_t) + 11);
            listen(s, 1);
            printf("ready %d %d %d %d %d\n", shm >= 0, sem >= 0, msg >= 0, mq != (mqd_t)-1, b == 0); fflush(stdout);
            std::string w; std::cin >> w;
        }"#,
        Limits {
            wall_time: Some(Duration::from_secs(60)),
            ..limits(5.0, 64)
        },
        || {
            run_program(
                r#"#include <cstdio>
                #include <cstring>
                #include <fcntl.h>
                #include <mqueue.h>
                #include <sys/ipc.h>
                #include <sys/shm.h>
                #include <sys/sem.h>
                #include <sys/msg.h>
                #include <sys/socket.h>
                #include <sys/un.h>
                int main(){
                    int s = socket(AF_UNIX, SOCK_STREAM, 0);
                    sockaddr_un a{}; a.sun_family = AF_UNIX; memcpy(a.sun_path, "\0ioi-covert", 11);
                    printf("%d %d %d %d %d\n", shmget(0x4242, 0, 0) >= 0, semget(0x4243, 0, 0) >= 0, msgget(0x4244, 0) >= 0,
                        mq_open("/ioi-covert", O_RDONLY) != (mqd_t)-1, connect(s, (sockaddr*)&a, sizeof(sa_family_t) + 11) == 0);
                }"#,
                limits(1.0, 64),
            )
        },
    );
    assert_eq!(holder.status, Termination::Ok, "{holder:?}");
    assert_eq!(
        out.trim(),
        "ready 1 1 1 1 1",
        "the holder could not create its objects"
    );
    assert_eq!(probe.status, Termination::Ok, "{probe:?}");
    assert_eq!(
        probe_out.trim(),
        "0 0 0 0 0",
        "the probe reached the holder's objects"
    );
}

#[test]
fn keyrings_are_out_of_reach() {
    if sandbox_missing() {
        return;
    }
    let (o, _) = run_program(
        r#"#include <unistd.h>
        #include <sys/syscall.h>
        int main(){ return syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -4 /* user keyring */, 0) < 0; }"#,
        limits(1.0, 64),
    );
    assert_eq!(
        (o.status, o.signal),
        (Termination::Signaled, Some(libc::SIGSYS)),
        "{o:?}"
    );
}

#[test]
fn the_box_learns_no_host_path_and_no_host_command_line() {
    if sandbox_missing() {
        return;
    }
    let data = tempfile::Builder::new()
        .prefix("secret-test-name-")
        .tempdir()
        .unwrap();
    let input = data.path().join("secret-input-07.in");
    std::fs::write(&input, "1 2\n").unwrap();
    let b = TestBox::new();
    b.compile(
        r#"#include <cstdio>
        #include <cctype>
        #include <string>
        #include <dirent.h>
        #include <unistd.h>
        static void show(const char *name, const char *path){
            FILE *f = fopen(path, "r"); printf("%s:", name);
            if (!f) { printf("unreadable\n"); return; }
            int c; while ((c = fgetc(f)) != EOF) putchar(c ? c : ' ');
            printf("\n"); fclose(f);
        }
        int main(){
            char buf[4096];
            for (int fd = 0; fd < 3; fd++) { ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1); buf[n < 0 ? 0 : n] = 0; printf("fd%d:%s\n", fd, buf); }
            show("cmdline1", "/proc/1/cmdline");
            show("environ1", "/proc/1/environ");
            show("environ", "/proc/self/environ");
            show("cgroup", "/proc/self/cgroup");
            show("mounts", "/proc/self/mountinfo");
            printf("stage:%d\n", access("/dev/.stdio", F_OK));
            int pids = 0; DIR *d = opendir("/proc"); while (dirent *e = readdir(d)) if (isdigit(e->d_name[0])) pids++;
            printf("pids:%d\n", pids);
        }"#,
    );
    let mut spec = b.spec(&["./prog"]);
    spec.limits = limits(1.0, 64);
    spec.stdin = Stdio::Path(input.clone());
    let output = data.path().join("secret-output.txt");
    spec.stdout = Stdio::Path(output.clone());
    spec.stderr = Stdio::Append(data.path().join("secret-errors.txt"));
    let o = sandbox().run(&spec);
    let out = std::fs::read_to_string(&output).unwrap();
    assert_eq!(o.status, Termination::Ok, "{o:?} {out}");
    for secret in [
        "secret-",
        &data.path().display().to_string(),
        "ioi",
        "target",
    ] {
        assert!(!out.contains(secret), "{secret:?} seen in the box:\n{out}");
    }
    assert!(out.contains("cmdline1:unreadable\n"), "{out}");
    assert!(out.contains("environ1:unreadable\n"), "{out}");
    assert!(
        out.contains("environ:PATH=/usr/local/bin:/usr/bin:/bin \n"),
        "{out}"
    );
    // Only the program itself: the init, a clone of the caller, is invisible.
    assert!(out.contains("pids:1\n"), "{out}");
    // The folder the streams were bound on while the init opened them is gone, binds and all.
    assert!(out.contains("stage:-1\n"), "{out}");
    assert!(
        !out.contains(".stdio"),
        "a stream's bind is left in the box:\n{out}"
    );
}

#[test]
fn a_busy_host_changes_no_verdict_and_still_stops_sleepers() {
    if sandbox_missing() {
        return;
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let _busy = BusyLoops::start(8 * cores);
    let b = TestBox::new();
    // 0.3 s of a 0.5 s limit in CPU time, counted by the program's own CPU clock, so that
    // load cannot change what it uses. Beside eight busy loops per core it gets a ninth of a
    // core or less: longer than the wall limit (3 × 0.5 + 1 s) of wall-clock time, which the
    // time spent waiting for a CPU does not count against.
    let cpu_bound = r#"#include <ctime>
        static double cpu(){ timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
        int main(){ volatile unsigned long x = 0; while (cpu() < 0.3) x++; }"#;
    b.compile(cpu_bound);
    for run in 0..4 {
        let mut spec = b.spec(&["./prog"]);
        spec.limits = limits(0.5, 64);
        let o = sandbox().run(&spec);
        assert_eq!(o.status, Termination::Ok, "run {run}: {o:?}");
    }
    // A sleeper, and a process blocked forever opening a FIFO, are still stopped at the wall
    // limit, within a bounded time, load or not.
    let sleeper = TestBox::new();
    sleeper.compile("#include <unistd.h>\nint main(){ for(;;) pause(); }");
    let mut spec = sleeper.spec(&["./prog"]);
    spec.limits = limits(0.5, 64);
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::WallTimeLimit, "{o:?}");
    assert!(o.wall_time >= 2.5 && o.wall_time < 20.0, "{o:?}");

    let blocked = TestBox::new();
    let fifo = blocked.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    blocked.compile(
        "#include <fcntl.h>\n#include <unistd.h>\nint main(){ int fd = open(\"fifo\", O_RDONLY); char c; return read(fd, &c, 1); }",
    );
    let mut spec: RunSpec = blocked.spec(&["./prog"]);
    spec.limits = limits(0.5, 64);
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::WallTimeLimit, "{o:?}");
    assert!(o.wall_time >= 2.5 && o.wall_time < 20.0, "{o:?}");
}

#[test]
fn no_unix_socket_outlives_its_box() {
    if sandbox_missing() {
        return;
    }
    // Network namespaces are pooled: the next box gets this one. A socket bound to an abstract
    // name and left in flight in an SCM_RIGHTS cycle (freed only by the kernel's garbage
    // collector, later) must not let the next box see the name: a channel between runs.
    let leaver = r#"#include <cstdio>
        #include <cstring>
        #include <sys/socket.h>
        #include <sys/un.h>
        static void send_fd(int via, int fd){
            char data = 'x'; iovec io{&data, 1};
            alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))]{};
            msghdr m{}; m.msg_iov = &io; m.msg_iovlen = 1; m.msg_control = ctl; m.msg_controllen = sizeof ctl;
            cmsghdr *c = CMSG_FIRSTHDR(&m); c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &fd, sizeof fd); sendmsg(via, &m, 0);
        }
        int main(){
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            sockaddr_un a{}; a.sun_family = AF_UNIX; memcpy(a.sun_path, "\0ioi-persist", 12);
            if (bind(s, (sockaddr*)&a, sizeof(sa_family_t) + 12)) return 1;
            listen(s, 1);
            int p[2]; socketpair(AF_UNIX, SOCK_DGRAM, 0, p);
            send_fd(p[0], s); send_fd(p[0], p[0]); send_fd(p[1], p[1]);
            printf("left\n");
        }"#;
    let probe = r#"#include <cstdio>
        #include <cstring>
        #include <sys/socket.h>
        #include <sys/un.h>
        int main(){
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            sockaddr_un a{}; a.sun_family = AF_UNIX; memcpy(a.sun_path, "\0ioi-persist", 12);
            int c = connect(s, (sockaddr*)&a, sizeof(sa_family_t) + 12);
            printf("%s\n", c == 0 ? "reached" : "alone");
        }"#;
    let leaver_box = TestBox::new();
    leaver_box.compile(leaver);
    let probe_box = TestBox::new();
    probe_box.compile(probe);
    for round in 0..5 {
        let mut spec = leaver_box.spec(&["./prog"]);
        spec.limits = limits(1.0, 64);
        spec.stdout = Stdio::Path(leaver_box.path().join("out"));
        let o = sandbox().run(&spec);
        assert_eq!(o.status, Termination::Ok, "{o:?}");
        assert_eq!(leaver_box.read("out"), "left\n");
        let mut spec = probe_box.spec(&["./prog"]);
        spec.limits = limits(1.0, 64);
        spec.stdout = Stdio::Path(probe_box.path().join("out"));
        let o = sandbox().run(&spec);
        assert_eq!(o.status, Termination::Ok, "{o:?}");
        assert_eq!(probe_box.read("out"), "alone\n", "round {round}");
    }
}

/// The boxes of a sandbox that builds none ahead (a lone run: `ioi-run sandbox`) get no pooled
/// network namespace: each box creates its own at its clone. Two boxes at once are in
/// namespaces of their own, neither the host's, each with loopback as its only interface.
#[test]
fn a_box_built_on_demand_has_a_network_namespace_of_its_own_with_loopback_only() {
    if sandbox_missing() {
        return;
    }
    let lone = ioi_sandbox::Sandbox::new(ioi_sandbox::SandboxOptions {
        ready_boxes: 0,
        ..ioi_sandbox::SandboxOptions::default()
    })
    .unwrap();
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    let out = tempfile::tempdir().unwrap();
    // Each box prints its namespace and interfaces, then holds on until the other has too.
    let script =
        "readlink /proc/self/ns/net; tail -n +3 /proc/self/net/dev | cut -d: -f1; read go; exit 0";
    let (in_read, in_write) = pipe();
    let in_read = Arc::new(in_read);
    let run = |name: &str| {
        let mut spec = RunSpec::in_tmpfs(1 << 20, ["/bin/sh", "-c", script]);
        spec.limits = limits(1.0, 64);
        spec.stdin = Stdio::Fd(in_read.clone());
        spec.stdout = Stdio::Path(out.path().join(name));
        lone.run(&spec)
    };
    let printed = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap_or_default();
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| run("first"));
        let second = s.spawn(|| run("second"));
        wait_until("both boxes printed", Duration::from_secs(60), || {
            printed("first").lines().count() >= 2 && printed("second").lines().count() >= 2
        });
        drop(in_write);
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_eq!(first.status, Termination::Ok, "{first:?}");
    assert_eq!(second.status, Termination::Ok, "{second:?}");
    let (first, second) = (printed("first"), printed("second"));
    let namespace = |text: &str| text.lines().next().unwrap_or_default().to_string();
    let interfaces = |text: &str| -> Vec<String> {
        text.lines().skip(1).map(|l| l.trim().to_string()).collect()
    };
    assert!(namespace(&first).starts_with("net:["), "{first}");
    assert_ne!(namespace(&first), host.to_string_lossy(), "the host's");
    assert_ne!(
        namespace(&first),
        namespace(&second),
        "shared:\n{first}\n{second}"
    );
    assert_eq!(interfaces(&first), ["lo"], "{first}");
    assert_eq!(interfaces(&second), ["lo"], "{second}");
}
