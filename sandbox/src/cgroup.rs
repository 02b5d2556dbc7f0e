//! One cgroup per run: memory limit without swap, pids limit, CPU accounting, peak memory and
//! OOM-kill detection, on cgroup v1 (separate `memory`, `cpuacct`, `pids` hierarchies) or v2
//! (one unified directory).
//!
//! Limits and statistics go through the cgroups-rs controllers, built on explicit directories
//! (so a fake cgroupfs in a temporary folder exercises the same code). Statistics are read by
//! hand, one file each, because the crate only offers full snapshots (a dozen files) and they
//! are read on the hot path: the CPU counter many times per run (one `pread` of an open file),
//! the peak memory and the OOM-kill count once per run.
//!
//! Run cgroups are named `<keeper pid>-<n>` under an `ioi-run` directory, so stale ones left by
//! a killed keeper are recognised and removed by the next one.

use std::fs::{self, File, OpenOptions};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cgroups_rs::fs::memory::MemController;
use cgroups_rs::fs::pid::PidController;
use cgroups_rs::fs::{Controller, MaxValue};

/// Which cgroup hierarchy the host offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CgroupVersion {
    V1,
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
    /// delegated cgroup this process lives in (the process moves itself into a `keeper` leaf so
    /// that its cgroup may enable controllers for children).
    fn v2_for_this_process(mount: &Path) -> Result<CgroupRoot> {
        if nix::unistd::geteuid().is_root() {
            let base = mount.join(GROUP_DIR);
            enable_v2_controllers(mount)?;
            return Ok(CgroupRoot::V2 { base });
        }
        let own =
            fs::read_to_string("/proc/self/cgroup").context("cannot read /proc/self/cgroup")?;
        let rel = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .context("no cgroup v2 entry in /proc/self/cgroup")?;
        let own_dir = mount.join(rel.trim_start_matches('/'));
        let keeper = own_dir.join("keeper");
        let delegated = fs::create_dir_all(&keeper)
            .and_then(|_| fs::write(keeper.join("cgroup.procs"), std::process::id().to_string()))
            .is_ok()
            && enable_v2_controllers(&own_dir).is_ok();
        if !delegated {
            bail!(
                "running as a normal user needs a delegated cgroup v2 subtree, and {} is not \
                 writable: run as root, or start ioi-run with \
                 `systemd-run --user --scope -p Delegate=yes ioi-run ...`",
                own_dir.display()
            );
        }
        Ok(CgroupRoot::V2 {
            base: own_dir.join(GROUP_DIR),
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

    /// Creates the `ioi-run` parent directories and removes run cgroups of keepers that died.
    pub(crate) fn prepare(&self) -> Result<()> {
        for parent in self.parents() {
            if let Err(e) = fs::create_dir_all(parent) {
                let hint = match self {
                    CgroupRoot::V1 { .. } => {
                        "with cgroup v1 the sandbox needs root: run ioi-run as root (or use a \
                         cgroup v2 host, where a normal user can use a delegated subtree)"
                    }
                    CgroupRoot::V2 { .. } => {
                        "run ioi-run as root, or in a delegated cgroup v2 subtree \
                         (`systemd-run --user --scope -p Delegate=yes ioi-run ...`)"
                    }
                };
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
                let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
                    continue;
                };
                let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
                if !alive {
                    kill_members(&entry.path());
                    let _ = fs::remove_dir(entry.path());
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

    /// Also removes the parent directories when the process exits normally, even if the
    /// sandbox is never dropped (kept in a static): whichever process leaves last succeeds.
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

    /// Creates the cgroup of one run with its limits, and opens the `cgroup.procs` files the
    /// program writes itself into.
    pub(crate) fn create_run(
        &self,
        memory: Option<u64>,
        processes: Option<u64>,
    ) -> Result<RunCgroup> {
        let name = format!(
            "{}-{}",
            std::process::id(),
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        );
        let dirs: Vec<PathBuf> = self.parents().iter().map(|p| p.join(&name)).collect();
        for dir in &dirs {
            create_dir_retrying(dir)?;
        }
        let cgroup = match self {
            CgroupRoot::V1 { .. } => RunCgroup {
                version: CgroupVersion::V1,
                memory: MemController::new(dirs[0].clone(), dirs[0].clone(), false),
                pids: PidController::new(dirs[2].clone(), dirs[2].clone(), false),
                cpu_usage: open_counter(&dirs[1].join("cpuacct.usage"))?,
                dirs,
            },
            CgroupRoot::V2 { .. } => RunCgroup {
                version: CgroupVersion::V2,
                memory: MemController::new(dirs[0].clone(), dirs[0].clone(), true),
                pids: PidController::new(dirs[0].clone(), dirs[0].clone(), true),
                cpu_usage: open_counter(&dirs[0].join("cpu.stat"))?,
                dirs,
            },
        };
        if let Err(e) = cgroup.set_limits(memory, processes) {
            cgroup.remove();
            return Err(e);
        }
        Ok(cgroup)
    }
}

static PARENTS_AT_EXIT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

extern "C" fn remove_parents_at_exit() {
    if let Ok(parents) = PARENTS_AT_EXIT.lock() {
        for parent in parents.iter() {
            let _ = fs::remove_dir(parent);
        }
    }
}

/// Enables the memory and pids controllers for the children of `dir` (v2).
fn enable_v2_controllers(dir: &Path) -> Result<()> {
    let control = dir.join("cgroup.subtree_control");
    let current = fs::read_to_string(&control).unwrap_or_default();
    for controller in ["memory", "pids"] {
        if !current.split_whitespace().any(|c| c == controller) {
            fs::write(&control, format!("+{controller}")).with_context(|| {
                format!(
                    "cannot enable the {controller} controller in {}",
                    control.display()
                )
            })?;
        }
    }
    Ok(())
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
    memory: MemController,
    pids: PidController,
    cpu_usage: File,
}

impl RunCgroup {
    fn set_limits(&self, memory: Option<u64>, processes: Option<u64>) -> Result<()> {
        if let Some(bytes) = memory {
            let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
            self.memory
                .set_limit(bytes)
                .context("cannot set the cgroup memory limit")?;
            // No swap: the memory+swap limit equals the memory limit (v1), swap is 0 (v2).
            let swap = if self.version == CgroupVersion::V1 {
                bytes
            } else {
                0
            };
            let swap_file = if self.version == CgroupVersion::V1 {
                "memory.memsw.limit_in_bytes"
            } else {
                "memory.swap.max"
            };
            if self.memory.path().join(swap_file).exists() {
                self.memory
                    .set_memswap_limit(swap)
                    .context("cannot set the cgroup swap limit")?;
            }
        }
        if let Some(n) = processes {
            self.pids
                .set_pid_max(MaxValue::Value(n as i64))
                .context("cannot set the cgroup pids limit")?;
        }
        Ok(())
    }

    /// Opens the `cgroup.procs` file of every hierarchy for writing; the program writes `0`
    /// into each to join the cgroup before it executes.
    pub(crate) fn open_procs(&self) -> Result<Vec<OwnedFd>> {
        self.dirs
            .iter()
            .map(|d| {
                let path = d.join("cgroup.procs");
                OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(OwnedFd::from)
                    .with_context(|| format!("cannot open {}", path.display()))
            })
            .collect()
    }

    /// CPU time used so far by the members, all threads included.
    pub(crate) fn cpu_time(&self) -> Duration {
        let mut buf = [0u8; 512];
        let n = self.cpu_usage.read_at(&mut buf, 0).unwrap_or(0);
        let text = std::str::from_utf8(&buf[..n]).unwrap_or("");
        parse_cpu_usage(self.version, text)
    }

    /// Peak memory of the members, in bytes.
    pub(crate) fn memory_peak(&self) -> u64 {
        let file = match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        self.read_memory_file(file).trim().parse().unwrap_or(0)
    }

    /// How many processes the OOM killer killed in this cgroup.
    pub(crate) fn oom_kills(&self) -> u64 {
        let file = match self.version {
            CgroupVersion::V1 => "memory.oom_control",
            CgroupVersion::V2 => "memory.events",
        };
        parse_key(&self.read_memory_file(file), "oom_kill").unwrap_or(0)
    }

    /// One file of the memory controller. Read by hand: cgroups-rs only offers a snapshot of
    /// every memory file (a dozen reads), and this runs after every run.
    fn read_memory_file(&self, name: &str) -> String {
        fs::read_to_string(self.memory.path().join(name)).unwrap_or_default()
    }

    /// Kills whatever is still in the cgroup and removes it.
    pub(crate) fn remove(&self) {
        for dir in &self.dirs {
            for attempt in 0..50 {
                if fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                kill_members(dir);
                std::thread::sleep(Duration::from_millis(if attempt < 10 { 1 } else { 10 }));
            }
        }
    }

    #[cfg(test)]
    fn dir(&self) -> &Path {
        &self.dirs[0]
    }
}

fn parse_cpu_usage(version: CgroupVersion, text: &str) -> Duration {
    match version {
        CgroupVersion::V1 => Duration::from_nanos(text.trim().parse().unwrap_or(0)),
        CgroupVersion::V2 => Duration::from_micros(parse_key(text, "usage_usec").unwrap_or(0)),
    }
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

/// Writes `0` ("myself") into each opened `cgroup.procs`: async-signal-safe, used by the
/// program between fork and exec.
pub(crate) fn join_self(fds: &[i32]) -> Result<(), i32> {
    for &fd in fds {
        // SAFETY: plain write(2) of a static buffer on an fd the caller owns.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
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
        let name = format!("{}-{}", std::process::id(), NEXT_ID.load(Ordering::Relaxed));
        let dir = base.join(&name);
        fs::create_dir_all(&dir).unwrap();
        for (file, content) in [
            (
                "cpu.stat",
                "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
            ),
            ("memory.peak", "123456789\n"),
            ("memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"),
            ("memory.swap.max", "max\n"),
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
        assert_eq!(run.cpu_time(), Duration::from_millis(1500));
        assert_eq!(run.memory_peak(), 123456789);
        assert_eq!(run.oom_kills(), 1);
        assert_eq!(run.open_procs().unwrap().len(), 1);
    }

    #[test]
    fn v1_counter_parsing() {
        assert_eq!(
            parse_cpu_usage(CgroupVersion::V1, "2500000000\n"),
            Duration::from_millis(2500)
        );
        assert_eq!(
            parse_key("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            Some(2)
        );
        assert_eq!(parse_key("oom_kill_disable 0\n", "oom_kill"), None);
    }
}
