//! The filesystem of a box: a fresh tmpfs root holding read-only binds of what a C++
//! toolchain needs (`/usr`, the `/lib*` and `/bin` links or directories, a few `/etc` files),
//! the box read-write at `/box`, the caller's extra binds, a private `/tmp` and `/dev/shm`, a
//! minimal `/dev` and a fresh `/proc`; then `pivot_root` into it and the root made read-only.
//!
//! The keeper turns all this into a list of [`MountOp`]s of prepared C strings; the child only
//! executes them (no allocation after the clone).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use nix::sys::statvfs::{statvfs, FsFlags};

use crate::{BoxSource, RunSpec, BOX_PATH};

/// The program's uid and gid inside the namespaces (owner of a tmpfs box).
pub(crate) const INSIDE_UID: u32 = 1000;

/// One step of building the box filesystem.
#[derive(Debug)]
pub(crate) enum MountOp {
    Mkdir {
        path: CString,
    },
    Symlink {
        target: CString,
        path: CString,
    },
    Tmpfs {
        path: CString,
        data: CString,
    },
    /// Bind `source` onto `path` (created as a directory or an empty file), then remount with
    /// `flags` (which repeat the source's locked flags, as a user namespace requires), unless
    /// they are zero (the bind has them already).
    Bind {
        source: CString,
        path: CString,
        dir: bool,
        flags: libc::c_ulong,
    },
    /// A fresh `proc` with the mount options `data`.
    Proc {
        path: CString,
        data: CString,
    },
}

/// A C string prepared before the clone (owned by a [`MountOp`], or inside a run message the
/// init received, see `handover`).
pub(crate) type CPtr = *const libc::c_char;

/// A [`MountOp`] as the child executes it: pointers to prepared C strings.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MountStep {
    Mkdir {
        path: CPtr,
    },
    Symlink {
        target: CPtr,
        path: CPtr,
    },
    Tmpfs {
        path: CPtr,
        data: CPtr,
    },
    Bind {
        source: CPtr,
        path: CPtr,
        dir: bool,
        flags: libc::c_ulong,
    },
    Proc {
        path: CPtr,
        data: CPtr,
    },
}

impl MountOp {
    /// The step the child executes (pointing into this operation).
    pub(crate) fn step(&self) -> MountStep {
        match self {
            MountOp::Mkdir { path } => MountStep::Mkdir {
                path: path.as_ptr(),
            },
            MountOp::Symlink { target, path } => MountStep::Symlink {
                target: target.as_ptr(),
                path: path.as_ptr(),
            },
            MountOp::Tmpfs { path, data } => MountStep::Tmpfs {
                path: path.as_ptr(),
                data: data.as_ptr(),
            },
            MountOp::Bind {
                source,
                path,
                dir,
                flags,
            } => MountStep::Bind {
                source: source.as_ptr(),
                path: path.as_ptr(),
                dir: *dir,
                flags: *flags,
            },
            MountOp::Proc { path, data } => MountStep::Proc {
                path: path.as_ptr(),
                data: data.as_ptr(),
            },
        }
    }

    /// A short description for error messages.
    pub(crate) fn describe(&self) -> String {
        let s = |c: &CString| c.to_string_lossy().into_owned();
        match self {
            MountOp::Mkdir { path } => format!("mkdir {}", s(path)),
            MountOp::Symlink { path, .. } => format!("symlink {}", s(path)),
            MountOp::Tmpfs { path, .. } => format!("mount tmpfs on {}", s(path)),
            MountOp::Bind { source, path, .. } => format!("bind {} on {}", s(source), s(path)),
            MountOp::Proc { path, .. } => format!(
                "mount proc on {} (is /proc fully visible on the host?)",
                s(path)
            ),
        }
    }
}

/// File systems of the kernel's own, which no box sees (the mount template detaches them with
/// everything under them, see `mount_template`), and their magic numbers (`statfs`), by which
/// a bind from one is refused up front (see [`kernel_file_system`]).
pub(crate) const KERNEL_FILE_SYSTEMS: &[(&str, i64)] = &[
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
    ("rpc_pipefs", 0x6759_6969),
    ("nsfs", 0x6e73_6673),
    ("selinuxfs", 0xf97c_ff8c),
];

/// The kernel file system `path` is on (see [`KERNEL_FILE_SYSTEMS`]), if any: no box sees it,
/// so a bind from it is refused, whatever the keeper (a box copied from the mount template
/// would not find it).
pub(crate) fn kernel_file_system(path: &std::path::Path) -> Option<&'static str> {
    // Whatever is mounted below `/sys` (a tmpfs holding cgroup v1's hierarchies) goes with it.
    if path.starts_with("/sys") {
        return Some("sysfs");
    }
    file_system_by_magic(path)
}

/// The kernel file system `path` is on by its magic number (see [`KERNEL_FILE_SYSTEMS`]).
fn file_system_by_magic(path: &std::path::Path) -> Option<&'static str> {
    let magic = nix::sys::statfs::statfs(path).ok()?.filesystem_type().0 as i64;
    KERNEL_FILE_SYSTEMS
        .iter()
        .find(|(_, m)| *m == magic)
        .map(|(name, _)| *name)
}

/// Host paths shared by every box: computed once per [`crate::Sandbox`].
#[derive(Debug, Clone)]
pub(crate) struct SystemLayout {
    /// Read-only binds and symlinks of the system directories and files.
    entries: Vec<SystemEntry>,
    /// The devices of the box's `/dev`, with the flags of their remount.
    devices: Vec<(PathBuf, libc::c_ulong)>,
    /// The kernel mounts a `/proc` that shows processes only (`subset=pid`, Linux 5.8).
    proc_subset: bool,
}

/// The harmless devices every box gets.
const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

#[derive(Debug, Clone)]
enum SystemEntry {
    Symlink {
        path: PathBuf,
        target: PathBuf,
    },
    Bind {
        path: PathBuf,
        dir: bool,
        flags: libc::c_ulong,
    },
}

const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// What the dynamic linker and the toolchain read in `/etc`; not the host's accounts
/// (`passwd`, `group`): a box's uid has no entry there, and a compile error quoting an
/// `#include "/etc/passwd"` must not show them.
const ETC_ENTRIES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
    "/etc/localtime",
];

impl SystemLayout {
    pub(crate) fn detect() -> Result<SystemLayout> {
        let mut entries = Vec::new();
        for p in SYSTEM_DIRS.iter().chain(ETC_ENTRIES) {
            let path = Path::new(p);
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            if meta.file_type().is_symlink() {
                let target =
                    std::fs::read_link(path).with_context(|| format!("cannot read link {p}"))?;
                entries.push(SystemEntry::Symlink {
                    path: path.into(),
                    target,
                });
            } else {
                entries.push(SystemEntry::Bind {
                    path: path.into(),
                    dir: meta.is_dir(),
                    flags: remount_flags(path, false, false)?,
                });
            }
        }
        if !entries
            .iter()
            .any(|e| matches!(e, SystemEntry::Bind { path, .. } if path == Path::new("/usr")))
        {
            bail!("/usr is missing: the sandbox needs the host's /usr for compilers and libraries");
        }
        let devices = DEVICES
            .iter()
            .map(|dev| {
                let host = PathBuf::from("/dev").join(dev);
                // Read-only: writing to a device needs no write access to its mount, while
                // changing its times or owner (which every box would see) does.
                let flags = remount_flags(&host, false, true)?;
                Ok((host, flags))
            })
            .collect::<Result<_>>()?;
        Ok(SystemLayout {
            entries,
            devices,
            proc_subset: proc_subset_supported(
                &nix::sys::utsname::uname()?.release().to_string_lossy(),
            ),
        })
    }
}

/// Whether a kernel of this release (`uname -r`) mounts `proc` with `subset=pid`: 5.8 and later.
fn proc_subset_supported(release: &str) -> bool {
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let major = numbers.next().unwrap_or(0);
    let minor = numbers.next().unwrap_or(0);
    (major, minor) >= (5, 8)
}

/// Flags for the read-only (or read-write) remount of a bind of `source`: the source mount's
/// nosuid/nodev/noexec/atime flags must be kept, since a user namespace may not clear them;
/// `devices` keeps device nodes usable (no nodev).
fn remount_flags(source: &Path, writable: bool, devices: bool) -> Result<libc::c_ulong> {
    Ok(remount(source, writable, devices)?.0)
}

/// [`remount_flags`] for a writable bind planned on its run's path: zero when the bind needs no
/// remount (it takes the source mount's flags, and they hold nosuid and nodev already; every
/// remount is a call under the mount locks, see `mount_template`). Read-only binds and the
/// binds planned once for every box are always remounted: a source read once must not decide
/// for later boxes, nor its read-only state (which an administrator may change) for any.
fn writable_remount_flags(source: &Path) -> Result<libc::c_ulong> {
    let (flags, held) = remount(source, true, false)?;
    Ok(if held { 0 } else { flags })
}

/// The remount's flags, and whether the source mount holds them already.
fn remount(source: &Path, writable: bool, devices: bool) -> Result<(libc::c_ulong, bool)> {
    let st = statvfs(source)
        .with_context(|| format!("cannot stat the filesystem of {}", source.display()))?;
    let f = st.flags();
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID;
    if !devices {
        flags |= libc::MS_NODEV;
    }
    if !writable {
        flags |= libc::MS_RDONLY;
    }
    for (st_flag, ms_flag) in [
        (FsFlags::ST_NOEXEC, libc::MS_NOEXEC),
        (FsFlags::ST_NOATIME, libc::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, libc::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, libc::MS_RELATIME),
        (FsFlags::ST_RDONLY, libc::MS_RDONLY),
    ] {
        if f.contains(st_flag) {
            flags |= ms_flag;
        }
    }
    let held = [
        (libc::MS_NOSUID, FsFlags::ST_NOSUID),
        (libc::MS_NODEV, FsFlags::ST_NODEV),
        (libc::MS_RDONLY, FsFlags::ST_RDONLY),
    ]
    .iter()
    .all(|&(wanted, has)| flags & wanted == 0 || f.contains(has));
    Ok((flags, held))
}

fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .with_context(|| format!("path contains a NUL byte: {}", p.display()))
}

/// Under `root`, the host path of the box path `inside` (which must be absolute and plain).
fn under(root: &Path, inside: &Path) -> Result<PathBuf> {
    if !inside.is_absolute()
        || inside
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        bail!(
            "sandbox path {} must be absolute and without `..`",
            inside.display()
        );
    }
    Ok(root.join(inside.strip_prefix("/").unwrap_or(inside)))
}

/// The operations every box starts with, with the new root at `root` (an empty host
/// directory, mounted over by a tmpfs in the box's private mount namespace): a list of named
/// steps, in the order they are applied. They do not depend on the run: a box may be built
/// this far before its run is known (see `handover`).
pub(crate) fn base_plan(root: &Path, system: &SystemLayout) -> Result<Vec<MountOp>> {
    let mut plan = Plan {
        root,
        ops: Vec::new(),
    };
    plan.root_tmpfs()?;
    plan.system_files(system)?;
    plan.dev(system)?;
    plan.own_proc(system)?;
    Ok(plan.ops)
}

/// The common part of every box made once, at `skeleton` in the mount template (see
/// `mount_template`): a tmpfs holding the read-only binds of the system directories, an `etc`
/// of the `/etc` files the toolchain reads, and a `dev` of the devices, their links and a
/// `shm` to mount on. The template makes the tmpfs read-only once these are applied; a box
/// then binds `usr` (and the other system directories), `etc` and `dev` whole (see
/// [`base_plan_on_skeleton`]): three binds where each file and device would be a bind and a
/// remount of its own.
pub(crate) fn skeleton_plan(skeleton: &Path, system: &SystemLayout) -> Result<Vec<MountOp>> {
    let mut plan = Plan {
        root: skeleton,
        ops: Vec::new(),
    };
    plan.ops.push(MountOp::Tmpfs {
        path: cstr(skeleton)?,
        data: CString::new("mode=0755,size=1m")?,
    });
    plan.mkdir("/etc")?;
    for entry in &system.entries {
        match entry {
            // Links outside `/etc` are made in each box's root, whose top level is its own.
            SystemEntry::Symlink { path, .. } if !path.starts_with("/etc") => {}
            entry => plan.ops.push(plan.system_entry(entry)?),
        }
    }
    plan.dev(system)?;
    plan.mkdir("/dev/shm")?;
    Ok(plan.ops)
}

/// [`base_plan`] for a box copied from the mount template, whose `skeleton` holds the
/// system's part made once (see [`skeleton_plan`]): the root's tmpfs, the system directories,
/// `/etc` and `/dev` bound whole from it, the top-level links, `/proc`.
pub(crate) fn base_plan_on_skeleton(
    root: &Path,
    skeleton: &Path,
    system: &SystemLayout,
) -> Result<Vec<MountOp>> {
    let mut plan = Plan {
        root,
        ops: Vec::new(),
    };
    plan.root_tmpfs()?;
    let whole = |plan: &Plan, inside: &Path| -> Result<MountOp> {
        Ok(MountOp::Bind {
            source: cstr(&under(skeleton, inside)?)?,
            path: cstr(&under(plan.root, inside)?)?,
            dir: true,
            // The skeleton's mounts are read-only, without setuid and devices (but its
            // devices'), as the box's copies of them stay: nothing to remount.
            flags: 0,
        })
    };
    for entry in &system.entries {
        match entry {
            SystemEntry::Symlink { path, .. } | SystemEntry::Bind { path, .. }
                if path.starts_with("/etc") => {}
            SystemEntry::Symlink { .. } => plan.ops.push(plan.system_entry(entry)?),
            SystemEntry::Bind {
                path, dir: true, ..
            } => plan.ops.push(whole(&plan, path)?),
            // A top-level file (no such entry on a usual host) is bound from the host itself.
            SystemEntry::Bind { .. } => plan.ops.push(plan.system_entry(entry)?),
        }
    }
    for dir in ["/etc", "/dev"] {
        plan.ops.push(whole(&plan, Path::new(dir))?);
    }
    plan.own_proc(system)?;
    Ok(plan.ops)
}

/// Entries of `/proc` that are the host's, not the box's: counters every box reads and
/// changes (free memory, load, forks, open files, kernel aio contexts, pressure, file-system
/// statistics, locks, keys). Through them two boxes could talk. A kernel that mounts `proc`
/// with `subset=pid` shows a box none of them (nor any other entry that is not a process's);
/// on an older one each box sees these masked: directories by an empty tmpfs no one may
/// enter, files by an unopenable node, two dozen mounts more in every box.
const PROC_MASKED_DIRS: &[&str] = &["sys", "pressure", "fs", "irq", "driver", "sysvipc"];
const PROC_MASKED_FILES: &[&str] = &[
    "meminfo",
    "stat",
    "loadavg",
    "uptime",
    "vmstat",
    "zoneinfo",
    "buddyinfo",
    "pagetypeinfo",
    "slabinfo",
    "vmallocinfo",
    "allocinfo",
    "interrupts",
    "softirqs",
    "schedstat",
    "diskstats",
    "locks",
    "keys",
    "key-users",
    "timer_list",
    "sched_debug",
    "swaps",
    "cgroups",
    "mdstat",
    "latency_stats",
];

/// The operations of one run, applied after [`base_plan`]'s: the box, the caller's binds, a
/// private `/tmp` and `/dev/shm` of `tmp_size` bytes.
pub(crate) fn run_plan(root: &Path, spec: &RunSpec, tmp_size: u64) -> Result<Vec<MountOp>> {
    let mut plan = Plan {
        root,
        ops: Vec::new(),
    };
    plan.the_box(&spec.box_dir)?;
    plan.binds(&spec.binds)?;
    plan.tmp(tmp_size)?;
    plan.shm(tmp_size)?;
    Ok(plan.ops)
}

/// The operations planned so far, with paths inside the box taken under `root`.
struct Plan<'a> {
    root: &'a Path,
    ops: Vec<MountOp>,
}

impl Plan<'_> {
    fn inside(&self, path: &str) -> Result<CString> {
        cstr(&under(self.root, Path::new(path))?)
    }

    fn mkdir(&mut self, inside: &str) -> Result<()> {
        let path = self.inside(inside)?;
        self.ops.push(MountOp::Mkdir { path });
        Ok(())
    }

    /// A fresh tmpfs at `inside` (created first).
    fn tmpfs(&mut self, inside: &str, data: &str) -> Result<()> {
        self.mkdir(inside)?;
        let path = self.inside(inside)?;
        self.ops.push(MountOp::Tmpfs {
            path,
            data: CString::new(data)?,
        });
        Ok(())
    }

    /// The root: a small tmpfs, read-only once built.
    fn root_tmpfs(&mut self) -> Result<()> {
        self.ops.push(MountOp::Tmpfs {
            path: cstr(self.root)?,
            data: CString::new("mode=0755,size=4m")?,
        });
        Ok(())
    }

    /// `/usr`, `/lib*`, the `/bin`-style symlinks and the `/etc` files, read-only.
    fn system_files(&mut self, system: &SystemLayout) -> Result<()> {
        self.mkdir("/etc")?;
        for entry in &system.entries {
            let op = self.system_entry(entry)?;
            self.ops.push(op);
        }
        Ok(())
    }

    /// A system directory or file bound read-only from the host, or a link, under the root.
    fn system_entry(&self, entry: &SystemEntry) -> Result<MountOp> {
        Ok(match entry {
            SystemEntry::Symlink { path, target } => MountOp::Symlink {
                target: cstr(target)?,
                path: cstr(&under(self.root, path)?)?,
            },
            SystemEntry::Bind { path, dir, flags } => MountOp::Bind {
                source: cstr(path)?,
                path: cstr(&under(self.root, path)?)?,
                dir: *dir,
                flags: *flags,
            },
        })
    }

    /// [`BOX_PATH`]: the host directory bound read-write, or a private tmpfs owned by the
    /// program.
    fn the_box(&mut self, source: &BoxSource) -> Result<()> {
        match source {
            BoxSource::Host(dir) => {
                let source = dir
                    .canonicalize()
                    .with_context(|| format!("box directory {} does not exist", dir.display()))?;
                self.ops.push(MountOp::Bind {
                    source: cstr(&source)?,
                    path: self.inside(BOX_PATH)?,
                    dir: true,
                    flags: writable_remount_flags(&source)?,
                });
            }
            BoxSource::Tmpfs(size) => {
                let data = format!("mode=0755,uid={INSIDE_UID},gid={INSIDE_UID},size={size}");
                self.tmpfs(BOX_PATH, &data)?;
            }
        }
        Ok(())
    }

    /// The caller's extra binds, with their parent directories. Not under `/dev` or `/proc`,
    /// which every box has of its own.
    fn binds(&mut self, binds: &[crate::Bind]) -> Result<()> {
        for bind in binds {
            // The streams' stage too: the init mounts it for the run (see `child`).
            let stage = Path::new(std::ffi::OsStr::from_bytes(
                crate::child::STDIO_STAGE.to_bytes(),
            ));
            if [Path::new("/dev"), Path::new("/proc"), stage]
                .iter()
                .any(|own| bind.inside.starts_with(own))
            {
                bail!(
                    "cannot bind {} at {}: /dev, /proc and {} are the box's own",
                    bind.host.display(),
                    bind.inside.display(),
                    stage.display()
                );
            }
            // The system's folders are the host's, read-only and shared by every box.
            if let Some(system) = SYSTEM_DIRS
                .iter()
                .chain(&["/etc"])
                .find(|dir| bind.inside.starts_with(dir))
            {
                bail!(
                    "cannot bind {} at {}: {system} is the host's, read-only in every box; \
                     bind it elsewhere (under /box, or a folder of its own)",
                    bind.host.display(),
                    bind.inside.display()
                );
            }
            let source = bind
                .host
                .canonicalize()
                .with_context(|| format!("bind source {} does not exist", bind.host.display()))?;
            if let Some(kind) = kernel_file_system(&source) {
                bail!(
                    "cannot bind {} at {}: it is on the kernel's own file system {kind}, which \
                     boxes do not see",
                    bind.host.display(),
                    bind.inside.display()
                );
            }
            let dir = source.is_dir();
            let target = under(self.root, &bind.inside)?;
            // Parent directories of a bind target inside the box's own bind are the box's
            // business; elsewhere they are created on the root tmpfs.
            if let Some(parent) = bind.inside.parent() {
                if !parent.starts_with(BOX_PATH) && parent != Path::new("/") {
                    let mut acc = PathBuf::from("/");
                    for c in parent.components().skip(1) {
                        acc.push(c);
                        self.mkdir(&acc.to_string_lossy())?;
                    }
                }
            }
            self.ops.push(MountOp::Bind {
                source: cstr(&source)?,
                path: cstr(&target)?,
                dir,
                flags: match bind.writable {
                    true => writable_remount_flags(&source)?,
                    false => remount_flags(&source, false, false)?,
                },
            });
        }
        Ok(())
    }

    /// A private `/tmp` (its content counts as the program's memory).
    fn tmp(&mut self, size: u64) -> Result<()> {
        self.tmpfs("/tmp", &format!("mode=1777,size={size}"))
    }

    /// A small `/dev`: the harmless devices and the `/dev/fd`-style links, in a folder of the
    /// root (read-only with it): no file system of its own to make and tear down per box.
    fn dev(&mut self, system: &SystemLayout) -> Result<()> {
        self.mkdir("/dev")?;
        for (host, flags) in &system.devices {
            self.ops.push(MountOp::Bind {
                source: cstr(host)?,
                path: cstr(&under(self.root, host)?)?,
                dir: false,
                flags: *flags,
            });
        }
        for (name, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            self.ops.push(MountOp::Symlink {
                target: CString::new(target)?,
                path: cstr(&under(self.root, &Path::new("/dev").join(name))?)?,
            });
        }
        Ok(())
    }

    /// A private `/dev/shm` (its content counts as the program's memory).
    fn shm(&mut self, size: u64) -> Result<()> {
        self.tmpfs("/dev/shm", &format!("mode=1777,size={size}"))
    }

    /// Masks the host-wide entries of `/proc` that exist on this kernel (see
    /// [`PROC_MASKED_DIRS`]).
    fn mask_proc(&mut self) -> Result<()> {
        let host_proc = Path::new("/proc");
        for dir in PROC_MASKED_DIRS {
            if host_proc.join(dir).is_dir() {
                self.tmpfs(&format!("/proc/{dir}"), "mode=000,size=4k")?;
            }
        }
        // A device node on a mount without devices: opening it fails (EACCES) for everyone.
        let null = Path::new("/dev/null");
        let flags = remount_flags(null, false, false)?;
        for file in PROC_MASKED_FILES {
            if host_proc.join(file).is_file() {
                self.ops.push(MountOp::Bind {
                    source: cstr(null)?,
                    path: self.inside(&format!("/proc/{file}"))?,
                    dir: false,
                    flags,
                });
            }
        }
        Ok(())
    }

    /// The box's `/proc`, with the host-wide entries masked where the kernel shows them.
    fn own_proc(&mut self, system: &SystemLayout) -> Result<()> {
        self.proc(system.proc_subset)?;
        if !system.proc_subset {
            self.mask_proc()?;
        }
        Ok(())
    }

    /// A `/proc` of the box's own pid namespace. `hidepid=invisible`: the program sees only
    /// processes it could trace (its own), never the init, a clone of the caller whose command
    /// line and environment are the host's. `subset=pid` where the kernel has it: nothing but
    /// processes (no host-wide entry to mask, see [`PROC_MASKED_DIRS`]).
    fn proc(&mut self, subset: bool) -> Result<()> {
        self.mkdir("/proc")?;
        let path = self.inside("/proc")?;
        let data = if subset {
            c"hidepid=invisible,subset=pid"
        } else {
            c"hidepid=invisible"
        };
        self.ops.push(MountOp::Proc {
            path,
            data: data.into(),
        });
        Ok(())
    }
}

/// Executes one operation: async-signal-safe. Returns the errno on failure.
pub(crate) fn apply(op: MountStep) -> Result<(), i32> {
    use std::ptr::null;
    let check = |r: libc::c_int| {
        if r == 0 {
            Ok(())
        } else {
            Err(nix::errno::Errno::last_raw())
        }
    };
    // SAFETY: every pointer is a NUL-terminated string prepared before the clone (or received
    // and checked, see `handover`), or null where the system call accepts null.
    unsafe {
        match op {
            MountStep::Mkdir { path } => {
                if libc::mkdir(path, 0o755) != 0 && nix::errno::Errno::last_raw() != libc::EEXIST {
                    return Err(nix::errno::Errno::last_raw());
                }
                Ok(())
            }
            MountStep::Symlink { target, path } => check(libc::symlink(target, path)),
            MountStep::Tmpfs { path, data } => check(libc::mount(
                c"tmpfs".as_ptr(),
                path,
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.cast(),
            )),
            MountStep::Bind {
                source,
                path,
                dir,
                flags,
            } => {
                if dir {
                    if libc::mkdir(path, 0o755) != 0
                        && nix::errno::Errno::last_raw() != libc::EEXIST
                    {
                        return Err(nix::errno::Errno::last_raw());
                    }
                } else {
                    let fd = libc::open(
                        path,
                        libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                        0o644,
                    );
                    // An existing target (a box file, a host-wide file of `/proc`, which no
                    // one may write) is fine: the bind decides.
                    let existing = [libc::EEXIST, libc::EISDIR, libc::EACCES];
                    if fd < 0 && !existing.contains(&nix::errno::Errno::last_raw()) {
                        return Err(nix::errno::Errno::last_raw());
                    }
                    if fd >= 0 {
                        libc::close(fd);
                    }
                }
                check(libc::mount(
                    source,
                    path,
                    null(),
                    libc::MS_BIND | libc::MS_REC,
                    null(),
                ))?;
                // Zero: the bind has the flags already (see `remount_flags`).
                if flags == 0 {
                    return Ok(());
                }
                check(libc::mount(null(), path, null(), flags, null()))
            }
            MountStep::Proc { path, data } => check(libc::mount(
                c"proc".as_ptr(),
                path,
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                data.cast(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_shows_processes_only_from_linux_5_8() {
        for (release, subset) in [
            ("6.18.44-fc-v669", true),
            ("5.8.0", true),
            ("5.10.0-28-amd64", true),
            ("5.7.19", false),
            ("4.19.0-26-amd64", false),
            ("3.10.0-1160.el7.x86_64", false),
            ("", false),
        ] {
            assert_eq!(proc_subset_supported(release), subset, "{release}");
        }
    }

    /// `/dev`, `/proc` and the streams' stage are the box's own, `/etc` and the system's
    /// folders the host's: a bind there is refused with its paths named; a bind elsewhere is
    /// planned.
    #[test]
    fn binds_under_the_boxs_own_folders_are_refused() {
        let root = Path::new("/tmp/ioi-sandbox-root");
        let host = std::env::temp_dir();
        for inside in [
            "/dev/shm/x",
            "/proc/self",
            "/dev",
            "/.stdio",
            "/.stdio/1",
            "/etc/extra",
            "/usr/local/x",
            "/lib/x",
        ] {
            let mut spec = RunSpec::in_tmpfs(1 << 20, ["/bin/true"]);
            spec.binds.push(crate::Bind::read_only(&host, inside));
            let error = run_plan(root, &spec, 1 << 20).unwrap_err().to_string();
            assert!(error.contains(inside), "{error}");
        }
        let mut spec = RunSpec::in_tmpfs(1 << 20, ["/bin/true"]);
        spec.binds.push(crate::Bind::read_only(&host, "/data"));
        assert!(run_plan(root, &spec, 1 << 20).is_ok());
    }

    /// The kernel's file systems of this host are known by their magic numbers; the others
    /// are not taken for one.
    #[test]
    fn kernel_file_systems_are_known_by_their_magic() {
        assert_eq!(file_system_by_magic(Path::new("/sys")), Some("sysfs"));
        let cgroup = file_system_by_magic(Path::new("/sys/fs/cgroup/pids"))
            .or_else(|| file_system_by_magic(Path::new("/sys/fs/cgroup")));
        assert!(matches!(cgroup, Some("cgroup" | "cgroup2")), "{cgroup:?}");
        // Below `/sys`, whatever the file system (a tmpfs holds v1's hierarchies).
        assert_eq!(
            kernel_file_system(Path::new("/sys/fs/cgroup")),
            Some("sysfs")
        );
        for ordinary in ["/", "/proc", "/dev", "/usr", "/tmp"] {
            assert_eq!(kernel_file_system(Path::new(ordinary)), None, "{ordinary}");
        }
    }

    /// A writable bind of the run is remounted only when its source mount lacks nosuid or
    /// nodev; a read-only one always is, as are the devices (read-only, devices kept).
    #[test]
    fn binds_are_remounted_only_to_add_a_flag() {
        let shm = Path::new("/dev/shm");
        let held = statvfs(shm)
            .unwrap()
            .flags()
            .contains(FsFlags::ST_NOSUID | FsFlags::ST_NODEV);
        assert_eq!(writable_remount_flags(shm).unwrap() == 0, held);
        let tmp = std::env::temp_dir();
        let host = statvfs(&tmp).unwrap().flags();
        let writable = writable_remount_flags(&tmp).unwrap();
        if !host.contains(FsFlags::ST_NOSUID) || !host.contains(FsFlags::ST_NODEV) {
            let wanted = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_BIND | libc::MS_REMOUNT;
            assert_eq!(writable & wanted, wanted);
            assert_eq!(writable & libc::MS_RDONLY, 0);
        }
        for read_only in [shm, Path::new("/usr")] {
            let flags = remount_flags(read_only, false, false).unwrap();
            assert_eq!(flags & libc::MS_RDONLY, libc::MS_RDONLY, "{read_only:?}");
        }
        let device = remount_flags(Path::new("/dev/null"), false, true).unwrap();
        assert_eq!(device & (libc::MS_RDONLY | libc::MS_NODEV), libc::MS_RDONLY);
    }

    /// A bind from the kernel's own file systems (`/sys`, the cgroups) is refused with its
    /// paths and the file system named: no box sees them (see `mount_template`).
    #[test]
    fn binds_from_kernel_file_systems_are_refused() {
        let root = Path::new("/tmp/ioi-sandbox-root");
        let mut spec = RunSpec::in_tmpfs(1 << 20, ["/bin/true"]);
        spec.binds.push(crate::Bind::read_only("/sys/kernel", "/k"));
        let error = run_plan(root, &spec, 1 << 20).unwrap_err().to_string();
        assert!(
            error.contains("/sys/kernel") && error.contains("/k") && error.contains("sysfs"),
            "{error}"
        );
    }
}
