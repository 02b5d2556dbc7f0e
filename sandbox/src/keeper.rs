//! The keeper: the caller's side of a run. It prepares the cgroup and the child plan, clones
//! the init into new namespaces, writes the id maps, watches the wall clock and the cgroup's
//! CPU time, answers the program's `sysinfo` calls (see `sysinfo`), kills the init on a limit,
//! collects the statistics and classifies the outcome.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::cgroup::{self, CgroupRoot, CgroupVersion, RunCgroup};
use crate::child::{self, InitPlan, Report, Step};
use crate::handover::{self, Inbox, RunParts, StdioPlan};
use crate::housekeeper::{Housekeeper, Leftover};
use crate::mounts::{self, MountOp, SystemLayout};
use crate::namespaces;
use crate::sysinfo::{self, Emulator};
use crate::uids::{UidLease, UidPool, UidRange};
use crate::waiting::{Init, Membership, WaitClock};
use crate::{rlimits, seccomp, Outcome, RunSpec, Stdio, Termination, WALL_STRETCH};

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
    /// built ahead and never used costs CPU for nothing).
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

/// What building a box needs: the host facts, shared by the runs and the housekeeper thread
/// that builds boxes ahead of need.
pub(crate) struct Builder {
    pub(crate) cgroups: CgroupRoot,
    /// The mounts every box starts with (the same for every box: made once).
    base: Vec<MountOp>,
    filters: Arc<seccomp::Filters>,
    root_mountpoint: PathBuf,
    options: SandboxOptions,
    keeper_is_root: bool,
    networks: Option<Arc<namespaces::NetworkPool>>,
    /// Host uids for runs (root only).
    uids: Option<UidPool>,
    range: UidRange,
    /// Boxes built so far, ahead of need or on demand (see [`Sandbox::boxes_built`]).
    built: std::sync::atomic::AtomicU64,
}

/// A box built as far as it goes without its run (see `handover`): its init waits for the
/// run's message. Used by one run, or discarded.
pub(crate) struct Prepared {
    pid: i32,
    run_write: OwnedFd,
    report_read: OwnedFd,
    /// The keeper's end of the socket on which the program sends its `sysinfo` listener.
    sysinfo_socket: OwnedFd,
    cgroup: Arc<RunCgroup>,
    /// Held until no process of the box is left: no other box on the host runs as this uid
    /// meanwhile.
    lease: Option<UidLease>,
    network: Option<namespaces::LentNetwork>,
    /// The box's mount namespace: held, the init's exit does not tear the box's mounts down
    /// (the housekeeper does, when this is closed).
    mount_ns: Option<OwnedFd>,
    /// What the init runs on, released once it is reaped.
    memory: InitMemory,
    built: Instant,
}

/// The memory an init runs on. The init is cloned sharing the keeper's address space
/// (`CLONE_VM`, as `posix_spawn` does, but for the box's whole life): building a box then
/// copies no page table, its exit tears none down, and the keeper's own pages are never made
/// copy-on-write by a copy of itself (about 100 page faults a run otherwise, the keeper's and
/// the init's). The program cannot reach that memory: the init holds capabilities the program
/// lacks, so its `/proc` entry is hidden from the program and its memory cannot be opened,
/// whether the program runs as another uid (the keeper root) or as the same one. The init uses only this: its plan (the inbox included), its stack and the
/// program's, and the host facts the plan points into (the builder's mounts and filter). So
/// all of it stays allocated, untouched by the keeper, until the init is reaped: an
/// `InitMemory` is freed only by [`InitMemory::release`], called once the init is reaped; one
/// dropped otherwise (a path that lost its init) is leaked, never freed under a running init.
/// The init also shares the cloning thread's thread-local storage: see
/// [`clone_on_a_thread_of_its_own`].
pub(crate) struct InitMemory {
    parts: Option<Box<InitParts>>,
}

struct InitParts {
    plan: InitPlan,
    /// The init's own stack.
    stack: Vec<u8>,
    /// The program's stack between its clone and its execve (see `child::spawn_program`):
    /// held, the plan points into it.
    _program_stack: Vec<u8>,
    /// What the plan's mounts point into.
    _builder: Arc<Builder>,
    /// Dropped, ends the thread the init was cloned from (see
    /// [`clone_on_a_thread_of_its_own`]).
    thread: Option<std::sync::mpsc::Sender<()>>,
}

// SAFETY: the raw pointers of the plan point into `program_stack` and into the builder, both
// owned here; nothing in it is tied to the thread that made it.
unsafe impl Send for InitMemory {}

impl InitMemory {
    /// Frees the memory: only once the init that ran on it is reaped.
    pub(crate) fn release(mut self) {
        drop(self.parts.take());
    }
}

impl Drop for InitMemory {
    fn drop(&mut self) {
        // Not released: an init may still run on it. Leaked rather than freed.
        if let Some(parts) = self.parts.take() {
            std::mem::forget(parts);
        }
    }
}

impl Prepared {
    /// How long ago the box was built.
    pub(crate) fn age(&self) -> Duration {
        self.built.elapsed()
    }

    /// Whether the init has exited (killed from outside while it waited, or failed to build
    /// the common part): looked at without reaping it, which [`Prepared::discard`] does.
    pub(crate) fn exited(&self) -> bool {
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        !matches!(
            waitid(Id::Pid(nix::unistd::Pid::from_raw(self.pid)), flags),
            Ok(WaitStatus::StillAlive)
        )
    }

    /// Kills the init of a box no run will use, and removes what it held.
    pub(crate) fn discard(self) {
        let init = nix::unistd::Pid::from_raw(self.pid);
        let _ = nix::sys::signal::kill(init, nix::sys::signal::Signal::SIGKILL);
        if nix::sys::wait::waitpid(init, None).is_ok() {
            self.memory.release();
        }
        drop(self.network);
        self.cgroup.remove();
        forget(self.pid);
    }
}

/// Inside the namespaces the program is always this uid/gid.
const INSIDE_ID: u32 = mounts::INSIDE_UID;

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
        let cgroups = CgroupRoot::detect()?;
        cgroups.prepare()?;
        cgroups.release_at_exit();
        let system = SystemLayout::detect()?;
        let filters = seccomp::build()?;
        let root_mountpoint = std::env::temp_dir().join("ioi-sandbox-root");
        std::fs::create_dir_all(&root_mountpoint)
            .with_context(|| format!("cannot create {}", root_mountpoint.display()))?;
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
        let networks = namespaces::NetworkPool::new();
        let builder = Arc::new(Builder {
            cgroups,
            base,
            filters: Arc::new(filters),
            root_mountpoint,
            options,
            keeper_is_root,
            networks,
            uids,
            range,
            built: Default::default(),
        });
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

    /// How many boxes built ahead wait for a run (at most
    /// [`SandboxOptions::ready_boxes`]; none once the sandbox has been idle for a while).
    pub fn boxes_ready(&self) -> u64 {
        self.housekeeper.ready() as u64
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
            let mut described: Vec<&MountOp> = self.builder.base.iter().collect();
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

/// Whether the init of a watched run was reaped, or is still exiting when the outcome is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    Reaped,
    Pending,
}

impl Builder {
    /// Builds a box as far as it goes without its run: the cgroup (its limits are the run's),
    /// a uid, a network namespace, the init cloned into its namespaces with the descriptors
    /// `fds` of the caller kept open, its id maps written; the init then builds the common
    /// part of the box and waits for the run.
    pub(crate) fn prepare(self: &Arc<Self>, cgroup: RunCgroup, fds: &[i32]) -> Result<Prepared> {
        let cgroup = Arc::new(cgroup);
        let prepared = (|| {
            let lease = self.uids.as_ref().map(|pool| pool.lease()).transpose()?;
            // A pooled network namespace when possible (see `namespaces`), else a fresh one;
            // back to the pool only when the init is reaped.
            let network = self.networks.as_ref().map(|pool| pool.lend()).transpose()?;
            let procs = cgroup.open_procs()?;
            let (go_read, go_write) = pipe()?;
            let (run_read, run_write) = pipe()?;
            let (report_read, report_write) = pipe()?;
            let (sysinfo_socket, program_socket) = sysinfo::socket_pair()?;
            // The stacks of the init and of the program until its execve. Not zeroed: only the
            // child writes a stack, before it reads it, and zeroing would fault in pages that
            // are never used.
            let mut program_stack: Vec<u8> = Vec::with_capacity(256 << 10);
            let mut stack: Vec<u8> = Vec::with_capacity(256 << 10);
            // Except their tops, written here (off the run's path): a stack grows down from
            // there, and the pages a run uses then exist.
            for stack in [&mut program_stack, &mut stack] {
                let room = stack.spare_capacity_mut();
                let top = room.len().saturating_sub(handover::TOUCHED);
                handover::touch(&mut room[top..], handover::TOUCHED);
            }
            let mut keep_fds: Vec<i32> = vec![
                go_read.as_raw_fd(),
                run_read.as_raw_fd(),
                report_write.as_raw_fd(),
                program_socket.as_raw_fd(),
            ];
            keep_fds.extend(cgroup::raw(&procs));
            keep_fds.extend(fds);
            keep_fds.sort_unstable();
            let plan = InitPlan {
                go_read: go_read.as_raw_fd(),
                run_read: run_read.as_raw_fd(),
                report_write: report_write.as_raw_fd(),
                keep_fds,
                mounts: self.base.iter().map(MountOp::step).collect(),
                new_root: CString::new(self.root_mountpoint.as_os_str().as_bytes())?,
                cgroup_procs: cgroup::raw(&procs),
                uid: INSIDE_ID,
                gid: INSIDE_ID,
                clear_groups: self.keeper_is_root,
                seccomp: self.filters.clone(),
                sysinfo_socket: program_socket.as_raw_fd(),
                program_stack: program_stack.as_mut_ptr(),
                program_stack_len: program_stack.capacity(),
                inbox: Inbox::new(),
            };
            let mut memory = InitMemory {
                parts: Some(Box::new(InitParts {
                    plan,
                    stack,
                    _program_stack: program_stack,
                    _builder: self.clone(),
                    thread: None,
                })),
            };
            let pid = match clone_on_a_thread_of_its_own(&mut memory, network.as_ref()) {
                Ok(pid) => pid,
                Err(e) => {
                    // No init runs on it.
                    memory.release();
                    return Err(e);
                }
            };
            // The init has its own descriptor table; the keeper's copies would keep the
            // pipes open.
            drop((go_read, run_read, report_write, program_socket, procs));
            if let Ok(mut map) = active().lock() {
                map.insert(pid, cgroup.clone());
            }
            let mount_ns = std::fs::File::open(format!("/proc/{pid}/ns/mnt"))
                .ok()
                .map(OwnedFd::from);
            let prepared = Prepared {
                pid,
                run_write,
                report_read,
                sysinfo_socket,
                cgroup: cgroup.clone(),
                lease,
                network,
                mount_ns,
                memory,
                built: Instant::now(),
            };
            if aborted() {
                prepared.discard();
                bail!("the sandbox is shutting down");
            }
            let started = self
                .write_id_maps(pid, prepared.lease.as_ref().map(|l| l.uid))
                .and_then(|()| {
                    nix::unistd::write(&go_write, b"g")
                        .map(drop)
                        .context("cannot start the sandbox init")
                });
            match started {
                Ok(()) => {
                    self.built
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Ok(prepared)
                }
                Err(e) => {
                    prepared.discard();
                    Err(e)
                }
            }
        })();
        if prepared.is_err() {
            cgroup.remove();
        }
        prepared
    }

    /// The run's own part of its box.
    fn run_parts(&self, spec: &RunSpec) -> Result<RunParts> {
        let tmp_size = spec
            .limits
            .memory
            .unwrap_or(self.options.tmp_size)
            .min(self.options.tmp_size);
        let path_var = spec
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        Ok(RunParts {
            stdio: [
                stdio_plan(&spec.stdin, 0, &self.root_mountpoint)?,
                stdio_plan(&spec.stdout, 1, &self.root_mountpoint)?,
                stdio_plan(&spec.stderr, 2, &self.root_mountpoint)?,
            ],
            mounts: mounts::run_plan(&self.root_mountpoint, spec, tmp_size)?,
            rlimits: rlimits::plan(&spec.limits),
            cwd: CString::new(spec.cwd.as_os_str().as_bytes())?,
            argv: to_cstrings(&spec.argv)?,
            env: to_cstrings(spec.env.iter().map(|(k, v)| format!("{k}={v}")))?,
            exe_candidates: exe_candidates(&spec.argv[0], path_var)?,
        })
    }

    /// Hands the run over to the init (the `message` on its pipe) and watches it until it
    /// reports or a limit hits; `mounts` are the box's, for error messages. The init is reaped
    /// on every path out of here, errors included.
    fn watch(
        &self,
        pid: i32,
        (run_write, message): (OwnedFd, Vec<u8>),
        (report_read, sysinfo_socket): (OwnedFd, OwnedFd),
        cgroup: &RunCgroup,
        spec: &RunSpec,
        mounts: &[&mounts::MountOp],
    ) -> Result<(Outcome, Exit)> {
        let init = nix::unistd::Pid::from_raw(pid);
        // Dropped after the init is reaped, on every path: no process of the box is left to
        // call `sysinfo` without its listener.
        let mut sysinfo = Emulator::new(sysinfo_socket, spec.limits.memory);
        let kill_init = || {
            let _ = nix::sys::signal::kill(init, nix::sys::signal::Signal::SIGKILL);
        };
        let start = Instant::now();
        // The boxes whose waiting for a CPU is credited to this one: itself, and its peers
        // when it runs in a group (see `WaitGroup`).
        let this = Init::starting(pid);
        let group = spec
            .wait_group
            .as_deref()
            .map(|group| Membership::new(group, this));
        let inits = || match &group {
            Some(member) => member.group.inits(),
            None => vec![this],
        };
        let mut waited = WaitClock::new(start, &inits());
        // The elapsed time at which the run is stopped however much credit it has.
        let hard_wall = spec.limits.wall_time.map(|wall| wall * WALL_STRETCH);
        // An init that cannot take its run has failed or died: its report, if any, says why.
        if write_all(&run_write, &message).is_err() {
            kill_init();
        }
        drop(run_write);

        let limits = &spec.limits;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1) as u32;
        let mut limit_hit: Option<Termination> = None;
        let mut report_bytes = [0u8; Report::SIZE];
        let mut got = 0usize;
        let mut caller_gone = false;
        // An unreadable cgroup counter ends the run as a sandbox failure: a guess would turn
        // the CPU limit off or report a false peak.
        let fail = |e: anyhow::Error| -> Result<(Outcome, Exit)> {
            kill_init();
            let _ = nix::sys::wait::waitpid(init, None);
            Err(e)
        };
        loop {
            // Sleep until the report arrives, or until the earliest moment a limit could be hit.
            let mut wait = Duration::from_millis(500);
            if let (Some(wall), Some(hard)) = (limits.wall_time, hard_wall) {
                let elapsed = start.elapsed();
                let charged = elapsed.saturating_sub(waited.credit());
                wait = wait
                    .min(wall.saturating_sub(charged))
                    .min(hard.saturating_sub(elapsed));
            }
            if let Some(cpu) = limits.cpu_time {
                let used = match cgroup.cpu_time() {
                    Ok(used) => used,
                    Err(e) => return fail(e),
                };
                let left = cpu.saturating_sub(used);
                wait = wait.min((left / cores).max(Duration::from_millis(2)));
            }
            if let Some(period) = cgroup.memory_sample_period() {
                wait = wait.min(period);
            }
            let caller = spec.caller.as_deref().filter(|_| !caller_gone);
            let woken = poll_until(&report_read, caller, &mut sysinfo, Instant::now() + wait);
            if matches!(woken, Ok(Wake::CallerGone)) {
                // Nobody is left to take the outcome: the box goes, as it would with its caller.
                caller_gone = true;
                kill_init();
            }
            match woken.map(|w| w == Wake::Report) {
                Ok(true) => match nix::unistd::read(&report_read, &mut report_bytes[got..]) {
                    Ok(0) => break,
                    Ok(n) => {
                        got += n;
                        if got == Report::SIZE {
                            break;
                        }
                    }
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(_) => break,
                },
                Ok(false) => {}
                Err(e) => {
                    kill_init();
                    let _ = nix::sys::wait::waitpid(init, None);
                    bail!("poll failed: {e}");
                }
            }
            if let Err(e) = cgroup.sample_memory() {
                return fail(e);
            }
            if limit_hit.is_none() {
                let cpu_over = match limits.cpu_time {
                    Some(cpu) => match cgroup.cpu_time() {
                        Ok(used) => used > cpu,
                        Err(e) => return fail(e),
                    },
                    None => false,
                };
                if cpu_over {
                    limit_hit = Some(Termination::TimeLimit);
                } else if let (Some(wall), Some(hard)) = (limits.wall_time, hard_wall) {
                    // The wall limit charges only time the box did not spend waiting for a
                    // CPU (see `waiting`): a busy host does not turn a CPU-bound run into a
                    // wall-time verdict, a sleeper is charged in full. The credit stops at
                    // `WALL_STRETCH` × the limit: a program that waits for a CPU by choice (a
                    // lowered priority) cannot hold its box for as long as the host is busy.
                    // Sampled at every wake-up (at most every 500 ms), so that processes
                    // that end in between (a compiler's passes) keep most of their credit.
                    let now = Instant::now();
                    waited.sample(now, &inits());
                    let elapsed = now.saturating_duration_since(start);
                    if elapsed.saturating_sub(waited.credit()) >= wall || elapsed >= hard {
                        limit_hit = Some(Termination::WallTimeLimit);
                    }
                }
                if limit_hit.is_some() {
                    kill_init();
                }
            }
        }
        let wall_time = start.elapsed();
        drop(group);
        // The init reports once it has reaped the program. When no task of the cgroup is left
        // then (the program left no descendant behind), every measured task has exited and
        // been accounted, and the counters are final: the init's own exit (the teardown of its
        // namespaces) is reaped off the run's path, with the rest of the box. Otherwise the
        // init's exit kills whatever is left of the box, and once it is reaped the counters are
        // final. (Its mounts are held by the keeper's descriptor of the mount namespace: their
        // teardown is not here.)
        let exit = match got == Report::SIZE && !caller_gone && cgroup.is_empty() {
            true => Exit::Pending,
            false => {
                let _ = nix::sys::wait::waitpid(init, None);
                Exit::Reaped
            }
        };
        if caller_gone {
            bail!("the caller hung up during the run: its box was killed");
        }
        let report = if got == Report::SIZE {
            Report::decode(&report_bytes)
        } else {
            None
        };
        let stats = (|| -> Result<Stats> {
            Ok(Stats {
                cpu: cgroup.cpu_time()?,
                memory: cgroup.memory_peak()?,
                oom_kills: cgroup.oom_kills()?,
            })
        })();
        let stats = match (stats, exit) {
            (Ok(stats), _) => stats,
            // A failure is reported with the init reaped, as on every other failing path (and
            // never reaped twice: a pid once reaped may belong to another process).
            (Err(e), Exit::Pending) => return fail(e),
            (Err(e), Exit::Reaped) => return Err(e),
        };
        Ok((
            classify(report, limit_hit, &stats, wall_time, spec, mounts),
            exit,
        ))
    }
}

impl Builder {
    /// How many boxes to keep built ahead.
    pub(crate) fn ready_boxes(&self) -> usize {
        self.options.ready_boxes
    }

    /// The pool of network namespaces (as root).
    pub(crate) fn networks(&self) -> Option<&namespaces::NetworkPool> {
        self.networks.as_deref()
    }

    fn write_id_maps(&self, pid: i32, uid: Option<u32>) -> Result<()> {
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let write = |file: &str, content: &str| {
            std::fs::write(proc_dir.join(file), content)
                .with_context(|| format!("cannot write {file} of the sandbox ({content:?})"))
        };
        if let (true, Some(uid)) = (self.keeper_is_root, uid) {
            // The init stays root inside (it must create the mount points); the program becomes
            // INSIDE_ID, which is this run's own host uid, in the box group.
            // The box owner is mapped too (as INSIDE_ID + 1, which nothing inside runs as), so
            // that the init, root inside, may open the caller's files in box directories.
            write(
                "uid_map",
                &format!(
                    "0 0 1\n{INSIDE_ID} {uid} 1\n{} {} 1\n",
                    INSIDE_ID + 1,
                    self.range.first
                ),
            )?;
            write(
                "gid_map",
                &format!("0 0 1\n{INSIDE_ID} {} 1\n", self.range.first),
            )?;
        } else {
            write("setgroups", "deny")?;
            write(
                "uid_map",
                &format!("{INSIDE_ID} {} 1\n", nix::unistd::geteuid()),
            )?;
            write(
                "gid_map",
                &format!("{INSIDE_ID} {} 1\n", nix::unistd::getegid()),
            )?;
        }
        Ok(())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.housekeeper.stop();
        self.builder.cgroups.release();
    }
}

struct Stats {
    cpu: Duration,
    memory: u64,
    oom_kills: u64,
}

/// Decides the status: sandbox failures first, then memory (an OOM kill is never a runtime
/// error), CPU time over the limit (even if the program finished), the wall clock, the output
/// limit, signals and exit codes.
fn classify(
    report: Option<Report>,
    limit_hit: Option<Termination>,
    stats: &Stats,
    wall: Duration,
    spec: &RunSpec,
    mounts: &[&mounts::MountOp],
) -> Outcome {
    let mut out = Outcome {
        status: Termination::Ok,
        exit_code: None,
        signal: None,
        cpu_time: stats.cpu.as_secs_f64(),
        wall_time: wall.as_secs_f64(),
        memory: stats.memory,
        message: String::new(),
    };
    match report {
        Some(Report::SetupFailed { step, errno }) => {
            let what = step.describe(mounts);
            let err = std::io::Error::from_raw_os_error(errno);
            if step == Step::Exec {
                // A missing or non-executable program is the caller's command, not the sandbox.
                out.status = Termination::RuntimeError;
                out.exit_code = Some(127);
                out.message = format!("cannot execute {}: {err}", spec.argv[0]);
            } else {
                out.status = Termination::InternalError;
                out.message = format!("sandbox setup failed: cannot {what}: {err}");
            }
            return out;
        }
        Some(Report::Exited(code)) => out.exit_code = Some(code),
        Some(Report::Signaled(sig)) => out.signal = Some(sig),
        None if limit_hit.is_none() => {
            out.status = Termination::InternalError;
            out.message = "the sandbox init died without reporting".into();
            return out;
        }
        None => out.signal = Some(libc::SIGKILL),
    }
    let cpu_over = spec.limits.cpu_time.is_some_and(|cpu| stats.cpu > cpu);
    let memory_near = spec
        .limits
        .memory
        .is_some_and(|m| stats.memory >= m.saturating_sub(m / 50));
    let killed = out.signal == Some(libc::SIGKILL);
    (out.status, out.message) =
        if stats.oom_kills > 0 || (killed && memory_near && limit_hit.is_none()) {
            (
                Termination::MemoryLimit,
                format!("memory limit exceeded (peak {} bytes)", stats.memory),
            )
        } else if cpu_over || limit_hit == Some(Termination::TimeLimit) {
            (
                Termination::TimeLimit,
                format!("time limit exceeded ({:.3} s CPU)", stats.cpu.as_secs_f64()),
            )
        } else if limit_hit == Some(Termination::WallTimeLimit) {
            (
                Termination::WallTimeLimit,
                format!("wall time limit exceeded ({:.3} s)", wall.as_secs_f64()),
            )
        } else if out.signal == Some(libc::SIGXFSZ) {
            (Termination::OutputLimit, "output limit exceeded".into())
        } else if let Some(sig) = out.signal {
            (
                Termination::Signaled,
                format!("killed by signal {sig} ({})", crate::signal_name(sig)),
            )
        } else if out.exit_code != Some(0) {
            (
                Termination::RuntimeError,
                format!("exited with code {}", out.exit_code.unwrap_or(-1)),
            )
        } else {
            (Termination::Ok, "ok".into())
        };
    out
}

/// Clones an init on a thread of its own, which then waits, doing nothing, until the init is
/// reaped ([`InitMemory::release`] lets it go). An init shares the memory of the thread that
/// clones it, and so that thread's thread-local storage: the C library's `errno`, which the
/// init and its program read after their own failing calls (a `mkdir` that finds its folder,
/// an `execve` of a `PATH` candidate that does not exist). Each init on its own thread, no
/// other process or thread writes that `errno` meanwhile. The threads are kept for the next
/// inits (a thread is started only when none is free) and live as long as the process; an
/// init dies with its thread (`PR_SET_PDEATHSIG`): no init survives the keeper, even after a
/// crash.
fn clone_on_a_thread_of_its_own(
    memory: &mut InitMemory,
    network: Option<&namespaces::LentNetwork>,
) -> Result<i32> {
    let (answer, cloned) = std::sync::mpsc::sync_channel::<Result<i32>>(1);
    let (release, released) = std::sync::mpsc::channel::<()>();
    let job = CloneJob {
        memory,
        network: network.map(|network| network as *const _),
        answer,
        released,
    };
    let free = FREE_INIT_THREADS
        .lock()
        .ok()
        .and_then(|mut free| free.pop());
    let job = match free {
        Some(thread) => match thread.send(job) {
            Ok(()) => None,
            Err(std::sync::mpsc::SendError(job)) => Some(job),
        },
        None => Some(job),
    };
    if let Some(job) = job {
        let (thread, jobs) = std::sync::mpsc::channel::<CloneJob>();
        thread.send(job).ok();
        std::thread::Builder::new()
            .name("ioi-sandbox-init".into())
            .stack_size(64 << 10)
            .spawn(move || init_thread(thread, jobs))
            .context("cannot start a thread for a box's init")?;
    }
    let pid = cloned
        .recv()
        .map_err(|_| anyhow::anyhow!("the thread of a box's init stopped"))??;
    if let Some(parts) = memory.parts.as_mut() {
        parts.thread = Some(release);
    }
    Ok(pid)
}

/// An init to clone, for a thread of [`clone_on_a_thread_of_its_own`].
struct CloneJob {
    memory: *mut InitMemory,
    network: Option<*const namespaces::LentNetwork>,
    answer: std::sync::mpsc::SyncSender<Result<i32>>,
    /// Ends (its sender dropped) once the init is reaped.
    released: std::sync::mpsc::Receiver<()>,
}

// SAFETY: the pointers are used on the init's thread only before it answers, while the
// requester waits for the answer, holding what they point to.
unsafe impl Send for CloneJob {}

/// The threads whose last init is reaped, each ready to clone the next.
static FREE_INIT_THREADS: Mutex<Vec<std::sync::mpsc::Sender<CloneJob>>> = Mutex::new(Vec::new());

/// A thread of [`clone_on_a_thread_of_its_own`]: clones one init at a time, and waits until it
/// is reaped before it offers itself for the next.
fn init_thread(me: std::sync::mpsc::Sender<CloneJob>, jobs: std::sync::mpsc::Receiver<CloneJob>) {
    while let Ok(job) = jobs.recv() {
        // SAFETY: see `CloneJob`.
        let result = unsafe { clone_init(&mut *job.memory, job.network.map(|n| &*n)) };
        let alive = result.is_ok();
        let _ = job.answer.send(result);
        if alive {
            let _ = job.released.recv();
        }
        match FREE_INIT_THREADS.lock() {
            Ok(mut free) => free.push(me.clone()),
            Err(_) => return,
        }
    }
}

/// Clones the init into new user, pid, mount, ipc and uts namespaces, and into `network`
/// (lent from the pool) or a new network namespace. Returns the init's pid; the init itself
/// never returns from here.
fn clone_init(memory: &mut InitMemory, network: Option<&namespaces::LentNetwork>) -> Result<i32> {
    let new_network = if network.is_some() {
        0
    } else {
        libc::CLONE_NEWNET
    };
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNS
        | new_network
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    let parts = memory
        .parts
        .as_mut()
        .context("the init's memory is already released")?;
    // The stack grows down from the 16-byte aligned end of its buffer.
    let top = (parts.stack.as_mut_ptr() as usize + parts.stack.capacity()) & !15;
    let plan: *mut InitPlan = &mut parts.plan;
    // The calling thread enters the lent namespace just for the clone.
    let in_network = network.map(|n| n.enter()).transpose()?;
    // SAFETY: the child runs `init_main` on its own stack, sharing this memory: it only makes
    // raw system calls on the plan, which nothing else touches until the child is reaped (see
    // `InitMemory`), and never returns. No `atfork` handlers run.
    let pid = unsafe {
        libc::clone(
            init_entry,
            top as *mut libc::c_void,
            flags | libc::CLONE_VM | libc::SIGCHLD,
            plan.cast(),
        )
    };
    let errno = nix::errno::Errno::last();
    // Back to the keeper's own network namespace (the child never gets here).
    drop(in_network);
    if pid < 0 {
        bail!(
            "cannot create the namespaces of a run: {}",
            crate::host::namespace_failure(errno)
        );
    }
    Ok(pid)
}

extern "C" fn init_entry(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `plan` is the `InitPlan` of the init's memory, which stays allocated and
    // untouched by the keeper until this process is reaped.
    child::init_main(unsafe { &mut *plan.cast::<InitPlan>() })
}

/// Why [`poll_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// The report pipe is readable (or closed).
    Report,
    /// The caller's connection hung up (it sends nothing during a run).
    CallerGone,
    /// The deadline passed, or a signal came.
    Timeout,
}

/// Waits until the report pipe is readable, the caller hangs up or `deadline` passes,
/// answering the program's `sysinfo` calls meanwhile.
fn poll_until(
    report: &OwnedFd,
    caller: Option<&OwnedFd>,
    sysinfo: &mut Emulator,
    deadline: Instant,
) -> nix::Result<Wake> {
    loop {
        let now = Instant::now();
        let wake = match sysinfo.paused_until(now) {
            Some(resume) => resume.min(deadline),
            None => deadline,
        };
        let left = wake.saturating_duration_since(now);
        let timeout =
            PollTimeout::try_from(left.as_millis().max(1) as i32).unwrap_or(PollTimeout::MAX);
        let mut fds = vec![PollFd::new(report.as_fd(), PollFlags::POLLIN)];
        fds.extend(caller.map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN)));
        let listener = fds.len();
        fds.extend(sysinfo.fd(now).map(|fd| PollFd::new(fd, PollFlags::POLLIN)));
        match poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(Wake::Timeout),
            Err(e) => return Err(e),
        }
        let events = |fd: &PollFd| fd.revents().unwrap_or(PollFlags::empty());
        if !events(&fds[0]).is_empty() {
            return Ok(Wake::Report);
        }
        if caller.is_some() && !events(&fds[1]).is_empty() {
            return Ok(Wake::CallerGone);
        }
        let call = fds.get(listener).map(events).unwrap_or(PollFlags::empty());
        drop(fds);
        if !call.is_empty() {
            sysinfo.ready(call);
        }
        if Instant::now() >= deadline {
            return Ok(Wake::Timeout);
        }
    }
}

/// Writes all of `bytes` (a pipe takes a long message in parts, as the reader empties it).
fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> nix::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("cannot create a pipe")
}

/// How the init opens stream `index` (0 stdin, 1 stdout, 2 stderr). Host files are
/// [`StdioPlan::Hidden`]: bound into the box and opened from inside, so that the program cannot
/// learn their host path from `/proc/self/fd`.
fn stdio_plan(stdio: &Stdio, index: usize, new_root: &Path) -> Result<StdioPlan> {
    let input = index == 0;
    let hidden = |path: &Path, create: bool, flags: libc::c_int| -> Result<StdioPlan> {
        let inside = format!("/dev/.stdio{index}");
        // Absolute: the init resolves it in its own working directory, of the box's build.
        let path = std::path::absolute(path)
            .with_context(|| format!("cannot resolve {}", path.display()))?;
        let path = path.as_path();
        Ok(StdioPlan::Hidden {
            host: CString::new(path.as_os_str().as_bytes())
                .with_context(|| format!("path contains a NUL byte: {}", path.display()))?,
            create,
            target: CString::new(
                new_root
                    .join(inside.trim_start_matches('/'))
                    .as_os_str()
                    .as_bytes(),
            )?,
            inside: CString::new(inside)?,
            flags,
        })
    };
    let rw = if input {
        libc::O_RDONLY
    } else {
        libc::O_WRONLY
    };
    match stdio {
        Stdio::Null => Ok(StdioPlan::Open {
            path: CString::new("/dev/null")?,
            flags: rw,
        }),
        Stdio::Path(p) if input => hidden(p, false, libc::O_RDONLY),
        Stdio::Path(p) => hidden(p, true, libc::O_WRONLY | libc::O_TRUNC),
        Stdio::Append(p) => hidden(p, true, libc::O_WRONLY | libc::O_APPEND),
        Stdio::Existing(p) => hidden(p, false, rw),
        Stdio::Fd(fd) => {
            // SAFETY: isatty on a descriptor the caller keeps open for the run.
            if unsafe { libc::isatty(fd.as_raw_fd()) } == 1 {
                bail!("a terminal cannot be given to a box (a program could inject keystrokes into it): relay it through a pipe");
            }
            Ok(StdioPlan::Fd(fd.as_raw_fd()))
        }
    }
}

fn to_cstrings(items: impl IntoIterator<Item = impl Into<String>>) -> Result<Vec<CString>> {
    items
        .into_iter()
        .map(|s| CString::new(s.into()).context("argument or environment contains a NUL byte"))
        .collect()
}

/// Where to look for argv[0] inside the box: itself if it contains a `/`, else each `PATH`
/// directory (the lookup happens in the child, inside the new root).
fn exe_candidates(argv0: &str, path_var: &str) -> Result<Vec<CString>> {
    if argv0.contains('/') {
        return Ok(vec![CString::new(argv0)?]);
    }
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| {
            Ok(CString::new(format!(
                "{}/{argv0}",
                d.trim_end_matches('/')
            ))?)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    /// One way a run can end, and what it must be called.
    struct Row {
        name: &'static str,
        report: Option<Report>,
        limit_hit: Option<Termination>,
        cpu_ms: u64,
        memory_mib: u64,
        oom_kills: u64,
        expected: Termination,
        exit_code: Option<i32>,
        signal: Option<i32>,
        message: &'static str,
    }

    const fn row(name: &'static str, report: Option<Report>, expected: Termination) -> Row {
        Row {
            name,
            report,
            limit_hit: None,
            cpu_ms: 10,
            memory_mib: 1,
            oom_kills: 0,
            expected,
            exit_code: None,
            signal: None,
            message: "",
        }
    }

    /// Every way a run ends maps to its Termination (limits: 1 s CPU, 64 MiB): each row fails
    /// if its mapping changes.
    #[test]
    fn every_ending_is_classified() {
        use Report::*;
        use Termination as T;
        let kill = Some(Signaled(libc::SIGKILL));
        let rows = [
            Row {
                exit_code: Some(0),
                message: "ok",
                ..row("exit 0", Some(Exited(0)), T::Ok)
            },
            Row {
                exit_code: Some(3),
                message: "exited with code 3",
                ..row("exit 3", Some(Exited(3)), T::RuntimeError)
            },
            Row {
                signal: Some(libc::SIGSEGV),
                message: "SIGSEGV",
                ..row("segfault", Some(Signaled(libc::SIGSEGV)), T::Signaled)
            },
            Row {
                signal: Some(libc::SIGKILL),
                message: "killed by signal 9",
                ..row("killed, memory low", kill, T::Signaled)
            },
            Row {
                signal: Some(libc::SIGXFSZ),
                message: "output limit",
                ..row(
                    "file too large",
                    Some(Signaled(libc::SIGXFSZ)),
                    T::OutputLimit,
                )
            },
            Row {
                limit_hit: Some(T::TimeLimit),
                cpu_ms: 1100,
                signal: Some(libc::SIGKILL),
                message: "time limit exceeded (1.100 s CPU)",
                ..row("CPU limit, killed before reporting", None, T::TimeLimit)
            },
            Row {
                limit_hit: Some(T::TimeLimit),
                cpu_ms: 1100,
                signal: Some(libc::SIGKILL),
                message: "time limit",
                ..row("CPU limit, killed and reported", kill, T::TimeLimit)
            },
            Row {
                cpu_ms: 1200,
                exit_code: Some(0),
                message: "time limit",
                ..row(
                    "finished, but over the CPU limit",
                    Some(Exited(0)),
                    T::TimeLimit,
                )
            },
            Row {
                limit_hit: Some(T::WallTimeLimit),
                signal: Some(libc::SIGKILL),
                message: "wall time limit exceeded (2.000 s)",
                ..row("wall limit", None, T::WallTimeLimit)
            },
            Row {
                limit_hit: Some(T::WallTimeLimit),
                memory_mib: 63,
                signal: Some(libc::SIGKILL),
                message: "wall time",
                ..row(
                    "wall limit with memory near the limit",
                    kill,
                    T::WallTimeLimit,
                )
            },
            Row {
                oom_kills: 1,
                memory_mib: 64,
                signal: Some(libc::SIGKILL),
                message: "memory limit exceeded (peak 67108864 bytes)",
                ..row("OOM kill", kill, T::MemoryLimit)
            },
            Row {
                oom_kills: 1,
                exit_code: Some(1),
                message: "memory limit",
                ..row(
                    "a child OOM-killed, the parent exits 1",
                    Some(Exited(1)),
                    T::MemoryLimit,
                )
            },
            Row {
                oom_kills: 1,
                limit_hit: Some(T::TimeLimit),
                cpu_ms: 1100,
                signal: Some(libc::SIGKILL),
                message: "memory limit",
                ..row("OOM kill and CPU limit: memory first", kill, T::MemoryLimit)
            },
            Row {
                memory_mib: 63,
                signal: Some(libc::SIGKILL),
                message: "memory limit",
                ..row(
                    "killed at the memory limit, OOM not counted",
                    kill,
                    T::MemoryLimit,
                )
            },
            Row {
                exit_code: Some(127),
                message: "cannot execute ./prog",
                ..row(
                    "program cannot execute",
                    Some(SetupFailed {
                        step: Step::Exec,
                        errno: libc::ENOENT,
                    }),
                    T::RuntimeError,
                )
            },
            Row {
                message: "sandbox setup failed: cannot install the seccomp filter",
                ..row(
                    "setup failed",
                    Some(SetupFailed {
                        step: Step::Seccomp,
                        errno: libc::EINVAL,
                    }),
                    T::InternalError,
                )
            },
            Row {
                message: "the sandbox init died without reporting",
                ..row("init died without reporting", None, T::InternalError)
            },
        ];
        let mut spec = RunSpec::new("/nonexistent", ["./prog"]);
        spec.limits = Limits {
            cpu_time: Some(Duration::from_secs(1)),
            wall_time: Some(Duration::from_secs(2)),
            memory: Some(64 << 20),
            ..Limits::default()
        };
        for r in rows {
            let stats = Stats {
                cpu: Duration::from_millis(r.cpu_ms),
                memory: r.memory_mib << 20,
                oom_kills: r.oom_kills,
            };
            let o = classify(
                r.report,
                r.limit_hit,
                &stats,
                Duration::from_secs(2),
                &spec,
                &[],
            );
            assert_eq!(
                (o.status, o.exit_code, o.signal),
                (r.expected, r.exit_code, r.signal),
                "{}: {o:?}",
                r.name
            );
            assert!(
                o.message.contains(r.message),
                "{}: message {:?}",
                r.name,
                o.message
            );
        }
    }
}
