//! Work kept off a run's latency, on a thread of the sandbox's own:
//! - **ahead of need**: cgroups for the next runs (each is made for one run and removed after
//!   it, never reused: a new cgroup holds no charge, counter or peak) and a network namespace
//!   when the pool has none free;
//! - **after the outcome**: once a run's program and every process of its box have been
//!   reaped, the outcome is final and goes back to the caller at once; what is left — the
//!   init's exit, in which the kernel tears the box's mounts and namespaces down, the network
//!   namespace going back to the pool, the cgroup's removal — is finished here.
//!
//! The same work is done in the same order as before; it only moves to another thread. A run
//! whose cgroup is not empty when its outcome is known (a process outlived the program) is
//! finished by the caller as before, since its counters are not final until the init's exit
//! has killed the rest. The thread is stopped, and everything it still had to do finished,
//! when the [`crate::Sandbox`] is dropped; [`crate::abort_all`] kills and removes what it has
//! not finished yet (the init stays registered until it is reaped).

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;

use crate::cgroup::{CgroupRoot, RunCgroup};
use crate::namespaces::{LentNetwork, NetworkPool};

/// Cgroups kept ready: one per run that may start before the thread makes the next.
const SPARE_CGROUPS: usize = 2;

/// What remains of a run whose outcome is known while its init is still exiting. The run
/// stays registered for [`crate::abort_all`] until it is finished.
pub(crate) struct Leftover {
    pub init: i32,
    pub network: Option<LentNetwork>,
    pub cgroup: Arc<RunCgroup>,
}

impl Leftover {
    /// Reaps the init, returns the network namespace, removes the cgroup, and forgets the run.
    pub(crate) fn finish(self) {
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(self.init), None);
        drop(self.network);
        self.cgroup.remove();
        crate::keeper::forget(self.init);
    }
}

/// The spare cgroups of every housekeeper of the process, for [`remove_all_spares`].
static ALL_SPARES: Mutex<Vec<Weak<Mutex<Vec<RunCgroup>>>>> = Mutex::new(Vec::new());

/// Removes every spare cgroup of the process (on an interrupt, see [`crate::abort_all`]).
pub(crate) fn remove_all_spares() {
    let pools: Vec<_> = match ALL_SPARES.lock() {
        Ok(pools) => pools.iter().filter_map(Weak::upgrade).collect(),
        Err(_) => return,
    };
    for pool in pools {
        if let Ok(mut spares) = pool.lock() {
            for spare in spares.drain(..) {
                spare.remove();
            }
        }
    }
}

enum Chore {
    Finish(Leftover),
    Prepare,
}

/// The thread and what it has ready.
pub(crate) struct Housekeeper {
    root: CgroupRoot,
    chores: Mutex<Option<Sender<Chore>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    spares: Arc<Mutex<Vec<RunCgroup>>>,
}

impl Housekeeper {
    /// Starts the thread, which begins by preparing for the first run.
    pub(crate) fn start(root: CgroupRoot, networks: Option<Arc<NetworkPool>>) -> Housekeeper {
        let (chores, inbox) = channel::<Chore>();
        let spares: Arc<Mutex<Vec<RunCgroup>>> = Arc::default();
        if let Ok(mut all) = ALL_SPARES.lock() {
            all.retain(|pool| pool.strong_count() > 0);
            all.push(Arc::downgrade(&spares));
        }
        let thread = {
            let root = root.clone();
            let spares = spares.clone();
            std::thread::Builder::new()
                .name("ioi-sandbox-housekeeper".into())
                .spawn(move || {
                    for chore in inbox {
                        match chore {
                            Chore::Finish(leftover) => leftover.finish(),
                            Chore::Prepare => prepare(&root, &spares, networks.as_deref()),
                        }
                    }
                })
                .ok()
        };
        let housekeeper = Housekeeper {
            root,
            chores: Mutex::new(thread.is_some().then_some(chores)),
            thread: Mutex::new(thread),
            spares,
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

    /// A cgroup for a run about to start: a spare when one is ready, else a new one; either
    /// way the thread then makes another.
    pub(crate) fn cgroup(&self) -> anyhow::Result<RunCgroup> {
        let spare = self.spares.lock().ok().and_then(|mut s| s.pop());
        self.send(Chore::Prepare);
        match spare {
            Some(cgroup) => Ok(cgroup),
            None => self.root.create_spare(),
        }
    }

    /// Finishes what is left of a run on the thread (or here, when the thread is gone).
    pub(crate) fn finish(&self, leftover: Leftover) {
        if let Some(Chore::Finish(leftover)) = self.send(Chore::Finish(leftover)) {
            leftover.finish();
        }
    }

    /// Stops the thread after it has finished every run left to it; removes the spares.
    pub(crate) fn stop(&self) {
        if let Ok(mut chores) = self.chores.lock() {
            chores.take();
        }
        if let Some(thread) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = thread.join();
        }
        if let Ok(mut spares) = self.spares.lock() {
            for spare in spares.drain(..) {
                spare.remove();
            }
        }
    }
}

/// Tops the spare cgroups and the free network namespaces up. A failure here is not reported:
/// the run that needs one makes it itself, and reports the failure then.
fn prepare(root: &CgroupRoot, spares: &Mutex<Vec<RunCgroup>>, networks: Option<&NetworkPool>) {
    let ready = spares.lock().map_or(SPARE_CGROUPS, |s| s.len());
    if ready < SPARE_CGROUPS {
        if let Ok(cgroup) = root.create_spare() {
            match spares.lock() {
                Ok(mut spares) => spares.push(cgroup),
                Err(_) => cgroup.remove(),
            }
        }
    }
    if let Some(networks) = networks {
        let _ = networks.top_up();
    }
}
