//! Network namespaces, pooled. A new network namespace is cheap to create but expensive to
//! destroy: the kernel tears it down in a worker thread (about 2 ms of CPU per run here),
//! competing with the runs for the cores. As root, the keeper keeps a pool of empty network
//! namespaces and lends one to each run: concurrent runs never share one, and reuse is safe
//! because the namespaces belong to the host's user namespace, in which a box holds no
//! capability (it cannot configure them), and their only state, the unix sockets of a box,
//! dies with the box.
//!
//! The keeper thread enters the lent namespace just for the `clone` of the init (a thread's
//! network namespace is its own), so the init starts in it, and then returns to its own.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use nix::sched::{setns, unshare, CloneFlags};

/// Empty network namespaces waiting to be lent.
pub(crate) struct NetworkPool {
    free: Mutex<Vec<OwnedFd>>,
}

/// A network namespace lent to one run; back to the pool when dropped.
pub(crate) struct LentNetwork {
    fd: Option<OwnedFd>,
    pool: Arc<NetworkPool>,
}

impl NetworkPool {
    /// A pool, when this process may create network namespaces in its own user namespace
    /// (root); `None` otherwise (each run then gets a fresh namespace with its user namespace).
    pub(crate) fn new() -> Option<Arc<NetworkPool>> {
        let pool = NetworkPool {
            free: Mutex::new(Vec::new()),
        };
        let first = create().ok()?;
        pool.free.lock().ok()?.push(first);
        Some(Arc::new(pool))
    }

    /// Adds a new namespace when none is free, so that the next run need not create one
    /// (creating takes about 0.5 ms).
    pub(crate) fn top_up(&self) -> Result<()> {
        let empty = self
            .free
            .lock()
            .map_err(|_| anyhow::anyhow!("network pool lock poisoned"))?
            .is_empty();
        if empty {
            let fd = create()?;
            if let Ok(mut free) = self.free.lock() {
                free.push(fd);
            }
        }
        Ok(())
    }

    /// Closes the free namespaces beyond `keep` (the pool grows to the most runs at once).
    pub(crate) fn trim(&self, keep: usize) {
        let surplus: Vec<OwnedFd> = match self.free.lock() {
            Ok(mut free) => {
                let keep = keep.min(free.len());
                free.drain(keep..).collect()
            }
            Err(_) => return,
        };
        drop(surplus);
    }

    pub(crate) fn lend(self: &Arc<Self>) -> Result<LentNetwork> {
        let reused = self
            .free
            .lock()
            .map_err(|_| anyhow::anyhow!("network pool lock poisoned"))?
            .pop();
        let fd = match reused {
            Some(fd) => fd,
            None => create()?,
        };
        Ok(LentNetwork {
            fd: Some(fd),
            pool: self.clone(),
        })
    }
}

impl Drop for LentNetwork {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else { return };
        // A namespace goes back to the pool only without a socket left in it: a box can keep
        // a socket bound to an abstract name alive after its death (in flight in an
        // SCM_RIGHTS cycle, until the kernel's garbage collector runs), which the next box
        // would see. Such a namespace is dropped instead (the kernel frees it later).
        if !without_sockets(&fd) {
            return;
        }
        if let Ok(mut free) = self.pool.free.lock() {
            free.push(fd);
        }
    }
}

/// Whether the network namespace holds no unix socket (`/proc/thread-self/net/unix` shows
/// the sockets of the reading thread's namespace: the header line only).
fn without_sockets(namespace: &OwnedFd) -> bool {
    let Ok(own) = own_network() else {
        return false;
    };
    if setns(namespace.as_fd(), CloneFlags::CLONE_NEWNET).is_err() {
        return false;
    }
    let clean = std::fs::read_to_string("/proc/thread-self/net/unix")
        .map(|table| table.lines().count() <= 1)
        .unwrap_or(false);
    // Back home, as `ThreadInNetwork` does.
    drop(ThreadInNetwork { own });
    clean
}

impl LentNetwork {
    /// Moves the calling thread into the lent namespace until the guard is dropped.
    pub(crate) fn enter(&self) -> Result<ThreadInNetwork> {
        let own = own_network()?;
        let target = self
            .fd
            .as_ref()
            .context("network namespace already returned")?;
        setns(target.as_fd(), CloneFlags::CLONE_NEWNET)
            .context("cannot enter a pooled network namespace")?;
        Ok(ThreadInNetwork { own })
    }
}

/// The calling thread is in another network namespace until this is dropped (never dropped in
/// a cloned child, which does not return).
pub(crate) struct ThreadInNetwork {
    own: File,
}

impl Drop for ThreadInNetwork {
    fn drop(&mut self) {
        if let Err(e) = setns(self.own.as_fd(), CloneFlags::CLONE_NEWNET) {
            // The thread would create its sockets in the wrong namespace: better to stop.
            panic!("cannot return to the keeper's network namespace: {e}");
        }
    }
}

fn own_network() -> Result<File> {
    File::open("/proc/thread-self/ns/net").context("cannot open /proc/thread-self/ns/net")
}

/// A new, empty network namespace (only `lo`, down), created by the calling thread, which then
/// returns to its own.
fn create() -> Result<OwnedFd> {
    let own = own_network()?;
    unshare(CloneFlags::CLONE_NEWNET).context("cannot create a network namespace")?;
    let created = own_network().map(OwnedFd::from);
    setns(own.as_fd(), CloneFlags::CLONE_NEWNET)
        .context("cannot return to the keeper's network namespace")?;
    created
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_namespaces_are_reused_and_the_thread_returns_home() {
        let Some(pool) = NetworkPool::new() else {
            return;
        }; // not root: nothing to test
        let home = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
        let first = {
            let lent = pool.lend().unwrap();
            let inside = {
                let _in = lent.enter().unwrap();
                std::fs::read_link("/proc/thread-self/ns/net").unwrap()
            };
            assert_ne!(inside, home);
            inside
        };
        assert_eq!(
            std::fs::read_link("/proc/thread-self/ns/net").unwrap(),
            home
        );
        // The namespace came back to the pool and is lent again.
        let lent = pool.lend().unwrap();
        let _in = lent.enter().unwrap();
        assert_eq!(
            std::fs::read_link("/proc/thread-self/ns/net").unwrap(),
            first
        );
    }
}
