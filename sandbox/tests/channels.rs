//! Host-wide counters two boxes could both change and read: a channel between the user
//! processes of a Communication test, which may talk only through the manager. Each test
//! replays one channel and fails if information crosses.

mod common;
use common::*;
use ioi_sandbox::Termination;

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
    // The box's own processes stay readable (its threads, its memory, its limits), and so do
    // the static descriptions of the machine.
    let readable = [
        "/proc/self/status",
        "/proc/self/stat",
        "/proc/self/maps",
        "/proc/cpuinfo",
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
