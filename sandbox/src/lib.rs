//! Run one untrusted command in a fresh box under exact limits, and report what happened.
//!
//! # Theory of operation
//!
//! ```text
//! builder (a run's thread, or the         new user+pid+mount+ipc+uts namespaces, and a
//! housekeeper thread ahead of need)       network namespace of its own (pooled as root)
//! ──────────────────────────────          ─────────────────────────────────────────
//! cgroup (made ahead), uid lease
//! [enter a pooled network namespace]
//! [enter the mount template (as root)]
//! clone(CLONE_NEW*) ───────────────────▶  init (pid 1): waits for "go"
//! [back to its own network namespace]
//! write uid_map/gid_map, send "go"        builds the part every box has: a tmpfs root with
//!                                         ro binds of /usr, /lib*, /etc files, /dev (as
//!                                         root: the template's three folders, made once,
//!                                         see `mount_template`), /proc; then waits for its
//!                                         run
//! ── the run (keeper: the run's thread) ─────────────────────────────────────────────────
//! set the cgroup's limits [and the
//! init's CPU, see `affinity`]
//! send the run (a message on a pipe) ──▶  decodes it into room reserved before the clone;
//!                                         opens the standard streams (host files bound in,
//!                                         opened inside, unbound); mounts the box, the
//!                                         binds, /tmp, /dev/shm; pivot_root into the root,
//!                                         made read-only
//!                                         spawn ─▶ program (pid 2): joins the cgroup, sets
//!                                                  rlimits, drops to an unprivileged uid and
//!                                                  every capability, no_new_privs, seccomp
//!                                                  (its `sysinfo` listener sent to the
//!                                                  keeper), execve
//! poll: report pipe, wall clock,          init reaps orphans until the program exits, writes
//!       cgroup CPU time; answer the       its status on the report pipe and exits: the
//!       program's `sysinfo` calls         kernel then kills every process left in the pid
//! kill init on a limit                    namespace (its mounts stay: the keeper holds the
//! the cgroup empty after the report, or   mount namespace, torn down later with the
//! else waitpid(init): read the cgroup     cgroup's removal)
//! (CPU, peak memory, OOM kills),
//! classify → Outcome; the init's reaping
//! (when the report came first), the
//! mounts' teardown and the cgroup's
//! removal: housekeeper thread
//! ```
//!
//! Only the program and its descendants are in the cgroup, so CPU time and memory are the
//! program's own, all threads and children included. The init dies with the thread that cloned
//! it (`PR_SET_PDEATHSIG`; every init is cloned by a thread of its own that waits until the init
//! is reaped, so that no other thread writes the `errno` the init, sharing its memory, reads),
//! and with the init the whole pid namespace, so no process survives the caller,
//! even after a crash; mounts live in the box's private mount namespace and vanish
//! with it. Every box, with its memory cgroup, uid and init, serves one run only; boxes built
//! ahead and not used are discarded (see `housekeeper`). Memory cgroups are removed after
//! every run; on cgroup v1 the `cpuacct` and `pids` cgroups of a run whose tasks are all gone
//! are reset and serve a later run (see `cgroup`), and removed when the sandbox is idle. By
//! [`abort_all`] on an interrupt everything is removed, and stale cgroups of dead keepers are
//! removed when the next [`Sandbox`] starts.
//!
//! Between `clone` and `execve` the child only makes raw system calls on data prepared before
//! the clone, or received into room reserved before it (see `handover`): it shares the memory
//! of a multi-threaded caller and must not allocate. The init is cloned sharing the caller's
//! memory (`CLONE_VM`) on a stack of its own, its plan and stacks held until it is reaped (see
//! `keeper::InitMemory`); the program shares it too until it executes (posix_spawn's way). So
//! no page table is copied per box and the caller's pages are never made copy-on-write. (The
//! host's OOM killer, which kills every process of a memory it picks, would take the keeper
//! with an init: the boxes' own memory is in their cgroups, never in the init.)
//!
//! # The wall limit
//!
//! The wall limit charges only the time the box did not spend waiting for a CPU (see
//! `waiting`), so that a busy host does not stop CPU-bound programs; boxes of one
//! [`WaitGroup`] are credited while any of them waits. That credit can be earned by choice (a
//! program that lowers its priority waits almost all the time), so the elapsed time is bounded
//! too: [`WALL_STRETCH`] × the limit, whatever the credit. The priority calls are refused by
//! seccomp; the autogroup's nice (`/proc/self/autogroup`) is not a system call, so the keeper puts
//! it back at 0 for every process of the box at each poll (see `waiting`).
//!
//! # Channels between boxes
//!
//! Boxes that run at once (the user processes of a Communication test) must not exchange
//! information except through their pipes. Closed:
//! - processes: a pid namespace and session per box, a host uid per box (as root);
//! - IPC: SysV and POSIX IPC (an ipc namespace per box), abstract unix sockets (a network
//!   namespace per box, reused only once empty), keyrings (`keyctl` killed);
//! - files: a private tmpfs box, `/tmp` and `/dev/shm`; the shared system files are read-only
//!   binds (no access times), locks, leases, inotify and fanotify refused;
//! - host-wide counters a box can move and read: kernel aio (`io_setup` refused, io_uring
//!   killed), no host entry in the box's own `/proc`: it shows the box's processes only
//!   (`subset=pid`, Linux 5.8; on older kernels the host's entries are masked: `/proc/sys`
//!   with file-nr, inode-nr, aio-nr; meminfo, stat, loadavg, uptime, vmstat, pressure, locks,
//!   fs, keys, ...: see `mounts`), page-cache probes by `preadv2(RWF_NOWAIT)` refused (`mincore` and
//!   `cachestat` report a file's pages only to who may write it, on kernels since 5.2 and 6.10);
//! - `sysinfo` (host-wide free memory, task count, loads): refusing it would make programs
//!   behave at random (glibc uses its answer unchecked, `qsort` among others), so the keeper
//!   answers it instead, through a seccomp user notification, with values that depend on the
//!   run's limits only (see `sysinfo`).
//!
//! Open, and why:
//! - contention: a box that burns CPU, memory bandwidth or caches slows another, which can time
//!   it (the same goes for page faults on shared system files: a page another box read is found
//!   in the page cache sooner). Only separate machines or cores close these;
//! - counters the kernel shares by design: inode numbers of pipes and sockets come from one
//!   host-wide counter, and a box's own `/proc/<pid>/smaps` counts the other processes mapping
//!   the same shared library pages. Both move with everything else on the host; closing them
//!   would mean refusing pipes or hiding a process's own memory map.

#![warn(missing_docs)]

mod affinity;
mod cgroup;
mod child;
mod handover;
pub mod host;
mod housekeeper;
mod keeper;
mod mount_template;
mod mounts;
mod namespaces;
mod privilege;
mod rlimits;
mod seccomp;
mod sysinfo;
pub mod uids;
mod waiting;

use std::path::PathBuf;
use std::time::Duration;

pub use affinity::allowed_cpus;
pub use cgroup::{cgroups_of, CgroupVersion, SAMPLE_MEMORY_ENV};
pub use housekeeper::MAX_UNFINISHED;
pub use keeper::{abort_all, Sandbox, SandboxOptions};
pub use sysinfo::UNLIMITED_MEMORY;
pub use uids::UidRange;
pub use waiting::available as run_delay_available;

/// What to run, where, and under which limits.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// argv; `argv[0]` is a path inside the box, or a name looked up in `PATH` of `env`.
    pub argv: Vec<String>,
    /// The environment (cleared by default: nothing of the caller's leaks in).
    pub env: Vec<(String, String)>,
    /// What appears read-write at [`BOX_PATH`].
    pub box_dir: BoxSource,
    /// Working directory inside the box (default [`BOX_PATH`]).
    pub cwd: PathBuf,
    /// Extra bind mounts.
    pub binds: Vec<Bind>,
    /// The program's standard input (default: `/dev/null`).
    pub stdin: Stdio,
    /// The program's standard output (default: `/dev/null`).
    pub stdout: Stdio,
    /// The program's standard error (default: `/dev/null`).
    pub stderr: Stdio,
    /// CPU, wall, memory, process, output, file and stack limits.
    pub limits: Limits,
    /// Boxes that run together and wait on one another (a Communication test's manager and user
    /// processes) share this: while any of them waits for a CPU, none of them is charged wall
    /// time, since a peer blocked on a starved process is not idle by choice.
    pub wait_group: Option<std::sync::Arc<WaitGroup>>,
    /// A connection to whoever asked for the run (a keeper's client): when its peer hangs up,
    /// the run is stopped and its box killed, since nobody is left to take its outcome.
    pub caller: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// The one CPU the program and everything it starts run on (one of [`allowed_cpus`]), or
    /// `None` for wherever the host's scheduler puts them. Boxes that wake each other at every
    /// message (a Communication test) run on one CPU, where a wake-up costs a context switch
    /// rather than an interrupt between CPUs (see `affinity`). The program cannot change it.
    pub cpu: Option<usize>,
}

/// Boxes that run together (see [`RunSpec::wait_group`]): each box's wait clock samples the
/// tasks of every member, so an interval in which any member waited for a CPU is credited to
/// all, and an interval is credited once however many members waited in it.
#[derive(Debug, Default)]
pub struct WaitGroup(std::sync::Mutex<Vec<waiting::Init>>);

impl WaitGroup {
    /// A group with no member yet.
    pub fn new() -> std::sync::Arc<WaitGroup> {
        std::sync::Arc::new(WaitGroup::default())
    }

    /// Adds a box whose run starts now.
    pub(crate) fn join(&self, init: waiting::Init) {
        self.members().push(init);
    }

    /// Removes a box whose run has ended.
    pub(crate) fn leave(&self, init: waiting::Init) {
        self.members().retain(|&i| i != init);
    }

    /// The inits of the boxes running now.
    pub(crate) fn inits(&self) -> Vec<waiting::Init> {
        self.members().clone()
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<waiting::Init>> {
        // A member list is valid whatever a panicking holder did: pushes and retains are whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// However much of a run's wall clock is credited as waiting for a CPU (see `waiting`), the run
/// is stopped with [`Termination::WallTimeLimit`] once its elapsed time reaches this many times
/// its wall limit: a program that lowers its own priority (nice, its autogroup's nice,
/// `SCHED_IDLE`) waits for a CPU almost all the time at almost no CPU cost, and would otherwise
/// hold its box for as long as the host stays busy. A correct program under outside load is
/// not stopped by it unless it gets less than 1/3 of the share of a CPU its wall limit
/// allows (the judge's wall limit is 3 × the CPU limit + 1 s, so 1/9 of a core for a run that
/// needs its whole CPU limit).
pub const WALL_STRETCH: u32 = 3;

/// Where the box directory appears inside the sandbox.
pub const BOX_PATH: &str = "/box";

/// The lowest memory limit a run's cgroup gets; a lower one is raised to it. Between joining
/// its cgroup and `execve`, the program still shares the caller's memory (see the theory of
/// operation), and what the kernel allocates for it there (a page of its stack, the seccomp
/// filter, `execve`'s copy of its arguments) is charged to the cgroup. A limit that this
/// overflows makes the kernel's OOM killer pick the program, and the OOM killer kills every
/// process that shares the victim's memory: the caller itself (a limit of a few kilobytes and
/// a tiny time limit would kill `ioi-run serve`). At 4 MiB that part is a few percent of the
/// limit; and no program starts in less (`/bin/true` peaks at 0.2 MiB, a C++ program at 1).
/// Callers refuse lower limits where they come from.
pub const MIN_MEMORY_LIMIT: u64 = 4 << 20;

/// The box: a host directory, or a fresh tmpfs private to the run.
#[derive(Debug, Clone)]
pub enum BoxSource {
    /// A host directory, bound read-write (it must be writable by [`Sandbox::box_owner`]).
    Host(PathBuf),
    /// A tmpfs of at most this many bytes, owned by the program. Its content counts as the
    /// program's memory and vanishes with the run: nothing the program writes there can fill
    /// the host's disk or be met by the caller on the host (no planted symlinks or FIFOs).
    Tmpfs(u64),
}

impl RunSpec {
    /// A spec with the given argv in the host directory `box_dir`, stdio to /dev/null,
    /// default limits, and a `PATH`.
    pub fn new(
        box_dir: impl Into<PathBuf>,
        argv: impl IntoIterator<Item = impl Into<String>>,
    ) -> RunSpec {
        RunSpec::with_box(BoxSource::Host(box_dir.into()), argv)
    }

    /// Like [`RunSpec::new`], with a private tmpfs box of at most `size` bytes.
    pub fn in_tmpfs(size: u64, argv: impl IntoIterator<Item = impl Into<String>>) -> RunSpec {
        RunSpec::with_box(BoxSource::Tmpfs(size), argv)
    }

    fn with_box(box_dir: BoxSource, argv: impl IntoIterator<Item = impl Into<String>>) -> RunSpec {
        RunSpec {
            argv: argv.into_iter().map(Into::into).collect(),
            env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
            box_dir,
            cwd: PathBuf::from(BOX_PATH),
            binds: Vec::new(),
            stdin: Stdio::Null,
            stdout: Stdio::Null,
            stderr: Stdio::Null,
            limits: Limits::default(),
            wait_group: None,
            caller: None,
            cpu: None,
        }
    }
}

/// A host file or directory made visible inside the box.
#[derive(Debug, Clone)]
pub struct Bind {
    /// The host file or directory.
    pub host: PathBuf,
    /// Absolute path inside the sandbox.
    pub inside: PathBuf,
    /// Whether the box may write to it (read-only otherwise).
    pub writable: bool,
}

impl Bind {
    /// `host` visible read-only at `inside`.
    pub fn read_only(host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Bind {
        Bind {
            host: host.into(),
            inside: inside.into(),
            writable: false,
        }
    }

    /// `host` visible read-write at `inside`.
    pub fn writable(host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Bind {
        Bind {
            host: host.into(),
            inside: inside.into(),
            writable: true,
        }
    }
}

/// One standard stream of the program. Paths are host paths, opened by the sandbox before it
/// enters the new root (stdin first, then stdout, then stderr, so that FIFO pairs between two
/// sandboxes open without deadlock when the peer opens its write end first).
#[derive(Debug, Clone)]
pub enum Stdio {
    /// `/dev/null`.
    Null,
    /// Read from this file (stdin) or create/truncate it (stdout/stderr).
    Path(PathBuf),
    /// Append to this file (stdout/stderr).
    Append(PathBuf),
    /// Open this existing file or FIFO for writing without truncating it.
    Existing(PathBuf),
    /// An open file descriptor of the caller (e.g. a pipe end); it is duplicated.
    Fd(std::sync::Arc<std::os::fd::OwnedFd>),
}

/// Limits of one run. `None` means unlimited.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// CPU time (user+sys) of the program, all threads and descendants, from the cgroup.
    pub cpu_time: Option<Duration>,
    /// Wall-clock time from start to exit, not counting the time the box waited for a CPU;
    /// elapsed time is bounded by [`WALL_STRETCH`] × this limit whatever the credit.
    pub wall_time: Option<Duration>,
    /// Memory of the program and its descendants (cgroup, no swap), in bytes.
    pub memory: Option<u64>,
    /// Processes and threads (cgroup pids controller).
    pub processes: Option<u64>,
    /// Largest file the program may write, in bytes (RLIMIT_FSIZE).
    pub output_size: Option<u64>,
    /// Open file descriptors (RLIMIT_NOFILE).
    pub open_files: Option<u64>,
    /// Stack size (RLIMIT_STACK); unlimited by default, as at IOI.
    pub stack: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            cpu_time: None,
            wall_time: None,
            memory: None,
            processes: Some(256),
            output_size: None,
            open_files: Some(256),
            stack: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// Exited with code 0 within every limit.
    Ok,
    /// Exited with a non-zero code.
    RuntimeError,
    /// Killed by a signal not caused by a limit.
    Signaled,
    /// CPU time above the limit.
    TimeLimit,
    /// Still running at the wall-clock limit.
    WallTimeLimit,
    /// Killed by the out-of-memory killer of its cgroup.
    MemoryLimit,
    /// Wrote past the output file size limit.
    OutputLimit,
    /// The sandbox itself failed: not the program's fault.
    InternalError,
}

impl Termination {
    /// Every way a run ends.
    pub const ALL: [Termination; 8] = [
        Termination::Ok,
        Termination::RuntimeError,
        Termination::Signaled,
        Termination::TimeLimit,
        Termination::WallTimeLimit,
        Termination::MemoryLimit,
        Termination::OutputLimit,
        Termination::InternalError,
    ];

    /// Its name, as serialized (`time_limit`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::Ok => "ok",
            Termination::RuntimeError => "runtime_error",
            Termination::Signaled => "signaled",
            Termination::TimeLimit => "time_limit",
            Termination::WallTimeLimit => "wall_time_limit",
            Termination::MemoryLimit => "memory_limit",
            Termination::OutputLimit => "output_limit",
            Termination::InternalError => "internal_error",
        }
    }
}

/// What happened in one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// How the run ended.
    pub status: Termination,
    /// The program's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed the program, when one did (SIGKILL when a limit stopped it).
    pub signal: Option<i32>,
    /// CPU seconds (user+sys) of the program and its descendants.
    pub cpu_time: f64,
    /// Wall-clock seconds.
    pub wall_time: f64,
    /// Peak memory of the program and its descendants, in bytes.
    pub memory: u64,
    /// Human explanation (e.g. "killed by signal 11 (SIGSEGV)", or the internal error).
    pub message: String,
}

impl Outcome {
    /// An outcome for a sandbox failure (for callers that run sandboxes on threads).
    pub fn internal_error(message: impl Into<String>) -> Outcome {
        Outcome::internal(message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Outcome {
        Outcome {
            status: Termination::InternalError,
            exit_code: None,
            signal: None,
            cpu_time: 0.0,
            wall_time: 0.0,
            memory: 0,
            message: message.into(),
        }
    }
}

/// Name of a signal number, e.g. `SIGSEGV`.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

#[cfg(test)]
mod tests {
    use super::Termination;

    #[test]
    fn a_termination_is_named_as_it_is_serialized() {
        for termination in Termination::ALL {
            let json = serde_json::to_string(&termination).unwrap();
            assert_eq!(json, format!("\"{}\"", termination.as_str()));
        }
    }
}
