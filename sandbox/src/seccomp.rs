//! The seccomp filter: kill the process on system calls a submission never needs (debugging
//! other processes, mounting, changing namespaces, loading kernel code, non-unix sockets, ...)
//! while compilers, shells and ordinary programs keep working.
//!
//! Two filters are installed: the kill list (with `clone` killed when it asks for a new
//! namespace), and `clone3` answered with ENOSYS. `clone3` passes
//! its flags in memory that seccomp cannot inspect, so it is refused softly and the C library
//! falls back to `clone`, whose namespace flags the kill list does inspect.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

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

/// Namespace-creating clone flags.
const CLONE_NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// The compiled filters, ready to install in the program.
pub(crate) struct Filters {
    pub programs: Vec<BpfProgram>,
}

fn arch() -> Result<TargetArch> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| {
        anyhow::anyhow!(
            "seccomp: unsupported architecture {}: {e:?}",
            std::env::consts::ARCH
        )
    })
}

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

/// Builds both filters once; they are shared by every run.
pub(crate) fn build() -> Result<Filters> {
    let arch = arch()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for name in KILLED {
        if let Some(n) = syscall_number(name) {
            rules.insert(n, Vec::new());
        }
    }
    // socket(domain != AF_UNIX): no network, even if a network namespace were misconfigured.
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
    );
    // clone with any namespace flag: one rule per flag (rules of a syscall are OR-ed).
    let clone_rules = CLONE_NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag as u64),
                flag as u64,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    let kill: BpfProgram = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::KillProcess,
        arch,
    )?
    .try_into()
    .context("cannot compile the seccomp kill list")?;
    Ok(Filters {
        programs: vec![
            kill,
            second_filter(arch)?,
            refused(arch, lock_rules()?, libc::ENOLCK)?,
            refused(arch, channel_rules()?, libc::EPERM)?,
        ],
    })
}

/// A filter answering `errno` to the matching system calls and allowing everything else.
fn refused(
    arch: TargetArch,
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
) -> Result<BpfProgram> {
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )?
    .try_into()
    .context("cannot compile a seccomp filter")
}

/// `syscall` matching when argument `arg` equals one of `values` (32-bit compare).
fn arg_in(arg: u8, values: &[u64]) -> Result<Vec<SeccompRule>> {
    values
        .iter()
        .map(|&v| {
            Ok(SeccompRule::new(vec![SeccompCondition::new(
                arg,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                v,
            )?])?)
        })
        .collect()
}

/// File locks answer ENOLCK ("no locks available"): the system files are shared by every box,
/// and a lock on one is visible to every other box at once, a channel between the user
/// processes of a Communication test (or between submissions). A program gains nothing from a
/// lock that only it can see, so every lock is refused rather than only those on shared files
/// (seccomp cannot tell which file a descriptor is); a refusal, not a kill, so that a library
/// that tries a lock and carries on still works.
fn lock_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>> {
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_flock, Vec::new());
    rules.insert(
        libc::SYS_fcntl,
        arg_in(
            1,
            &[
                libc::F_GETLK as u64,
                libc::F_SETLK as u64,
                libc::F_SETLKW as u64,
                libc::F_OFD_GETLK as u64,
                libc::F_OFD_SETLK as u64,
                libc::F_OFD_SETLKW as u64,
            ],
        )?,
    );
    Ok(rules)
}

/// Other ways to reach outside the box, refused with EPERM:
/// - `ioctl` TIOCSTI / TIOCLINUX (push keystrokes into a terminal, or read its screen) and
///   TIOCCONS (redirect the console): a box never holds a terminal (see `child`), this is
///   defence in depth.
/// - leases and directory notifications (`fcntl` F_SETLEASE, F_NOTIFY) and inotify: events
///   on the shared system files (an open, an access) would be seen by every other box.
/// - `setpriority`/`ioprio_set` on a whole user: with a shared host uid (a caller without
///   root) they would reach the caller's own processes.
fn channel_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>> {
    const TIOCSTI: u64 = 0x5412;
    const TIOCLINUX: u64 = 0x541C;
    const TIOCCONS: u64 = 0x541D;
    const IOPRIO_WHO_USER: u64 = 3;
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_ioctl, arg_in(1, &[TIOCSTI, TIOCLINUX, TIOCCONS])?);
    rules.insert(
        libc::SYS_fcntl,
        arg_in(1, &[libc::F_SETLEASE as u64, libc::F_NOTIFY as u64])?,
    );
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_inotify_init, Vec::new());
    rules.insert(libc::SYS_inotify_init1, Vec::new());
    rules.insert(libc::SYS_inotify_add_watch, Vec::new());
    rules.insert(libc::SYS_setpriority, arg_in(0, &[libc::PRIO_USER as u64])?);
    rules.insert(libc::SYS_ioprio_set, arg_in(0, &[IOPRIO_WHO_USER])?);
    Ok(rules)
}

/// The second filter: `clone3` answers ENOSYS; on x86_64 it also kills x32 system calls
/// (numbers with bit 30 set), which the kill list would not recognise on a kernel built with
/// x32 support. seccompiler has no rule for a range of numbers, so on x86_64 these eight BPF
/// instructions are written by hand.
fn second_filter(arch: TargetArch) -> Result<BpfProgram> {
    #[cfg(target_arch = "x86_64")]
    {
        let _ = arch;
        const LD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
        const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
        const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
        const RET: u16 = 0x06; // BPF_RET | BPF_K
        const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        let op = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
        Ok(vec![
            op(LD_ABS, 0, 0, 4),                                          // 0: arch
            op(JEQ, 0, 5, AUDIT_ARCH_X86_64),                             // 1: other arch → 7
            op(LD_ABS, 0, 0, 0),                                          // 2: syscall number
            op(JGE, 2, 0, X32_SYSCALL_BIT),                               // 3: x32 → 6
            op(JEQ, 0, 2, libc::SYS_clone3 as u32),                       // 4: not clone3 → 7
            op(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32), // 5
            op(RET, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),                // 6
            op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),                       // 7
        ])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut clone3: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        clone3.insert(libc::SYS_clone3, Vec::new());
        SeccompFilter::new(
            clone3,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )?
        .try_into()
        .context("cannot compile the seccomp clone3 filter")
    }
}

/// Installs the filters (and no_new_privs): async-signal-safe, no allocation.
pub(crate) fn install(filters: &Filters) -> Result<(), i32> {
    for program in &filters.programs {
        if seccompiler::apply_filter(program).is_err() {
            return Err(nix::errno::Errno::last_raw().max(1));
        }
    }
    Ok(())
}
