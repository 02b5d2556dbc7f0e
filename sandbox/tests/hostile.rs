//! Hostile programs, each contained and classified correctly by the real sandbox.

mod common;
use std::time::Duration;

use common::*;
use ioi_sandbox::{Limits, Stdio, Termination};

#[test]
fn plain_program_runs_and_reports_usage() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <cstdio>
        #include <vector>
        int main(){ std::vector<char> v(64<<20, 1); long s=0; for(char c: v) s+=c; printf("%ld\n", s); }"#,
        limits(2.0, 256),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(b.read("stdout").trim(), (64u64 << 20).to_string());
    assert!(
        o.memory >= 64 << 20 && o.memory < 128 << 20,
        "peak memory {}",
        o.memory
    );
    assert_eq!(o.exit_code, Some(0));
}

/// The program holds no capability in any set (the bounding set too, which is emptied in the
/// init before the run and inherited), whatever it executes; and it starts as a program started
/// from a shell does: no signal ignored (the keeper, a Rust program, ignores SIGPIPE) and none
/// blocked.
#[test]
fn the_program_holds_no_capability_and_starts_with_default_signals() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let argv = [
        "/bin/grep",
        "-E",
        "^(Cap|SigIgn|SigBlk)",
        "/proc/self/status",
    ];
    let o = b.run(&argv, limits(2.0, 64));
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let status = b.read("stdout");
    let sets = [
        "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "SigIgn", "SigBlk",
    ];
    for set in sets {
        let line = status.lines().find(|l| l.starts_with(set));
        assert_eq!(
            line.and_then(|l| l.split_whitespace().nth(1)),
            Some("0000000000000000"),
            "{set} in {status}"
        );
    }
}

/// The program cannot reach its box's init, which shares the keeper's memory: `/proc/1` is not
/// visible, and its memory cannot be opened (the init holds capabilities the program lacks).
/// Also run as a normal user in the cgroup-v2 guest (tests/v2vm/guest.sh), where the init and
/// the program are the same uid.
#[test]
fn the_program_cannot_reach_its_init() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let script = "if [ -e /proc/1 ]; then echo VISIBLE; fi; \
                  if (exec 3</proc/1/mem) 2>/dev/null; then echo OPENED; fi; echo END";
    let o = b.run(&["/bin/sh", "-c", script], limits(2.0, 64));
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(b.read("stdout"), "END\n");
}

/// A memory limit of a few kilobytes with a tiny time limit can make the kernel's OOM killer
/// pick the program while it still shares this process's memory, before its `execve`, and the
/// OOM killer kills every process sharing its victim's memory: this test process. The sandbox
/// raises such a limit to `MIN_MEMORY_LIMIT`; the runs end, and this process lives on.
#[test]
fn a_memory_limit_of_a_few_bytes_never_takes_the_caller_down() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    for memory in [1, 4096, 16384, 32768] {
        for _ in 0..5 {
            let o = b.run(
                &["/bin/true"],
                Limits {
                    cpu_time: Some(Duration::from_nanos(1)),
                    wall_time: Some(Duration::from_secs(10)),
                    memory: Some(memory),
                    ..Limits::default()
                },
            );
            assert_ne!(o.status, Termination::InternalError, "{o:?}");
        }
    }
}

#[test]
fn exit_code_and_signal_are_reported() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp("int main(){ return 3; }", limits(1.0, 64));
    assert_eq!(
        (o.status, o.exit_code),
        (Termination::RuntimeError, Some(3)),
        "{o:?}"
    );
    let o = b.run_cpp(
        "int main(){ volatile int *p = nullptr; *p = 1; }",
        limits(1.0, 64),
    );
    assert_eq!(
        (o.status, o.signal),
        (Termination::Signaled, Some(libc::SIGSEGV)),
        "{o:?}"
    );
}

#[test]
fn fork_bomb_is_contained_by_the_pids_limit() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <unistd.h>
        int main(){ for(;;) fork(); }"#,
        Limits {
            processes: Some(32),
            ..limits(1.0, 256)
        },
    );
    assert!(
        matches!(
            o.status,
            Termination::TimeLimit | Termination::WallTimeLimit
        ),
        "{o:?}"
    );
    // Runnable forks waiting for a CPU are not charged to the wall limit: on a busy host the
    // CPU limit or the elapsed-time bound (`WALL_STRETCH` × the 4 s wall limit) stops the
    // bomb; the slack is for a keeper that wakes late on a busy host.
    let bound = ioi_sandbox::WALL_STRETCH as f64 * 4.0 * time_scale() + 5.0;
    assert!(o.wall_time < bound, "bound {bound} s: {o:?}");
}

#[test]
fn memory_bomb_touching_pages_is_memory_limit() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <cstdlib>
        #include <cstring>
        int main(){ for(int i=0;i<64;i++){ char *p=(char*)malloc(16<<20); memset(p, 1, 16<<20); } return 0; }"#,
        limits(5.0, 128),
    );
    assert_eq!(o.status, Termination::MemoryLimit, "{o:?}");
}

#[test]
fn address_space_alone_is_not_memory() {
    if sandbox_missing() {
        return;
    }
    // Reserving 4 GiB without touching it is fine: IOI limits memory in use, not address space.
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <sys/mman.h>
        int main(){ void *p = mmap(0, 4ul<<30, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0); return p == MAP_FAILED; }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
}

#[test]
fn cpu_time_counts_every_thread() {
    if sandbox_missing() {
        return;
    }
    // Four threads each burn 0.3 s of their own CPU time: the cgroup must count all of it,
    // whatever the load on the machine.
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <thread>
        #include <vector>
        #include <ctime>
        static double thread_cpu(){ timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
        #include <cstdio>
        int main(){ std::vector<std::thread> t; for(int i=0;i<4;i++) t.emplace_back([]{ volatile unsigned long x=0; while (thread_cpu() < 0.3) x++; }); for(auto&th:t) th.join();
          timespec p; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p); printf("%.6f\n", p.tv_sec + p.tv_nsec * 1e-9); }"#,
        Limits { wall_time: Some(Duration::from_secs_f64(20.0 * time_scale())), ..limits(5.0, 256) },
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    // The upper bound compares with the program's own CPU clock, which load does not change
    // either: the cgroup counts all of it and little more (start-up and exit).
    let own: f64 = b
        .read("stdout")
        .trim()
        .parse()
        .expect("the program prints its CPU time");
    assert!(own >= 1.2, "{own} {o:?}");
    // A kernel that accounts CPU time by ticks (user-mode Linux) may put a tick less in the
    // cgroup than in the threads' own clocks; a thread left out would miss 0.3 s.
    const TICK: f64 = 0.02;
    assert!(
        o.cpu_time >= own - TICK && o.cpu_time < own + 0.25,
        "own {own}: {o:?}"
    );
}

#[test]
fn threads_burning_cpu_hit_the_time_limit() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <thread>
        #include <vector>
        int main(){ std::vector<std::thread> t; for(int i=0;i<4;i++) t.emplace_back([]{ volatile unsigned long x=0; for(;;) x++; }); for(auto&th:t) th.join(); }"#,
        Limits { wall_time: Some(Duration::from_secs_f64(20.0 * time_scale())), ..limits(1.0, 256) },
    );
    assert_eq!(o.status, Termination::TimeLimit, "{o:?}");
    assert!(o.cpu_time > 1.0, "{o:?}");
}

#[test]
fn sleeping_forever_hits_the_wall_limit() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        "#include <unistd.h>\nint main(){ for(;;) pause(); }",
        limits(0.5, 64),
    );
    assert_eq!(o.status, Termination::WallTimeLimit, "{o:?}");
    // A sleeper uses no CPU whatever the load. Its wall time is at least the limit; the upper
    // bound only says that it was stopped at all (the keeper may wake late on a busy host).
    assert!(
        o.cpu_time < 0.1 && o.wall_time >= 2.5 && o.wall_time < 60.0 * time_scale(),
        "{o:?}"
    );
}

#[test]
fn endless_stdout_hits_the_output_limit() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        "#include <cstdio>\nint main(){ for(;;) puts(\"all work and no play makes jack a dull boy\"); }",
        Limits { output_size: Some(1 << 20), ..limits(5.0, 64) },
    );
    assert_eq!(o.status, Termination::OutputLimit, "{o:?}");
    assert!(std::fs::metadata(b.path().join("stdout")).unwrap().len() <= 1 << 20);
}

#[test]
fn huge_file_hits_the_output_limit() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <cstdio>
        #include <vector>
        int main(){ FILE *f = fopen("big", "w"); std::vector<char> buf(1<<20, 'x'); for(int i=0;i<1024;i++) fwrite(buf.data(), 1, buf.size(), f); fclose(f); }"#,
        Limits { output_size: Some(8 << 20), ..limits(5.0, 64) },
    );
    assert_eq!(o.status, Termination::OutputLimit, "{o:?}");
}

#[test]
fn network_sockets_are_killed() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <sys/socket.h>
        #include <netinet/in.h>
        #include <arpa/inet.h>
        int main(){ int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a{}; a.sin_family=AF_INET; a.sin_port=htons(80); a.sin_addr.s_addr=inet_addr("1.1.1.1"); return connect(s,(sockaddr*)&a,sizeof a) == 0 ? 0 : 42; }"#,
        limits(1.0, 64),
    );
    assert_eq!(
        (o.status, o.signal),
        (Termination::Signaled, Some(libc::SIGSYS)),
        "{o:?}"
    );
}

#[test]
fn ptrace_is_killed() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        "#include <sys/ptrace.h>\nint main(){ ptrace(PTRACE_TRACEME, 0, 0, 0); return 0; }",
        limits(1.0, 64),
    );
    assert_eq!(
        (o.status, o.signal),
        (Termination::Signaled, Some(libc::SIGSYS)),
        "{o:?}"
    );
}

#[test]
fn host_files_outside_the_box_are_invisible() {
    if sandbox_missing() {
        return;
    }
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "expected output").unwrap();
    let b = TestBox::new();
    let source = format!(
        r#"#include <cstdio>
        #include <initializer_list>
        int main(){{ int seen = 0; for (const char *p : {{"{}", "/etc/shadow", "/root/.bashrc", "/proc/1/environ"}}) {{ if (FILE *f = fopen(p, "r")) {{ int c = fgetc(f); if (c != EOF) {{ printf("read %s\n", p); seen++; }} }} }} return seen; }}"#,
        secret.display()
    );
    let o = b.run_cpp(&source, limits(1.0, 64));
    assert_eq!(o.status, Termination::Ok, "{o:?} {}", b.read("stdout"));
}

#[test]
fn writing_outside_the_box_fails() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <cstdio>
        #include <initializer_list>
        int main(){ int ok = 0; for (const char *p : {"/usr/bin/evil", "/etc/passwd", "/evil", "/proc/sys/kernel/hostname"}) if (FILE *f = fopen(p, "w")) { if (fputs("x", f) >= 0 && fclose(f) == 0) { printf("wrote %s\n", p); ok++; } } FILE *f = fopen("inside", "w"); return ok + (f == nullptr) * 100; }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?} {}", b.read("stdout"));
    assert!(b.path().join("inside").exists());
}

/// A box's `/dev` is read-only, whoever asks: nothing can be created there (the file system
/// refuses, before any permission is weighed), and a device's times cannot be changed (every
/// box sees the same device nodes: a time set by one would be read by another), while its
/// devices are written as usual and `/dev/shm` below it stays the box's own writable tmpfs.
#[test]
fn dev_is_read_only_and_dev_shm_writable() {
    if sandbox_missing() {
        return;
    }
    let (o, out) = run_program(
        r#"#include <cerrno>
        #include <cstdio>
        #include <cstring>
        #include <fcntl.h>
        #include <sys/stat.h>
        #include <unistd.h>
        int main(){
            int fd = open("/dev/planted", O_CREAT | O_WRONLY, 0644);
            printf("file: %s\n", fd < 0 ? strerror(errno) : "created");
            printf("folder: %s\n", mkdir("/dev/planted.d", 0755) != 0 ? strerror(errno) : "created");
            fd = open("/dev/shm/ok", O_CREAT | O_WRONLY, 0644);
            printf("shm: %s\n", fd < 0 ? strerror(errno) : "created");
            printf("times: %s\n", utimensat(AT_FDCWD, "/dev/null", nullptr, 0) != 0 ? strerror(errno) : "changed");
            fd = open("/dev/null", O_WRONLY);
            printf("null: %s\n", fd >= 0 && write(fd, "x", 1) == 1 ? "written" : strerror(errno));
        }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(
        out,
        "file: Read-only file system\nfolder: Read-only file system\nshm: created\n\
         times: Read-only file system\nnull: written\n"
    );
}

#[test]
fn kill_minus_one_reaches_nothing_outside() {
    if sandbox_missing() {
        return;
    }
    // A process of the sandbox user on the host: kill(-1) inside must not reach it.
    let (uid, gid) = sandbox().box_owner();
    let mut sentinel = {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .uid(uid)
            .gid(gid)
            .spawn()
            .unwrap()
    };
    let b = TestBox::new();
    let o = b.run_cpp(
        "#include <csignal>\n#include <cstdio>\nint main(){ int r = kill(-1, SIGKILL); printf(\"%d\\n\", r); return 0; }",
        limits(1.0, 64),
    );
    let alive = sentinel.try_wait().unwrap().is_none();
    let _ = sentinel.kill();
    let _ = sentinel.wait();
    assert!(alive, "kill(-1) inside the sandbox killed a host process");
    assert_ne!(o.status, Termination::InternalError, "{o:?}");
}

#[test]
fn double_forked_daemon_does_not_survive() {
    if sandbox_missing() {
        return;
    }
    let marker = "4242.0017";
    let b = TestBox::new();
    let o = b.run_cpp(
        &format!(
            r#"#include <unistd.h>
            int main(){{ if (fork() == 0) {{ setsid(); if (fork() == 0) {{ execl("/bin/sleep", "sleep", "{marker}", (char*)0); }} _exit(0); }} return 0; }}"#
        ),
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    std::thread::sleep(Duration::from_millis(100));
    let survivors: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .collect();
    assert!(survivors.is_empty(), "the daemon survived the run");
}

#[test]
fn deep_recursion_uses_an_unlimited_stack() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = b.run_cpp(
        r#"#include <cstdio>
        int depth(int n){ volatile char pad[200]; pad[0] = (char)n; if (n == 0) return pad[0]; return depth(n - 1) + pad[0] % 2; }
        int main(){ printf("%d\n", depth(1000000)); }"#,
        limits(5.0, 512),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert!(
        o.memory > 100 << 20,
        "the stack should really have been used: {o:?}"
    );
}

#[test]
fn missing_program_is_the_command_not_the_sandbox() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let o = sandbox().run(&b.spec(&["/box/does-not-exist"]));
    assert_eq!(
        (o.status, o.exit_code),
        (Termination::RuntimeError, Some(127)),
        "{o:?}"
    );
    assert!(o.message.contains("cannot execute"), "{o:?}");
}

#[test]
fn gcc_and_bash_work_inside() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    std::fs::write(
        b.path().join("a.cpp"),
        "#include <bits/stdc++.h>\nint main(){ std::cout << 6*7 << std::endl; }",
    )
    .unwrap();
    let mut spec = b.spec(&["bash", "-c", "g++ -O2 -pipe -o a a.cpp && ./a"]);
    spec.limits = limits(20.0, 1024);
    spec.stdout = Stdio::Path(b.path().join("out"));
    spec.stderr = Stdio::Path(b.path().join("err"));
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::Ok, "{o:?} {}", b.read("err"));
    assert_eq!(b.read("out").trim(), "42");
}

#[test]
fn stdin_comes_from_a_host_file() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), "20 22\n").unwrap();
    b.compile(
        "#include <cstdio>\nint main(){ int a,b; scanf(\"%d %d\",&a,&b); printf(\"%d\\n\", a+b); }",
    );
    let mut spec = b.spec(&["./prog"]);
    spec.stdin = Stdio::Path(input.path().to_path_buf());
    spec.stdout = Stdio::Path(b.path().join("out"));
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(b.read("out").trim(), "42");
}

#[test]
fn parallel_runs_do_not_interfere() {
    if sandbox_missing() {
        return;
    }
    let verdicts: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                s.spawn(move || {
                    let b = TestBox::new();
                    // Even runs do 0.2 s of work within 2 s; odd runs burn forever (TLE at 0.5 s).
                    let src = if i % 2 == 0 {
                        "#include <ctime>\n#include <cstdio>\nint main(){ volatile unsigned long x=0; while (clock() < CLOCKS_PER_SEC/5) x++; printf(\"%.6f\\n\", (double)clock() / CLOCKS_PER_SEC); }"
                    } else {
                        "int main(){ volatile unsigned long x=0; for(;;) x++; }"
                    };
                    // A wall limit far above the CPU limit: 8 runs share 2 cores here.
                    let cpu = if i % 2 == 0 { 2.0 } else { 0.5 };
                    let limits = Limits { wall_time: Some(Duration::from_secs(30)), ..limits(cpu, 64) };
                    let o = b.run_cpp(src, limits);
                    (i, o, b.read("stdout"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, o, stdout) in verdicts {
        let expected = if i % 2 == 0 {
            Termination::Ok
        } else {
            Termination::TimeLimit
        };
        assert_eq!(o.status, expected, "run {i}: {o:?}");
        if i % 2 == 0 {
            // Against the program's own CPU clock, which load does not change: 8 runs on 2
            // cores wait for a CPU, and none of that waiting is counted as CPU time.
            let own: f64 = stdout
                .trim()
                .parse()
                .expect("the program prints its CPU time");
            assert!(
                own >= 0.2 && o.cpu_time >= own && o.cpu_time < own + 0.25,
                "run {i}: CPU time inflated by load (own {own}): {o:?}"
            );
        }
    }
}

#[test]
fn a_tmpfs_box_cannot_fill_the_host_disk() {
    if sandbox_missing() {
        return;
    }
    // 3 GiB of fallocate in a 64 MiB tmpfs box: the writes fail (or hit the memory limit), the
    // host disk is never touched, and the box vanishes with the run.
    let b = TestBox::new();
    b.compile(
        r#"#include <fcntl.h>
        #include <cstdio>
        int main(){ int failed = 0; char name[32];
          for (int i = 0; i < 3; i++) { snprintf(name, sizeof name, "/box/f%d", i); int fd = open(name, O_CREAT|O_WRONLY, 0644);
            if (fd < 0 || posix_fallocate(fd, 0, 1L << 30) != 0) failed++; }
          return failed == 3 ? 0 : 1; }"#,
    );
    let mut spec = ioi_sandbox::RunSpec::in_tmpfs(64 << 20, ["/sol/prog"]);
    spec.binds.push(ioi_sandbox::Bind::read_only(
        b.path().join("prog"),
        "/sol/prog",
    ));
    // No file size limit: the tmpfs bound alone must stop the writes.
    spec.limits = Limits {
        output_size: None,
        ..limits(2.0, 128)
    };
    let o = sandbox().run(&spec);
    assert!(
        matches!(o.status, Termination::Ok | Termination::MemoryLimit),
        "{o:?}"
    );
    assert!(o.memory < 200 << 20, "{o:?}");
}

#[test]
fn clone3_answers_enosys_and_x32_calls_are_killed() {
    if sandbox_missing() {
        return;
    }
    let b = TestBox::new();
    // clone3 cannot be inspected by seccomp: refused softly, even when it asks for a user ns.
    let o = b.run_cpp(
        r#"#include <unistd.h>
        #include <sys/syscall.h>
        #include <linux/sched.h>
        #include <cerrno>
        int main(){ struct clone_args a = {}; a.flags = CLONE_NEWUSER; a.exit_signal = 17;
          long r = syscall(SYS_clone3, &a, sizeof a); return (r == -1 && errno == ENOSYS) ? 0 : 1; }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    // An x32 system call number (bit 30 set) is killed whatever the kernel supports.
    let o = b.run_cpp(
        "#include <unistd.h>\n#include <sys/syscall.h>\nint main(){ syscall(0x40000000L | SYS_getpid); return 0; }",
        limits(1.0, 64),
    );
    assert_eq!(
        (o.status, o.signal),
        (Termination::Signaled, Some(libc::SIGSYS)),
        "{o:?}"
    );
}

#[test]
fn a_program_that_lowers_its_priority_is_stopped_within_the_wall_stretch() {
    if sandbox_missing() {
        return;
    }
    // The attack: lower its own priority every way it can (nice and SCHED_IDLE are refused,
    // its autogroup's nice is not), then spin in many threads beside busy loops. Runnable but
    // starved, it waits for a CPU nearly all the time on almost no CPU time, and that waiting
    // is credited against the wall limit (without the elapsed-time bound it ran 80 s on
    // 0.25 s of CPU here): only the bound stops it.
    let _busy = BusyLoops::start(3 * cores());
    let b = TestBox::new();
    let wall = 1.0 * time_scale();
    let o = b.run_cpp(
        r#"#include <cerrno>
        #include <cstdio>
        #include <cstring>
        #include <ctime>
        #include <fcntl.h>
        #include <sched.h>
        #include <sys/resource.h>
        #include <sys/syscall.h>
        #include <thread>
        #include <unistd.h>
        static void say(const char *what, long r){
            char line[96];
            int n = snprintf(line, sizeof line, "%s:%s\n", what, r == 0 ? "ok" : strerror(errno));
            write(1, line, n);
        }
        int main(){
            say("setpriority", setpriority(PRIO_PROCESS, 0, 19));
            sched_param p{}; p.sched_priority = 0;
            say("sched_setscheduler", sched_setscheduler(0, SCHED_IDLE, &p));
            struct { unsigned size, policy; unsigned long long flags; int nice; unsigned prio; unsigned long long rt[3]; } attr{};
            attr.size = sizeof attr; attr.policy = SCHED_IDLE;
            say("sched_setattr", syscall(SYS_sched_setattr, 0, &attr, 0));
            int fd = open("/proc/self/autogroup", O_WRONLY);
            if (fd >= 0) { write(fd, "19", 2); close(fd); }
            // Many starved threads: one of them gets a CPU, and has its waiting counted, at
            // almost every moment.
            for (int i = 0; i < 32; i++) std::thread([]{ for (volatile unsigned long x = 0;; x++) {} }).detach();
            for (volatile unsigned long x = 0;; x++) {}
        }"#,
        Limits {
            wall_time: Some(Duration::from_secs_f64(wall)),
            ..limits(30.0, 64)
        },
    );
    assert_eq!(o.status, Termination::WallTimeLimit, "{o:?}");
    assert_eq!(
        b.read("stdout"),
        "setpriority:Operation not permitted\nsched_setscheduler:Operation not permitted\n\
         sched_setattr:Operation not permitted\n"
    );
    // Stopped at WALL_STRETCH × the limit at the latest; the slack is for a keeper that
    // wakes late on a busy host. Without the bound the run lasts as long as the load does.
    let bound = ioi_sandbox::WALL_STRETCH as f64 * wall + 2.0 * time_scale();
    assert!(
        o.wall_time >= wall && o.wall_time < bound,
        "bound {bound} s: {o:?}"
    );
}

/// A box placed on one CPU ([`ioi_sandbox::RunSpec::cpu`]) runs there, its children and threads
/// too, and cannot widen its affinity to leave the CPU its peers share: `sched_setaffinity` is
/// refused (through `taskset` and through a thread's `pthread_setaffinity_np` alike).
#[test]
fn a_placed_box_stays_on_its_cpu() {
    if sandbox_missing() {
        return;
    }
    let cpus = ioi_sandbox::allowed_cpus().unwrap();
    let cpu = *cpus.last().unwrap();
    let all = cpus
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let b = TestBox::new();
    b.compile(
        r#"#include <pthread.h>
        #include <sched.h>
        #include <cstdio>
        #include <cstring>
        int main(){
            cpu_set_t all; CPU_ZERO(&all);
            for (int c = 0; c < 64; c++) CPU_SET(c, &all);
            int e = pthread_setaffinity_np(pthread_self(), sizeof all, &all);
            printf("pthread_setaffinity_np:%s\n", strerror(e));
            cpu_set_t now; sched_getaffinity(0, sizeof now, &now);
            printf("count:%d\n", CPU_COUNT(&now));
        }"#,
    );
    let script = format!(
        "grep Cpus_allowed_list /proc/self/status; \
         sh -c 'grep Cpus_allowed_list /proc/self/status'; \
         taskset -p -c {all} $$ >/dev/null 2>&1 && echo WIDENED; \
         grep Cpus_allowed_list /proc/self/status; ./prog"
    );
    let mut spec = b.spec(&["/bin/sh", "-c", &script]);
    spec.limits = limits(2.0, 64);
    spec.cpu = Some(cpu);
    spec.stdout = Stdio::Path(b.path().join("stdout"));
    let o = sandbox().run(&spec);
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let line = format!("Cpus_allowed_list:\t{cpu}\n");
    assert_eq!(
        b.read("stdout"),
        format!("{line}{line}{line}pthread_setaffinity_np:Operation not permitted\ncount:1\n")
    );
}
