//! Work kept off a run's latency, on a thread of the sandbox's own:
//! - **ahead of need**: boxes built as far as they go without their run (see `handover`: the
//!   cgroup, a uid, a network namespace, the init in its namespaces with the common part of
//!   the root), a spare cgroup for a box built on demand, and a network namespace when the
//!   pool has none free. Each box and memory cgroup is used by one run only, then removed
//!   (v1's `cpuacct` and `pids` cgroups are reset and reused, see `cgroup`).
//! - **after the outcome**: the keeper reads the counters once every task of the run's cgroup
//!   has exited and been accounted (the init reports after it reaped the program; when tasks
//!   are left, the keeper reaps the init first, whose exit kills them). It holds a descriptor of
//!   the box's mount namespace, so that the init's exit does not tear the box's mounts down.
//!   The reaping of an init still exiting, the uid's return, that teardown (closing the
//!   descriptor), the network namespace's return to the pool and the cgroup's removal are done
//!   here.
//! - **when idle** (no chore for [`MAX_AGE`]): the threads that clone inits and the network
//!   namespaces of the pool beyond one, which the busiest moments left, are given back.
//!
//! What runs leave is finished here up to [`MAX_UNFINISHED`] at a time: past it, a run finishes
//! its own. Each leftover holds a uid of the host's shared range, a descriptor and a cgroup, and
//! one thread finishes a few hundred a second at most (closing a box's mount namespace waits for
//! an RCU grace period): many runs at once would otherwise pile up leftovers faster than the
//! thread finishes them, until every uid of the range is held.
//!
//! The work is the same as when a run does it all itself; it only moves to another thread. A
//! box built ahead sees the host's mounts as they were when it was built: when the host's
//! mount table changes (a mount or unmount anywhere), boxes built before are discarded unused,
//! and no box waits more than [`MAX_AGE`]. The thread is stopped, and everything it still had
//! to do finished, when the [`crate::Sandbox`] is dropped; [`crate::abort_all`] kills and
//! removes what it has not finished yet (every init stays registered until it is reaped).

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::cgroup::RunCgroup;
use crate::keeper::{Builder, Prepared};
use crate::namespaces::LentNetwork;
use crate::uids::UidLease;

/// What remains of a run once its outcome is known: its init if it is still exiting, its uid,
/// the box's mount namespace (held by a descriptor, so that the init's exit does not tear it
/// down), its network namespace and its (empty) cgroup.
pub(crate) struct Leftover {
    /// The init, when the outcome was known before its exit was reaped (see `Builder::watch`).
    pub exiting_init: Option<i32>,
    /// What the init ran on, released once it is reaped.
    pub memory: crate::keeper::InitMemory,
    /// The box's uid, held until no process of the box is left.
    pub lease: Option<UidLease>,
    pub mount_ns: Option<OwnedFd>,
    pub network: Option<LentNetwork>,
    pub cgroup: Arc<RunCgroup>,
}

/// The cgroups of leftovers not finished yet, for [`remove_leftover_cgroups`].
static LEFTOVER_CGROUPS: Mutex<Vec<Arc<RunCgroup>>> = Mutex::new(Vec::new());

/// Removes the cgroups of every leftover not finished yet (on an interrupt or at exit, see
/// [`crate::abort_all`]); they are empty.
pub(crate) fn remove_leftover_cgroups() {
    let cgroups: Vec<_> = match LEFTOVER_CGROUPS.lock() {
        Ok(mut all) => all.drain(..).collect(),
        Err(_) => return,
    };
    for cgroup in cgroups {
        cgroup.remove();
    }
}

impl Leftover {
    /// Reaps the init if it is still exiting and returns the uid; tears the box's mounts down
    /// (the last reference to its mount namespace), returns the network namespace, removes the
    /// cgroup.
    pub(crate) fn finish(self) {
        match self.exiting_init {
            Some(init) => {
                if nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(init), None).is_ok() {
                    self.memory.release();
                }
                crate::keeper::forget(init);
            }
            // Reaped by the run.
            None => self.memory.release(),
        }
        drop(self.lease);
        drop(self.mount_ns);
        drop(self.network);
        self.cgroup.remove();
        if let Ok(mut all) = LEFTOVER_CGROUPS.lock() {
            all.retain(|c| !Arc::ptr_eq(c, &self.cgroup));
        }
    }
}

/// What a housekeeper has ready.
#[derive(Default)]
struct Ready {
    boxes: Vec<Prepared>,
    cgroups: Vec<RunCgroup>,
    /// A box is being built on the thread (a run that finds none ready waits for it rather
    /// than build a second one beside it).
    building: bool,
}

/// [`Ready`], and its changes.
#[derive(Default)]
struct Shelf {
    ready: Mutex<Ready>,
    changed: Condvar,
    /// How many changes of the host's mount table runs have noticed (raised under the `ready`
    /// lock): a box whose build began at an older count may predate a change that was noticed
    /// while it was being built, when no discard could reach it, so it is never shelved.
    mounts_generation: AtomicU64,
}

/// The longest a box waits for its run. Besides the mount table, which is watched, a box keeps
/// what the host was like when it was built (the inodes of the `/etc` files it binds, which a
/// package manager replaces by renaming), and its init holds a uid, a cgroup and its reserved
/// memory: so boxes are not kept long. A busy sandbox uses them within milliseconds; an idle
/// one lets them go.
const MAX_AGE: Duration = Duration::from_secs(2);

/// The longest a run waits for the box being built before building its own.
const WAIT_FOR_BUILDING: Duration = Duration::from_millis(20);

impl Ready {
    /// Discards the boxes older than `age` (all of them with zero).
    fn expire(&mut self, age: Duration) {
        let (old, young): (Vec<Prepared>, Vec<Prepared>) =
            self.boxes.drain(..).partition(|b| b.age() >= age);
        self.boxes = young;
        for prepared in old {
            prepared.discard();
        }
    }

    /// Discards the boxes and the spare cgroups.
    fn discard(&mut self) {
        self.expire(Duration::ZERO);
        for cgroup in self.cgroups.drain(..) {
            cgroup.remove();
        }
    }
}

/// What every housekeeper of the process has ready, for [`discard_everything_ready`].
static ALL_READY: Mutex<Vec<Weak<Shelf>>> = Mutex::new(Vec::new());

/// Discards every box and cgroup made ahead in the process (on an interrupt, see
/// [`crate::abort_all`]).
pub(crate) fn discard_everything_ready() {
    let all: Vec<_> = match ALL_READY.lock() {
        Ok(all) => all.iter().filter_map(Weak::upgrade).collect(),
        Err(_) => return,
    };
    for shelf in all {
        if let Ok(mut ready) = shelf.ready.lock() {
            ready.discard();
        }
    }
}

enum Chore {
    Finish(Leftover),
    Prepare,
}

/// Leftovers the thread may have waiting at once; a run past it finishes its own.
pub const MAX_UNFINISHED: usize = 32;

/// The thread and what it has ready.
pub(crate) struct Housekeeper {
    builder: Arc<Builder>,
    chores: Mutex<Option<Sender<Chore>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    shelf: Arc<Shelf>,
    /// Leftovers sent to the thread and not finished yet.
    unfinished: Arc<AtomicUsize>,
    /// The most that were at once.
    most_unfinished: AtomicUsize,
    /// `/proc/self/mountinfo`, which polls as changed once the host's mount table changes.
    mounts: Mutex<Option<File>>,
}

impl Housekeeper {
    /// Starts the thread, which begins by preparing for the first runs.
    pub(crate) fn start(builder: Arc<Builder>) -> Housekeeper {
        let (chores, inbox) = channel::<Chore>();
        let shelf: Arc<Shelf> = Arc::default();
        if let Ok(mut all) = ALL_READY.lock() {
            all.retain(|r| r.strong_count() > 0);
            all.push(Arc::downgrade(&shelf));
        }
        let unfinished = Arc::new(AtomicUsize::new(0));
        let thread = {
            let builder = builder.clone();
            let shelf = shelf.clone();
            let unfinished = unfinished.clone();
            std::thread::Builder::new()
                .name("ioi-sandbox-housekeeper".into())
                .spawn(move || loop {
                    // Woken at least every MAX_AGE to throw away boxes nobody took.
                    match inbox.recv_timeout(MAX_AGE) {
                        Ok(Chore::Finish(leftover)) => {
                            leftover.finish();
                            unfinished.fetch_sub(1, Ordering::SeqCst);
                        }
                        Ok(Chore::Prepare) => prepare(&builder, &shelf),
                        // Nothing to do for MAX_AGE: what bursts made is given back.
                        Err(RecvTimeoutError::Timeout) => crate::keeper::release_idle(&builder),
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                    if let Ok(mut ready) = shelf.ready.lock() {
                        ready.expire(MAX_AGE);
                    }
                })
                .ok()
        };
        let housekeeper = Housekeeper {
            builder,
            chores: Mutex::new(thread.is_some().then_some(chores)),
            thread: Mutex::new(thread),
            shelf,
            unfinished,
            most_unfinished: AtomicUsize::new(0),
            mounts: Mutex::new(File::open("/proc/self/mountinfo").ok()),
        };
        housekeeper.send(Chore::Prepare);
        housekeeper
    }

    /// Sends a chore; returns it when the thread cannot take it (not started, or stopped).
    fn send(&self, chore: Chore) -> Option<Chore> {
        let Ok(chores) = self.chores.lock() else {
            return Some(chore);
        };
        match chores.as_ref() {
            Some(sender) => sender.send(chore).err().map(|e| e.0),
            None => Some(chore),
        }
    }

    /// A box built ahead for a run about to start, if one is ready and the host's mounts have
    /// not changed since. The shelf is topped up when the run is over (see
    /// [`Housekeeper::finish`]), so that building the next box does not take a CPU from this
    /// run; at once only when no box is left for the next run.
    pub(crate) fn prepared(&self) -> Option<Prepared> {
        let changed = self.mounts_changed();
        let mut shelf_empty = true;
        let prepared = self.shelf.ready.lock().ok().and_then(|mut ready| {
            if changed {
                tracing::debug!(
                    discarded = ready.boxes.len(),
                    "the host's mount table changed: the boxes built ahead are built again"
                );
                self.shelf.mounts_generation.fetch_add(1, Ordering::SeqCst);
                ready.expire(Duration::ZERO); // boxes only: a cgroup does not see mounts
            }
            if ready.boxes.is_empty() && ready.building && !changed {
                ready = self
                    .shelf
                    .changed
                    .wait_timeout_while(ready, WAIT_FOR_BUILDING, |r| {
                        r.boxes.is_empty() && r.building
                    })
                    .ok()?
                    .0;
            }
            // A box whose init died while it waited would fail its run, and an old box shows
            // the host as it was: built anew instead.
            ready.expire(MAX_AGE);
            // The oldest first: its init has had the longest to build the common part of its
            // box (it is shelved once cloned, and builds that part on its own).
            while !ready.boxes.is_empty() {
                let prepared = ready.boxes.remove(0);
                if !prepared.exited() {
                    shelf_empty = ready.boxes.is_empty();
                    return Some(prepared);
                }
                prepared.discard();
            }
            None
        });
        if shelf_empty {
            self.send(Chore::Prepare);
        }
        prepared
    }

    /// Whether the host's mount table changed since the last call (then the boxes built
    /// before do not see it as it is).
    fn mounts_changed(&self) -> bool {
        let Ok(mut mounts) = self.mounts.lock() else {
            return true;
        };
        let Some(file) = mounts.as_ref() else {
            return true;
        };
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLPRI)];
        let changed = !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0));
        if changed {
            // A new descriptor reports only the changes after it was opened.
            *mounts = File::open("/proc/self/mountinfo").ok();
        }
        changed
    }

    /// How many boxes built ahead wait for a run.
    pub(crate) fn ready(&self) -> usize {
        self.shelf.ready.lock().map_or(0, |ready| ready.boxes.len())
    }

    /// A cgroup for a box built on demand: a spare when one is ready, else a new one.
    pub(crate) fn cgroup(&self) -> anyhow::Result<RunCgroup> {
        let spare = self
            .shelf
            .ready
            .lock()
            .ok()
            .and_then(|mut r| r.cgroups.pop());
        match spare {
            Some(cgroup) => Ok(cgroup),
            None => self.builder.cgroups.create_spare(),
        }
    }

    /// Tops the shelf up for the next runs, then finishes what is left of a run, on the thread
    /// (or here, when the thread is gone).
    pub(crate) fn finish(&self, leftover: Leftover) {
        if let Ok(mut all) = LEFTOVER_CGROUPS.lock() {
            all.push(leftover.cgroup.clone());
        }
        self.send(Chore::Prepare);
        let taken = self
            .unfinished
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_UNFINISHED).then_some(n + 1)
            });
        let Ok(before) = taken else {
            // The thread has enough waiting: this run finishes its own.
            leftover.finish();
            return;
        };
        self.most_unfinished.fetch_max(before + 1, Ordering::SeqCst);
        if let Some(Chore::Finish(leftover)) = self.send(Chore::Finish(leftover)) {
            self.unfinished.fetch_sub(1, Ordering::SeqCst);
            leftover.finish();
        }
    }

    /// The most leftovers that waited for the thread at once (at most [`MAX_UNFINISHED`]).
    pub(crate) fn most_unfinished(&self) -> usize {
        self.most_unfinished.load(Ordering::SeqCst)
    }

    /// Stops the thread after it has finished every run left to it; discards what it had
    /// ready.
    pub(crate) fn stop(&self) {
        if let Ok(mut chores) = self.chores.lock() {
            chores.take();
        }
        if let Some(thread) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = thread.join();
        }
        if let Ok(mut ready) = self.shelf.ready.lock() {
            ready.discard();
        }
    }
}

/// Tops up the ready boxes, the spare cgroups and the free network namespaces. A failure
/// here is not reported: the run that needs one builds it itself, and reports the failure.
fn prepare(builder: &Arc<Builder>, shelf: &Shelf) {
    if crate::keeper::aborted() {
        return;
    }
    let wanted = shelf.ready.lock().map_or(None, |mut ready| {
        // A spare cgroup too, for a box built on demand, when boxes are built ahead at all.
        let ahead = builder.ready_boxes();
        let wanted = (
            ready.boxes.len() < ahead,
            ready.cgroups.len() < ahead.min(1),
        );
        ready.building = wanted.0;
        Some(wanted)
    });
    let Some((boxes, cgroups)) = wanted else {
        return;
    };
    if boxes {
        // Read before the init is cloned: its view of the host's mounts is at least as recent.
        let generation = shelf.mounts_generation.load(Ordering::SeqCst);
        let prepared = builder
            .cgroups
            .create_spare()
            .and_then(|cgroup| builder.prepare(cgroup, &[]));
        match shelf.ready.lock() {
            Ok(mut ready) => {
                match prepared {
                    Ok(prepared)
                        if shelf.mounts_generation.load(Ordering::SeqCst) != generation =>
                    {
                        prepared.discard()
                    }
                    Ok(prepared) => ready.boxes.push(prepared),
                    Err(error) => tracing::debug!(
                        error = format!("{error:#}"),
                        "a box built ahead failed: the next run builds its own"
                    ),
                }
                ready.building = false;
            }
            Err(_) => {
                if let Ok(prepared) = prepared {
                    prepared.discard();
                }
            }
        }
        shelf.changed.notify_all();
    }
    if cgroups {
        if let Ok(cgroup) = builder.cgroups.create_spare() {
            match shelf.ready.lock() {
                Ok(mut ready) => ready.cgroups.push(cgroup),
                Err(_) => cgroup.remove(),
            }
        }
    }
    if let Some(networks) = builder.networks() {
        let _ = networks.top_up();
    }
}
