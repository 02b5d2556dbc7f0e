//! Building a box: the host facts every box shares ([`Builder`]), a box built as far as it goes
//! without its run ([`Prepared`]: cgroup, uid, network namespace, init cloned and its id maps
//! written), and the run's own part of the box (streams, mounts, limits, command) that the
//! init receives when the run starts.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::init::{clone_on_a_thread_of_its_own, InitMemory, InitParts};
use super::{aborted, active, forget};
use crate::cgroup::{self, CgroupRoot, RunCgroup};
use crate::child::{self, InitPlan};
use crate::handover::{self, Inbox, RunParts, StdioPlan};
use crate::mount_template::MountTemplate;
use crate::mounts::{self, MountOp};
use crate::namespaces;
use crate::sysinfo;
use crate::uids::{UidLease, UidPool, UidRange};
use crate::{rlimits, seccomp, RunSpec, SandboxOptions, Stdio};

/// What building a box needs: the host facts, shared by the runs and the housekeeper thread
/// that builds boxes ahead of need.
pub(crate) struct Builder {
    pub(crate) cgroups: CgroupRoot,
    /// The mounts every box starts with (the same for every box: made once).
    pub(super) base: Vec<MountOp>,
    /// The same for a box copied from the mount template, whose common part is made there.
    pub(super) base_on_template: Vec<MountOp>,
    pub(super) filters: Arc<seccomp::Filters>,
    pub(super) root_mountpoint: PathBuf,
    /// The folder of `root_mountpoint` and of the mount template's skeleton, removed with the
    /// builder (see `keeper::mount_points`).
    pub(super) _mount_points: tempfile::TempDir,
    pub(super) options: SandboxOptions,
    pub(super) keeper_is_root: bool,
    pub(super) networks: Option<Arc<namespaces::NetworkPool>>,
    /// What a box's mount namespace is copied from (root only; see `mount_template`).
    pub(super) mount_template: Option<MountTemplate>,
    /// Host uids for runs (root only).
    pub(super) uids: Option<UidPool>,
    pub(super) range: UidRange,
    /// Boxes built so far, ahead of need or on demand (see [`super::Sandbox::boxes_built`]).
    pub(super) built: std::sync::atomic::AtomicU64,
}

/// A box built as far as it goes without its run (see `handover`): its init waits for the
/// run's message. Used by one run, or discarded.
pub(crate) struct Prepared {
    pub(super) pid: i32,
    pub(super) run_write: OwnedFd,
    pub(super) report_read: OwnedFd,
    /// The keeper's end of the socket on which the program sends its `sysinfo` listener.
    pub(super) sysinfo_socket: OwnedFd,
    pub(super) cgroup: Arc<RunCgroup>,
    /// Held until no process of the box is left: no other box on the host runs as this uid
    /// meanwhile.
    pub(super) lease: Option<UidLease>,
    pub(super) network: Option<namespaces::LentNetwork>,
    /// The box's mount namespace: held, the init's exit does not tear the box's mounts down
    /// (the housekeeper does, when this is closed).
    pub(super) mount_ns: Option<OwnedFd>,
    /// What the init runs on, released once it is reaped.
    pub(super) memory: InitMemory,
    pub(super) built: Instant,
    /// Whether the box was copied from the mount template (its common mounts are then
    /// [`Builder::base_on_template`]'s).
    pub(super) on_template: bool,
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

/// The init's ends of the pipes and socket of a box, and the cgroup's `procs` it joins: the
/// keeper's copies are closed once the init is cloned.
struct InitEnds {
    go_read: OwnedFd,
    run_read: OwnedFd,
    report_write: OwnedFd,
    program_socket: OwnedFd,
    procs: Vec<OwnedFd>,
}

/// Inside the namespaces the program is always this uid/gid.
pub(super) const INSIDE_ID: u32 = mounts::INSIDE_UID;

impl Builder {
    /// Builds a box as far as it goes without its run: the cgroup (its limits are the run's),
    /// a uid, a network namespace, the init cloned into its namespaces with the descriptors
    /// `fds` of the caller kept open, its id maps written; the init then builds the common
    /// part of the box and waits for the run.
    pub(crate) fn prepare(self: &Arc<Self>, cgroup: RunCgroup, fds: &[i32]) -> Result<Prepared> {
        let cgroup = Arc::new(cgroup);
        let prepared = self.clone_box(&cgroup, fds).and_then(|(prepared, go)| {
            if aborted() {
                prepared.discard();
                bail!("the sandbox is shutting down");
            }
            match self.start_init(&prepared, go) {
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
        });
        if prepared.is_err() {
            cgroup.remove();
        }
        prepared
    }

    /// Clones the box's init, held before its start: returns the box and the pipe that starts
    /// the init.
    fn clone_box(
        self: &Arc<Self>,
        cgroup: &Arc<RunCgroup>,
        fds: &[i32],
    ) -> Result<(Prepared, OwnedFd)> {
        let lease = self.uids.as_ref().map(|pool| pool.lease()).transpose()?;
        // A pooled network namespace when possible (see `namespaces`), else a fresh one;
        // back to the pool only when the init is reaped.
        let network = self.networks.as_ref().map(|pool| pool.lend()).transpose()?;
        let procs = cgroup.open_procs()?;
        let (go_read, go_write) = pipe()?;
        let (run_read, run_write) = pipe()?;
        let (report_read, report_write) = pipe()?;
        let (sysinfo_socket, program_socket) = sysinfo::socket_pair()?;
        let ends = InitEnds {
            go_read,
            run_read,
            report_write,
            program_socket,
            procs,
        };
        let (mounts, on_template) = match &self.mount_template {
            Some(template) => {
                let (namespace, is_template) = template.for_clone();
                (Some(namespace), is_template)
            }
            None => (None, false),
        };
        let mut memory = self.init_memory(&ends, fds, on_template)?;
        let pid = match clone_on_a_thread_of_its_own(&mut memory, network.as_ref(), mounts) {
            Ok(pid) => pid,
            Err(e) => {
                // No init runs on it.
                memory.release();
                return Err(e);
            }
        };
        // The init has its own descriptor table; the keeper's copies would keep the pipes open.
        drop(ends);
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
            on_template,
        };
        Ok((prepared, go_write))
    }

    /// What an init runs on: its plan, keeping the descriptors `ends` and `fds` of the
    /// caller, and the stacks of the init and of the program until its execve; the box's
    /// common part is bound from the mount template's when it is copied from it.
    fn init_memory(
        self: &Arc<Self>,
        ends: &InitEnds,
        fds: &[i32],
        on_template: bool,
    ) -> Result<InitMemory> {
        // Not zeroed: only the child writes a stack, before it reads it, and zeroing would
        // fault in pages that are never used.
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
            ends.go_read.as_raw_fd(),
            ends.run_read.as_raw_fd(),
            ends.report_write.as_raw_fd(),
            ends.program_socket.as_raw_fd(),
        ];
        keep_fds.extend(cgroup::raw(&ends.procs));
        keep_fds.extend(fds);
        keep_fds.sort_unstable();
        let plan = InitPlan {
            go_read: ends.go_read.as_raw_fd(),
            run_read: ends.run_read.as_raw_fd(),
            report_write: ends.report_write.as_raw_fd(),
            keep_fds,
            mounts: match on_template {
                true => &self.base_on_template,
                false => &self.base,
            }
            .iter()
            .map(MountOp::step)
            .collect(),
            mounts_private: on_template,
            new_root: CString::new(self.root_mountpoint.as_os_str().as_bytes())?,
            stdio_stage: CString::new(
                self.root_mountpoint
                    .join(child::STDIO_STAGE.to_str()?.trim_start_matches('/'))
                    .as_os_str()
                    .as_bytes(),
            )?,
            cgroup_procs: cgroup::raw(&ends.procs),
            uid: INSIDE_ID,
            gid: INSIDE_ID,
            clear_groups: self.keeper_is_root,
            seccomp: self.filters.clone(),
            sysinfo_socket: ends.program_socket.as_raw_fd(),
            program_stack: program_stack.as_mut_ptr(),
            program_stack_len: program_stack.capacity(),
            inbox: Inbox::new(),
        };
        Ok(InitMemory {
            parts: Some(Box::new(InitParts {
                plan,
                stack,
                _program_stack: program_stack,
                _builder: self.clone(),
                thread: None,
            })),
        })
    }

    /// Writes the id maps of a cloned init and lets it build the common part of its box.
    fn start_init(&self, prepared: &Prepared, go: OwnedFd) -> Result<()> {
        self.write_id_maps(prepared.pid, prepared.lease.as_ref().map(|l| l.uid))?;
        nix::unistd::write(&go, b"g")
            .map(drop)
            .context("cannot start the sandbox init")
    }

    /// The run's own part of its box.
    pub(super) fn run_parts(&self, spec: &RunSpec) -> Result<RunParts> {
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

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("cannot create a pipe")
}

/// How the init opens stream `index` (0 stdin, 1 stdout, 2 stderr). Host files are
/// [`StdioPlan::Hidden`]: bound into the box and opened from inside, so that the program cannot
/// learn their host path from `/proc/self/fd`.
fn stdio_plan(stdio: &Stdio, index: usize, new_root: &Path) -> Result<StdioPlan> {
    let input = index == 0;
    let hidden = |path: &Path, create: bool, flags: libc::c_int| -> Result<StdioPlan> {
        let inside = format!("{}/{index}", child::STDIO_STAGE.to_str()?);
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
