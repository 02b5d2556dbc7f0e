//! One cgroup per run: memory limit without swap, pids limit, CPU accounting, peak memory and
//! OOM-kill detection, on cgroup v1 (separate `memory`, `cpuacct`, `pids` hierarchies) or v2
//! (one unified directory).
//!
//! On cgroup v1 a box's CPU time and processes are counted in hierarchies of their own
//! (`cpuacct`, `pids`), whose cgroups hold no state of a run once it is over: their tasks are
//! gone, and the CPU counter and the limit are written again. Those two are reused by later
//! runs ([`Accounting`]): making and removing a cgroup is serialized machine-wide
//! (`cgroup_mutex`), three times a box on v1, once with reuse. The `memory` cgroup is always
//! new: pages a run left cached (its files in a host folder, the kernel's objects for its
//! lookups) stay charged to the cgroup after its processes are gone, and would count against
//! the next run's limit and peak. On v2 the three are one directory, made for each run.
//!
//! cgroups-rs finds the hierarchies. A run's limits and counters are written and read by hand,
//! through descriptors opened when the cgroup is made (ahead of the run, off its path): the
//! crate opens, writes or reads, and closes a file at every call (three to six system calls,
//! the open a path walk through the cgroup file system), and offers statistics only as full
//! snapshots of a dozen files, while these are on every run's path: each limit is one `write`,
//! each counter one `pread` (the CPU counter many times per run). The directories are explicit,
//! so a fake cgroupfs in a temporary folder exercises the same code.
//!
//! Run cgroups are named `<pid namespace>-<keeper pid>-<n>` under an `ioi-run` directory, so
//! stale ones left by a killed keeper are recognised and removed by the next one. A keeper
//! judges only the names of its own pid namespace: a pid means nothing in another one, and an
//! ioi-run in a container that shares the host's cgroups must not take the host keeper's
//! cgroups for stale (nor the other way round).

use std::fs::{self, File, OpenOptions};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// Which cgroup hierarchy the host offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CgroupVersion {
    /// Separate `memory`, `cpuacct` and `pids` hierarchies.
    V1,
    /// The unified hierarchy.
    V2,
}

/// Where run cgroups are created.
#[derive(Debug, Clone)]
pub(crate) enum CgroupRoot {
    /// Parent directories (`.../ioi-run`) in the memory, cpuacct and pids hierarchies.
    V1 {
        memory: PathBuf,
        cpuacct: PathBuf,
        pids: PathBuf,
    },
    /// Parent directory in the unified hierarchy, with memory and pids enabled for children.
    V2 { base: PathBuf },
}

const GROUP_DIR: &str = "ioi-run";
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A v1 run's `cpuacct` and `pids` cgroups, empty and reset, waiting for the next run.
#[derive(Debug)]
struct Accounting {
    cpuacct: PathBuf,
    pids: PathBuf,
}

/// The [`Accounting`] pairs of finished runs: the process's, whatever sandbox made them (a
/// process has one cgroup root). At most as many as runs were at once; given back when the
/// sandbox is idle ([`remove_reusable`]).
static REUSABLE: std::sync::Mutex<Vec<Accounting>> = std::sync::Mutex::new(Vec::new());

/// How many runs took a reused [`Accounting`] pair.
static REUSED: AtomicU64 = AtomicU64::new(0);

/// How many runs of this process have taken `cpuacct` and `pids` cgroups a finished run left
/// (cgroup v1; none on v2).
pub(crate) fn reused() -> u64 {
    REUSED.load(Ordering::Relaxed)
}

/// Removes the reusable cgroups (an idle sandbox, an interrupt, the process's exit).
pub(crate) fn remove_reusable() {
    let pairs: Vec<Accounting> = match REUSABLE.lock() {
        Ok(mut pool) => pool.drain(..).collect(),
        Err(_) => return,
    };
    for pair in pairs {
        remove_killing_members(&pair.cpuacct);
        remove_killing_members(&pair.pids);
    }
}

/// Whether a finished run's `cpuacct` and `pids` cgroups may serve another run: no task left
/// in either (`pids.current` 0, `tasks` of `cpuacct` empty). Their counters are then final,
/// and nothing of the run can act on them any more.
fn reusable(pids_current: &str, cpuacct_tasks: &str) -> bool {
    pids_current.trim() == "0" && cpuacct_tasks.trim().is_empty()
}

/// The inode of this process's pid namespace: the part of a run cgroup's name that says whose
/// pids its keeper pid is counted in.
pub(crate) fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    static NS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *NS.get_or_init(|| fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino()))
}

/// The name of this process's run cgroup number `n`.
fn run_name(n: u64) -> String {
    format!("{}-{}-{n}", pid_namespace(), std::process::id())
}

/// The keeper pid of a run cgroup's name, when that keeper lives in this pid namespace.
fn keeper_of(name: &str) -> Option<i32> {
    let mut parts = name.split('-');
    let ns = parts.next()?.parse::<u64>().ok()?;
    let pid = parts.next()?.parse::<i32>().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    (ns == pid_namespace() && parts.next().is_none()).then_some(pid)
}

/// What to do when this process cannot create cgroups under `version`'s hierarchy.
fn cannot_create_hint(
    version: CgroupVersion,
    privilege: crate::privilege::Privilege,
) -> &'static str {
    use crate::privilege::Privilege;
    match (privilege, version) {
        (Privilege::RootWithoutSysAdmin, _) => crate::privilege::NEEDS_SYS_ADMIN,
        (Privilege::Root, _) => {
            "the cgroup filesystem is read-only to this root process (a container's \
             /sys/fs/cgroup): start the container through the image's entrypoint with \
             --cap-add SYS_ADMIN, which makes its own cgroup writable (docs/container.md)"
        }
        (Privilege::User, CgroupVersion::V1) => {
            "with cgroup v1 only root may create cgroups: run ioi-run as root (sudo), or use a \
             cgroup v2 host, where a normal user can use a delegated subtree"
        }
        (Privilege::User, CgroupVersion::V2) => {
            "run ioi-run as root (sudo), or in a delegated cgroup v2 subtree \
             (`systemd-run --user --scope -p Delegate=yes ioi-run ...`)"
        }
    }
}

impl CgroupRoot {
    pub(crate) fn version(&self) -> CgroupVersion {
        match self {
            CgroupRoot::V1 { .. } => CgroupVersion::V1,
            CgroupRoot::V2 { .. } => CgroupVersion::V2,
        }
    }

    /// Finds the host's cgroups: v2 when `/sys/fs/cgroup` is unified, else v1 with the memory,
    /// cpuacct and pids controllers mounted.
    pub(crate) fn detect() -> Result<CgroupRoot> {
        if cgroups_rs::fs::hierarchies::is_cgroup2_unified_mode() {
            return Self::v2_for_this_process(Path::new(
                cgroups_rs::fs::hierarchies::UNIFIED_MOUNTPOINT,
            ));
        }
        let v1 = cgroups_rs::fs::hierarchies::V1::new();
        let mount = |c| {
            v1.get_mount_point(c)
                .map(|(point, _)| point.join(GROUP_DIR))
        };
        use cgroups_rs::fs::Controllers;
        match (mount(Controllers::Mem), mount(Controllers::CpuAcct), mount(Controllers::Pids)) {
            (Some(memory), Some(cpuacct), Some(pids)) => Ok(CgroupRoot::V1 { memory, cpuacct, pids }),
            _ => bail!(
                "cgroup v1 is mounted but the memory, cpuacct and pids controllers are not all \
                 available; enable them (or boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2)"
            ),
        }
    }

    /// The v2 parent for run cgroups: `<mount>/ioi-run` as root; as another user, the
    /// delegated cgroup this process lives in. The parent's parent must enable the memory and
    /// pids controllers for its children, which the kernel refuses (EBUSY) while it holds
    /// processes ("no internal processes", every cgroup but the host's root): when this process
    /// is its only member it moves itself into a leaf of its own first, as container
    /// entrypoints that nest cgroups do; other processes it does not own are named in the
    /// error, with the fix.
    fn v2_for_this_process(mount: &Path) -> Result<CgroupRoot> {
        let own_dir = own_v2_cgroup(mount)?;
        let root = nix::unistd::geteuid().is_root();
        let parent = if root { mount.to_path_buf() } else { own_dir };
        ensure_v2_controllers(&parent, root)?;
        Ok(CgroupRoot::V2 {
            base: parent.join(GROUP_DIR),
        })
    }

    fn parents(&self) -> Vec<&Path> {
        match self {
            CgroupRoot::V1 {
                memory,
                cpuacct,
                pids,
            } => vec![memory, cpuacct, pids],
            CgroupRoot::V2 { base } => vec![base],
        }
    }

    /// Whether this process may create the `ioi-run` parent directories (or they exist and it
    /// may create run cgroups in them), without creating anything: `doctor`'s check. The error
    /// says what to do.
    pub(crate) fn check_writable(&self) -> Result<()> {
        for parent in self.parents() {
            let existing = parent
                .ancestors()
                .find(|dir| dir.exists())
                .unwrap_or(parent);
            if let Err(e) = nix::unistd::access(existing, nix::unistd::AccessFlags::W_OK) {
                bail!(
                    "cannot create cgroups in {} ({e}): {}",
                    existing.display(),
                    cannot_create_hint(self.version(), crate::privilege::Privilege::current())
                );
            }
        }
        Ok(())
    }

    /// Creates the `ioi-run` parent directories and removes run cgroups of keepers that died.
    pub(crate) fn prepare(&self) -> Result<()> {
        for parent in self.parents() {
            if let Err(e) = fs::create_dir_all(parent) {
                let hint =
                    cannot_create_hint(self.version(), crate::privilege::Privilege::current());
                bail!("cannot create cgroup {} ({e}): {hint}", parent.display());
            }
        }
        if let CgroupRoot::V2 { base } = self {
            enable_v2_controllers(base)?;
        }
        self.remove_stale();
        Ok(())
    }

    fn remove_stale(&self) {
        for parent in self.parents() {
            let Ok(entries) = fs::read_dir(parent) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(pid) = keeper_of(&name) else {
                    continue;
                };
                let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
                // Its processes die with it, but a moment later: a cgroup is removed only once
                // empty, and a server restarted at once would otherwise leave it for the next.
                if !alive {
                    remove_killing_members(&entry.path());
                }
            }
        }
    }

    /// Removes the `ioi-run` parent directories if no run uses them any more.
    pub(crate) fn release(&self) {
        for parent in self.parents() {
            let _ = fs::remove_dir(parent);
        }
    }

    /// When the process exits normally, even if the sandbox is never dropped (kept in a
    /// static): finishes every run still registered and removes the spare cgroups
    /// ([`crate::abort_all`]), then removes the parent directories (whichever process leaves
    /// last succeeds).
    pub(crate) fn release_at_exit(&self) {
        static REGISTER: std::sync::Once = std::sync::Once::new();
        if let Ok(mut parents) = PARENTS_AT_EXIT.lock() {
            parents.extend(self.parents().into_iter().map(Path::to_path_buf));
        }
        REGISTER.call_once(|| {
            // SAFETY: registering a plain function without captured state.
            unsafe { libc::atexit(remove_parents_at_exit) };
        });
    }

    /// Creates the cgroup of one run with its limits (the program joins it through
    /// [`RunCgroup::open_procs`]).
    #[cfg(test)]
    pub(crate) fn create_run(
        &self,
        memory: Option<u64>,
        processes: Option<u64>,
    ) -> Result<RunCgroup> {
        let cgroup = self.create_spare()?;
        if let Err(e) = cgroup.limit(memory, processes) {
            cgroup.remove();
            return Err(e);
        }
        Ok(cgroup)
    }

    /// Creates the cgroup of one future run, without limits yet ([`RunCgroup::limit`] sets
    /// them when a run takes it). A new memory cgroup holds no charge, counter or peak of
    /// anything: made ahead of need, it is still used by one run only. On v1 the `cpuacct` and
    /// `pids` cgroups are a finished run's when one is waiting ([`Accounting`]): no task in
    /// them, the CPU counter at zero, the limit written by the run.
    pub(crate) fn create_spare(&self) -> Result<RunCgroup> {
        let name = run_name(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let mut dirs: Vec<PathBuf> = self.parents().iter().map(|p| p.join(&name)).collect();
        let reused = match self {
            CgroupRoot::V1 { .. } => REUSABLE.lock().ok().and_then(|mut pool| pool.pop()),
            CgroupRoot::V2 { .. } => None,
        };
        if let Some(pair) = &reused {
            dirs.truncate(1);
            dirs.extend([pair.cpuacct.clone(), pair.pids.clone()]);
            REUSED.fetch_add(1, Ordering::Relaxed);
        }
        let made = if reused.is_some() {
            &dirs[..1]
        } else {
            &dirs[..]
        };
        for dir in made {
            create_dir_retrying(dir)?;
        }
        // The memory controller's directory is the first; v1 keeps CPU time and processes in
        // hierarchies of their own.
        let version = self.version();
        let (cpu_file, pids_dir) = match version {
            CgroupVersion::V1 => (dirs[1].join("cpuacct.usage"), &dirs[2]),
            CgroupVersion::V2 => (dirs[0].join("cpu.stat"), &dirs[0]),
        };
        let memory_dir = &dirs[0];
        let cgroup = (|| {
            Ok(RunCgroup {
                version,
                limits: LimitFiles::open(version, memory_dir, pids_dir)?,
                cpu_usage: open_counter(&cpu_file)?,
                processes: open_counter(&pids_dir.join("pids.current"))?,
                peak: PeakSource::detect(version, memory_dir, sample_forced())?,
                oom: open_counter(&memory_dir.join(match version {
                    CgroupVersion::V1 => "memory.oom_control",
                    CgroupVersion::V2 => "memory.events",
                }))?,
                memory_limit: AtomicU64::new(NO_LIMIT),
                dirs: dirs.clone(),
                removed: std::sync::atomic::AtomicBool::new(false),
            })
        })();
        if cgroup.is_err() {
            for dir in &dirs {
                let _ = fs::remove_dir(dir);
            }
        }
        cgroup
    }
}

/// The run cgroups that the sandbox of process `pid` (a process of this pid namespace) holds
/// now: one directory per run and hierarchy. A live sandbox holds one for each run in progress
/// and each box built ahead; a dead one's are what the next sandbox to start removes. Nothing is
/// created or moved to find them (`bench soak` counts a server's with it).
pub fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("{}-{pid}-", pid_namespace());
    let mut found = Vec::new();
    for parent in run_parents_of(pid) {
        let Ok(entries) = fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && keeper_of(&name).is_some() {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// Where the sandbox of process `pid` makes its run cgroups, found as [`CgroupRoot::detect`]
/// finds them but without enabling a controller or moving a process.
fn run_parents_of(pid: u32) -> Vec<PathBuf> {
    if cgroups_rs::fs::hierarchies::is_cgroup2_unified_mode() {
        let mount = Path::new(cgroups_rs::fs::hierarchies::UNIFIED_MOUNTPOINT);
        if nix::unistd::geteuid().is_root() {
            return vec![mount.join(GROUP_DIR)];
        }
        let own = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        return v2_dir_from(&own, mount)
            .map(|dir| vec![dir.join(GROUP_DIR)])
            .unwrap_or_default();
    }
    let v1 = cgroups_rs::fs::hierarchies::V1::new();
    use cgroups_rs::fs::Controllers;
    [Controllers::Mem, Controllers::CpuAcct, Controllers::Pids]
        .into_iter()
        .filter_map(|c| {
            v1.get_mount_point(c)
                .map(|(point, _)| point.join(GROUP_DIR))
        })
        .collect()
}

static PARENTS_AT_EXIT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

extern "C" fn remove_parents_at_exit() {
    // Runs still in progress, runs whose init was still exiting, spare and reusable cgroups.
    crate::abort_all();
    if let Ok(parents) = PARENTS_AT_EXIT.lock() {
        for parent in parents.iter() {
            let _ = fs::remove_dir(parent);
        }
    }
}

/// The leaf this process moves itself into when its cgroup must enable controllers.
const KEEPER_LEAF: &str = "ioi-run-keeper";

/// The cgroup v2 directory this process belongs to, as it was before any move into
/// [`KEEPER_LEAF`] (so that detecting twice, as `doctor` does, never nests a second leaf).
fn own_v2_cgroup(mount: &Path) -> Result<PathBuf> {
    let own = fs::read_to_string("/proc/self/cgroup").context("cannot read /proc/self/cgroup")?;
    v2_dir_from(&own, mount)
}

/// The directory of the `0::` line of a `/proc/<pid>/cgroup` text, one level up when it is
/// our own leaf.
fn v2_dir_from(proc_cgroup: &str, mount: &Path) -> Result<PathBuf> {
    let rel = proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .context("no cgroup v2 entry (0::) in /proc/self/cgroup")?;
    let dir = mount.join(rel.trim().trim_start_matches('/'));
    match dir.parent() {
        Some(parent) if dir.file_name() == Some(KEEPER_LEAF.as_ref()) => Ok(parent.to_path_buf()),
        _ => Ok(dir),
    }
}

/// Makes sure the memory and pids controllers are enabled for the children of `dir`, moving
/// this process into a leaf when it is the only thing in the way; otherwise says exactly why
/// the kernel refused, with the errno, and what to do.
fn ensure_v2_controllers(dir: &Path, root: bool) -> Result<()> {
    let err = match enable_v2_controllers(dir) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let errno = err.errno;
    match errno {
        nix::errno::Errno::EBUSY => {
            let me = std::process::id();
            let members = cgroup_members(dir);
            if members.contains(&me) && members.iter().all(|&p| p == me) {
                let leaf = dir.join(KEEPER_LEAF);
                move_self_into(&leaf)?;
                return enable_v2_controllers(dir).map_err(anyhow::Error::from);
            }
            let others: Vec<String> = members
                .iter()
                .filter(|&&p| p != me)
                .take(5)
                .map(|&p| describe_process(p))
                .collect();
            Err(anyhow::Error::from(err)).context(format!(
                "{} holds other processes ({}{}), and the kernel enables controllers only for \
                 cgroups without processes (except the host's root cgroup). Fix: {}",
                dir.display(),
                others.join(", "),
                if members.len() > 6 { ", ..." } else { "" },
                if root {
                    "move them into a leaf first, as the entrypoint of the project's Dockerfile \
                     does (`mkdir /sys/fs/cgroup/init && for p in $(cat /sys/fs/cgroup/cgroup.procs); \
                     do echo $p > /sys/fs/cgroup/init/cgroup.procs; done`), or start ioi-run as \
                     the container's only process (exec ioi-run ...), which then moves itself \
                     into a leaf"
                } else {
                    "start ioi-run alone in a delegated scope (`systemd-run --user --scope -p \
                     Delegate=yes ioi-run ...`), or move your shell into a leaf of its own \
                     (`mkdir <cgroup>/shell && echo $$ > <cgroup>/shell/cgroup.procs`)"
                }
            ))
        }
        nix::errno::Errno::EACCES | nix::errno::Errno::EPERM | nix::errno::Errno::EROFS => {
            let hint = if crate::privilege::Privilege::current()
                == crate::privilege::Privilege::RootWithoutSysAdmin
            {
                crate::privilege::NEEDS_SYS_ADMIN
            } else if root {
                "the cgroup filesystem is read-only or not delegated to this container: run the \
                 container with a writable cgroup namespace (`docker run --privileged` or \
                 `--cgroupns=private` with /sys/fs/cgroup mounted read-write)"
            } else {
                "running as a normal user needs a delegated cgroup v2 subtree: run as root, or \
                 start ioi-run with `systemd-run --user --scope -p Delegate=yes ioi-run ...`"
            };
            Err(anyhow::Error::from(err)).context(hint)
        }
        nix::errno::Errno::ENOENT => Err(anyhow::Error::from(err)).context(format!(
            "the controller is not offered to {} (missing from its cgroup.controllers): the \
             parent cgroup must enable it for its children (systemd: `Delegate=yes`)",
            dir.display()
        )),
        _ => Err(err.into()),
    }
}

/// A refused write into `cgroup.subtree_control`, with the errno for diagnosis.
#[derive(Debug, thiserror::Error)]
#[error("cannot enable the {controller} controller in {path}: {errno}")]
struct EnableError {
    controller: &'static str,
    path: String,
    errno: nix::errno::Errno,
}

/// Enables the memory and pids controllers for the children of `dir` (v2).
fn enable_v2_controllers(dir: &Path) -> Result<(), EnableError> {
    let control = dir.join("cgroup.subtree_control");
    let current = fs::read_to_string(&control).unwrap_or_default();
    let available = fs::read_to_string(dir.join("cgroup.controllers")).ok();
    for controller in ["memory", "pids"] {
        if current.split_whitespace().any(|c| c == controller) {
            continue;
        }
        let fail = |errno| EnableError {
            controller,
            path: control.display().to_string(),
            errno,
        };
        // Writing an unavailable controller fails with a bare ENOENT: say it is the parent's.
        if available
            .as_deref()
            .is_some_and(|a| !a.split_whitespace().any(|c| c == controller))
        {
            return Err(fail(nix::errno::Errno::ENOENT));
        }
        if let Err(e) = fs::write(&control, format!("+{controller}")) {
            let errno = e
                .raw_os_error()
                .map(nix::errno::Errno::from_raw)
                .unwrap_or(nix::errno::Errno::EIO);
            return Err(fail(errno));
        }
    }
    Ok(())
}

/// Moves this whole process (every thread) into `leaf`, created if needed.
fn move_self_into(leaf: &Path) -> Result<()> {
    fs::create_dir_all(leaf).with_context(|| format!("cannot create cgroup {}", leaf.display()))?;
    let procs = leaf.join("cgroup.procs");
    fs::write(&procs, std::process::id().to_string())
        .with_context(|| format!("cannot move ioi-run into {}", procs.display()))
}

/// The processes listed in `dir/cgroup.procs`.
fn cgroup_members(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// `pid (command)` for an error message.
fn describe_process(pid: u32) -> String {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("pid {pid} ({})", comm.trim())
}

fn create_dir_retrying(dir: &Path) -> Result<()> {
    // The parent may be removed concurrently by another keeper's `release`: recreate it.
    let mut last = None;
    for _ in 0..3 {
        match fs::create_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(last
        .map(anyhow::Error::from)
        .unwrap_or_else(|| anyhow::anyhow!("unknown error")))
    .with_context(|| format!("cannot create cgroup {}", dir.display()))
}

fn open_counter(path: &Path) -> Result<File> {
    File::open(path).with_context(|| format!("cannot open {}", path.display()))
}

/// The files a run's limits are written to, opened with its cgroup.
struct LimitFiles {
    /// `memory.limit_in_bytes` (v1), `memory.max` (v2).
    memory: File,
    /// `memory.memsw.limit_in_bytes` (v1, only with swap accounting), `memory.swap.max` (v2,
    /// only with swap).
    swap: Option<File>,
    pids: File,
}

impl LimitFiles {
    fn open(version: CgroupVersion, memory_dir: &Path, pids_dir: &Path) -> Result<LimitFiles> {
        let writable = |path: PathBuf| {
            OpenOptions::new()
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot open {}", path.display()))
        };
        let (memory, swap) = match version {
            CgroupVersion::V1 => ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
            CgroupVersion::V2 => ("memory.max", "memory.swap.max"),
        };
        let swap = memory_dir.join(swap);
        Ok(LimitFiles {
            memory: writable(memory_dir.join(memory))?,
            swap: swap.exists().then(|| writable(swap)).transpose()?,
            pids: writable(pids_dir.join("pids.max"))?,
        })
    }
}

/// One `write` of a number to a limit file opened by [`LimitFiles::open`] (the value is
/// written whole at the start: a cgroup file takes each write as one value).
fn write_value(file: &File, value: u64) -> Result<()> {
    write_text(file, &value.to_string())
}

/// One `write` of a word (`max`) to a limit file opened by [`LimitFiles::open`].
fn write_text(file: &File, text: &str) -> Result<()> {
    let n = file.write_at(text.as_bytes(), 0)?;
    if n != text.len() {
        bail!("short write of {text}");
    }
    Ok(())
}

/// Removes a cgroup directory, killing what is left in it until the kernel lets it go (at most
/// half a second: the processes of a killed run are gone within milliseconds).
fn remove_killing_members(dir: &Path) {
    for attempt in 0..60 {
        if fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        kill_members(dir);
        std::thread::sleep(Duration::from_millis(if attempt < 10 { 1 } else { 10 }));
    }
}

/// Kills every process listed in a cgroup directory.
fn kill_members(dir: &Path) {
    let kill = dir.join("cgroup.kill");
    if kill.exists() && fs::write(&kill, "1").is_ok() {
        return;
    }
    if let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) {
        for pid in procs
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The cgroup of one run.
pub(crate) struct RunCgroup {
    version: CgroupVersion,
    /// The run's directory in each hierarchy (one for v2).
    dirs: Vec<PathBuf>,
    limits: LimitFiles,
    cpu_usage: File,
    /// `pids.current`: how many tasks are left.
    processes: File,
    peak: PeakSource,
    /// Where the kernel counts OOM kills: `memory.oom_control` (v1), `memory.events` (v2).
    oom: File,
    /// The memory limit, [`NO_LIMIT`] for none (set once, by [`RunCgroup::limit`]).
    memory_limit: AtomicU64,
    /// Set by the first [`RunCgroup::remove`]: a pair is given back for reuse once.
    removed: std::sync::atomic::AtomicBool,
}

/// [`RunCgroup::memory_limit`] when there is none.
const NO_LIMIT: u64 = u64::MAX;

/// Environment variable that forces the sampled peak memory even where the kernel keeps a
/// high-water mark: lets the tests (and a doubtful operator) exercise the path that kernels
/// before 5.19 take.
pub const SAMPLE_MEMORY_ENV: &str = "IOI_SANDBOX_SAMPLE_MEMORY";

pub(crate) fn sample_forced() -> bool {
    std::env::var_os(SAMPLE_MEMORY_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// How often the keeper samples the memory usage where the kernel keeps no high-water mark.
pub(crate) const MEMORY_SAMPLE_PERIOD: Duration = Duration::from_millis(10);

/// Where the peak memory of a run comes from.
enum PeakSource {
    /// The kernel's high-water mark: `memory.peak` (v2, Linux 5.19+) or
    /// `memory.max_usage_in_bytes` (v1).
    Watermark(File),
    /// No high-water mark (cgroup v2 before Linux 5.19, e.g. Ubuntu 22.04's 5.15, RHEL 9's
    /// 5.14): the keeper samples the usage (`memory.current`) every [`MEMORY_SAMPLE_PERIOD`]
    /// while the program runs and keeps the highest value. A spike shorter than the period can
    /// be missed, except reaching the limit: the kernel counts every time the usage hit the
    /// limit (`max` in `memory.events`, v1 `memory.failcnt`), and then the peak is the limit.
    Sampled {
        usage: File,
        limit_hits: PathBuf,
        limit_key: Option<&'static str>,
        highest: AtomicU64,
    },
}

impl PeakSource {
    fn detect(version: CgroupVersion, dir: &Path, forced: bool) -> Result<PeakSource> {
        let (watermark, usage, limit_hits, limit_key) = match version {
            CgroupVersion::V1 => (
                "memory.max_usage_in_bytes",
                "memory.usage_in_bytes",
                "memory.failcnt",
                None,
            ),
            CgroupVersion::V2 => (
                "memory.peak",
                "memory.current",
                "memory.events",
                Some("max"),
            ),
        };
        let watermark = dir.join(watermark);
        if !forced && watermark.exists() {
            return Ok(PeakSource::Watermark(open_counter(&watermark)?));
        }
        Ok(PeakSource::Sampled {
            usage: open_counter(&dir.join(usage))?,
            limit_hits: dir.join(limit_hits),
            limit_key,
            highest: AtomicU64::new(0),
        })
    }
}

impl RunCgroup {
    /// Sets the run's limits (once, before the program joins). A memory limit below
    /// [`crate::MIN_MEMORY_LIMIT`] is raised to it (see there).
    pub(crate) fn limit(&self, memory: Option<u64>, processes: Option<u64>) -> Result<()> {
        let memory = memory.map(|bytes| bytes.max(crate::MIN_MEMORY_LIMIT));
        self.memory_limit
            .store(memory.unwrap_or(NO_LIMIT), Ordering::Relaxed);
        self.set_limits(memory, processes)
    }

    fn set_limits(&self, memory: Option<u64>, processes: Option<u64>) -> Result<()> {
        let limits = &self.limits;
        if let Some(bytes) = memory {
            // The largest value the kernel takes (beyond it: no limit in practice).
            let bytes = bytes.min(i64::MAX as u64);
            write_value(&limits.memory, bytes).context("cannot set the cgroup memory limit")?;
            // No swap: the memory+swap limit equals the memory limit (v1), swap is 0 (v2).
            if let Some(swap) = &limits.swap {
                let swap_bytes = match self.version {
                    CgroupVersion::V1 => bytes,
                    CgroupVersion::V2 => 0,
                };
                write_value(swap, swap_bytes).context("cannot set the cgroup swap limit")?;
            }
        }
        // Written even without a limit: a reused `pids` cgroup (v1) holds its last run's.
        let pids = match processes {
            Some(n) => write_value(&limits.pids, n),
            None => write_text(&limits.pids, "max"),
        };
        pids.context("cannot set the cgroup pids limit")?;
        Ok(())
    }

    /// Opens the file of every hierarchy through which the program joins the cgroup, for
    /// writing; the program writes `0` ("myself") into each before it executes.
    ///
    /// On v1 that is `tasks`, which moves only the calling thread: the program is one thread
    /// at that point, so the result is the same as `cgroup.procs`, but the kernel then skips
    /// the global lock that guards whole thread groups (`cgroup_threadgroup_rwsem`), whose
    /// writers wait for an RCU grace period when it has been idle: measured here, 10 µs per
    /// join instead of 160 µs on average and up to 15 ms. v2 has no per-thread file for
    /// domain cgroups, so it keeps `cgroup.procs`.
    pub(crate) fn open_procs(&self) -> Result<Vec<OwnedFd>> {
        let file = match self.version {
            CgroupVersion::V1 => "tasks",
            CgroupVersion::V2 => "cgroup.procs",
        };
        self.dirs
            .iter()
            .map(|d| {
                let path = d.join(file);
                OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(OwnedFd::from)
                    .with_context(|| format!("cannot open {}", path.display()))
            })
            .collect()
    }

    /// Whether no task of the cgroup is left: every member has exited and been reaped, so the
    /// counters are final. False when the count cannot be read.
    pub(crate) fn is_empty(&self) -> bool {
        read_counter(&self.processes).is_ok_and(|text| text.trim() == "0")
    }

    /// CPU time used so far by the members, all threads included. An unreadable counter is an
    /// error, never zero: zero would turn the CPU limit off.
    pub(crate) fn cpu_time(&self) -> Result<Duration> {
        let file = match self.version {
            CgroupVersion::V1 => "cpuacct.usage",
            CgroupVersion::V2 => "cpu.stat",
        };
        let text = read_counter(&self.cpu_usage).with_context(|| self.counter_error(file))?;
        parse_cpu_usage(self.version, &text).with_context(|| self.counter_error(file))
    }

    /// How often [`RunCgroup::sample_memory`] must be called while the program runs, when the
    /// kernel keeps no high-water mark of the memory usage.
    pub(crate) fn memory_sample_period(&self) -> Option<Duration> {
        match self.peak {
            PeakSource::Watermark(_) => None,
            PeakSource::Sampled { .. } => Some(MEMORY_SAMPLE_PERIOD),
        }
    }

    /// Records the current memory usage where the peak is sampled (no-op otherwise).
    pub(crate) fn sample_memory(&self) -> Result<()> {
        if let PeakSource::Sampled { usage, highest, .. } = &self.peak {
            let text = read_counter(usage).with_context(|| self.counter_error("memory usage"))?;
            let now: u64 = text
                .trim()
                .parse()
                .with_context(|| format!("{:?} is not a byte count", text.trim()))
                .with_context(|| self.counter_error("memory usage"))?;
            highest.fetch_max(now, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Peak memory of the members, in bytes: the kernel's high-water mark, or the highest
    /// sample (see [`PeakSource::Sampled`]). An unreadable counter is an error, never zero.
    pub(crate) fn memory_peak(&self) -> Result<u64> {
        match &self.peak {
            PeakSource::Watermark(file) => {
                let text = read_counter(file).with_context(|| self.counter_error("peak memory"))?;
                text.trim()
                    .parse()
                    .with_context(|| format!("{:?} is not a byte count", text.trim()))
                    .with_context(|| self.counter_error("peak memory"))
            }
            PeakSource::Sampled {
                limit_hits,
                limit_key,
                highest,
                ..
            } => {
                self.sample_memory()?;
                let text = fs::read_to_string(limit_hits)
                    .with_context(|| format!("cannot read {}", limit_hits.display()))?;
                let hits = match limit_key {
                    Some(key) => parse_key(&text, key),
                    None => text.trim().parse().ok(),
                }
                .with_context(|| {
                    format!("{}: no limit hit count in {text:?}", limit_hits.display())
                })?;
                let sampled = highest.load(Ordering::Relaxed);
                let limit = self.memory_limit.load(Ordering::Relaxed);
                Ok(match (limit != NO_LIMIT).then_some(limit) {
                    Some(limit) if hits > 0 => sampled.max(limit),
                    _ => sampled,
                })
            }
        }
    }

    /// How many processes the OOM killer killed in this cgroup.
    pub(crate) fn oom_kills(&self) -> Result<u64> {
        let text = read_counter(&self.oom).with_context(|| self.counter_error("OOM kill"))?;
        parse_key(&text, "oom_kill")
            .context("no oom_kill count (cgroup v1 needs Linux 4.13 or later)")
            .with_context(|| self.counter_error("OOM kill"))
    }

    fn counter_error(&self, what: &str) -> String {
        format!(
            "cannot read the {what} counter of cgroup {}",
            self.dirs[0].display()
        )
    }

    /// Kills whatever is still in the cgroup and removes it; on v1 the `cpuacct` and `pids`
    /// cgroups of a run with no task left are reset and kept for another run instead.
    pub(crate) fn remove(&self) {
        if self.removed.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.version == CgroupVersion::V1 && self.give_back() {
            remove_killing_members(&self.dirs[0]);
            return;
        }
        for dir in &self.dirs {
            remove_killing_members(dir);
        }
    }

    /// Resets the `cpuacct` and `pids` cgroups (v1) of a run with no task left and keeps them
    /// for another run; false when a task is left or a reset fails.
    fn give_back(&self) -> bool {
        let [_, cpuacct, pids] = &self.dirs[..] else {
            return false;
        };
        // The process is stopping: whatever is kept now would outlive it.
        if crate::keeper::aborted() {
            return false;
        }
        let pids_current = read_counter(&self.processes).unwrap_or_default();
        let tasks = fs::read_to_string(cpuacct.join("tasks")).unwrap_or_else(|_| "?".into());
        if !reusable(&pids_current, &tasks) {
            return false;
        }
        // CPU time from zero (the kernel takes only 0 here); the limit is the next run's.
        let reset = OpenOptions::new()
            .write(true)
            .open(cpuacct.join("cpuacct.usage"))
            .and_then(|file| file.write_at(b"0", 0));
        if reset.is_err() {
            return false;
        }
        let Ok(mut pool) = REUSABLE.lock() else {
            return false;
        };
        pool.push(Accounting {
            cpuacct: cpuacct.clone(),
            pids: pids.clone(),
        });
        true
    }

    #[cfg(test)]
    fn dir(&self) -> &Path {
        &self.dirs[0]
    }
}

fn parse_cpu_usage(version: CgroupVersion, text: &str) -> Result<Duration> {
    match version {
        CgroupVersion::V1 => text
            .trim()
            .parse()
            .map(Duration::from_nanos)
            .with_context(|| format!("{:?} is not a count of nanoseconds", text.trim())),
        CgroupVersion::V2 => parse_key(text, "usage_usec")
            .map(Duration::from_micros)
            .with_context(|| format!("no usage_usec in {text:?}")),
    }
}

/// One `pread` of an open counter file (kept open: read many times per run).
fn read_counter(file: &File) -> Result<String> {
    let mut buf = [0u8; 512];
    let n = file.read_at(&mut buf, 0)?;
    Ok(std::str::from_utf8(&buf[..n])?.to_string())
}

/// The value of `key N` in a flat-keyed cgroup file.
fn parse_key(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut parts = l.split_whitespace();
        (parts.next() == Some(key))
            .then(|| parts.next()?.parse().ok())
            .flatten()
    })
}

/// Writes `0` ("myself") into each file opened by [`RunCgroup::open_procs`], keeping the CPUs
/// the process had: async-signal-safe, used by the program between fork and exec.
///
/// Joining a cgroup of another cpuset (on cgroup v2, `ioi-run` below the root has the root's
/// cpuset while a session's processes have their slice's) makes kernels before 6.2 reset the
/// process's affinity to the cpuset's CPUs: a box placed on one CPU ([`crate::RunSpec::cpu`])
/// would run on all of them. The affinity is read before and set again after. Where the new
/// cpuset has none of those CPUs (an administrator narrowed it), a box placed on one CPU cannot
/// run where it was placed and fails (`EINVAL`); any other box runs on the cpuset's CPUs.
pub(crate) fn join_self(fds: &[i32]) -> Result<(), i32> {
    // SAFETY: sched_getaffinity/sched_setaffinity of the calling process into and from a local
    // set; write(2) of a static buffer on descriptors the caller owns.
    unsafe {
        let mut cpus: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut cpus) != 0 {
            return Err(nix::errno::Errno::last_raw());
        }
        for &fd in fds {
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(nix::errno::Errno::last_raw());
            }
        }
        if libc::sched_setaffinity(0, size, &cpus) != 0 && libc::CPU_COUNT(&cpus) == 1 {
            return Err(nix::errno::Errno::last_raw());
        }
    }
    Ok(())
}

/// Raw fds of opened procs files (for the child plan).
pub(crate) fn raw(fds: &[OwnedFd]) -> Vec<i32> {
    fds.iter().map(|f| f.as_raw_fd()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root without CAP_SYS_ADMIN is told about the capability, never to run as root; a normal
    /// user is told to run as root or in a delegated subtree.
    #[test]
    fn the_hint_for_cgroups_names_what_this_process_lacks() {
        use crate::privilege::{Privilege, NEEDS_SYS_ADMIN};
        for version in [CgroupVersion::V1, CgroupVersion::V2] {
            let hint = cannot_create_hint(version, Privilege::RootWithoutSysAdmin);
            assert_eq!(hint, NEEDS_SYS_ADMIN);
            assert!(hint.contains("--cap-add SYS_ADMIN"), "{hint}");
            assert!(!hint.contains("as root"), "{hint}");
            let hint = cannot_create_hint(version, Privilege::Root);
            assert!(hint.contains("read-only"), "{hint}");
            assert!(!hint.contains("as root"), "{hint}");
            let hint = cannot_create_hint(version, Privilege::User);
            assert!(hint.contains("run ioi-run as root"), "{hint}");
        }
        assert!(cannot_create_hint(CgroupVersion::V2, Privilege::User).contains("Delegate=yes"));
    }

    /// The v2 code path against a fake cgroupfs: limits land in the v2 files, statistics are
    /// read from the v2 files, and the run directory is removed.
    #[test]
    fn v2_paths_on_a_fake_cgroupfs() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(GROUP_DIR);
        fs::create_dir_all(&base).unwrap();
        fs::write(base.join("cgroup.subtree_control"), "memory pids").unwrap();
        let cg_root = CgroupRoot::V2 { base: base.clone() };
        // A fake cgroupfs does not populate new directories: pre-create the run's files by
        // predicting its name.
        let name = run_name(NEXT_ID.load(Ordering::Relaxed));
        let dir = base.join(&name);
        fs::create_dir_all(&dir).unwrap();
        for (file, content) in [
            (
                "cpu.stat",
                "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
            ),
            ("memory.peak", "123456789\n"),
            ("memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"),
            ("memory.swap.max", ""),
            ("memory.max", ""),
            ("pids.max", ""),
            ("pids.current", "0\n"),
            ("cgroup.procs", ""),
        ] {
            fs::write(dir.join(file), content).unwrap();
        }
        let run = cg_root.create_run(Some(256 << 20), Some(32)).unwrap();
        assert_eq!(run.dir(), dir);
        assert_eq!(
            fs::read_to_string(dir.join("memory.max")).unwrap(),
            (256u64 << 20).to_string()
        );
        assert_eq!(
            fs::read_to_string(dir.join("memory.swap.max")).unwrap(),
            "0"
        );
        assert_eq!(fs::read_to_string(dir.join("pids.max")).unwrap(), "32");
        assert_eq!(run.cpu_time().unwrap(), Duration::from_millis(1500));
        assert_eq!(run.memory_sample_period(), None);
        assert_eq!(run.memory_peak().unwrap(), 123456789);
        assert_eq!(run.oom_kills().unwrap(), 1);
        assert_eq!(run.open_procs().unwrap().len(), 1);
    }

    /// Stale run cgroups are those of dead keepers of this pid namespace; a name from another
    /// namespace (an ioi-run in a container sharing the cgroups) is never touched, whatever
    /// its pid, nor is a live keeper's.
    #[test]
    fn only_dead_keepers_of_this_pid_namespace_are_stale() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(GROUP_DIR);
        let ns = pid_namespace();
        assert_ne!(ns, 0, "/proc/self/ns/pid has an inode");
        // A pid that cannot be alive (beyond the kernel's pid_max limit of 2^22).
        let dead = 1 << 23;
        let names = [
            format!("{ns}-{dead}-0"),
            format!("{ns}-{}-7", std::process::id()),
            format!("{}-{dead}-0", ns + 1),
            format!("{}-1-0", ns + 1),
            "not-a-run".to_string(),
        ];
        for name in &names {
            fs::create_dir_all(base.join(name)).unwrap();
        }
        CgroupRoot::V2 { base: base.clone() }.remove_stale();
        let mut left: Vec<String> = fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected = names[1..].to_vec();
        expected.sort();
        assert_eq!(left, expected);
        assert_eq!(keeper_of(&run_name(3)), Some(std::process::id() as i32));
        assert_eq!(keeper_of(&format!("{}-5-3", ns + 1)), None);
        assert_eq!(keeper_of(&format!("{ns}-5")), None);
    }

    /// A finished run's `cpuacct` and `pids` cgroups are reused only with no task left in
    /// either; an unreadable count is not an empty one.
    #[test]
    fn only_cgroups_without_tasks_are_reused() {
        assert!(reusable("0\n", ""));
        assert!(!reusable("1\n", ""));
        assert!(!reusable("0\n", "4242\n"));
        assert!(!reusable("", ""));
        assert!(!reusable("0\n", "?"));
    }

    #[test]
    fn v1_counter_parsing() {
        assert_eq!(
            parse_cpu_usage(CgroupVersion::V1, "2500000000\n").unwrap(),
            Duration::from_millis(2500)
        );
        assert!(parse_cpu_usage(CgroupVersion::V1, "").is_err());
        assert!(parse_cpu_usage(CgroupVersion::V2, "user_usec 5\n").is_err());
        assert_eq!(
            parse_key("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            Some(2)
        );
        assert_eq!(parse_key("oom_kill_disable 0\n", "oom_kill"), None);
    }

    /// A fake v2 run directory with the given files, named as the next run will be.
    fn fake_v2_run(files: &[(&str, &str)]) -> (tempfile::TempDir, CgroupRoot, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(GROUP_DIR);
        let dir = base.join(run_name(NEXT_ID.load(Ordering::Relaxed)));
        fs::create_dir_all(&dir).unwrap();
        // What every cgroup has, unless the test says otherwise.
        let defaults = [
            ("memory.max", ""),
            ("pids.max", ""),
            ("pids.current", "0\n"),
            ("memory.events", "oom_kill 0\n"),
        ];
        for (file, content) in defaults {
            if !files.iter().any(|(f, _)| *f == file) {
                fs::write(dir.join(file), content).unwrap();
            }
        }
        for (file, content) in files {
            fs::write(dir.join(file), content).unwrap();
        }
        (root, CgroupRoot::V2 { base }, dir)
    }

    /// Without `memory.peak` (kernels before 5.19) the peak is the highest sample of
    /// `memory.current`, never 0, and the limit once the kernel counted a hit of it.
    #[test]
    fn peak_is_sampled_where_the_kernel_keeps_no_watermark() {
        let (_root, cg_root, dir) = fake_v2_run(&[
            ("cpu.stat", "usage_usec 10\n"),
            ("memory.current", "4096\n"),
            ("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"),
        ]);
        let run = cg_root.create_run(Some(64 << 20), None).unwrap();
        assert_eq!(run.memory_sample_period(), Some(MEMORY_SAMPLE_PERIOD));
        run.sample_memory().unwrap();
        fs::write(dir.join("memory.current"), "30000000\n").unwrap();
        run.sample_memory().unwrap();
        // The program exits: the usage falls, the peak stays.
        fs::write(dir.join("memory.current"), "0\n").unwrap();
        assert_eq!(run.memory_peak().unwrap(), 30000000);
        // The kernel counted a hit of the limit between two samples: the peak is the limit.
        fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n",
        )
        .unwrap();
        assert_eq!(run.memory_peak().unwrap(), 64 << 20);
        // An unreadable usage is an error, not a zero.
        fs::write(dir.join("memory.current"), "garbage\n").unwrap();
        assert!(run.sample_memory().is_err());
        assert!(run.memory_peak().is_err());
    }

    /// The environment switch forces sampling even where `memory.peak` exists.
    #[test]
    fn sampling_can_be_forced() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("memory.peak"), "7\n").unwrap();
        fs::write(dir.path().join("memory.current"), "5\n").unwrap();
        let watermark = PeakSource::detect(CgroupVersion::V2, dir.path(), false).unwrap();
        assert!(matches!(watermark, PeakSource::Watermark(_)));
        let sampled = PeakSource::detect(CgroupVersion::V2, dir.path(), true).unwrap();
        assert!(matches!(sampled, PeakSource::Sampled { .. }));
    }

    /// A run's limits and counters are on its path: they go through descriptors opened when
    /// its cgroup was made, never through a path (each open walks the cgroup file system).
    /// Here every file's name is gone once the cgroup is made; the run still sets its limits
    /// and reads its counters, from the files as they were opened.
    #[test]
    fn a_run_opens_no_file_of_its_cgroup() {
        let (_root, cg_root, dir) = fake_v2_run(&[
            ("cpu.stat", "usage_usec 2500\n"),
            ("memory.peak", "4096\n"),
            ("memory.swap.max", ""),
            ("memory.events", "max 0\noom_kill 2\n"),
            ("pids.current", "0\n"),
        ]);
        let run = cg_root.create_spare().unwrap();
        let seen = tempfile::tempdir().unwrap();
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            fs::hard_link(&path, seen.path().join(path.file_name().unwrap())).unwrap();
            fs::remove_file(&path).unwrap();
        }
        run.limit(Some(64 << 20), Some(7)).unwrap();
        assert_eq!(run.cpu_time().unwrap(), Duration::from_micros(2500));
        assert_eq!(run.memory_peak().unwrap(), 4096);
        assert_eq!(run.oom_kills().unwrap(), 2);
        assert!(run.is_empty());
        let written = |file: &str| fs::read_to_string(seen.path().join(file)).unwrap();
        assert_eq!(written("memory.max"), (64u64 << 20).to_string());
        assert_eq!(written("memory.swap.max"), "0");
        assert_eq!(written("pids.max"), "7");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            0,
            "a file was opened by name"
        );
    }

    /// Unreadable CPU, peak or OOM counters are errors: a zero would turn the CPU limit off,
    /// report no memory, or hide an OOM kill.
    #[test]
    fn unreadable_counters_are_errors_not_zero() {
        let (_root, cg_root, dir) = fake_v2_run(&[
            ("cpu.stat", "user_usec 10\n"),
            ("memory.peak", "\n"),
            ("memory.events", "low 0\n"),
        ]);
        let run = cg_root.create_run(None, None).unwrap();
        let err = format!("{:#}", run.cpu_time().unwrap_err());
        assert!(
            err.contains("cpu.stat") && err.contains(&dir.display().to_string()),
            "{err}"
        );
        assert!(run.memory_peak().is_err());
        assert!(run.oom_kills().is_err());
        fs::remove_file(dir.join("memory.events")).unwrap();
        assert!(run.oom_kills().is_err());
    }

    /// Detecting twice (as `doctor` does) finds the cgroup the process came from, not the
    /// leaf it moved into, so no `ioi-run-keeper/ioi-run-keeper` is ever created.
    #[test]
    fn own_cgroup_ignores_our_leaf() {
        let mount = Path::new("/sys/fs/cgroup");
        let scope = "0::/user.slice/user-1000.slice/run-1.scope\n";
        assert_eq!(
            v2_dir_from(scope, mount).unwrap(),
            mount.join("user.slice/user-1000.slice/run-1.scope")
        );
        let moved = format!("0::/user.slice/user-1000.slice/run-1.scope/{KEEPER_LEAF}\n");
        assert_eq!(
            v2_dir_from(&moved, mount).unwrap(),
            mount.join("user.slice/user-1000.slice/run-1.scope")
        );
        assert_eq!(v2_dir_from("0::/\n", mount).unwrap(), mount);
        assert!(v2_dir_from("4:memory:/x\n", mount).is_err());
    }
}
