//! The mount namespace a box's is copied from (as root): the host's mounts without the kernel's
//! own file systems (`sysfs` and the cgroup hierarchies under it, `debugfs`, `tracefs`,
//! `mqueue`, ...), none of which a box sees or binds. (`devpts` stays: a terminal named as a
//! box's stream must be found, to be refused as a terminal.)
//!
//! A box's mount namespace is a copy of its init's, made by the `clone` under the kernel's
//! machine-wide `namespace_sem`, mount by mount; the init then detaches the copy from the box's
//! root (`umount2` after `pivot_root`), again mount by mount under that lock, and the box's
//! teardown frees them. A host with systemd has two or three dozen kernel mounts (a dozen
//! cgroup v1 hierarchies alone), which every box would copy and unmount under that lock without
//! ever using them. The template is made once: a thread of its own
//! unshares its mount namespace, makes it private and detaches the kernel mounts; each thread
//! that clones inits enters it before the clone (see `keeper::init`).
//!
//! The template also holds the part of a box that is the same for every box, made once (see
//! `mounts::skeleton_plan`): a read-only tmpfs with the binds of the system directories, the
//! `/etc` files and the devices. A box binds its three folders whole, where it would otherwise
//! bind and remount each file and device: 10 mount calls a box where there were 30, each under
//! the machine-wide mount locks (`ioi-run bench boxes --trace` counts them).
//!
//! The template shows the host as it was when it was made: when the host's mount table changes
//! (a mount or unmount anywhere), the next box is cloned from a new one, and a template is
//! never older than [`MAX_AGE`] (a package manager replaces an `/etc` file by renaming a new
//! one over it, which a bind made before does not see). An idle sandbox lets it go (it holds
//! the host's file systems as busy as a box does). A keeper that is not root cannot make one
//! (a mount namespace needs a user namespace of its own then) and copies the host's mounts, as
//! does a sandbox that runs once (no boxes built ahead), for which a template costs more than
//! its one box saves.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::mount::MsFlags;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sched::{unshare, CloneFlags};

use crate::mounts::{self, MountOp};

/// The oldest a template gets before the next box makes a new one (making one costs a few
/// milliseconds of one thread).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(2);

/// The template and what tells that the host's mounts changed since it was made.
pub(crate) struct MountTemplate {
    state: Mutex<State>,
    /// Where the common part of every box is made in the template, and its operations.
    skeleton: PathBuf,
    skeleton_ops: Vec<MountOp>,
    /// The keeper's own mount namespace: what boxes are copied from when no template can be
    /// made (the error is logged; the box is then as it was without templates).
    host: Arc<OwnedFd>,
}

#[derive(Default)]
struct State {
    /// The template's namespace, shared with the threads cloning from it.
    namespace: Option<Arc<OwnedFd>>,
    /// The keeper's `/proc/self/mountinfo`, opened when the template was made: it polls as
    /// changed once the host's mount table changes.
    watch: Option<File>,
    made: Option<Instant>,
}

// SAFETY: the operations' raw pointers point into their own `CString`s, owned here and never
// changed; they are read by one thread at a time (under `state`'s lock).
unsafe impl Send for MountTemplate {}
unsafe impl Sync for MountTemplate {}

impl MountTemplate {
    /// A template maker, when this process may make mount namespaces (root); `None` otherwise.
    /// `skeleton` is an empty host folder on which the template mounts the common part of
    /// every box (see `mounts::skeleton_plan`).
    pub(crate) fn new(skeleton: PathBuf, system: &mounts::SystemLayout) -> Option<MountTemplate> {
        let host = File::open("/proc/self/ns/mnt").ok()?;
        let template = MountTemplate {
            state: Mutex::new(State::default()),
            skeleton_ops: mounts::skeleton_plan(&skeleton, system).ok()?,
            skeleton,
            host: Arc::new(host.into()),
        };
        if let Err(e) = template.current() {
            tracing::debug!(
                error = format!("{e:#}"),
                "no mount template: boxes copy the host's mounts"
            );
            return None;
        }
        Some(template)
    }

    /// Where the template holds the common part of every box.
    pub(crate) fn skeleton(&self) -> &std::path::Path {
        &self.skeleton
    }

    /// What the next box is copied from: the template as the host's mounts are now (true), or
    /// the host's own mounts when no template can be made (false: the box then builds its
    /// common part from the host's files, see `mounts::base_plan`).
    pub(crate) fn for_clone(&self) -> (Arc<OwnedFd>, bool) {
        match self.current() {
            Ok(template) => (template, true),
            Err(e) => {
                tracing::debug!(
                    error = format!("{e:#}"),
                    "no mount template: the box copies the host's mounts"
                );
                (self.host.clone(), false)
            }
        }
    }

    /// The template as the host's mounts are now: the one made before, or a new one when the
    /// host's mount table changed since.
    fn current(&self) -> Result<Arc<OwnedFd>> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| anyhow::anyhow!("mount template lock poisoned"))?;
        if let (Some(namespace), Some(watch), Some(made)) =
            (&state.namespace, &state.watch, state.made)
        {
            let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLPRI)];
            if made.elapsed() < MAX_AGE && matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0)) {
                return Ok(namespace.clone());
            }
        }
        // Opened first: a change while the template is made shows at the next call.
        let watch =
            File::open("/proc/self/mountinfo").context("cannot open /proc/self/mountinfo")?;
        let made = Instant::now();
        // The change that made this one due is read from the watch: on a failure, no older
        // template may serve again (the next box copies the host's mounts, the next call
        // tries anew).
        *state = State::default();
        let namespace = Arc::new(make(&self.skeleton, &self.skeleton_ops)?);
        *state = State {
            namespace: Some(namespace.clone()),
            watch: Some(watch),
            made: Some(made),
        };
        Ok(namespace)
    }

    /// Lets the template go (an idle sandbox); the next box makes a new one.
    pub(crate) fn release(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = State::default();
        }
    }
}

/// Makes a template on a thread of its own, which ends once it is made (a thread may leave the
/// process's mount namespace, the process must not).
fn make(skeleton: &std::path::Path, ops: &[MountOp]) -> Result<OwnedFd> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("ioi-sandbox-mounts".into())
            .spawn_scoped(scope, || make_here(skeleton, ops))
            .context("cannot start a thread to make the boxes' mount template")?
            .join()
            .map_err(|_| anyhow::anyhow!("the thread making the boxes' mount template panicked"))?
    })
}

/// On the calling thread, which stays in it: a private copy of the host's mounts, the kernel's
/// detached, and the common part of every box at `skeleton`, read-only.
fn make_here(skeleton: &std::path::Path, ops: &[MountOp]) -> Result<OwnedFd> {
    unshare(CloneFlags::CLONE_FS | CloneFlags::CLONE_NEWNS)
        .context("cannot make a mount namespace for the boxes' template")?;
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .context("cannot make the boxes' mount template private")?;
    let table = std::fs::read_to_string("/proc/thread-self/mountinfo")
        .context("cannot read the mount table")?;
    for point in kernel_mounts(&table) {
        // Gone already when a mount above it was detached first: not an error.
        let _ = nix::mount::umount2(point.as_str(), nix::mount::MntFlags::MNT_DETACH);
    }
    for op in ops {
        mounts::apply(op.step()).map_err(|errno| {
            anyhow::anyhow!(
                "cannot {} in the boxes' mount template: {}",
                op.describe(),
                nix::errno::Errno::from_raw(errno)
            )
        })?;
    }
    // Shared by every box (one file system): no box may write to it, nor make it writable
    // (a box's copy of a read-only mount of another user namespace stays read-only).
    nix::mount::mount(
        None::<&str>,
        skeleton,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        None::<&str>,
    )
    .context("cannot make the boxes' common part read-only")?;
    File::open("/proc/thread-self/ns/mnt")
        .map(OwnedFd::from)
        .context("cannot open the boxes' mount template")
}

/// The topmost mount points of kernel file systems in a `mountinfo` table (one under another
/// goes with it), outermost first; never one with a mount of another file system below it (a
/// tmpfs or a network file system mounted on a kernel one stays reachable, with what holds it),
/// except under `/sys`, which is the kernel's whole (the tmpfs that holds cgroup v1's
/// hierarchies goes with it; binds from `/sys` are refused, see `mounts::kernel_file_system`).
fn kernel_mounts(table: &str) -> Vec<String> {
    let mounts: Vec<(String, bool)> = table
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let kind = right.split(' ').next()?;
            let kernel = mounts::KERNEL_FILE_SYSTEMS
                .iter()
                .any(|(name, _)| *name == kind);
            Some((unescape(point), kernel))
        })
        .collect();
    let below = |point: &str, other: &str| point == "/" || other.starts_with(&format!("{point}/"));
    let mut points: Vec<&String> = mounts
        .iter()
        .filter(|(point, kernel)| {
            *kernel
                && !mounts.iter().any(|(other, kernel)| {
                    !kernel && below(point, other) && !other.starts_with("/sys/")
                })
        })
        .map(|(point, _)| point)
        .collect();
    points.sort_by_key(|p| p.len());
    let mut top: Vec<String> = Vec::new();
    for point in points {
        if !top.iter().any(|t| t == point || below(t, point)) {
            top.push(point.clone());
        }
    }
    top
}

/// A `mountinfo` path with its octal escapes (`\040` for a space, ...) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The development VM's table (cgroup v1, no systemd) with a path holding a space: the
    /// kernel mounts are `/sys` (its cgroup mounts go with it) and one under a space; `/proc`,
    /// `/dev`, `/dev/pts`, `/dev/shm` and the disk stay. A kernel mount with another file system
    /// below it (a tmpfs on a `configfs`) stays, and so does the file system below it.
    #[test]
    fn only_the_topmost_kernel_mounts_are_detached() {
        let table = "\
22 27 0:20 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
23 27 0:21 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw
24 27 0:5 / /dev rw,nosuid,relatime - devtmpfs devtmpfs rw,size=4096k
25 24 0:22 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
29 24 0:23 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw
30 23 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec - tmpfs tmpfs rw,mode=755
31 30 0:25 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
32 30 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
33 27 0:27 / /mnt/a\\040b rw - mqueue mqueue rw
34 27 254:0 /run/netns /run/netns rw - ext4 /dev/vda rw
35 27 0:28 / /cfg rw - configfs configfs rw
36 35 0:29 / /cfg/kept rw - tmpfs tmpfs rw
37 36 0:30 / /cfg/kept/deeper rw - debugfs debugfs rw
";
        assert_eq!(
            kernel_mounts(table),
            vec![
                "/sys".to_string(),
                "/mnt/a b".into(),
                "/cfg/kept/deeper".into()
            ]
        );
    }

    /// As root: the template holds no kernel mount, and the common part of every box in it
    /// is read-only, with the system's files (`usr`, `etc`, `dev`) under it.
    #[test]
    fn the_template_holds_the_read_only_common_part_and_no_kernel_mount() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: a mount template needs root");
            return;
        }
        // Removed when the test ends, passed or not.
        let folder = tempfile::Builder::new()
            .prefix("ioi-sandbox-skeleton-test-")
            .tempdir()
            .unwrap();
        let skeleton = folder.path().to_path_buf();
        let system = mounts::SystemLayout::detect().unwrap();
        let template = MountTemplate::new(skeleton.clone(), &system).expect("a template as root");
        let (namespace, is_template) = template.for_clone();
        assert!(is_template);
        let table = std::thread::spawn(move || {
            unshare(CloneFlags::CLONE_FS).unwrap();
            nix::sched::setns(namespace.as_fd(), CloneFlags::CLONE_NEWNS).unwrap();
            std::fs::read_to_string("/proc/thread-self/mountinfo").unwrap()
        })
        .join()
        .unwrap();
        assert!(
            !table.contains(" - sysfs ") && !table.contains(" - cgroup"),
            "kernel mounts left in the template:\n{table}"
        );
        let at = |point: String| {
            table
                .lines()
                .find(|line| line.split(' ').nth(4) == Some(point.as_str()))
                .unwrap_or_else(|| panic!("no mount on {point} in\n{table}"))
                .to_string()
        };
        let root = skeleton.to_string_lossy();
        let top = at(root.to_string());
        assert!(top.split(' ').nth(5).unwrap().starts_with("ro,"), "{top}");
        assert!(at(format!("{root}/usr"))
            .split(' ')
            .nth(5)
            .unwrap()
            .starts_with("ro,"));
        at(format!("{root}/dev/null"));
        at(format!("{root}/etc/ld.so.cache"));
        drop(template);
    }

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(unescape(r"/a\040b\011c\134d"), "/a b\tc\\d");
        assert_eq!(unescape(r"/x\0"), r"/x\0");
    }
}
