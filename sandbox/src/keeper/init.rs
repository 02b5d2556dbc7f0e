//! The init's threads and memory: an init is cloned sharing the keeper's address space, on a
//! thread of its own, and what it runs on ([`InitMemory`]) stays allocated until it is reaped.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use nix::sched::{setns, unshare, CloneFlags};

use super::Builder;
use crate::child::{self, InitPlan};
use crate::namespaces;

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
    pub(super) parts: Option<Box<InitParts>>,
}

pub(super) struct InitParts {
    pub(super) plan: InitPlan,
    /// The init's own stack.
    pub(super) stack: Vec<u8>,
    /// The program's stack between its clone and its execve (see `child::spawn_program`):
    /// held, the plan points into it.
    pub(super) _program_stack: Vec<u8>,
    /// What the plan's mounts point into.
    pub(super) _builder: Arc<Builder>,
    /// Dropped, ends the thread the init was cloned from (see
    /// [`clone_on_a_thread_of_its_own`]).
    pub(super) thread: Option<std::sync::mpsc::Sender<()>>,
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

/// Clones an init on a thread of its own, which then waits, doing nothing, until the init is
/// reaped ([`InitMemory::release`] lets it go). An init shares the memory of the thread that
/// clones it, and so that thread's thread-local storage: the C library's `errno`, which the
/// init and its program read after their own failing calls (a `mkdir` that finds its folder,
/// an `execve` of a `PATH` candidate that does not exist). Each init on its own thread, no
/// other process or thread writes that `errno` meanwhile. The threads are kept for the next
/// inits (a thread is started only when none is free) until the sandbox is idle
/// ([`let_free_threads_go`]); an init dies with its thread (`PR_SET_PDEATHSIG`): no init
/// survives the keeper, even after a crash.
pub(super) fn clone_on_a_thread_of_its_own(
    memory: &mut InitMemory,
    network: Option<&namespaces::LentNetwork>,
    mounts: Option<Arc<OwnedFd>>,
) -> Result<i32> {
    let (answer, cloned) = std::sync::mpsc::sync_channel::<Result<i32>>(1);
    let (release, released) = std::sync::mpsc::channel::<()>();
    let job = CloneJob {
        memory,
        network: network.map(|network| network as *const _),
        mounts,
        answer,
        released,
    };
    let free = FREE_INIT_THREADS
        .lock()
        .ok()
        .and_then(|mut free| free.pop());
    let job = match free {
        Some(thread) => match thread.send(Some(job)) {
            Ok(()) => None,
            Err(std::sync::mpsc::SendError(job)) => job,
        },
        None => Some(job),
    };
    if let Some(job) = job {
        let (thread, jobs) = std::sync::mpsc::channel::<Option<CloneJob>>();
        thread.send(Some(job)).ok();
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
    /// The mount namespace the box's is copied from (see `mount_template`), entered by the
    /// thread for the clone; `None`: the thread's own.
    mounts: Option<Arc<OwnedFd>>,
    answer: std::sync::mpsc::SyncSender<Result<i32>>,
    /// Ends (its sender dropped) once the init is reaped.
    released: std::sync::mpsc::Receiver<()>,
}

// SAFETY: the pointers are used on the init's thread only before it answers, while the
// requester waits for the answer, holding what they point to.
unsafe impl Send for CloneJob {}

/// A thread of [`clone_on_a_thread_of_its_own`], by the channel of its jobs (`None` lets it go).
type InitThread = std::sync::mpsc::Sender<Option<CloneJob>>;

/// The threads whose last init is reaped, each ready to clone the next.
static FREE_INIT_THREADS: Mutex<Vec<InitThread>> = Mutex::new(Vec::new());

/// Ends the threads that wait for an init to clone: as many as the most boxes that were alive
/// at once, which an idle sandbox need not keep (starting one again costs tens of
/// microseconds).
pub(super) fn let_free_threads_go() {
    let free = match FREE_INIT_THREADS.lock() {
        Ok(mut free) => std::mem::take(&mut *free),
        Err(_) => return,
    };
    for thread in free {
        let _ = thread.send(None);
    }
}

/// A thread of [`clone_on_a_thread_of_its_own`]: clones one init at a time, and waits until it
/// is reaped before it offers itself for the next.
fn init_thread(me: InitThread, jobs: std::sync::mpsc::Receiver<Option<CloneJob>>) {
    // Its own root and working directory, so that it may enter another mount namespace (which
    // a thread sharing them with the process may not) without moving the process's; and the
    // namespace it comes back to after each clone, so that it holds no template (and the host
    // file systems a template holds busy) while it waits.
    let own = unshare(CloneFlags::CLONE_FS)
        .context("cannot give the thread of a box's init a root of its own")
        .and_then(|()| {
            std::fs::File::open("/proc/thread-self/ns/mnt")
                .context("cannot open the thread's mount namespace")
        });
    while let Ok(Some(job)) = jobs.recv() {
        let entered = match (&job.mounts, &own) {
            (Some(mounts), Ok(_)) => setns(mounts.as_fd(), CloneFlags::CLONE_NEWNS)
                .context("cannot enter the boxes' mount template"),
            (Some(_), Err(e)) => Err(anyhow::anyhow!("{e:#}")),
            (None, _) => Ok(()),
        };
        // SAFETY: see `CloneJob`.
        let result = entered
            .and_then(|()| unsafe { clone_init(&mut *job.memory, job.network.map(|n| &*n)) });
        if let (Some(_), Ok(own)) = (&job.mounts, &own) {
            if let Err(e) = setns(own.as_fd(), CloneFlags::CLONE_NEWNS) {
                // A thread left in a template would clone the next init from it, whatever
                // that init's job says: better to stop.
                panic!("cannot return to the keeper's mount namespace: {e}");
            }
        }
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
