//! The keeper: the caller's side of a run. [`Sandbox`] detects the host once and runs each
//! command in a box: one built ahead by the housekeeper, or built on the run's path (`build`);
//! its init cloned into new namespaces on a thread of its own (`init`); the run handed over and
//! watched until the init reports or a limit hits (`watch`); the outcome classified
//! (`outcome`). The rest of the box is torn down on the housekeeper thread.

mod build;
mod init;
mod outcome;
mod watch;

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context, Result};

pub(crate) use build::{Builder, Prepared};
pub(crate) use init::InitMemory;
use watch::Exit;

use crate::cgroup::{CgroupRoot, CgroupVersion, RunCgroup};
use crate::housekeeper::{Housekeeper, Leftover};
use crate::mount_template::MountTemplate;
use crate::mounts::{self, MountOp, SystemLayout};
use crate::namespaces;
use crate::uids::{UidPool, UidRange};
use crate::{seccomp, Outcome, RunSpec, Stdio};

/// Options of a [`Sandbox`].
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// Host uids of the boxes when the keeper is root (see [`crate::uids`]): the first owns
    /// box directories and is every box's group, each run in progress gets one of the others.
    /// `None`: `IOI_RUN_UID_RANGE`, or 60000-60999. As a normal user, every box runs as the
    /// user's own ids (the only ones a user namespace can map without privilege).
    pub uids: Option<UidRange>,
    /// Size of the private `/tmp` and `/dev/shm` (their content also counts as memory).
    pub tmp_size: u64,
    /// Boxes to build ahead of need, on the sandbox's own thread (see `housekeeper`): a run
    /// then pays only for its own part of the box. 0 for a sandbox that runs once (a box
    /// built ahead and never used costs CPU for nothing; nor is a network namespace pooled).
    pub ready_boxes: usize,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            uids: None,
            tmp_size: 1 << 30,
            ready_boxes: 2,
        }
    }
}

/// A configured sandbox: host facts detected once, shared by every run. `run` may be called
/// from many threads at once.
pub struct Sandbox {
    builder: Arc<Builder>,
    housekeeper: Housekeeper,
    /// Runs that found no box built ahead and built their own (see [`Sandbox::boxes_built_on_demand`]).
    built_on_demand: std::sync::atomic::AtomicU64,
    /// Runs in progress, each in a box of its own (see [`Sandbox::boxes_in_use`]).
    in_use: std::sync::atomic::AtomicU64,
}

/// Runs in progress (and finished runs whose init is not reaped yet), by init pid, with their
/// cgroups: what [`abort_all`] kills and removes.
fn active() -> &'static Mutex<HashMap<i32, Arc<RunCgroup>>> {
    static ACTIVE: OnceLock<Mutex<HashMap<i32, Arc<RunCgroup>>>> = OnceLock::new();
    ACTIVE.get_or_init(Default::default)
}

/// Set by [`abort_all`]: no box is built after it.
static ABORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether [`abort_all`] was called (the process is stopping).
pub(crate) fn aborted() -> bool {
    ABORTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Kills every run in progress and removes its cgroup. Call it from an interrupt handler
/// before exiting, so that nothing survives the caller. No box is built afterwards.
pub fn abort_all() {
    ABORTED.store(true, std::sync::atomic::Ordering::SeqCst);
    let runs: Vec<(i32, Arc<RunCgroup>)> = match active().lock() {
        Ok(mut map) => map.drain().collect(),
        Err(_) => return,
    };
    for (pid, cgroup) in runs {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
        cgroup.remove();
    }
    crate::housekeeper::discard_everything_ready();
    crate::housekeeper::remove_leftover_cgroups();
    crate::cgroup::remove_reusable();
    remove_mount_point_folders();
}

/// The folders of mount points of this process's sandboxes (see [`mount_points`]), removed
/// when it stops even if a sandbox is never dropped (one kept in a static).
static MOUNT_POINT_FOLDERS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

/// Removes the folders of [`MOUNT_POINT_FOLDERS`] (empty folders only: never what a box left).
fn remove_mount_point_folders() {
    let folders = match MOUNT_POINT_FOLDERS.lock() {
        Ok(mut folders) => std::mem::take(&mut *folders),
        Err(_) => return,
    };
    for folder in folders {
        remove_empty_mount_points(&folder);
    }
}

/// Removes a folder of mount points and its two mount points, if empty.
fn remove_empty_mount_points(folder: &Path) {
    for inner in ["root", "skeleton"] {
        let _ = std::fs::remove_dir(folder.join(inner));
    }
    let _ = std::fs::remove_dir(folder);
}

/// Gives back what the busiest moments of an idle sandbox made and kept for reuse: the threads
/// that clone inits, the reusable cgroups, the mount template, and the network namespaces of
/// its pool beyond one.
pub(crate) fn release_idle(builder: &Builder) {
    init::let_free_threads_go();
    crate::cgroup::remove_reusable();
    if let Some(template) = &builder.mount_template {
        template.release();
    }
    if let Some(networks) = builder.networks() {
        networks.trim(1);
    }
}

/// The folder of a sandbox's mount points (`root`, on which each box mounts its root, and
/// `skeleton`, on which the mount template mounts the boxes' common part): a new one of this
/// process, owned by it, that no other user may change (`rwx--x--x`: the boxes' inits, whose
/// ids are not its owner's, only pass through it). A box's mounts are made on these paths: in a
/// folder another user could write, such as `/tmp` itself, that user could rename a mount
/// point away and put a folder of theirs in its place between two of a box's mounts, and the
/// box would bind that folder as its `/usr` or `/etc`. Named with this process's pid namespace
/// and pid, so that the folders of a keeper that died are removed by the next of its pid
/// namespace (see [`remove_stale_folders`]).
fn mount_points() -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    remove_stale_folders();
    let folder = tempfile::Builder::new()
        .prefix(&format!(
            "{MOUNT_POINTS_PREFIX}{}-{}-",
            crate::cgroup::pid_namespace(),
            std::process::id()
        ))
        .tempdir()
        .context("cannot create the sandbox's folder of mount points")?;
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o711))
        .with_context(|| format!("cannot set the permissions of {}", folder.path().display()))?;
    for name in ["root", "skeleton"] {
        let path = folder.path().join(name);
        std::fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))?;
    }
    if let Ok(mut folders) = MOUNT_POINT_FOLDERS.lock() {
        folders.push(folder.path().to_path_buf());
    }
    Ok(folder)
}

const MOUNT_POINTS_PREFIX: &str = "ioi-sandbox-";

/// Removes the (empty) folders of mount points that keepers of this pid namespace left when
/// they died, owned by this process's user: never a folder with anything else in it, nor one
/// of another pid namespace (whose pid means nothing here).
fn remove_stale_folders() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut parts = name
            .strip_prefix(MOUNT_POINTS_PREFIX)
            .unwrap_or_default()
            .split('-');
        let (Some(ns), Some(pid)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(ns), Ok(pid)) = (ns.parse::<u64>(), pid.parse::<i32>()) else {
            continue;
        };
        if !name.starts_with(MOUNT_POINTS_PREFIX) || ns != crate::cgroup::pid_namespace() {
            continue;
        }
        let owned = entry
            .metadata()
            .is_ok_and(|m| m.is_dir() && m.uid() == me && !m.file_type().is_symlink());
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        if owned && !alive {
            remove_empty_mount_points(&entry.path());
        }
    }
}

/// Forgets a run whose init has been reaped.
pub(crate) fn forget(init: i32) {
    if let Ok(mut map) = active().lock() {
        map.remove(&init);
    }
}

impl Sandbox {
    /// Detects the host (cgroups, system directories) and compiles the seccomp filter. Fails
    /// with a message saying what to enable when a mechanism is missing.
    pub fn new(options: SandboxOptions) -> Result<Sandbox> {
        crate::rlimits::raise_open_files();
        let cgroups = CgroupRoot::detect()?;
        cgroups.prepare()?;
        cgroups.release_at_exit();
        let system = SystemLayout::detect()?;
        let filters = seccomp::build()?;
        let folder = mount_points()?;
        let root_mountpoint = folder.path().join("root");
        let base = mounts::base_plan(&root_mountpoint, &system)?;
        let keeper_is_root = nix::unistd::geteuid().is_root();
        let range = match options.uids {
            Some(range) => range,
            None => UidRange::from_env()?,
        };
        let uids = if keeper_is_root {
            Some(UidPool::new(range)?)
        } else {
            None
        };
        // A pool pays off only for boxes built ahead, where its namespaces outlive their runs: a
        // sandbox that runs once creates its box's namespace with the box (one to create and
        // destroy, not a pooled one and its replacement).
        let networks = match options.ready_boxes {
            0 => None,
            _ => namespaces::NetworkPool::new(),
        };
        // Likewise the mount template: made once for many boxes, it costs a sandbox that runs
        // once more than its one box saves.
        let mount_template = match keeper_is_root && options.ready_boxes > 0 {
            true => MountTemplate::new(folder.path().join("skeleton"), &system),
            false => None,
        };
        let base_on_template = match &mount_template {
            Some(template) => {
                mounts::base_plan_on_skeleton(&root_mountpoint, template.skeleton(), &system)?
            }
            None => Vec::new(),
        };
        let builder = Arc::new(Builder {
            cgroups,
            base,
            base_on_template,
            filters: Arc::new(filters),
            root_mountpoint,
            _mount_points: folder,
            options,
            keeper_is_root,
            networks,
            mount_template,
            uids,
            range,
            built: Default::default(),
        });
        tracing::debug!(
            cgroups = ?builder.cgroups.version(),
            root = builder.keeper_is_root,
            uids = format!("{}-{}", builder.range.first, builder.range.last),
            network_pool = builder.networks.is_some(),
            mount_template = builder.mount_template.is_some(),
            ready_boxes = builder.options.ready_boxes,
            "sandbox ready"
        );
        let housekeeper = Housekeeper::start(builder.clone());
        Ok(Sandbox {
            builder,
            housekeeper,
            built_on_demand: Default::default(),
            in_use: Default::default(),
        })
    }

    /// The cgroup version in use.
    pub fn cgroup_version(&self) -> CgroupVersion {
        self.builder.cgroups.version()
    }

    /// Owner (uid, gid) to give box directories: as root, the first uid of the range and the
    /// box group. Each run writes as its own uid in that group, so a writable directory must
    /// be writable by the group: [`Sandbox::give_to_box`] does both.
    pub fn box_owner(&self) -> (u32, u32) {
        let builder = &self.builder;
        if builder.keeper_is_root {
            (builder.range.first, builder.range.first)
        } else {
            (
                nix::unistd::geteuid().as_raw(),
                nix::unistd::getegid().as_raw(),
            )
        }
    }

    /// The range of host uids boxes run as (used only when the keeper is root).
    pub fn uid_range(&self) -> UidRange {
        self.builder.range
    }

    /// Makes a host file or directory usable by boxes: owned by [`Sandbox::box_owner`] and
    /// group-writable, a directory also with the set-group-id bit (what a box creates there
    /// stays in the box group, writable by the next box to use the directory).
    pub fn give_to_box(&self, path: &Path) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let (uid, gid) = self.box_owner();
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .with_context(|| format!("cannot give {} to the sandbox user {uid}", path.display()))?;
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("cannot inspect {}", path.display()))?;
        // Every box runs as a uid of its own but in the box group: what a box may write must be
        // group-writable (a file reaches no box but through a bind the caller chose).
        let mode = if meta.is_dir() {
            0o2775
        } else {
            meta.permissions().mode() & 0o7777 | 0o660
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot open {} to the box group", path.display()))?;
        Ok(())
    }

    /// How many runs found no box built ahead and built their own on their path (a benchmark's
    /// figure: each costs the run a box's build).
    pub fn boxes_built_on_demand(&self) -> u64 {
        self.built_on_demand
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many boxes this sandbox has built: ahead of need (including those discarded unused)
    /// and on demand. Every run takes one box of its own, so this grows by at least one a run.
    pub fn boxes_built(&self) -> u64 {
        self.builder
            .built
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many runs of this process (every sandbox of it) took the `cpuacct` and `pids`
    /// cgroups of a finished run, reset, instead of new ones (cgroup v1; see `cgroup`).
    pub fn cgroups_reused(&self) -> u64 {
        crate::cgroup::reused()
    }

    /// How many boxes built ahead wait for a run (at most
    /// [`SandboxOptions::ready_boxes`]; none once the sandbox has been idle for a while).
    pub fn boxes_ready(&self) -> u64 {
        self.housekeeper.ready() as u64
    }

    /// The most runs' leftovers (a uid, a mount namespace, a cgroup each) that waited at once
    /// to be finished off the runs' path: at most a bound, past which runs finish their own.
    pub fn most_unfinished(&self) -> u64 {
        self.housekeeper.most_unfinished() as u64
    }

    /// How many boxes hold a run (the runs in progress); 0 when the sandbox is idle.
    pub fn boxes_in_use(&self) -> u64 {
        self.in_use.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs one command and reports what happened. Never fails: a broken setup is an
    /// [`Outcome`] with [`Termination::InternalError`], never blamed on the program.
    pub fn run(&self, spec: &RunSpec) -> Outcome {
        let _in_use = InUse::count(&self.in_use);
        match self.try_run(spec) {
            Ok(outcome) => outcome,
            Err(e) => Outcome::internal(format!("{e:#}")),
        }
    }

    fn try_run(&self, spec: &RunSpec) -> Result<Outcome> {
        if spec.argv.is_empty() {
            bail!("empty command");
        }
        // A box built ahead when there is one; one built now when the run gives the box a
        // descriptor of the caller's (it must be in the init's table from its clone on).
        let fds: Vec<i32> = [&spec.stdin, &spec.stdout, &spec.stderr]
            .into_iter()
            .filter_map(|stdio| match stdio {
                Stdio::Fd(fd) => Some(fd.as_raw_fd()),
                _ => None,
            })
            .collect();
        let prepared = match fds.is_empty() {
            true => self.housekeeper.prepared(),
            false => None,
        };
        let prepared = match prepared {
            Some(prepared) => prepared,
            None => {
                self.built_on_demand
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.builder.prepare(self.housekeeper.cgroup()?, &fds)?
            }
        };
        Ok(self.run_in(prepared, spec))
    }

    /// One run in a prepared box, as named steps: set the cgroup's limits, send the init the
    /// run's part, watch it (which reaps the init, whatever happens); the rest of the box is
    /// finished on the housekeeper thread.
    fn run_in(&self, prepared: Prepared, spec: &RunSpec) -> Outcome {
        let Prepared {
            pid,
            run_write,
            report_read,
            sysinfo_socket,
            cgroup,
            lease,
            network,
            mount_ns,
            memory,
            built: _,
            on_template,
        } = prepared;
        // Whether `watch` took the init over (it reaps it on every path): before that, a failure
        // leaves the init waiting for its run, to be killed and reaped here. Never both: a pid
        // once reaped may belong to another process.
        let watched = std::cell::Cell::new(false);
        let result = (|| {
            cgroup.limit(spec.limits.memory, spec.limits.processes)?;
            if let Some(cpu) = spec.cpu {
                crate::affinity::pin(pid, cpu)?;
            }
            let run = self.builder.run_parts(spec)?;
            let base = match on_template {
                true => &self.builder.base_on_template,
                false => &self.builder.base,
            };
            let mut described: Vec<&MountOp> = base.iter().collect();
            described.extend(&run.mounts);
            let bytes = run.encode();
            if !run.fits(&bytes) {
                bail!("the command, its environment or its binds are too large for a box");
            }
            watched.set(true);
            self.builder.watch(
                pid,
                (run_write, bytes),
                (report_read, sysinfo_socket),
                &cgroup,
                spec,
                &described,
            )
        })();
        // Whether the init is still exiting (`watch` knew the outcome first): the housekeeper
        // reaps it. On every other path it is reaped.
        let exiting = matches!(result, Ok((_, Exit::Pending)));
        if !watched.get() {
            let init = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(init, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(init, None);
        }
        let exiting_init = match exiting {
            true => Some(pid),
            false => {
                // The init is reaped: no process of the box is left.
                forget(pid);
                None
            }
        };
        // The reaping of an exiting init, the uid's return, the teardown of the box's mounts
        // (held by `mount_ns`), the network namespace's return and the cgroup's removal happen
        // on the housekeeper thread.
        self.housekeeper.finish(Leftover {
            exiting_init,
            memory,
            lease,
            mount_ns,
            network,
            cgroup,
        });
        result.map_or_else(
            |e| Outcome::internal(format!("{e:#}")),
            |(outcome, _)| outcome,
        )
    }
}

/// One unit of [`Sandbox::boxes_in_use`], held for a run's length: every way out of the run
/// gives it back.
struct InUse<'a>(&'a std::sync::atomic::AtomicU64);

impl<'a> InUse<'a> {
    fn count(counter: &'a std::sync::atomic::AtomicU64) -> InUse<'a> {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        InUse(counter)
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.housekeeper.stop();
        crate::cgroup::remove_reusable();
        // Each may still be in this sandbox's mount template.
        init::let_free_threads_go();
        self.builder.cgroups.release();
    }
}
