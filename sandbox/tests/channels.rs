//! Host-wide counters two boxes could both change and read: a channel between the user
//! processes of a Communication test, which may talk only through the manager. Each test
//! replays one channel and fails if information crosses.

mod common;
use common::*;
use std::time::Duration;

use ioi_sandbox::{Limits, Termination};

#[test]
fn the_aio_relay_carries_nothing_between_boxes() {
    if sandbox_missing() {
        return;
    }
    // The sender signals a 1 by holding kernel aio contexts (io_setup adds them to the
    // host-wide /proc/sys/fs/aio-nr); the receiver, in another box at the same time, reads
    // aio-nr. The sender's io_setup is refused, and the receiver cannot read the counter.
    let sender = r#"#include <cerrno>
        #include <cstdio>
        #include <cstring>
        #include <iostream>
        #include <string>
        #include <linux/aio_abi.h>
        #include <sys/syscall.h>
        #include <unistd.h>
        int main(){
            aio_context_t ctx = 0;
            long r = syscall(SYS_io_setup, 4096, &ctx);
            printf("io_setup:%s\n", r == 0 ? "ok" : strerror(errno)); fflush(stdout);
            std::string s; std::cin >> s;
        }"#;
    let receiver = r#"#include <cstdio>
        #include <initializer_list>
        int main(){
            for (const char *path : {"/proc/sys/fs/aio-nr", "/proc/sys/fs/aio-max-nr"}) {
                FILE *f = fopen(path, "r");
                long n = -1;
                if (f && fscanf(f, "%ld", &n) == 1) printf("%s:%ld\n", path, n);
                else printf("%s:unreadable\n", path);
                if (f) fclose(f);
            }
        }"#;
    let (sent, said, (read, heard)) = while_holding(sender, limits(2.0, 64), || {
        run_program(receiver, limits(1.0, 64))
    });
    assert_eq!(sent.status, Termination::Ok, "{sent:?}");
    assert_eq!(said, "io_setup:Function not implemented\n");
    assert_eq!(read.status, Termination::Ok, "{read:?}");
    assert_eq!(
        heard,
        "/proc/sys/fs/aio-nr:unreadable\n/proc/sys/fs/aio-max-nr:unreadable\n"
    );
}

/// On a kernel with `subset=pid` (5.8 and later: every host this suite runs on), a box's
/// `/proc` holds its processes and nothing else: no host-wide entry, masked or not.
#[test]
fn proc_holds_only_the_boxs_processes() {
    if sandbox_missing() {
        return;
    }
    let release = nix::sys::utsname::uname().unwrap();
    let release = release.release().to_string_lossy().into_owned();
    let mut numbers = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = numbers.next().unwrap().parse().unwrap();
    let minor: u32 = numbers.next().unwrap().parse().unwrap();
    assert!(
        (major, minor) >= (5, 8),
        "kernel {release}: this suite expects subset=pid (Linux 5.8)"
    );
    let (o, out) = run_program(
        r#"#include <cctype>
        #include <cstdio>
        #include <dirent.h>
        #include <set>
        #include <string>
        int main(){
            std::set<std::string> names;
            int processes = 0;
            DIR *d = opendir("/proc");
            if (!d) { puts("no /proc"); return 1; }
            while (dirent *e = readdir(d)) {
                std::string name = e->d_name;
                if (isdigit((unsigned char)name[0])) processes++;
                else if (name != "." && name != "..") names.insert(name);
            }
            for (const auto &name : names) printf("%s\n", name.c_str());
            printf("processes %d\n", processes);
        }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(out, "self\nthread-self\nprocesses 1\n");
}

#[test]
fn host_wide_counters_of_proc_are_masked_and_the_box_keeps_its_own() {
    if sandbox_missing() {
        return;
    }
    // Each of these is a counter a box changes (allocating memory, forking, opening files,
    // taking CPU time, creating inodes) and another box could read.
    let masked = [
        "/proc/sys/fs/file-nr",
        "/proc/sys/fs/inode-nr",
        "/proc/sys/kernel/random/entropy_avail",
        "/proc/meminfo",
        "/proc/stat",
        "/proc/loadavg",
        "/proc/uptime",
        "/proc/vmstat",
        "/proc/locks",
        "/proc/buddyinfo",
        "/proc/interrupts",
        "/proc/schedstat",
        "/proc/key-users",
    ];
    // The box's own processes stay readable (its threads, its memory, its limits).
    let readable = [
        "/proc/self/status",
        "/proc/self/stat",
        "/proc/self/maps",
        "/proc/self/cmdline",
    ];
    let mut source = String::from("#include <cstdio>\nint main(){ const char *paths[] = {");
    for p in masked.iter().chain(&readable) {
        source.push_str(&format!("\"{p}\","));
    }
    source.push_str(
        r#"};
        for (const char *path : paths) {
            FILE *f = fopen(path, "r");
            char buf[64];
            bool read = f && fread(buf, 1, sizeof buf, f) > 0;
            printf("%s:%s\n", path, read ? "read" : "unreadable");
            if (f) fclose(f);
        }
    }"#,
    );
    let (o, out) = run_program(&source, limits(1.0, 64));
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let mut expected = String::new();
    for p in masked {
        expected.push_str(&format!("{p}:unreadable\n"));
    }
    for p in readable {
        expected.push_str(&format!("{p}:read\n"));
    }
    assert_eq!(out, expected);
}

#[test]
fn nonblocking_reads_do_not_reveal_the_page_cache() {
    if sandbox_missing() {
        return;
    }
    // preadv2(RWF_NOWAIT) answers EAGAIN for data not in the page cache: one box would learn
    // which pages of a shared system file another box read. It is refused; plain reads work.
    let (o, out) = run_program(
        r#"#include <cerrno>
        #include <cstdio>
        #include <cstring>
        #include <fcntl.h>
        #include <sys/uio.h>
        #include <unistd.h>
        int main(){
            int fd = open("/usr/bin/env", O_RDONLY);
            char buf[16]; iovec io{buf, sizeof buf};
            long r = preadv2(fd, &io, 1, 0, RWF_NOWAIT);
            printf("nowait:%s\n", r >= 0 ? "read" : strerror(errno));
            r = preadv2(fd, &io, 1, 0, 0);
            printf("plain:%s\n", r > 0 ? "read" : strerror(errno));
        }"#,
        limits(1.0, 64),
    );
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(out, "nowait:Operation not supported\nplain:read\n");
}

/// Prints what `sysinfo` answers, one field a line (the fields a box could move).
const PRINT_SYSINFO: &str = r#"
    #include <cstdio>
    #include <sys/sysinfo.h>
    static void print_sysinfo(const char *name) {
        struct sysinfo s;
        int r = sysinfo(&s);
        printf("%s: r=%d uptime=%ld loads=%lu,%lu,%lu totalram=%lu freeram=%lu sharedram=%lu "
               "bufferram=%lu totalswap=%lu freeswap=%lu procs=%u totalhigh=%lu freehigh=%lu "
               "mem_unit=%u\n",
               name, r, s.uptime, s.loads[0], s.loads[1], s.loads[2], s.totalram, s.freeram,
               s.sharedram, s.bufferram, s.totalswap, s.freeswap, (unsigned)s.procs,
               s.totalhigh, s.freehigh, s.mem_unit);
    }
"#;

/// What a box with a memory limit of `mib` MiB reads, labelled `name`.
fn documented_sysinfo(name: &str, mib: u64) -> String {
    let bytes = mib << 20;
    format!(
        "{name}: r=0 uptime=0 loads=0,0,0 totalram={bytes} freeram={bytes} sharedram=0 \
         bufferram=0 totalswap=0 freeswap=0 procs=1 totalhigh=0 freehigh=0 mem_unit=1\n"
    )
}

#[test]
fn sysinfo_relays_nothing_between_boxes() {
    if sandbox_missing() {
        return;
    }
    // The sender signals by holding 48 processes and 24 MiB of touched memory (the host's
    // task count and free memory move); the receiver, in another box at the same time, reads
    // sysinfo. Each box reads the answer of its own limits, whatever the other holds.
    let sender = format!(
        r#"{PRINT_SYSINFO}
        #include <cstring>
        #include <cstdlib>
        #include <iostream>
        #include <string>
        #include <unistd.h>
        int main(){{
            print_sysinfo("before");
            for (int i = 0; i < 48; i++) if (fork() == 0) {{ pause(); _exit(0); }}
            size_t n = 24 << 20;
            char *held = (char *)malloc(n);
            memset(held, 1, n);
            print_sysinfo("holding");
            fflush(stdout);
            std::string s; std::cin >> s;
            return held[n / 2] == 1 ? 0 : 1;
        }}"#
    );
    let receiver = format!("{PRINT_SYSINFO}\nint main(){{ print_sysinfo(\"receiver\"); }}");
    let (alone, read_alone) = run_program(&receiver, limits(1.0, 64));
    assert_eq!(alone.status, Termination::Ok, "{alone:?}");
    let (sent, said, (read, heard)) = while_holding(&sender, limits(2.0, 96), || {
        run_program(&receiver, limits(1.0, 64))
    });
    assert_eq!(sent.status, Termination::Ok, "{sent:?}");
    assert_eq!(
        said,
        documented_sysinfo("before", 96) + &documented_sysinfo("holding", 96)
    );
    assert_eq!(read.status, Termination::Ok, "{read:?}");
    assert_eq!(read_alone, documented_sysinfo("receiver", 64));
    assert_eq!(heard, read_alone);
}

#[test]
fn sysinfo_answers_the_run_limits_and_glibc_sizes_from_them() {
    if sandbox_missing() {
        return;
    }
    // The C library's physical pages come from sysinfo; qsort of an array above its stack
    // threshold sizes its buffer from them.
    let source = format!(
        r#"{PRINT_SYSINFO}
        #include <cstdlib>
        #include <unistd.h>
        static int cmp(const void *a, const void *b) {{
            int x = *(const int *)a, y = *(const int *)b;
            return (x > y) - (x < y);
        }}
        int main(){{
            print_sysinfo("program");
            long page = sysconf(_SC_PAGESIZE);
            printf("phys_pages=%ld avphys_pages=%ld\n",
                   sysconf(_SC_PHYS_PAGES) * page, sysconf(_SC_AVPHYS_PAGES) * page);
            int n = 1 << 20;
            int *a = (int *)malloc(n * sizeof(int));
            unsigned x = 12345;
            for (int i = 0; i < n; i++) {{ x = x * 1103515245u + 12345u; a[i] = (int)(x >> 1); }}
            qsort(a, n, sizeof(int), cmp);
            bool sorted = true;
            for (int i = 1; i < n; i++) sorted = sorted && a[i - 1] <= a[i];
            printf("qsort:%s\n", sorted ? "sorted" : "unsorted");
        }}"#
    );
    let (o, out) = run_program(&source, limits(2.0, 64));
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let bytes = 64u64 << 20;
    assert_eq!(
        out,
        documented_sysinfo("program", 64)
            + &format!("phys_pages={bytes} avphys_pages={bytes}\nqsort:sorted\n")
    );
}

#[test]
fn sysinfo_with_a_bad_pointer_fails_with_efault() {
    if sandbox_missing() {
        return;
    }
    // Null, a low address, the kernel's half, and a struct that runs off the end of a mapping
    // (its first page mapped, the next not): EFAULT each, as from the kernel; the program and
    // the sandbox carry on, and the next good call answers.
    let source = format!(
        r#"{PRINT_SYSINFO}
        #include <cerrno>
        #include <cstring>
        #include <sys/mman.h>
        #include <sys/syscall.h>
        #include <unistd.h>
        static void bad(const char *name, void *p) {{
            long r = syscall(SYS_sysinfo, p);
            printf("%s:%ld:%s\n", name, r, r == 0 ? "ok" : strerror(errno));
        }}
        int main(){{
            long page = sysconf(_SC_PAGESIZE);
            char *two = (char *)mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            munmap(two + page, page);
            bad("null", nullptr);
            bad("low", (void *)16);
            bad("kernel", (void *)0xffffffffff600000ul);
            bad("straddling", two + page - 40);
            print_sysinfo("after");
        }}"#
    );
    let (o, out) = run_program(&source, limits(1.0, 64));
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    let efault = "-1:Bad address";
    assert_eq!(
        out,
        format!("null:{efault}\nlow:{efault}\nkernel:{efault}\nstraddling:{efault}\n")
            + &documented_sysinfo("after", 64)
    );
}

#[test]
fn sysinfo_from_many_threads_and_children_at_once_is_answered() {
    if sandbox_missing() {
        return;
    }
    // 8 threads in each of 2 processes (the program and a child) call sysinfo in a loop: each
    // call is answered, with the documented value, and the run finishes.
    let source = r#"
        #include <atomic>
        #include <cstdio>
        #include <sys/sysinfo.h>
        #include <sys/wait.h>
        #include <thread>
        #include <unistd.h>
        #include <vector>
        static int calls() {
            std::atomic<int> good{0};
            std::vector<std::thread> threads;
            for (int t = 0; t < 8; t++)
                threads.emplace_back([&] {
                    for (int i = 0; i < 100; i++) {
                        struct sysinfo s;
                        if (sysinfo(&s) == 0 && s.totalram == (64ul << 20) && s.procs == 1) good++;
                    }
                });
            for (auto &t : threads) t.join();
            return good;
        }
        int main(){
            pid_t child = fork();
            int good = calls();
            if (child == 0) _exit(good == 800 ? 0 : 1);
            int status = 0;
            waitpid(child, &status, 0);
            printf("program:%d child:%s\n", good,
                   WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "800" : "short");
        }"#;
    // More calls than the keeper answers at once (`BURST` in sandbox/src/sysinfo.rs):
    // the rest are answered at its pace, within a wall limit that a loaded host cannot reach.
    let limits = Limits {
        wall_time: Some(Duration::from_secs(60)),
        ..limits(5.0, 64)
    };
    let (o, out) = run_program(source, limits);
    assert_eq!(o.status, Termination::Ok, "{o:?}");
    assert_eq!(out, "program:800 child:800\n");
}

#[test]
fn callers_killed_while_they_wait_for_sysinfo_leave_the_sandbox_answering() {
    if sandbox_missing() {
        return;
    }
    // Children call sysinfo in a loop and are killed mid-call, again and again; the program
    // holds no descriptor but its streams (not the listener: it cannot answer its own calls),
    // and its own next call is answered. A second run in a fresh box is answered too.
    let source = format!(
        r#"{PRINT_SYSINFO}
        #include <dirent.h>
        #include <signal.h>
        #include <sys/wait.h>
        #include <unistd.h>
        int main(){{
            for (int round = 0; round < 20; round++) {{
                pid_t child = fork();
                if (child == 0) {{ struct sysinfo s; for (;;) sysinfo(&s); }}
                usleep(2000);
                kill(child, SIGKILL);
                waitpid(child, nullptr, 0);
            }}
            DIR *fds = opendir("/proc/self/fd");
            int open = 0;
            while (dirent *e = readdir(fds)) if (e->d_name[0] != '.') open++;
            printf("descriptors:%d\n", open - 1); // without the directory's own
            print_sysinfo("after");
        }}"#
    );
    for _ in 0..2 {
        let (o, out) = run_program(&source, limits(2.0, 64));
        assert_eq!(o.status, Termination::Ok, "{o:?}");
        assert_eq!(
            out,
            "descriptors:3\n".to_string() + &documented_sysinfo("after", 64)
        );
    }
}
