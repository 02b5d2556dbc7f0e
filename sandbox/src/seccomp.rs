//! The seccomp filter: kill the process on system calls a submission never needs (debugging
//! other processes, mounting, changing namespaces, loading kernel code, non-unix sockets, ...),
//! refuse a few that would be channels between boxes, while compilers, shells and ordinary
//! programs keep working.
//!
//! The policy is a table: for each system call number, tests on its arguments and what to
//! answer (kill, or an error number); everything else is allowed. `clone3` passes its flags in
//! memory that seccomp cannot inspect, so it is refused softly (ENOSYS) and the C library falls
//! back to `clone`, whose namespace flags are inspected.
//!
//! The table is compiled here into one classic-BPF program that finds the call by binary search
//! over the numbers. This is written by hand because seccompiler (still used to install it)
//! emits one linear chain of comparisons per filter: the kernel runs every filter at every
//! system call, and when a filter is installed it runs it once for every system call number to
//! build its cache of always-allowed calls, so four linear filters of ~60 calls cost ~0.3 ms per
//! box at installation (measured with `ioi-run bench sandbox`). A tree needs ~7 comparisons per
//! call. The unit tests run the compiled program in a small interpreter against the table.
//!
//! `sysinfo` is handed to the keeper (`SECCOMP_RET_USER_NOTIF`), which answers it the same for
//! every box (see `crate::sysinfo`, which installs the filter with its listener).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use seccompiler::sock_filter;

/// Syscalls that kill the process unconditionally.
const KILLED: &[&str] = &[
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "reboot",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "quotactl",
    "syslog",
    "vhangup",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "pidfd_getfd",
];

fn syscall_number(name: &str) -> Option<i64> {
    // Names this libc does not know on this architecture are simply not filtered.
    let n = match name {
        "ptrace" => libc::SYS_ptrace,
        "process_vm_readv" => libc::SYS_process_vm_readv,
        "process_vm_writev" => libc::SYS_process_vm_writev,
        "mount" => libc::SYS_mount,
        "umount2" => libc::SYS_umount2,
        "pivot_root" => libc::SYS_pivot_root,
        "chroot" => libc::SYS_chroot,
        "unshare" => libc::SYS_unshare,
        "setns" => libc::SYS_setns,
        "kexec_load" => libc::SYS_kexec_load,
        "kexec_file_load" => libc::SYS_kexec_file_load,
        "bpf" => libc::SYS_bpf,
        "perf_event_open" => libc::SYS_perf_event_open,
        "keyctl" => libc::SYS_keyctl,
        "add_key" => libc::SYS_add_key,
        "request_key" => libc::SYS_request_key,
        "io_uring_setup" => libc::SYS_io_uring_setup,
        "io_uring_enter" => libc::SYS_io_uring_enter,
        "io_uring_register" => libc::SYS_io_uring_register,
        "userfaultfd" => libc::SYS_userfaultfd,
        "reboot" => libc::SYS_reboot,
        "init_module" => libc::SYS_init_module,
        "finit_module" => libc::SYS_finit_module,
        "delete_module" => libc::SYS_delete_module,
        "swapon" => libc::SYS_swapon,
        "swapoff" => libc::SYS_swapoff,
        "acct" => libc::SYS_acct,
        "settimeofday" => libc::SYS_settimeofday,
        "clock_settime" => libc::SYS_clock_settime,
        "clock_adjtime" => libc::SYS_clock_adjtime,
        "adjtimex" => libc::SYS_adjtimex,
        "sethostname" => libc::SYS_sethostname,
        "setdomainname" => libc::SYS_setdomainname,
        #[cfg(target_arch = "x86_64")]
        "iopl" => libc::SYS_iopl,
        #[cfg(target_arch = "x86_64")]
        "ioperm" => libc::SYS_ioperm,
        "open_by_handle_at" => libc::SYS_open_by_handle_at,
        "name_to_handle_at" => libc::SYS_name_to_handle_at,
        "fanotify_init" => libc::SYS_fanotify_init,
        "quotactl" => libc::SYS_quotactl,
        "syslog" => libc::SYS_syslog,
        "vhangup" => libc::SYS_vhangup,
        "mount_setattr" => libc::SYS_mount_setattr,
        "move_mount" => libc::SYS_move_mount,
        "open_tree" => libc::SYS_open_tree,
        "fsopen" => libc::SYS_fsopen,
        "fsconfig" => libc::SYS_fsconfig,
        "fsmount" => libc::SYS_fsmount,
        "fspick" => libc::SYS_fspick,
        "pidfd_getfd" => libc::SYS_pidfd_getfd,
        _ => return None,
    };
    Some(n)
}

/// Namespace-creating clone flags (each one bit, all in the low 32 bits).
const CLONE_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u32;

/// What the filter answers to a system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Allow,
    /// The whole process is killed (SIGSYS).
    Kill,
    /// The call fails with this errno.
    Errno(i32),
    /// The call waits for the filter's listener (the keeper) to answer it.
    Notify,
}

impl Action {
    fn ret_value(self) -> u32 {
        match self {
            Action::Allow => libc::SECCOMP_RET_ALLOW,
            Action::Kill => libc::SECCOMP_RET_KILL_PROCESS,
            Action::Errno(e) => libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA),
            Action::Notify => libc::SECCOMP_RET_USER_NOTIF,
        }
    }
}

/// A test on the low 32 bits of one argument: every argument inspected is an `int`, an
/// `unsigned int` or a flag word whose bits of interest are in the low half, which is all the
/// kernel reads of the first two.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cmp {
    /// Whatever the arguments.
    Always,
    /// The argument is one of these.
    In(Vec<u32>),
    /// The argument is anything but this.
    Not(u32),
    /// The argument has any of these bits set.
    AnyBit(u32),
}

/// One line of the policy: `action` when argument `arg` passes `cmp`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Test {
    arg: u8,
    cmp: Cmp,
    action: Action,
}

/// For each system call number, its tests in order; the first that passes decides, and a call
/// that passes none (or has no line) is allowed.
type Policy = BTreeMap<u32, Vec<Test>>;

fn always(action: Action) -> Vec<Test> {
    vec![Test {
        arg: 0,
        cmp: Cmp::Always,
        action,
    }]
}

fn when(arg: u8, cmp: Cmp, action: Action) -> Test {
    Test { arg, cmp, action }
}

/// The policy of every box.
fn policy() -> Policy {
    let mut policy = Policy::new();
    let mut add = |nr: i64, tests: Vec<Test>| {
        policy.insert(nr as u32, tests);
    };
    for name in KILLED {
        if let Some(nr) = syscall_number(name) {
            add(nr, always(Action::Kill));
        }
    }
    // socket(domain != AF_UNIX): no network, even if a network namespace were misconfigured.
    add(
        libc::SYS_socket,
        vec![when(0, Cmp::Not(libc::AF_UNIX as u32), Action::Kill)],
    );
    add(
        libc::SYS_clone,
        vec![when(0, Cmp::AnyBit(CLONE_NAMESPACE_FLAGS), Action::Kill)],
    );
    add(libc::SYS_clone3, always(Action::Errno(libc::ENOSYS)));
    // File locks answer ENOLCK ("no locks available"): the system files are shared by every
    // box, and a lock on one is visible to every other box at once, a channel between the
    // user processes of a Communication test (or between submissions). A program gains nothing
    // from a lock that only it can see, so every lock is refused rather than only those on
    // shared files (seccomp cannot tell which file a descriptor is); a refusal, not a kill, so
    // that a library that tries a lock and carries on still works.
    add(libc::SYS_flock, always(Action::Errno(libc::ENOLCK)));
    let lock_commands = [
        libc::F_GETLK,
        libc::F_SETLK,
        libc::F_SETLKW,
        libc::F_OFD_GETLK,
        libc::F_OFD_SETLK,
        libc::F_OFD_SETLKW,
    ];
    // Other ways to reach outside the box, refused with EPERM:
    // - leases and directory notifications (`fcntl` F_SETLEASE, F_NOTIFY) and inotify: events
    //   on the shared system files (an open, an access) would be seen by every other box.
    // - `ioctl` TIOCSTI / TIOCLINUX (push keystrokes into a terminal, or read its screen) and
    //   TIOCCONS (redirect the console): a box never holds a terminal (see `child`), this is
    //   defence in depth.
    // - `ioprio_set` on a whole user: with a shared host uid (a caller without root) it would
    //   reach the caller's own processes.
    add(
        libc::SYS_fcntl,
        vec![
            when(
                1,
                Cmp::In(lock_commands.iter().map(|&c| c as u32).collect()),
                Action::Errno(libc::ENOLCK),
            ),
            when(
                1,
                Cmp::In(vec![libc::F_SETLEASE as u32, libc::F_NOTIFY as u32]),
                Action::Errno(libc::EPERM),
            ),
        ],
    );
    const TIOCSTI: u32 = 0x5412;
    const TIOCLINUX: u32 = 0x541C;
    const TIOCCONS: u32 = 0x541D;
    const IOPRIO_WHO_USER: u32 = 3;
    add(
        libc::SYS_ioctl,
        vec![when(
            1,
            Cmp::In(vec![TIOCSTI, TIOCLINUX, TIOCCONS]),
            Action::Errno(libc::EPERM),
        )],
    );
    #[cfg(target_arch = "x86_64")]
    add(libc::SYS_inotify_init, always(Action::Errno(libc::EPERM)));
    add(libc::SYS_inotify_init1, always(Action::Errno(libc::EPERM)));
    add(
        libc::SYS_inotify_add_watch,
        always(Action::Errno(libc::EPERM)),
    );
    // A program's scheduling is the host's: a lowered priority (nice, `SCHED_IDLE`,
    // `SCHED_BATCH`) would earn it waiting-for-a-CPU credit against its wall limit at no CPU
    // cost (see `waiting`), and `setpriority` on a whole user would reach the caller's own
    // processes where the host uid is shared (a caller without root). Its placement is the
    // caller's (see `affinity`): a program that widened its affinity would leave the CPU its
    // peers share and run beside another box. Refused, not killed: a program that tries and
    // carries on still works.
    for nr in [
        libc::SYS_setpriority,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_sched_setaffinity,
    ] {
        add(nr, always(Action::Errno(libc::EPERM)));
    }
    // `io_setup` adds to the host-wide `/proc/sys/fs/aio-nr`, a counter every box could both
    // change and read (the box's `/proc/sys` is masked too, see `mounts`): a channel between
    // the user processes of a Communication test. Refused softly (no kernel aio: libaio users
    // fall back); io_uring, the other asynchronous interface, is killed above.
    add(libc::SYS_io_setup, always(Action::Errno(libc::ENOSYS)));
    // `sysinfo` would report host-wide memory and task counts: the keeper answers it with the
    // same values for every box (see `crate::sysinfo`).
    add(libc::SYS_sysinfo, always(Action::Notify));
    // `preadv2(RWF_NOWAIT)` fails with EAGAIN where the data is not in the page cache: one box
    // would learn which pages of a shared system file another box has read. EOPNOTSUPP is what
    // a file without non-blocking reads answers; callers fall back to a plain read.
    const RWF_NOWAIT: u32 = 0x8;
    add(
        libc::SYS_preadv2,
        vec![when(
            5,
            Cmp::AnyBit(RWF_NOWAIT),
            Action::Errno(libc::EOPNOTSUPP),
        )],
    );
    add(
        libc::SYS_ioprio_set,
        vec![when(
            0,
            Cmp::In(vec![IOPRIO_WHO_USER]),
            Action::Errno(libc::EPERM),
        )],
    );
    policy
}

/// The architecture the filter accepts (any other is killed: its numbers mean other calls).
#[cfg(target_arch = "x86_64")]
pub(crate) const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
pub(crate) const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
pub(crate) const AUDIT_ARCH: u32 = 0xC000_00F3;

/// x32 system calls are numbers with this bit set: killed, since the table would not
/// recognise them on a kernel built with x32 support (nor negative numbers).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets in `struct seccomp_data`: nr (int), arch (u32), instruction pointer, args (u64 each).
const NR: u32 = 0;
const ARCH: u32 = 4;
/// Offset of the low 32 bits of argument `arg`.
fn arg_low(arg: u8) -> u32 {
    let start = 16 + 8 * arg as u32;
    if cfg!(target_endian = "little") {
        start
    } else {
        start + 4
    }
}

const LD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

fn ret(action: Action) -> sock_filter {
    op(RET, 0, 0, action.ret_value())
}

/// Compiles the policy: check the architecture, load the number, then a binary search over
/// the numbers of the table (each leaf answers at once or jumps to its argument tests, which
/// follow the tree).
fn compile(policy: &Policy) -> Result<Vec<sock_filter>> {
    let entries: Vec<(u32, &[Test])> = policy.iter().map(|(&nr, t)| (nr, &t[..])).collect();
    if entries.is_empty() {
        bail!("empty seccomp policy");
    }
    // The code below relies on these: an empty list would compile to "always", and a jump
    // over more than 255 comparisons does not fit in a conditional jump.
    for (nr, tests) in &entries {
        for test in tests.iter() {
            if let Cmp::In(values) = &test.cmp {
                if values.is_empty() || values.len() > 255 {
                    bail!("seccomp policy: call {nr} tests {} values", values.len());
                }
            }
        }
    }
    let mut code = vec![
        op(LD_ABS, 0, 0, ARCH),
        op(JEQ, 1, 0, AUDIT_ARCH),
        ret(Action::Kill),
        op(LD_ABS, 0, 0, NR),
    ];
    #[cfg(target_arch = "x86_64")]
    code.extend([op(JGE, 0, 1, X32_SYSCALL_BIT), ret(Action::Kill)]);
    // (index of a jump to patch, entry whose tests it jumps to)
    let mut to_tests = Vec::new();
    search(&entries, 0..entries.len(), &mut code, &mut to_tests);
    let mut starts = Vec::with_capacity(entries.len());
    for (_, tests) in &entries {
        starts.push(code.len());
        argument_tests(tests, &mut code);
    }
    for (at, entry) in to_tests {
        code[at].k = (starts[entry] - at - 1) as u32;
    }
    if code.len() > libc::BPF_MAXINSNS as usize {
        bail!("seccomp program too long: {} instructions", code.len());
    }
    Ok(code)
}

/// The binary search over `entries[range]`, the number in the accumulator. Every branch
/// jumps with `JA` (32-bit offsets), so no subtree is too far for a conditional jump.
fn search(
    entries: &[(u32, &[Test])],
    range: std::ops::Range<usize>,
    code: &mut Vec<sock_filter>,
    to_tests: &mut Vec<(usize, usize)>,
) {
    if range.len() == 1 {
        let (nr, tests) = entries[range.start];
        code.push(op(JEQ, 0, 1, nr));
        match tests {
            [Test {
                cmp: Cmp::Always,
                action,
                ..
            }] => code.push(ret(*action)),
            _ => {
                to_tests.push((code.len(), range.start));
                code.push(op(JA, 0, 0, 0));
            }
        }
        code.push(ret(Action::Allow));
        return;
    }
    let mid = range.start + range.len() / 2;
    // nr >= entries[mid]: the right half, past the left one.
    code.push(op(JGE, 0, 1, entries[mid].0));
    let skip_left = code.len();
    code.push(op(JA, 0, 0, 0));
    search(entries, range.start..mid, code, to_tests);
    code[skip_left].k = (code.len() - skip_left - 1) as u32;
    search(entries, mid..range.end, code, to_tests);
}

/// One call's tests in order, then allow.
fn argument_tests(tests: &[Test], code: &mut Vec<sock_filter>) {
    for test in tests {
        match &test.cmp {
            Cmp::Always => {
                code.push(ret(test.action));
                return;
            }
            Cmp::In(values) => {
                code.push(op(LD_ABS, 0, 0, arg_low(test.arg)));
                for (i, &value) in values.iter().enumerate() {
                    let last = i + 1 == values.len();
                    // Each match jumps to the `ret` after the last comparison.
                    let to_ret = (values.len() - 1 - i) as u8;
                    code.push(op(JEQ, to_ret, u8::from(last), value));
                }
                code.push(ret(test.action));
            }
            Cmp::Not(value) => {
                code.push(op(LD_ABS, 0, 0, arg_low(test.arg)));
                code.push(op(JEQ, 1, 0, *value));
                code.push(ret(test.action));
            }
            Cmp::AnyBit(mask) => {
                code.push(op(LD_ABS, 0, 0, arg_low(test.arg)));
                code.push(op(JSET, 0, 1, *mask));
                code.push(ret(test.action));
            }
        }
    }
    code.push(ret(Action::Allow));
}

/// The compiled filter, ready to install in the program.
pub(crate) struct Filters {
    program: Vec<sock_filter>,
}

/// Compiles the policy once; the program is shared by every run.
pub(crate) fn build() -> Result<Filters> {
    Ok(Filters {
        program: compile(&policy())?,
    })
}

impl Filters {
    /// The compiled program (installed by `crate::sysinfo::install`, with its listener).
    pub(crate) fn program(&self) -> &[sock_filter] {
        &self.program
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the policy table itself says about a call (the specification the compiled
    /// program is checked against).
    fn decide(policy: &Policy, arch: u32, nr: u32, args: &[u64; 6]) -> Action {
        if arch != AUDIT_ARCH {
            return Action::Kill;
        }
        #[cfg(target_arch = "x86_64")]
        if nr >= X32_SYSCALL_BIT {
            return Action::Kill;
        }
        for test in policy.get(&nr).map_or(&[][..], |t| &t[..]) {
            let value = args[test.arg as usize] as u32;
            let passes = match &test.cmp {
                Cmp::Always => true,
                Cmp::In(values) => values.contains(&value),
                Cmp::Not(v) => value != *v,
                Cmp::AnyBit(mask) => value & mask != 0,
            };
            if passes {
                return test.action;
            }
        }
        Action::Allow
    }

    /// Runs a classic-BPF seccomp program as the kernel does (the instructions `compile`
    /// emits; any other is a failure); returns the answer and the instructions executed.
    fn interpret(code: &[sock_filter], arch: u32, nr: u32, args: &[u64; 6]) -> (Action, usize) {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&nr.to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for a in args {
            data.extend_from_slice(&a.to_ne_bytes());
        }
        let (mut pc, mut acc, mut steps) = (0usize, 0u32, 0usize);
        loop {
            let ins = code.get(pc).expect("the program runs off its end");
            steps += 1;
            let next = pc + 1;
            let branch = |taken: bool| next + if taken { ins.jt } else { ins.jf } as usize;
            pc = match ins.code {
                LD_ABS => {
                    let at = ins.k as usize;
                    acc = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
                    next
                }
                JA => next + ins.k as usize,
                JEQ => branch(acc == ins.k),
                JGE => branch(acc >= ins.k),
                JSET => branch(acc & ins.k != 0),
                RET => {
                    let action = match ins.k {
                        libc::SECCOMP_RET_ALLOW => Action::Allow,
                        libc::SECCOMP_RET_KILL_PROCESS => Action::Kill,
                        libc::SECCOMP_RET_USER_NOTIF => Action::Notify,
                        k if k & libc::SECCOMP_RET_ACTION_FULL == libc::SECCOMP_RET_ERRNO => {
                            Action::Errno((k & libc::SECCOMP_RET_DATA) as i32)
                        }
                        k => panic!("unexpected return value {k:#x}"),
                    };
                    return (action, steps);
                }
                other => panic!("unexpected instruction {other:#x}"),
            };
        }
    }

    /// Argument vectors worth trying for a call: zeros, and for each tested argument every
    /// listed value, its neighbours, each bit of a mask, and the same with high bits set.
    fn argument_cases(tests: &[Test]) -> Vec<[u64; 6]> {
        let mut cases = vec![[0u64; 6], [u64::MAX; 6]];
        for test in tests {
            let values: Vec<u32> = match &test.cmp {
                Cmp::Always => vec![],
                Cmp::In(values) => values.clone(),
                Cmp::Not(v) => vec![*v],
                Cmp::AnyBit(mask) => (0..32).map(|b| 1u32 << b).chain([*mask]).collect(),
            };
            for v in values {
                for v in [v, v.wrapping_add(1), v.wrapping_sub(1)] {
                    for high in [0u64, 0xdead_beef << 32] {
                        let mut args = [7u64; 6];
                        args[test.arg as usize] = high | v as u64;
                        cases.push(args);
                    }
                }
            }
        }
        cases
    }

    /// The compiled program answers exactly what the table says, for every system call
    /// number (and x32 and negative ones), other architectures, and the argument values that
    /// matter; and it decides in a number of steps that grows with the logarithm of the table,
    /// not its length (a linear chain would fail the bound).
    #[test]
    fn the_program_answers_what_the_table_says() {
        let policy = policy();
        let code = compile(&policy).unwrap();
        let mut numbers: Vec<u32> = (0..1024).collect();
        numbers.extend([0x4000_0000, 0x4000_0000 + libc::SYS_mount as u32, u32::MAX]);
        let no_tests = Vec::new();
        let mut longest = 0;
        for &nr in &numbers {
            let tests = policy.get(&nr).unwrap_or(&no_tests);
            for args in argument_cases(tests) {
                for arch in [AUDIT_ARCH, 0x4000_0003 /* i386 */] {
                    let (got, steps) = interpret(&code, arch, nr, &args);
                    assert_eq!(
                        got,
                        decide(&policy, arch, nr, &args),
                        "nr {nr} arch {arch:#x} args {args:x?}"
                    );
                    if tests.iter().all(|t| t.cmp == Cmp::Always) {
                        longest = longest.max(steps);
                    }
                }
            }
        }
        let depth = (policy.len() as f64).log2().ceil() as usize;
        assert!(
            longest <= 2 * depth + 10,
            "{longest} steps for a table of {} calls",
            policy.len()
        );
    }

    /// A test the compiler cannot express exactly is refused, not miscompiled.
    #[test]
    fn a_policy_the_compiler_cannot_express_is_refused() {
        for values in [vec![], (0..256).collect::<Vec<u32>>()] {
            let mut policy = Policy::new();
            policy.insert(
                libc::SYS_ioctl as u32,
                vec![when(1, Cmp::In(values), Action::Kill)],
            );
            assert!(compile(&policy).is_err());
        }
    }

    /// The table holds what the rest of the sandbox relies on (the integration tests check
    /// the same through real programs, as root).
    #[test]
    fn the_table_kills_refuses_and_allows_the_right_calls() {
        let code = compile(&policy()).unwrap();
        let call = |nr: i64, arg0: u64, arg1: u64| {
            interpret(&code, AUDIT_ARCH, nr as u32, &[arg0, arg1, 0, 0, 0, 0]).0
        };
        assert_eq!(call(libc::SYS_read, 0, 0), Action::Allow);
        assert_eq!(call(libc::SYS_mount, 0, 0), Action::Kill);
        assert_eq!(call(libc::SYS_ptrace, 0, 0), Action::Kill);
        assert_eq!(call(libc::SYS_clone3, 0, 0), Action::Errno(libc::ENOSYS));
        let user_ns = libc::CLONE_NEWUSER as u64;
        assert_eq!(call(libc::SYS_clone, user_ns, 0), Action::Kill);
        let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        assert_eq!(call(libc::SYS_clone, thread, 0), Action::Allow);
        assert_eq!(
            call(libc::SYS_socket, libc::AF_INET as u64, 0),
            Action::Kill
        );
        assert_eq!(
            call(libc::SYS_socket, libc::AF_UNIX as u64, 0),
            Action::Allow
        );
        let fcntl = |cmd: i32| call(libc::SYS_fcntl, 3, cmd as u64);
        assert_eq!(fcntl(libc::F_SETLK), Action::Errno(libc::ENOLCK));
        assert_eq!(fcntl(libc::F_SETLEASE), Action::Errno(libc::EPERM));
        assert_eq!(fcntl(libc::F_GETFL), Action::Allow);
        assert_eq!(call(libc::SYS_ioctl, 0, 0x5412), Action::Errno(libc::EPERM));
        let prio_user = libc::PRIO_USER as u64;
        assert_eq!(
            call(libc::SYS_setpriority, prio_user, 0),
            Action::Errno(libc::EPERM)
        );
        assert_eq!(
            call(libc::SYS_setpriority, 0, 0),
            Action::Errno(libc::EPERM)
        );
        for nr in [
            libc::SYS_sched_setscheduler,
            libc::SYS_sched_setparam,
            libc::SYS_sched_setattr,
            libc::SYS_sched_setaffinity,
        ] {
            assert_eq!(call(nr, 0, 0), Action::Errno(libc::EPERM));
        }
        assert_eq!(call(libc::SYS_sched_getscheduler, 0, 0), Action::Allow);
        assert_eq!(call(libc::SYS_sched_getaffinity, 0, 0), Action::Allow);
        assert_eq!(call(libc::SYS_io_setup, 8, 0), Action::Errno(libc::ENOSYS));
        let preadv2 = |flags: u64| {
            interpret(
                &code,
                AUDIT_ARCH,
                libc::SYS_preadv2 as u32,
                &[3, 0, 1, 0, 0, flags],
            )
            .0
        };
        assert_eq!(preadv2(0x8), Action::Errno(libc::EOPNOTSUPP));
        assert_eq!(preadv2(0), Action::Allow);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            interpret(&code, AUDIT_ARCH, 0x4000_0000, &[0; 6]).0,
            Action::Kill
        );
    }
}
