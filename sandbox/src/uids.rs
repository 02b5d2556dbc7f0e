//! Host user ids of the boxes: every box that runs at the same time on this host runs as a
//! host uid of its own, so that what the kernel grants or counts per user cannot join two
//! boxes: signals (a process may signal another of the same uid), `setpriority(PRIO_USER)`,
//! and the per-user budgets (pipe buffers, `RLIMIT_NPROC`, inotify instances, ...).
//!
//! The range is `FIRST..=LAST` (default 60000..=60999, `IOI_RUN_UID_RANGE=FIRST-LAST` to
//! change it). `FIRST` is the owner of box directories on the host and the group every box
//! runs with; runs use `FIRST+1..=LAST`. A uid is leased by holding an exclusive `flock` on
//! `<lock dir>/<uid>` for the run's lifetime, so that threads of one process and concurrent
//! ioi-run processes on the host never share one, and a crashed process releases its uids
//! with its descriptors. The lock directory is root-only (created 0700, refused if anyone else
//! owns it), so no other user can hold a uid away from us.
//!
//! Hand-written: a few lines of `flock` on files; no crate does this allocation.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Default first uid of the range (box owner and group); runs use the next ones.
pub const DEFAULT_FIRST: u32 = 60000;
/// Default last uid of the range (inclusive).
pub const DEFAULT_LAST: u32 = 60999;
/// Environment variable overriding the range: `FIRST-LAST`.
pub const RANGE_VAR: &str = "IOI_RUN_UID_RANGE";

/// A range of host uids, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidRange {
    /// The box owner and group (see [`crate::uids`]).
    pub first: u32,
    /// The last uid a run may get.
    pub last: u32,
}

impl Default for UidRange {
    fn default() -> Self {
        UidRange {
            first: DEFAULT_FIRST,
            last: DEFAULT_LAST,
        }
    }
}

impl UidRange {
    /// The range from `IOI_RUN_UID_RANGE`, or the default.
    pub fn from_env() -> Result<UidRange> {
        match std::env::var(RANGE_VAR) {
            Ok(text) => UidRange::parse(&text).with_context(|| format!("{RANGE_VAR}={text:?}")),
            Err(_) => Ok(UidRange::default()),
        }
    }

    /// Parses `FIRST-LAST` (at least two uids: the owner and one for runs).
    pub fn parse(text: &str) -> Result<UidRange> {
        let Some((a, b)) = text.trim().split_once('-') else {
            bail!("expected FIRST-LAST, e.g. 60000-60999")
        };
        let first: u32 = a.trim().parse().context("FIRST is not a uid")?;
        let last: u32 = b.trim().parse().context("LAST is not a uid")?;
        if first == 0 || last <= first || last == u32::MAX {
            bail!("expected 0 < FIRST < LAST < 4294967295");
        }
        Ok(UidRange { first, last })
    }

    /// The uids runs are given.
    pub fn run_uids(&self) -> std::ops::RangeInclusive<u32> {
        self.first + 1..=self.last
    }
}

/// Where the uid locks live: a root-only directory.
pub fn lock_dir() -> PathBuf {
    if Path::new("/run").is_dir() {
        PathBuf::from("/run/ioi-run-uids")
    } else {
        std::env::temp_dir().join("ioi-run-uids")
    }
}

/// Creates (or checks) the lock directory: a real directory, owned by root, mode 0700.
pub fn prepare_lock_dir(dir: &Path) -> Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot inspect {}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        bail!(
            "{} must be a directory owned by root and writable only by root (found uid {}, mode {:o}): remove it",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// Hands out uids of a range, one per run in progress on the host.
pub(crate) struct UidPool {
    range: UidRange,
    dir: PathBuf,
    /// Where the next search starts, so that consecutive runs spread over the range.
    next: AtomicU32,
}

/// A uid held for one run; released when dropped (or when the process dies).
pub(crate) struct UidLease {
    pub uid: u32,
    _lock: File,
}

impl UidPool {
    pub(crate) fn new(range: UidRange) -> Result<UidPool> {
        UidPool::in_dir(range, lock_dir())
    }

    fn in_dir(range: UidRange, dir: PathBuf) -> Result<UidPool> {
        prepare_lock_dir(&dir)?;
        Ok(UidPool {
            range,
            dir,
            next: AtomicU32::new(std::process::id()),
        })
    }

    /// Leases a free uid; waits (up to a minute) while every uid of the range is in use.
    pub(crate) fn lease(&self) -> Result<UidLease> {
        let count = self.range.last - self.range.first;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let start = self.next.fetch_add(1, Ordering::Relaxed);
            for i in 0..count {
                let uid = self.range.first + 1 + (start.wrapping_add(i) % count);
                if let Some(lease) = self.try_lease(uid)? {
                    return Ok(lease);
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "every sandbox uid of {}-{} is in use by another run (set {RANGE_VAR} to a larger range)",
                    self.range.first,
                    self.range.last
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn try_lease(&self, uid: u32) -> Result<Option<UidLease>> {
        let path = self.dir.join(uid.to_string());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("cannot open the uid lock {}", path.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; the lock lives as long as `file` (the lease).
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(UidLease { uid, _lock: file }));
        }
        match std::io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(None),
            e => Err(e).with_context(|| format!("cannot lock {}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_exclusive_across_pools_and_released_on_drop() {
        // Two pools on one lock folder stand for two ioi-run processes: flock locks belong to
        // open files, so they exclude each other within a process as across processes.
        if !nix::unistd::geteuid().is_root() {
            if std::env::var_os("CI").is_some() {
                panic!("the uid lock folder must be root's (CI runs as root)");
            }
            eprintln!("SKIPPED: the uid lock folder must be root's");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("locks");
        let range = UidRange::parse("70000-70003").unwrap();
        let a = UidPool::in_dir(range, locks.clone()).unwrap();
        let b = UidPool::in_dir(range, locks.clone()).unwrap();
        let held: Vec<UidLease> = vec![a.lease().unwrap(), b.lease().unwrap(), a.lease().unwrap()];
        let mut uids: Vec<u32> = held.iter().map(|l| l.uid).collect();
        uids.sort_unstable();
        assert_eq!(uids, vec![70001, 70002, 70003]);
        // The range is full: nothing is free until a lease is dropped.
        assert!(b.try_lease(70002).unwrap().is_none());
        let freed = held[1].uid;
        drop(held);
        assert_eq!(b.try_lease(freed).unwrap().map(|l| l.uid), Some(freed));
        // A folder someone else could write to is refused.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(UidPool::in_dir(range, locks).is_err());
    }

    #[test]
    fn ranges_parse_and_refuse_nonsense() {
        assert_eq!(
            UidRange::parse("70000-70010").unwrap(),
            UidRange {
                first: 70000,
                last: 70010
            }
        );
        for bad in ["", "70000", "0-10", "10-10", "20-10", "a-b"] {
            assert!(UidRange::parse(bad).is_err(), "{bad:?}");
        }
    }
}
