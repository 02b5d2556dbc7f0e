//! The mount namespace a box's is copied from (as root): the host's mounts without the kernel's
//! own file systems (`sysfs` and the cgroup hierarchies under it, `debugfs`, `tracefs`,
//! `mqueue`, ...), none of which a box sees or binds. (`devpts` stays: a terminal named as a
//! box's stream must be found, to be refused as a terminal.)
//!
//! A box's mount namespace is a copy of its init's, made by the `clone` under the kernel's
//! machine-wide `namespace_sem`, mount by mount; the init then detaches the copy from the box's
//! root (`umount2` after `pivot_root`), again mount by mount under that lock, and the box's
//! teardown frees them. A host with systemd has two or three dozen kernel mounts (a dozen
//! cgroup v1 hierarchies alone), so copying the host's whole table costs every box most of its
//! serialized part for mounts it never uses. The template is made once: a thread of its own
//! unshares its mount namespace, makes it private and detaches the kernel mounts; each thread
//! that clones inits enters it before the clone (see `keeper::init`).
//!
//! The template shows the host as it was when it was made: when the host's mount table changes
//! (a mount or unmount anywhere), the next box is cloned from a new one. An idle sandbox lets
//! it go (it holds the host's file systems as busy as a box does). A keeper that is not root
//! cannot make one (a mount namespace needs a user namespace of its own then) and copies the
//! host's mounts.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sched::{unshare, CloneFlags};

/// File systems of the kernel's own, detached from the template with everything under them,
/// and their magic numbers (`statfs`), by which a bind from one is refused up front (see
/// [`kernel_file_system`]).
const KERNEL_FILE_SYSTEMS: &[(&str, i64)] = &[
    ("sysfs", 0x6265_6572),
    ("cgroup", 0x0027_e0eb),
    ("cgroup2", 0x6367_7270),
    ("debugfs", 0x6462_6720),
    ("tracefs", 0x7472_6163),
    ("securityfs", 0x7363_6673),
    ("pstore", 0x6165_676c),
    ("bpf", 0xcafe_4a11),
    ("configfs", 0x6265_6570),
    ("fusectl", 0x6573_5543),
    ("efivarfs", 0xde5e_81e4),
    ("mqueue", 0x1980_0202),
    ("hugetlbfs", 0x9584_58f6),
    ("binfmt_misc", 0x4249_4e4d),
    ("autofs", 0x0187),
    ("rpc_pipefs", 0x6759_6969),
    ("nsfs", 0x6e73_6673),
    ("selinuxfs", 0xf97c_ff8c),
];

/// The kernel file system `path` is on (see [`KERNEL_FILE_SYSTEMS`]), if any: no box sees it,
/// so a bind from it is refused, whatever the keeper (a box copied from the template would not
/// find it).
pub(crate) fn kernel_file_system(path: &std::path::Path) -> Option<&'static str> {
    let magic = nix::sys::statfs::statfs(path).ok()?.filesystem_type().0 as i64;
    KERNEL_FILE_SYSTEMS
        .iter()
        .find(|(_, m)| *m == magic)
        .map(|(name, _)| *name)
}

/// The template and what tells that the host's mounts changed since it was made.
pub(crate) struct MountTemplate {
    state: Mutex<State>,
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
}

impl MountTemplate {
    /// A template maker, when this process may make mount namespaces (root); `None` otherwise.
    pub(crate) fn new() -> Option<MountTemplate> {
        let host = File::open("/proc/self/ns/mnt").ok()?;
        let template = MountTemplate {
            state: Mutex::new(State::default()),
            host: Arc::new(host.into()),
        };
        template.current().ok()?;
        Some(template)
    }

    /// What the next box is copied from: the template as the host's mounts are now, or the
    /// host's own mounts when no template can be made.
    pub(crate) fn for_clone(&self) -> Arc<OwnedFd> {
        self.current().unwrap_or_else(|e| {
            tracing::debug!(
                error = format!("{e:#}"),
                "no mount template: the box copies the host's mounts"
            );
            self.host.clone()
        })
    }

    /// The template as the host's mounts are now: the one made before, or a new one when the
    /// host's mount table changed since.
    fn current(&self) -> Result<Arc<OwnedFd>> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| anyhow::anyhow!("mount template lock poisoned"))?;
        if let (Some(namespace), Some(watch)) = (&state.namespace, &state.watch) {
            let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLPRI)];
            if matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0)) {
                return Ok(namespace.clone());
            }
        }
        // Opened first: a change while the template is made shows at the next call.
        let watch =
            File::open("/proc/self/mountinfo").context("cannot open /proc/self/mountinfo")?;
        let namespace = Arc::new(make()?);
        *state = State {
            namespace: Some(namespace.clone()),
            watch: Some(watch),
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
fn make() -> Result<OwnedFd> {
    std::thread::Builder::new()
        .name("ioi-sandbox-mounts".into())
        .spawn(make_here)
        .context("cannot start a thread to make the boxes' mount template")?
        .join()
        .map_err(|_| anyhow::anyhow!("the thread making the boxes' mount template panicked"))?
}

/// On the calling thread, which stays in it: a private copy of the host's mounts, the kernel's
/// detached.
fn make_here() -> Result<OwnedFd> {
    unshare(CloneFlags::CLONE_FS | CloneFlags::CLONE_NEWNS)
        .context("cannot make a mount namespace for the boxes' template")?;
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .context("cannot make the boxes' mount template private")?;
    let table = std::fs::read_to_string("/proc/thread-self/mountinfo")
        .context("cannot read the mount table")?;
    for point in kernel_mounts(&table) {
        // Gone already when a mount above it was detached first: not an error.
        let _ = nix::mount::umount2(point.as_str(), nix::mount::MntFlags::MNT_DETACH);
    }
    File::open("/proc/thread-self/ns/mnt")
        .map(OwnedFd::from)
        .context("cannot open the boxes' mount template")
}

/// The topmost mount points of kernel file systems in a `mountinfo` table (one under another
/// goes with it), outermost first.
fn kernel_mounts(table: &str) -> Vec<String> {
    let mut points: Vec<String> = table
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let kind = right.split(' ').next()?;
            KERNEL_FILE_SYSTEMS
                .iter()
                .any(|(name, _)| *name == kind)
                .then(|| unescape(point))
        })
        .collect();
    points.sort_by_key(|p| p.len());
    let mut top: Vec<String> = Vec::new();
    for point in points {
        let under = top
            .iter()
            .any(|t| t == "/" || point == *t || point.starts_with(&format!("{t}/")));
        if !under {
            top.push(point);
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
    use std::path::Path;

    /// The development VM's table (cgroup v1, no systemd) with a path holding a space: the
    /// kernel mounts are `/sys` (its cgroup mounts go with it) and one under a space; `/proc`,
    /// `/dev`, `/dev/pts`, `/dev/shm` and the disk stay.
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
";
        assert_eq!(
            kernel_mounts(table),
            vec!["/sys".to_string(), "/mnt/a b".into()]
        );
    }

    /// The kernel's file systems of this host are known by their magic numbers; the others
    /// are not taken for one.
    #[test]
    fn kernel_file_systems_are_known_by_their_magic() {
        assert_eq!(kernel_file_system(Path::new("/sys")), Some("sysfs"));
        let cgroup = kernel_file_system(Path::new("/sys/fs/cgroup/pids"))
            .or_else(|| kernel_file_system(Path::new("/sys/fs/cgroup")));
        assert!(matches!(cgroup, Some("cgroup" | "cgroup2")), "{cgroup:?}");
        for ordinary in ["/", "/proc", "/dev", "/usr", "/tmp"] {
            assert_eq!(kernel_file_system(Path::new(ordinary)), None, "{ordinary}");
        }
    }

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(unescape(r"/a\040b\011c\134d"), "/a b\tc\\d");
        assert_eq!(unescape(r"/x\0"), r"/x\0");
    }
}
