//! Reads a kernel trace of boxes (tracefs text, as `trace_pipe` prints it) into where their
//! kernel time went, phase by phase: the system calls that make and remove a box's cgroups,
//! namespaces and mounts, the exits of its processes, and the kernel's own work items that
//! finish a teardown. For each phase: how often it ran, its time on a CPU, asleep, waiting for a
//! CPU, and waiting for a contended lock (`lock:contention_begin`/`end`, sleeping or spinning).
//!
//! A hand-written reader: tracefs prints one line per event in a fixed layout, and no crate reads
//! it. This kernel has no function tracer nor kprobes, so a lock's holding time is not traced:
//! the phases that run under a machine-wide lock for most of their length (see
//! [`Phase::serialized`]) give its upper bound, their time on a CPU.

use std::collections::{BTreeMap, HashMap};

/// x86_64 system call numbers of the calls that make or remove a box.
mod nr {
    pub const WRITE: i64 = 1;
    pub const CLOSE: i64 = 3;
    pub const CLONE: i64 = 56;
    pub const MKDIR: i64 = 83;
    pub const RMDIR: i64 = 84;
    pub const PIVOT_ROOT: i64 = 155;
    pub const MOUNT: i64 = 165;
    pub const UMOUNT2: i64 = 166;
    pub const MKDIRAT: i64 = 258;
    pub const UNLINKAT: i64 = 263;
    pub const UNSHARE: i64 = 272;
    pub const SETNS: i64 = 308;
    pub const OPEN_TREE: i64 = 428;
    pub const MOVE_MOUNT: i64 = 429;
    pub const FSMOUNT: i64 = 432;
    pub const CLONE3: i64 = 435;
}

/// `CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
/// CLONE_NEWNET`.
const CLONE_NEW_ANY: u64 = 0x7E02_0000;
const CLONE_NEWNET: u64 = 0x4000_0000;

/// A part of a box's life in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// `mkdir` in a cgroup hierarchy (one per hierarchy on cgroup v1).
    CgroupCreate,
    /// A process joining a cgroup (a `write` to `tasks` or `cgroup.procs`).
    CgroupAttach,
    /// `rmdir` of a cgroup.
    CgroupRemove,
    /// `clone` with new namespaces (a box's init); `clone3` is counted here too, its flags
    /// being out of the trace's reach.
    NamespacesCreate,
    /// `unshare` of a network namespace (made for the pool, ahead or on a run's path when the
    /// pool is empty).
    NetnsCreate,
    /// Another `unshare` (the program's cgroup namespace).
    Unshare,
    /// `setns` (entering a pooled network namespace and back).
    Setns,
    /// `mount` and the new mount calls.
    Mount,
    /// `pivot_root`.
    PivotRoot,
    /// `umount2`.
    Unmount,
    /// `close`: every descriptor's, among them the keeper's last one of a box's mount
    /// namespace, whose close unmounts the box.
    Close,
    /// A process's exit, from `sched_process_exit` to its last switch (its namespaces, files and
    /// memory let go).
    Exit,
}

impl Phase {
    pub const ALL: [Phase; 12] = [
        Phase::CgroupCreate,
        Phase::CgroupAttach,
        Phase::CgroupRemove,
        Phase::NamespacesCreate,
        Phase::NetnsCreate,
        Phase::Unshare,
        Phase::Setns,
        Phase::Mount,
        Phase::PivotRoot,
        Phase::Unmount,
        Phase::Close,
        Phase::Exit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::CgroupCreate => "cgroup mkdir",
            Phase::CgroupAttach => "cgroup attach",
            Phase::CgroupRemove => "cgroup rmdir",
            Phase::NamespacesCreate => "clone (new namespaces)",
            Phase::NetnsCreate => "unshare (network)",
            Phase::Unshare => "unshare (other)",
            Phase::Setns => "setns",
            Phase::Mount => "mount",
            Phase::PivotRoot => "pivot_root",
            Phase::Unmount => "umount2",
            Phase::Close => "close",
            Phase::Exit => "process exit",
        }
    }

    /// The machine-wide lock the phase holds for most of its length, if any: its time on a CPU
    /// is then the upper bound of that lock's holding time. (`cgroup_mutex` is taken by
    /// `cgroup_mkdir`, `cgroup_rmdir` and an attach for their whole work; `namespace_sem` by
    /// copying a mount tree, grafting a bind mount, `pivot_root` and an unmount; creating a
    /// network namespace registers its loopback device under `rtnl_mutex`; the close of a mount
    /// namespace's last descriptor unmounts its tree under `namespace_sem`, a plain close takes
    /// a microsecond.) An exit's and a `setns`'s work is the task's own.
    pub fn serialized(self) -> Option<&'static str> {
        match self {
            Phase::CgroupCreate | Phase::CgroupAttach | Phase::CgroupRemove => Some("cgroup_mutex"),
            Phase::NamespacesCreate
            | Phase::Mount
            | Phase::PivotRoot
            | Phase::Unmount
            | Phase::Close => Some("namespace_sem"),
            Phase::NetnsCreate => Some("rtnl_mutex"),
            Phase::Unshare | Phase::Setns | Phase::Exit => None,
        }
    }
}

/// The kernel's work items that finish a box's teardown and run one at a time machine-wide,
/// with the lock or worker that serializes them: the network namespaces' cleanup (one ordered
/// worker), a cgroup's kill and release (`cgroup_mutex`), the IPC namespaces' release (one
/// work item for all).
pub const SERIAL_WORK: [(&str, &str); 4] = [
    ("cleanup_net", "netns cleanup worker"),
    ("css_killed_work_fn", "cgroup_mutex"),
    ("css_release_work_fn", "cgroup_mutex"),
    ("free_ipc", "one work item"),
];

/// Where a phase's (or a work item's) time went, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Account {
    pub count: u64,
    pub on_cpu: u64,
    pub asleep: u64,
    pub runnable: u64,
    /// Waiting for a contended sleeping lock (mutex, rwsem).
    pub lock_sleep: u64,
    /// Spinning on a contended lock.
    pub lock_spin: u64,
    /// Of both, on locks at a static address in the kernel's image: the machine-wide ones
    /// (`cgroup_mutex`, `namespace_sem`, `rtnl_mutex`, ...), where a process's or an object's
    /// own lock (a run queue's, a memory map's, an inode's) is allocated.
    pub global_lock: u64,
}

impl Account {
    fn add(&mut self, other: &Account) {
        self.count += other.count;
        self.on_cpu += other.on_cpu;
        self.asleep += other.asleep;
        self.runnable += other.runnable;
        self.lock_sleep += other.lock_sleep;
        self.lock_spin += other.lock_spin;
        self.global_lock += other.global_lock;
    }
}

/// The waits on one machine-wide lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GlobalLock {
    /// The first function of the first wait's stack that is not a locking primitive.
    pub taker: Option<String>,
    pub waits: u64,
    pub waited: u64,
    /// Waited in each phase (by name; "-" outside the phases).
    pub by_phase: BTreeMap<&'static str, u64>,
}

/// Kernel images are mapped from here up (x86_64); allocated objects live below.
const KERNEL_IMAGE: u64 = 0xffff_ffff_8000_0000;

/// Whether a stack frame is a locking primitive or the tracing itself, not who takes a lock.
fn primitive(frame: &str) -> bool {
    const PREFIXES: [&str; 14] = [
        "trace_event_raw_event_",
        "__pv_queued_spin_lock",
        "native_queued_spin_lock",
        "queued_spin_lock",
        "_raw_spin_lock",
        "do_raw_spin_lock",
        "__mutex_lock",
        "mutex_lock",
        "rwsem_down_",
        "down_read",
        "down_write",
        "percpu_down_",
        "__percpu_down_",
        "osq_lock",
    ];
    PREFIXES.iter().any(|p| frame.starts_with(p))
}

/// A trace read: the phases of the traced tasks, their lock waits outside any phase, and the
/// kernel's work items by function.
#[derive(Debug, Clone, Default)]
pub struct BoxTrace {
    pub phases: BTreeMap<Phase, Account>,
    /// Lock waits of traced tasks in none of the phases (in their user code's system calls,
    /// or in the work a closed file leaves to the return from `close`).
    pub outside: Account,
    /// Work items by function: count, time on a CPU, and off it (`asleep`: waiting, runnable or
    /// not; a worker that batches, as `free_ipc` does for one RCU grace period, sleeps most).
    pub work: BTreeMap<String, Account>,
    /// Waits on each machine-wide lock (by address), with the function that took it.
    pub global_locks: BTreeMap<u64, GlobalLock>,
    /// `cgroup:cgroup_mkdir` events seen (every hierarchy).
    pub cgroup_mkdirs: u64,
    /// The first and last timestamps, in nanoseconds.
    pub span: Option<(u64, u64)>,
    /// Events read.
    pub events: u64,
    /// Lines that looked like events but could not be read.
    pub unreadable: u64,
    /// Events the kernel dropped, its buffer full (`CPU:1 [LOST 12 EVENTS]`).
    pub lost: u64,
}

impl BoxTrace {
    /// The on-CPU time of the phases and work items that run one at a time machine-wide, per
    /// box: the serialized part's upper bound, by lock.
    pub fn serialized_per_box(&self, boxes: u64, work_share: f64) -> BTreeMap<&'static str, f64> {
        let mut by_lock = BTreeMap::new();
        let boxes = boxes.max(1) as f64;
        for (phase, account) in &self.phases {
            if let Some(lock) = phase.serialized() {
                *by_lock.entry(lock).or_insert(0.0) += account.on_cpu as f64 / boxes;
            }
        }
        for (function, lock) in SERIAL_WORK {
            if let Some(account) = self.work.get(function) {
                *by_lock.entry(lock).or_insert(0.0) += account.on_cpu as f64 * work_share / boxes;
            }
        }
        by_lock
    }

    /// Every traced task's lock waits, sleeping and spinning, in and out of the phases.
    pub fn lock_waits(&self) -> Account {
        let mut all = self.outside;
        for account in self.phases.values() {
            all.add(account);
        }
        all
    }
}

/// One event line.
#[derive(Debug, PartialEq)]
struct Line<'a> {
    pid: i32,
    ts: u64,
    event: &'a str,
    body: &'a str,
}

/// Splits `  comm-123   [001] d..2. 4567.000123: event: body` (comm may hold spaces and
/// dashes; a column of tgids may follow the pid).
fn split_line(line: &str) -> Option<Line<'_>> {
    let open = line.find(" [")?;
    let (task, rest) = line.split_at(open);
    let pid = task.rsplit_once('-')?.1.trim().parse().ok()?;
    let rest = &rest[rest.find(']')? + 1..];
    // Flags, then the time (padded with spaces to a column on some kernels), then the event.
    let (_flags, rest) = rest.trim_start().split_once(' ')?;
    let (ts, rest) = rest.trim_start().split_once(' ')?;
    let ts = ts.strip_suffix(':')?;
    let (event, body) = match rest.trim() {
        "<stack trace>" => ("<stack trace>", ""),
        _ => rest.split_once(':')?,
    };
    let (secs, frac) = ts.split_once('.')?;
    let frac_ns: u64 = format!("{frac:0<9}").get(..9)?.parse().ok()?;
    let ts = secs.parse::<u64>().ok()? * 1_000_000_000 + frac_ns;
    Some(Line {
        pid,
        ts,
        event,
        body: body.trim(),
    })
}

/// The count of a `CPU:1 [LOST 12 EVENTS]` line.
fn lost_events(line: &str) -> Option<u64> {
    let rest = line.trim_start().strip_prefix("CPU:")?;
    rest.split_once("[LOST ")?.1.split_once(' ')?.0.parse().ok()
}

/// The value of `key=` in a body of `key=value` words.
fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    body.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

/// What an open system call will count as, once its end shows what it did.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Phase(Phase),
    /// A `mkdir`: a cgroup's if `cgroup_mkdir` fires inside it.
    Mkdir,
    /// An `rmdir`: a cgroup's if `cgroup_rmdir` fires inside it.
    Rmdir,
    /// A `write`: an attach if `cgroup_attach_task` fires inside it.
    Write,
}

impl Pending {
    fn name(self) -> &'static str {
        match self {
            Pending::Phase(phase) => phase.name(),
            Pending::Mkdir => "mkdir",
            Pending::Rmdir => "rmdir",
            Pending::Write => "write",
        }
    }
}

#[derive(Debug)]
struct Open {
    pending: Pending,
    account: Account,
    /// Since when the task has been on a CPU in this phase.
    on_since: Option<u64>,
}

/// A work item running on a kernel worker.
#[derive(Debug)]
struct Working {
    function: String,
    since: u64,
    on_since: Option<u64>,
    on_cpu: u64,
}

#[derive(Debug, Default)]
struct Task {
    open: Option<Open>,
    /// Switched out at, and whether asleep (not runnable).
    off_since: Option<(u64, bool)>,
    /// A contended lock waited on since, whether spinning, and its address.
    contended_since: Option<(u64, bool, u64)>,
}

fn pending_of(nr: i64, args: &[u64]) -> Option<Pending> {
    let first = args.first().copied().unwrap_or(0);
    Some(match nr {
        nr::MKDIR | nr::MKDIRAT => Pending::Mkdir,
        nr::RMDIR => Pending::Rmdir,
        nr::UNLINKAT if args.get(2).is_some_and(|flags| flags & 0x200 != 0) => Pending::Rmdir,
        nr::WRITE => Pending::Write,
        nr::CLONE if first & CLONE_NEW_ANY != 0 => Pending::Phase(Phase::NamespacesCreate),
        nr::CLONE3 => Pending::Phase(Phase::NamespacesCreate),
        nr::UNSHARE if first & CLONE_NEWNET != 0 => Pending::Phase(Phase::NetnsCreate),
        nr::UNSHARE => Pending::Phase(Phase::Unshare),
        nr::SETNS => Pending::Phase(Phase::Setns),
        nr::MOUNT | nr::OPEN_TREE | nr::MOVE_MOUNT | nr::FSMOUNT => Pending::Phase(Phase::Mount),
        nr::PIVOT_ROOT => Pending::Phase(Phase::PivotRoot),
        nr::UMOUNT2 => Pending::Phase(Phase::Unmount),
        nr::CLOSE => Pending::Phase(Phase::Close),
        _ => return None,
    })
}

/// `NR 83 (7ffd1, 1ed, 0, 0, 0, 0)` → (83, [0x7ffd1, 0x1ed, ...]).
fn syscall_enter(body: &str) -> Option<(i64, Vec<u64>)> {
    let (nr, args) = body.strip_prefix("NR ")?.split_once(' ')?;
    let args = args
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(", ")
        .map(|a| u64::from_str_radix(a.trim(), 16).unwrap_or(0))
        .collect();
    Some((nr.parse().ok()?, args))
}

/// Reads the traces of boxes: `traced` holds the events of the boxes' tasks (system calls,
/// switches, exits, lock contention, cgroup events), `work` the machine's work items
/// (`workqueue_execute_start`/`end`); either may hold both.
pub fn read(traced: &str) -> BoxTrace {
    let mut trace = BoxTrace::default();
    let mut tasks: HashMap<i32, Task> = HashMap::new();
    let mut working: HashMap<i32, Working> = HashMap::new();
    // The machine-wide lock whose contention's stack follows (`stacktrace` trigger).
    let mut stack: Option<(i32, u64)> = None;
    for raw in traced.lines() {
        if raw.starts_with('#') || raw.trim().is_empty() {
            continue;
        }
        if let Some(frame) = raw.trim_start().strip_prefix("=> ") {
            if let Some((_, address)) = stack {
                let function = frame.split('+').next().unwrap_or(frame).trim();
                let lock = trace.global_locks.entry(address).or_default();
                if lock.taker.is_none() && !primitive(function) {
                    lock.taker = Some(function.to_string());
                }
            }
            continue;
        }
        if let Some(lost) = lost_events(raw) {
            trace.lost += lost;
            continue;
        }
        let Some(line) = split_line(raw) else {
            trace.unreadable += 1;
            continue;
        };
        trace.events += 1;
        trace.span = Some(match trace.span {
            None => (line.ts, line.ts),
            Some((first, _)) => (first, line.ts),
        });
        if !event(&mut trace, &mut tasks, &mut working, &mut stack, &line) {
            trace.unreadable += 1;
        }
    }
    // Exits end with their last switch: what is still open is an exit whose task is gone.
    for task in tasks.into_values() {
        if let Some(Open {
            pending: Pending::Phase(phase @ Phase::Exit),
            account,
            ..
        }) = task.open
        {
            trace.phases.entry(phase).or_default().add(&account);
        }
    }
    trace
}

/// Applies one event; false if its body could not be read.
fn event(
    trace: &mut BoxTrace,
    tasks: &mut HashMap<i32, Task>,
    working: &mut HashMap<i32, Working>,
    stack: &mut Option<(i32, u64)>,
    line: &Line,
) -> bool {
    let ts = line.ts;
    match line.event {
        "sys_enter" => {
            let Some((nr, args)) = syscall_enter(line.body) else {
                return false;
            };
            let task = tasks.entry(line.pid).or_default();
            task.open = pending_of(nr, &args).map(|pending| Open {
                pending,
                account: Account {
                    count: 1,
                    ..Account::default()
                },
                on_since: Some(ts),
            });
        }
        "sys_exit" => {
            let Some(task) = tasks.get_mut(&line.pid) else {
                return true;
            };
            if let Some(mut open) = task.open.take() {
                if let Some(since) = open.on_since {
                    open.account.on_cpu += ts.saturating_sub(since);
                }
                if let Pending::Phase(phase) = open.pending {
                    trace.phases.entry(phase).or_default().add(&open.account);
                } else {
                    // A folder's mkdir or rmdir, or a plain write: its lock waits are still
                    // the task's.
                    trace.outside.lock_sleep += open.account.lock_sleep;
                    trace.outside.lock_spin += open.account.lock_spin;
                }
            }
        }
        "sched_process_exit" => {
            let task = tasks.entry(line.pid).or_default();
            task.open = Some(Open {
                pending: Pending::Phase(Phase::Exit),
                account: Account {
                    count: 1,
                    ..Account::default()
                },
                on_since: Some(ts),
            });
        }
        "sched_switch" => {
            let (Some(prev), Some(state), Some(next)) = (
                field(line.body, "prev_pid").and_then(|p| p.parse::<i32>().ok()),
                field(line.body, "prev_state"),
                field(line.body, "next_pid").and_then(|p| p.parse::<i32>().ok()),
            ) else {
                return false;
            };
            let asleep = !state.starts_with('R');
            if let Some(work) = working.get_mut(&prev) {
                if let Some(since) = work.on_since.take() {
                    work.on_cpu += ts.saturating_sub(since);
                }
            }
            if let Some(work) = working.get_mut(&next) {
                work.on_since = Some(ts);
            }
            if let Some(task) = tasks.get_mut(&prev) {
                task.off_since = Some((ts, asleep));
                if let Some(open) = &mut task.open {
                    if let Some(since) = open.on_since.take() {
                        open.account.on_cpu += ts.saturating_sub(since);
                    }
                }
            }
            let task = tasks.entry(next).or_default();
            if let (Some((off, asleep)), Some(open)) = (task.off_since.take(), &mut task.open) {
                let away = ts.saturating_sub(off);
                if asleep {
                    open.account.asleep += away;
                } else {
                    open.account.runnable += away;
                }
                open.on_since = Some(ts);
            } else if let Some(open) = &mut task.open {
                open.on_since = Some(ts);
            }
        }
        "contention_begin" => {
            let spin = line.body.contains("SPIN");
            let Some(address) = line
                .body
                .split_whitespace()
                .next()
                .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            else {
                return false;
            };
            tasks.entry(line.pid).or_default().contended_since = Some((ts, spin, address));
            *stack = (address >= KERNEL_IMAGE).then_some((line.pid, address));
        }
        "<stack trace>" if stack.is_some_and(|(pid, _)| pid != line.pid) => *stack = None,
        "contention_end" => {
            let Some(task) = tasks.get_mut(&line.pid) else {
                return true;
            };
            if let Some((since, spin, address)) = task.contended_since.take() {
                let waited = ts.saturating_sub(since);
                let (account, phase) = match &mut task.open {
                    Some(open) => (&mut open.account, open.pending.name()),
                    None => (&mut trace.outside, "-"),
                };
                if spin {
                    account.lock_spin += waited;
                } else {
                    account.lock_sleep += waited;
                }
                if address >= KERNEL_IMAGE {
                    account.global_lock += waited;
                    let lock = trace.global_locks.entry(address).or_default();
                    lock.waits += 1;
                    lock.waited += waited;
                    *lock.by_phase.entry(phase).or_default() += waited;
                }
            }
        }
        "cgroup_mkdir" | "cgroup_rmdir" | "cgroup_attach_task" => {
            if line.event == "cgroup_mkdir" {
                trace.cgroup_mkdirs += 1;
            }
            if let Some(open) = tasks.get_mut(&line.pid).and_then(|t| t.open.as_mut()) {
                open.pending = match (open.pending, line.event) {
                    (Pending::Mkdir, "cgroup_mkdir") => Pending::Phase(Phase::CgroupCreate),
                    (Pending::Rmdir, "cgroup_rmdir") => Pending::Phase(Phase::CgroupRemove),
                    (Pending::Write, "cgroup_attach_task") => Pending::Phase(Phase::CgroupAttach),
                    (pending, _) => pending,
                };
            }
        }
        "workqueue_execute_start" => {
            let Some((_, function)) = line.body.rsplit_once("function ") else {
                return false;
            };
            working.insert(
                line.pid,
                Working {
                    function: function.trim().to_string(),
                    since: ts,
                    on_since: Some(ts),
                    on_cpu: 0,
                },
            );
        }
        "workqueue_execute_end" => {
            if let Some(mut work) = working.remove(&line.pid) {
                if let Some(since) = work.on_since {
                    work.on_cpu += ts.saturating_sub(since);
                }
                let account = trace.work.entry(work.function).or_default();
                account.count += 1;
                account.on_cpu += work.on_cpu;
                account.asleep += ts.saturating_sub(work.since).saturating_sub(work.on_cpu);
            }
        }
        _ => {}
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One box in the layout this kernel prints: its cgroup made (a mkdir that contends once),
    /// a folder's mkdir, the init cloned into new namespaces, two mounts, pivot_root and an
    /// unmount that sleeps and is preempted, a network namespace made for the pool, the
    /// program's cgroup namespace and its joining the cgroup, the exits, the cgroup removed,
    /// and the kernel's work on the teardown.
    const SAMPLE: &str = include_str!("box_trace_sample.txt");

    #[test]
    fn a_line_splits_into_pid_time_event_and_body() {
        let line =
            split_line("     ioi-run box-7-4242    [001] d..2. 14664.999896: sys_exit: NR 1 = 2")
                .unwrap();
        assert_eq!(
            line,
            Line {
                pid: 4242,
                ts: 14_664_999_896_000,
                event: "sys_exit",
                body: "NR 1 = 2"
            }
        );
        // Linux 6.1 pads the time to a column.
        let padded = split_line(
            "         ioi-run-146     [000] .....    14.696170: sys_enter: NR 3 (1c, 0, 0, 1b6, 0, 0)",
        )
        .unwrap();
        assert_eq!((padded.pid, padded.ts), (146, 14_696_170_000));
        assert_eq!(
            (padded.event, padded.body),
            ("sys_enter", "NR 3 (1c, 0, 0, 1b6, 0, 0)")
        );
        assert!(split_line("garbage without a cpu").is_none());
        assert_eq!(lost_events("CPU:1 [LOST 12 EVENTS]"), Some(12));
    }

    #[test]
    fn the_sample_box_has_each_phase_once_with_its_times() {
        let trace = read(SAMPLE);
        assert_eq!((trace.events, trace.unreadable, trace.lost), (52, 0, 0));
        let phase = |p: Phase| trace.phases.get(&p).copied().unwrap_or_default();
        let create = phase(Phase::CgroupCreate);
        assert_eq!(create.count, 1);
        // On a CPU 100 µs, then asleep on the contended mutex 50 µs, then 20 µs more.
        assert_eq!(create.on_cpu, 120_000);
        assert_eq!(create.asleep, 50_000);
        assert_eq!(create.lock_sleep, 50_000);
        assert_eq!(phase(Phase::NamespacesCreate).count, 1);
        assert_eq!(phase(Phase::NamespacesCreate).on_cpu, 300_000);
        assert_eq!(phase(Phase::Mount).count, 2);
        assert_eq!(phase(Phase::PivotRoot).count, 1);
        let unmount = phase(Phase::Unmount);
        // Asleep 2 ms (an RCU grace period: no lock contended), runnable 0.1 ms.
        assert_eq!((unmount.on_cpu, unmount.asleep), (40_000, 2_000_000));
        assert_eq!(unmount.runnable, 100_000);
        assert_eq!(unmount.lock_sleep, 0);
        assert_eq!(phase(Phase::CgroupAttach).count, 1);
        assert_eq!(phase(Phase::CgroupRemove).on_cpu, 80_000);
        // Two exits (the program and the init), each until its last switch.
        let exit = phase(Phase::Exit);
        assert_eq!((exit.count, exit.on_cpu), (2, 150_000));
        assert_eq!(exit.lock_spin, 5_000);
        // A network namespace made for the pool, and the program's cgroup namespace.
        assert_eq!(phase(Phase::NetnsCreate).on_cpu, 400_000);
        assert_eq!(phase(Phase::Unshare).on_cpu, 5_000);
        // The plain writes and the folder's mkdir are no phase.
        assert_eq!(trace.phases.len(), 10);
        assert_eq!(trace.outside.lock_sleep, 10_000);
        assert_eq!(trace.cgroup_mkdirs, 1);
        // cleanup_net: 1.5 ms, of which 1.2 ms asleep (a grace period).
        let cleanup = trace.work["cleanup_net"];
        assert_eq!((cleanup.on_cpu, cleanup.asleep), (300_000, 1_200_000));
        assert_eq!(trace.work["css_release_work_fn"].count, 1);
    }

    #[test]
    fn the_serialized_part_sums_the_locked_phases_and_the_serial_work() {
        let trace = read(SAMPLE);
        let by_lock = trace.serialized_per_box(1, 0.5);
        // cgroup_mutex: mkdir 0.12 + attach 0.03 + rmdir 0.08 + half of 0.2 ms of release.
        assert!(
            (ms_of(&by_lock, "cgroup_mutex") - 0.33).abs() < 1e-9,
            "{by_lock:?}"
        );
        // namespace_sem: clone 0.3 + mounts 0.05 + pivot_root 0.02 + umount 0.04.
        assert!(
            (ms_of(&by_lock, "namespace_sem") - 0.41).abs() < 1e-9,
            "{by_lock:?}"
        );
        // rtnl_mutex: the network namespace made, 0.4 ms; not the cgroup namespace.
        assert!(
            (ms_of(&by_lock, "rtnl_mutex") - 0.4).abs() < 1e-9,
            "{by_lock:?}"
        );
        // The netns cleanup worker: half of its 0.3 ms on a CPU.
        assert!((ms_of(&by_lock, "netns cleanup worker") - 0.15).abs() < 1e-9);
        assert_eq!(trace.lock_waits().lock_sleep, 60_000);
        assert_eq!(trace.lock_waits().lock_spin, 5_000);
        // Machine-wide (static) locks: the cgroup mkdir's mutex and the exit's spinlock; the
        // folder's lock is an inode's.
        assert_eq!(trace.lock_waits().global_lock, 55_000);
        let cgroup_mutex = &trace.global_locks[&0xffff_ffff_83a0_b0c0];
        assert_eq!(cgroup_mutex.taker.as_deref(), Some("cgroup_kn_lock_live"));
        assert_eq!((cgroup_mutex.waits, cgroup_mutex.waited), (1, 50_000));
        assert_eq!(
            cgroup_mutex.by_phase,
            BTreeMap::from([("cgroup mkdir", 50_000)])
        );
        let exit_lock = &trace.global_locks[&0xffff_ffff_83a0_e000];
        assert_eq!(exit_lock.taker.as_deref(), Some("exit_notify"));
        assert_eq!(
            exit_lock.by_phase,
            BTreeMap::from([("process exit", 5_000)])
        );
        assert_eq!(trace.global_locks.len(), 2);
    }

    /// A lock's figure in milliseconds.
    fn ms_of(by_lock: &BTreeMap<&str, f64>, lock: &str) -> f64 {
        by_lock[lock] / 1e6
    }
}
