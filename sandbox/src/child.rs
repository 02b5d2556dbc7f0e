//! What runs after the clone: the init (pid 1 of the new namespaces) and the program it forks.
//!
//! Everything here is async-signal-safe: raw system calls on the [`InitPlan`] prepared by the
//! keeper before the clone and on the run's message received into its reserved room (see
//! `handover`), no allocation, no locks, no panics (failures are reported on a pipe as a step
//! number and an errno, and the process exits).

use std::ffi::{CStr, CString};

use crate::handover::{Inbox, RunSteps, StdioStep};
use crate::mounts::{self, MountOp, MountStep};
use crate::rlimits;
use crate::seccomp::Filters;

/// What the init is cloned with: everything every run has in common, prepared before the
/// clone; the run's own part arrives later in the inbox (see `handover`). The init shares the
/// keeper's memory: the plan stays where it is, untouched by the keeper, until the init is
/// reaped (see `keeper::InitMemory`).
pub(crate) struct InitPlan {
    /// The init reads one byte here once the keeper has written the id maps.
    pub go_read: libc::c_int,
    /// The run's message arrives here.
    pub run_read: libc::c_int,
    /// The init writes its [`Report`] here.
    pub report_write: libc::c_int,
    /// Descriptors to keep in the init, sorted; every other one is closed.
    pub keep_fds: Vec<libc::c_int>,
    /// The mounts every box starts with (pointing into the keeper's [`MountOp`]s).
    pub mounts: Vec<MountStep>,
    /// Whether the mounts the box's namespace is copied from are private already (the mount
    /// template's, see `mount_template`), or must be made so (the host's).
    pub mounts_private: bool,
    pub new_root: CString,
    /// The host path of the box's [`STDIO_STAGE`], under `new_root`.
    pub stdio_stage: CString,
    pub cgroup_procs: Vec<libc::c_int>,
    pub uid: libc::uid_t,
    pub gid: libc::gid_t,
    /// Clear supplementary groups (only possible when the keeper is root).
    pub clear_groups: bool,
    pub seccomp: std::sync::Arc<Filters>,
    /// The program sends the listener of its `sysinfo` filter to the keeper here (see
    /// `crate::sysinfo`); the init closes it once the program is spawned.
    pub sysinfo_socket: libc::c_int,
    /// The program's stack until it executes.
    pub program_stack: *mut u8,
    pub program_stack_len: usize,
    /// Room for the run's message, filled by the init.
    pub inbox: Inbox,
}

/// Inside the box, the folder on which the host's stdio files are bound while the init opens
/// them (see [`bind_hidden_stdio`]): a tmpfs of its own, detached with every bind on it by one
/// unmount, on the root's tmpfs (writable until the root is made read-only), which is the
/// box's own. Each unmount waits for an RCU grace period, several milliseconds on a busy host,
/// so one for all the streams, not one each.
pub(crate) const STDIO_STAGE: &CStr = c"/.stdio";

/// What the init tells the keeper, as fixed-size bytes on the report pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Report {
    Exited(i32),
    Signaled(i32),
    /// Setup failed at `step` with `errno`.
    SetupFailed {
        step: Step,
        errno: i32,
    },
}

/// The named steps of setting up a box, in the order they happen; a failure is reported as
/// the step and an errno, which the keeper turns into a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    OpenStdin,
    OpenStdout,
    OpenStderr,
    Hostname,
    PrivateMounts,
    PivotRoot,
    ReadonlyRoot,
    Fork,
    JoinCgroup,
    Rlimits,
    DupStdio,
    Chdir,
    SetIds,
    DropCaps,
    Seccomp,
    Exec,
    Session,
    Terminal,
    HideStdio,
    /// Receiving the run's part of the box from the keeper (see `handover`).
    Handover,
    /// Detaching the streams' stage, binds and all, once the init opened them, and removing it.
    DetachStdio,
    /// The mount operation at this index of the box's mounts: the common ones, then the run's.
    Mount(u32),
}

/// Wire numbers of the steps (the report pipe carries a `u32`); mounts from `MOUNTS` on.
const WIRE: [Step; 21] = [
    Step::OpenStdin,
    Step::OpenStdout,
    Step::OpenStderr,
    Step::Hostname,
    Step::PrivateMounts,
    Step::PivotRoot,
    Step::ReadonlyRoot,
    Step::Fork,
    Step::JoinCgroup,
    Step::Rlimits,
    Step::DupStdio,
    Step::Chdir,
    Step::SetIds,
    Step::DropCaps,
    Step::Seccomp,
    Step::Exec,
    Step::Session,
    Step::Terminal,
    Step::HideStdio,
    Step::Handover,
    Step::DetachStdio,
];
const MOUNTS: u32 = 100;

impl Step {
    /// Opening standard stream `index` (0 stdin, 1 stdout, 2 stderr).
    pub fn open_stdio(index: usize) -> Step {
        match index {
            0 => Step::OpenStdin,
            1 => Step::OpenStdout,
            _ => Step::OpenStderr,
        }
    }

    fn to_wire(self) -> u32 {
        match self {
            Step::Mount(i) => MOUNTS.saturating_add(i),
            step => WIRE
                .iter()
                .position(|&s| s == step)
                .map_or(0, |i| i as u32 + 1),
        }
    }

    fn from_wire(code: u32) -> Option<Step> {
        if code >= MOUNTS {
            return Some(Step::Mount(code - MOUNTS));
        }
        WIRE.get((code as usize).checked_sub(1)?).copied()
    }

    pub fn describe(self, mounts: &[&MountOp]) -> String {
        match self {
            Step::OpenStdin => "open stdin".into(),
            Step::OpenStdout => "open stdout".into(),
            Step::OpenStderr => "open stderr".into(),
            Step::Hostname => "set the hostname".into(),
            Step::PrivateMounts => "make mounts private".into(),
            Step::PivotRoot => "pivot_root into the box".into(),
            Step::ReadonlyRoot => "make the root read-only".into(),
            Step::Fork => "fork the program".into(),
            Step::JoinCgroup => "join the cgroup".into(),
            Step::Rlimits => "set resource limits".into(),
            Step::DupStdio => "set up stdin/stdout/stderr".into(),
            Step::Chdir => "enter the working directory".into(),
            Step::SetIds => "switch to the sandbox user".into(),
            Step::DropCaps => "drop capabilities".into(),
            Step::Seccomp => "install the seccomp filter".into(),
            Step::Exec => "execute the program".into(),
            Step::Session => "start a new session".into(),
            Step::Terminal => {
                "give a terminal to the program (refused: a box never holds a terminal; use a file or a pipe)"
                    .into()
            }
            Step::HideStdio => "bind stdin/stdout/stderr into the box".into(),
            Step::Handover => "receive the run from the keeper".into(),
            Step::DetachStdio => format!(
                "detach the folder {} on which stdin/stdout/stderr were bound",
                STDIO_STAGE.to_string_lossy()
            ),
            Step::Mount(i) => mounts
                .get(i as usize)
                .map(|m| m.describe())
                .unwrap_or_else(|| format!("mount step {i}")),
        }
    }
}

impl Report {
    pub const SIZE: usize = 12;

    pub fn encode(self) -> [u8; Self::SIZE] {
        let (kind, a, b): (u32, i32, i32) = match self {
            Report::Exited(c) => (0, c, 0),
            Report::Signaled(s) => (1, s, 0),
            Report::SetupFailed { step, errno } => (2, step.to_wire() as i32, errno),
        };
        let mut out = [0u8; Self::SIZE];
        out[..4].copy_from_slice(&kind.to_ne_bytes());
        out[4..8].copy_from_slice(&a.to_ne_bytes());
        out[8..].copy_from_slice(&b.to_ne_bytes());
        out
    }

    pub fn decode(bytes: &[u8; Self::SIZE]) -> Option<Report> {
        let word =
            |i: usize| i32::from_ne_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        Some(match word(0) {
            0 => Report::Exited(word(4)),
            1 => Report::Signaled(word(4)),
            2 => Report::SetupFailed {
                step: Step::from_wire(word(4) as u32)?,
                errno: word(8),
            },
            _ => return None,
        })
    }
}

fn errno() -> i32 {
    nix::errno::Errno::last_raw()
}

fn write_all(fd: libc::c_int, bytes: &[u8]) {
    // SAFETY: write(2) of a valid buffer; short writes on a pipe of 12 bytes do not happen.
    unsafe {
        libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    }
}

fn fail(plan: &InitPlan, step: Step, errno: i32) -> ! {
    write_all(
        plan.report_write,
        &Report::SetupFailed { step, errno }.encode(),
    );
    // SAFETY: _exit is always safe.
    unsafe { libc::_exit(1) }
}

/// Closes every descriptor not in the sorted `keep` list (other threads of the keeper may have
/// had pipes of other runs open at the time of the clone).
fn close_others(keep: &[libc::c_int]) {
    let mut from: libc::c_uint = 3;
    for &fd in keep {
        let fd = fd as libc::c_uint;
        if fd > from {
            // SAFETY: close_range on a range of descriptors this process owns.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0) };
        }
        from = from.max(fd + 1);
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, 0) };
}

/// What the program's entry point needs (passed through `clone`'s argument).
struct ProgramStart<'a> {
    plan: &'a InitPlan,
    run: &'a RunSteps,
    fds: [libc::c_int; 3],
    err_read: libc::c_int,
    err_write: libc::c_int,
}

extern "C" fn program_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points to the `ProgramStart` on the init's stack, alive (and the init
    // suspended) until this process executes or exits.
    let start = unsafe { &*(arg as *const ProgramStart) };
    // SAFETY: closing our copy of the read end (the descriptor table is not shared).
    unsafe { libc::close(start.err_read) };
    program_main(start.plan, start.run, &start.fds, start.err_write)
}

/// Starts the program the way posix_spawn does: sharing the init's memory (no copy of the
/// address space, whose cost grows with the caller's memory) on its own stack, with the init
/// suspended until the program executes or exits. No `atfork` handlers run.
fn spawn_program(start: &ProgramStart) -> libc::pid_t {
    let plan = start.plan;
    // The stack grows down from the 16-byte aligned end of the prepared buffer.
    let top = (plan.program_stack as usize + plan.program_stack_len) & !15;
    // SAFETY: the stack buffer is owned by the keeper for the whole run and used by nothing
    // else; the entry point only makes raw system calls on prepared data.
    unsafe {
        libc::clone(
            program_entry,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            start as *const ProgramStart as *mut libc::c_void,
        )
    }
}

/// The init: sets up the part of the box every run has, waits for its run and sets up the
/// run's part, forks the program, reaps until it exits, reports, exits. A list of named steps,
/// each of which reports its failure and exits.
pub(crate) fn init_main(plan: &mut InitPlan) -> ! {
    default_signals();
    close_others(&plan.keep_fds);
    wait_for_go(plan);
    new_session(plan);
    name_the_host_and_privatise_mounts(plan);
    build(plan, &plan.mounts, 0);
    empty_the_bounding_set();
    receive_the_run(plan);
    let plan: &InitPlan = plan;
    let run = &plan.inbox.run;
    let (mut fds, created) = open_stdio_outside(plan, run);
    build(plan, &run.mounts, plan.mounts.len());
    bind_hidden_stdio(plan, run);
    pivot_into_the_root(plan);
    open_hidden_stdio(plan, run, &mut fds, created);
    make_the_root_read_only(plan);
    let (program, exec_errors) = start_program(plan, run, fds);
    await_exec(plan, exec_errors);
    let report = reap_until_exit(program);
    write_all(plan.report_write, &report.encode());
    // Exiting kills every process left in the pid namespace.
    // SAFETY: _exit.
    unsafe { libc::_exit(0) }
}

/// Every signal to its default action and none blocked, for the init and so for the program
/// it spawns (an execve keeps what is ignored and the mask): the keeper's handlers must not run
/// here, in the keeper's memory, and a program must not start with `SIGPIPE` ignored (as Rust
/// programs ignore it) or with signals blocked, which would change how it ends. As the init of
/// its pid namespace, with no handler it also receives no signal from the box.
fn default_signals() {
    // The kernel's `struct sigaction` all zeros: SIG_DFL, no flags, an empty mask (whatever the
    // architecture's layout). Raw system calls: the C library refuses its own signals (32, 33).
    let default = [0u64; 4];
    let none = 0u64;
    for signal in 1..=64 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: rt_sigaction with a zeroed action on this stack; numbers the kernel has not
        // fail (EINVAL).
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                signal,
                default.as_ptr(),
                std::ptr::null_mut::<u64>(),
                std::mem::size_of::<u64>(),
            )
        };
    }
    // SAFETY: rt_sigprocmask with an empty set on this stack.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &none as *const u64,
            std::ptr::null_mut::<u64>(),
            std::mem::size_of::<u64>(),
        )
    };
}

/// Dies with the keeper, and waits until the keeper has written the id maps.
fn wait_for_go(plan: &InitPlan) {
    // SAFETY: prctl/read/close on plain values.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        let mut go = 0u8;
        if libc::read(plan.go_read, (&mut go as *mut u8).cast(), 1) != 1 {
            libc::_exit(1); // the keeper died or gave up
        }
        libc::close(plan.go_read);
    }
}

/// A session and process group of the box's own: no controlling terminal (nothing to inject
/// keystrokes into), and kill(0, ...), kill(-pgrp, ...) or setpriority(PRIO_PGRP, 0, ...) from
/// the program reach only the box, never the caller's process group (other boxes, compilers,
/// ioi-run itself).
fn new_session(plan: &InitPlan) {
    // SAFETY: setsid has no arguments.
    if unsafe { libc::setsid() } < 0 {
        fail(plan, Step::Session, errno());
    }
}

/// Opens the streams that are not host files (`/dev/null`, the caller's descriptors) while the
/// host's root is still visible; host files are only created here, and opened from inside the
/// new root by [`open_hidden_stdio`]. None may be a terminal. Also says which host files were
/// created here, empty.
fn open_stdio_outside(plan: &InitPlan, run: &RunSteps) -> ([libc::c_int; 3], [bool; 3]) {
    let mut fds = [-1; 3];
    let mut created = [false; 3];
    for (i, stdio) in run.stdio.iter().enumerate() {
        fds[i] = match *stdio {
            StdioStep::Fd(fd) => fd,
            // SAFETY: open of a prepared path.
            StdioStep::Open { path, flags } => unsafe {
                libc::open(path, flags | libc::O_CLOEXEC | libc::O_NOCTTY, 0o644)
            },
            StdioStep::Hidden { host, create, .. } => {
                if create {
                    created[i] = create_host_file(plan, i, host);
                }
                continue; // opened from inside the new root
            }
        };
        if fds[i] < 0 {
            fail(plan, Step::open_stdio(i), errno());
        }
        // SAFETY: isatty on a descriptor we hold.
        if unsafe { libc::isatty(fds[i]) } == 1 {
            fail(plan, Step::Terminal, libc::EPERM);
        }
    }
    (fds, created)
}

/// Creates the host file of stream `i`, the output of a run, where it is missing; true when
/// this made it (empty), false when it was there. A file made here is not truncated again
/// when it is opened: on ext4 a truncation to zero marks the file to be written to the disk at
/// its last close (`auto_da_alloc`), one write for every output of every test, which a file
/// removed soon after (a test's private folder) would otherwise never cost.
fn create_host_file(plan: &InitPlan, i: usize, host: *const libc::c_char) -> bool {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOCTTY;
    // SAFETY: open of a prepared path.
    let mut fd = unsafe { libc::open(host, flags | libc::O_EXCL, 0o644) };
    let made = fd >= 0;
    if !made && errno() == libc::EEXIST {
        // There already (or a link to follow): opened as it is, truncated at the real open.
        // SAFETY: open of a prepared path.
        fd = unsafe { libc::open(host, flags, 0o644) };
    }
    if fd < 0 {
        fail(plan, Step::open_stdio(i), errno());
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    made
}

/// The box's own host name, and mounts that no longer propagate to or from the host (copies
/// of private mounts are private).
fn name_the_host_and_privatise_mounts(plan: &InitPlan) {
    // SAFETY: raw system calls on static strings.
    unsafe {
        if libc::sethostname(c"ioi-box".as_ptr(), 7) != 0 {
            fail(plan, Step::Hostname, errno());
        }
        if !plan.mounts_private
            && libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
        {
            fail(plan, Step::PrivateMounts, errno());
        }
    }
}

/// Mount operations (see `crate::mounts`); a failure is named by its index among all of the
/// box's, the first of these being `first`.
fn build(plan: &InitPlan, steps: &[MountStep], first: usize) {
    for (i, step) in steps.iter().enumerate() {
        if let Err(e) = mounts::apply(*step) {
            fail(plan, Step::Mount((first + i) as u32), e);
        }
    }
}

/// Empties the capability bounding set while the init still may (CAP_SETPCAP in its user
/// namespace), before the run: the program, a copy of the init, starts with it empty, so no
/// execve can ever grant it a capability. The init's own capabilities, which it needs for the
/// run's mounts, are not in that set and stay.
fn empty_the_bounding_set() {
    for cap in 0..=63 {
        // SAFETY: prctl on plain values. The first number past the kernel's last capability
        // fails (EINVAL): nothing is left to drop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            break;
        }
    }
}

/// Waits for the run's part of the box (see `handover`).
fn receive_the_run(plan: &mut InitPlan) {
    if let Err(errno) = plan.inbox.receive(plan.run_read) {
        fail(plan, Step::Handover, errno);
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(plan.run_read) };
}

/// Binds each host stdio file on a placeholder in the box's [`STDIO_STAGE`], to be opened
/// from inside.
fn bind_hidden_stdio(plan: &InitPlan, run: &RunSteps) {
    if !has_hidden_stdio(run) {
        return;
    }
    // SAFETY: mkdir/mount of a prepared path in the box's root, static arguments.
    unsafe {
        if libc::mkdir(plan.stdio_stage.as_ptr(), 0o700) != 0
            || libc::mount(
                c"none".as_ptr(),
                plan.stdio_stage.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"mode=0700,size=4k".as_ptr().cast(),
            ) != 0
        {
            fail(plan, Step::HideStdio, errno());
        }
    }
    for (i, stdio) in run.stdio.iter().enumerate() {
        if let StdioStep::Hidden { host, target, .. } = *stdio {
            // SAFETY: open/mount of prepared paths; the placeholder is on the stage's tmpfs.
            unsafe {
                let fd = libc::open(
                    target,
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o600,
                );
                if fd < 0 {
                    fail(plan, Step::HideStdio, errno());
                }
                libc::close(fd);
                if libc::mount(
                    host,
                    target,
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) != 0
                {
                    // Most often the host file is missing: say which stream.
                    fail(plan, Step::open_stdio(i), errno());
                }
            }
        }
    }
}

fn has_hidden_stdio(run: &RunSteps) -> bool {
    run.stdio
        .iter()
        .any(|stdio| matches!(stdio, StdioStep::Hidden { .. }))
}

/// `pivot_root` into the new root and detach the host's.
fn pivot_into_the_root(plan: &InitPlan) {
    // SAFETY: raw system calls on prepared strings.
    unsafe {
        if libc::chdir(plan.new_root.as_ptr()) != 0
            || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0
            || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0
            || libc::chdir(c"/".as_ptr()) != 0
        {
            fail(plan, Step::PivotRoot, errno());
        }
    }
}

/// Opens the host stdio files from inside, in order (stdin, stdout, stderr, for FIFO pairs
/// between boxes, see `crate::Stdio`), then detaches the stage with their binds and removes it.
fn open_hidden_stdio(
    plan: &InitPlan,
    run: &RunSteps,
    fds: &mut [libc::c_int; 3],
    created: [bool; 3],
) {
    if !has_hidden_stdio(run) {
        return;
    }
    for (i, stdio) in run.stdio.iter().enumerate() {
        if let StdioStep::Hidden { inside, flags, .. } = *stdio {
            // A file created empty for this run has nothing to truncate (see
            // [`create_host_file`]).
            let flags = match created[i] {
                true => flags & !libc::O_TRUNC,
                false => flags,
            };
            // SAFETY: open of a prepared path inside the new root.
            unsafe {
                fds[i] = libc::open(inside, flags | libc::O_CLOEXEC | libc::O_NOCTTY, 0o644);
                if fds[i] < 0 {
                    fail(plan, Step::open_stdio(i), errno());
                }
                if libc::isatty(fds[i]) == 1 {
                    fail(plan, Step::Terminal, libc::EPERM);
                }
            }
        }
    }
    // Detached, an open file shows only its own name relative to the stage: no host path.
    // SAFETY: umount/rmdir of a static path inside the new root.
    unsafe {
        if libc::umount2(STDIO_STAGE.as_ptr(), libc::MNT_DETACH) != 0
            || libc::rmdir(STDIO_STAGE.as_ptr()) != 0
        {
            fail(plan, Step::DetachStdio, errno());
        }
    }
}

/// The root tmpfs becomes read-only (the box and `/tmp` are mounts of their own).
fn make_the_root_read_only(plan: &InitPlan) {
    let ro = libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
    // SAFETY: remount of the root with static arguments.
    let r = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            ro,
            std::ptr::null(),
        )
    };
    if r != 0 {
        fail(plan, Step::ReadonlyRoot, errno());
    }
}

/// Spawns the program; returns its pid and the read end of the pipe on which it reports a
/// failure before `execve` (closed without a word when `execve` succeeds). The init keeps no
/// stdio or cgroup descriptor: a FIFO peer must see end-of-file when the program exits.
fn start_program(
    plan: &InitPlan,
    run: &RunSteps,
    fds: [libc::c_int; 3],
) -> (libc::pid_t, libc::c_int) {
    let mut err_pipe = [-1; 2];
    // SAFETY: pipe2 into a local array.
    if unsafe { libc::pipe2(err_pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        fail(plan, Step::Fork, errno());
    }
    let start = ProgramStart {
        plan,
        run,
        fds,
        err_read: err_pipe[0],
        err_write: err_pipe[1],
    };
    let program = spawn_program(&start);
    if program < 0 {
        fail(plan, Step::Fork, errno());
    }
    // SAFETY: closing descriptors the init no longer needs: the program has its own copies.
    unsafe {
        libc::close(err_pipe[1]);
        for fd in fds.iter().chain(plan.cgroup_procs.iter()) {
            libc::close(*fd);
        }
        libc::close(plan.sysinfo_socket);
    }
    (program, err_pipe[0])
}

/// Passes on the program's failure to execute, if any (then the init exits).
fn await_exec(plan: &InitPlan, exec_errors: libc::c_int) {
    let mut failure = [0u8; 8];
    // SAFETY: read into a local buffer; returns 0 when exec closed the pipe.
    let n = unsafe { libc::read(exec_errors, failure.as_mut_ptr().cast(), failure.len()) };
    if n == 8 {
        let step = u32::from_ne_bytes([failure[0], failure[1], failure[2], failure[3]]);
        let errno = i32::from_ne_bytes([failure[4], failure[5], failure[6], failure[7]]);
        let step = Step::from_wire(step).unwrap_or(Step::Fork);
        fail(plan, step, errno);
    }
}

/// Reaps every process of the box (orphans are re-parented to the init) until the program
/// itself exits; returns how it did.
fn reap_until_exit(program: libc::pid_t) -> Report {
    loop {
        let mut status = 0;
        // SAFETY: waitpid into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == program {
            return if libc::WIFSIGNALED(status) {
                Report::Signaled(libc::WTERMSIG(status))
            } else {
                Report::Exited(libc::WEXITSTATUS(status))
            };
        }
        if pid < 0 && errno() != libc::EINTR {
            return Report::SetupFailed {
                step: Step::Fork,
                errno: errno(),
            };
        }
    }
}

/// The program: joins the cgroup, limits itself, becomes unprivileged, executes.
fn program_main(plan: &InitPlan, run: &RunSteps, fds: &[libc::c_int; 3], err: libc::c_int) -> ! {
    let fail = |step: Step, errno: i32| -> ! {
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&step.to_wire().to_ne_bytes());
        buf[4..].copy_from_slice(&errno.to_ne_bytes());
        write_all(err, &buf);
        // SAFETY: _exit.
        unsafe { libc::_exit(127) }
    };
    if let Err(e) = crate::cgroup::join_self(&plan.cgroup_procs) {
        fail(Step::JoinCgroup, e);
    }
    // A cgroup namespace rooted at the run's cgroup: /proc/self/cgroup shows `/`, not the
    // host's cgroup path (which names ioi-run's pid). Best effort: only information is at stake.
    // SAFETY: unshare of the calling process's cgroup namespace.
    unsafe { libc::unshare(libc::CLONE_NEWCGROUP) };
    if let Err(e) = rlimits::apply(&run.rlimits) {
        fail(Step::Rlimits, e);
    }
    // SAFETY: raw system calls on prepared values.
    unsafe {
        for (target, &fd) in fds.iter().enumerate() {
            if libc::dup2(fd, target as libc::c_int) < 0 {
                fail(Step::DupStdio, errno());
            }
        }
        if libc::chdir(run.cwd) != 0 {
            fail(Step::Chdir, errno());
        }
        // Raw system calls: the C library's wrappers synchronise every thread of the process,
        // and the keeper's other threads do not exist in this copy (they would never answer).
        if plan.clear_groups
            && libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) != 0
        {
            fail(Step::SetIds, errno());
        }
        if libc::syscall(libc::SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0
            || libc::syscall(libc::SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0
        {
            fail(Step::SetIds, errno());
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        // capset: empty effective, permitted and inheritable sets.
        let header = [0x2008_0522u32, 0]; // _LINUX_CAPABILITY_VERSION_3, this process
        let data = [0u32; 6];
        if libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) != 0 {
            fail(Step::DropCaps, errno());
        }
        // Everything but stdio closes on exec (including the error pipe).
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
    // The filter (and no_new_privs), its listener of `sysinfo` calls to the keeper.
    if let Err(e) = crate::sysinfo::install(plan.seccomp.program(), plan.sysinfo_socket) {
        fail(Step::Seccomp, e);
    }
    let mut last = libc::ENOENT;
    for &exe in &run.exe_candidates {
        // SAFETY: execve with NUL-terminated argv/envp arrays received and checked.
        unsafe { libc::execve(exe, run.argv.as_ptr(), run.envp.as_ptr()) };
        let e = errno();
        if e != libc::ENOENT && e != libc::ENOTDIR {
            last = e;
            if e != libc::EACCES {
                break;
            }
        }
    }
    fail(Step::Exec, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every report, with every step, comes back as it left the child; a number no step has is
    /// refused rather than misnamed.
    #[test]
    fn reports_cross_the_pipe_unchanged() {
        let steps = WIRE
            .iter()
            .copied()
            .chain([Step::Mount(0), Step::Mount(41)]);
        for step in steps {
            let report = Report::SetupFailed {
                step,
                errno: libc::EACCES,
            };
            assert_eq!(Report::decode(&report.encode()), Some(report), "{step:?}");
        }
        for report in [Report::Exited(3), Report::Signaled(libc::SIGSEGV)] {
            assert_eq!(Report::decode(&report.encode()), Some(report));
        }
        // Distinct steps have distinct wire numbers.
        let mut codes: Vec<u32> = WIRE.iter().map(|s| s.to_wire()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), WIRE.len());
        assert_eq!(Step::from_wire(0), None);
        assert_eq!(Step::from_wire(WIRE.len() as u32 + 1), None);
        let unknown = [2u8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        assert_eq!(Report::decode(&unknown), None);
    }
}
