//! Facts about the host for `doctor`: kernel, cgroups, user namespaces, seccomp; what keeps
//! timing trustworthy ([`timing`]); and the real cause, with the errno, when the kernel refuses
//! the namespaces of a run.

use std::path::Path;

use nix::errno::Errno;

/// What a pipe round trip, a page fault and a cache miss cost on this host.
pub mod costs;
/// The host's timing factors (CPU frequency scaling, SMT, ...) that move CPU times.
pub mod timing;

/// One check of the host and what to do when it fails.
#[derive(Debug, Clone)]
pub struct Check {
    /// What is checked (a mechanism the sandbox needs).
    pub name: &'static str,
    /// Whether the host has it.
    pub ok: bool,
    /// What was found, and what to do when it is missing.
    pub detail: String,
}

/// Who this process is, as far as the sandbox's privileges go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    /// Root with `CAP_SYS_ADMIN`: namespaces, mounts and cgroups are open to it.
    Root,
    /// Root without `CAP_SYS_ADMIN`, as in a container started without `--cap-add SYS_ADMIN`:
    /// "run as root" helps nothing there, the capability does.
    RootWithoutSysAdmin,
    /// Any other user.
    User,
}

/// The bit of `CAP_SYS_ADMIN` in the capability sets of `/proc/<pid>/status`.
const CAP_SYS_ADMIN: u32 = 21;

impl Privilege {
    /// This process's privilege: its effective uid, and `CapEff` of `/proc/self/status`.
    pub fn current() -> Privilege {
        let status = read("/proc/self/status").unwrap_or_default();
        Privilege::of(nix::unistd::geteuid().is_root(), &status)
    }

    /// The privilege of a process with this effective uid (root or not) and this
    /// `/proc/<pid>/status` text. A status without a readable `CapEff` counts as holding the
    /// capability: the refusal is then named by the kernel's error, not guessed.
    pub fn of(root: bool, status: &str) -> Privilege {
        if !root {
            return Privilege::User;
        }
        let effective = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok());
        match effective {
            Some(caps) if caps & (1 << CAP_SYS_ADMIN) == 0 => Privilege::RootWithoutSysAdmin,
            _ => Privilege::Root,
        }
    }
}

/// What to do when root lacks `CAP_SYS_ADMIN`.
pub const NEEDS_SYS_ADMIN: &str = "this process is root but lacks CAP_SYS_ADMIN: run the \
     container with --cap-add SYS_ADMIN (docs/container.md)";

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Checks the mechanisms the sandbox needs, without running anything.
pub fn checks() -> Vec<Check> {
    let mut out = Vec::new();
    let kernel = nix::sys::utsname::uname()
        .map(|u| {
            format!(
                "{} {}",
                u.sysname().to_string_lossy(),
                u.release().to_string_lossy()
            )
        })
        .unwrap_or_else(|_| "unknown".into());
    out.push(Check {
        name: "kernel",
        ok: true,
        detail: kernel,
    });

    let userns = probe_user_namespace();
    out.push(Check {
        name: "user namespaces",
        ok: userns.is_ok(),
        detail: match userns {
            Ok(()) => format!(
                "a new user namespace can be created (user.max_user_namespaces={})",
                read("/proc/sys/user/max_user_namespaces").unwrap_or_else(|| "?".into())
            ),
            Err(errno) => namespace_failure(errno),
        },
    });

    let (cg_ok, cg_detail) = match crate::cgroup::CgroupRoot::detect()
        .and_then(|root| root.check_writable().map(|()| root))
    {
        Ok(root) => (
            true,
            match root.version() {
                crate::CgroupVersion::V1 => {
                    "cgroup v1 with memory, cpuacct and pids controllers".to_string()
                }
                crate::CgroupVersion::V2 => format!(
                    "cgroup v2 (unified) with memory and pids controllers; peak memory {}",
                    if crate::cgroup::sample_forced() {
                        format!(
                            "sampled every {} ms (forced by {})",
                            crate::cgroup::MEMORY_SAMPLE_PERIOD.as_millis(),
                            crate::SAMPLE_MEMORY_ENV
                        )
                    } else if kernel_at_least(5, 19) {
                        "from memory.peak".to_string()
                    } else {
                        format!(
                            "sampled every {} ms (no memory.peak before Linux 5.19)",
                            crate::cgroup::MEMORY_SAMPLE_PERIOD.as_millis()
                        )
                    }
                ),
            },
        ),
        Err(e) => (false, format!("{e:#}")),
    };
    out.push(Check {
        name: "cgroups",
        ok: cg_ok,
        detail: cg_detail,
    });

    let swap_accounting = Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists();
    let swap_total = read("/proc/meminfo")
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("SwapTotal:"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default();
    let no_swap = swap_total.split_whitespace().nth(1) == Some("0");
    out.push(Check {
        name: "swap",
        ok: no_swap || swap_accounting || cgroups_rs::fs::hierarchies::is_cgroup2_unified_mode(),
        detail: if no_swap {
            "no swap: memory limits are exact".into()
        } else if swap_accounting {
            "swap present, limited by memory.memsw".into()
        } else {
            "swap present without swap accounting: boot with swapaccount=1 or disable swap (swapoff -a), or memory limits can be exceeded through swap".into()
        },
    });

    out.push(uid_check());
    let delays = crate::waiting::available();
    out.push(Check {
        name: "run delay",
        ok: delays,
        detail: if delays {
            "per-task run delays in /proc/<pid>/schedstat: time waiting for a CPU is not charged to the wall limit".into()
        } else {
            "/proc/<pid>/schedstat is missing (kernel without CONFIG_SCHED_INFO): on a busy host, CPU-bound programs can hit the wall limit".into()
        },
    });

    let seccomp = read("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
        .unwrap_or(false);
    out.push(Check {
        name: "seccomp",
        ok: seccomp,
        detail: if seccomp {
            "available".into()
        } else {
            "the kernel lacks CONFIG_SECCOMP_FILTER".into()
        },
    });
    out
}

/// Tries what every run does, `clone(CLONE_NEWUSER)`, in a child that exits at once.
fn probe_user_namespace() -> Result<(), Errno> {
    // SAFETY: a fork-like clone; the child only calls _exit, which is async-signal-safe.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWUSER | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(Errno::last());
    }
    if pid == 0 {
        // SAFETY: ends the child without running the parent's destructors or atexit handlers.
        unsafe { libc::_exit(0) };
    }
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid as i32), None);
    Ok(())
}

/// Why the kernel refused new namespaces (`clone` failed with `errno`), and what to do. The
/// same errno has several causes; the ones this host shows are named first.
pub fn namespace_failure(errno: Errno) -> String {
    let root = nix::unistd::geteuid().is_root();
    let head = format!(
        "the kernel refuses new user namespaces: {errno} ({})",
        errno.desc()
    );
    let cause = match errno {
        Errno::ENOSPC => format!(
            "the limit user.max_user_namespaces ({}) is 0 or reached: raise it \
             (sysctl -w user.max_user_namespaces=10000)",
            read("/proc/sys/user/max_user_namespaces").unwrap_or_else(|| "?".into())
        ),
        Errno::EUSERS => {
            "user namespaces are nested 32 deep already: run ioi-run less deeply nested".into()
        }
        Errno::EPERM | Errno::EACCES => {
            if Privilege::current() == Privilege::RootWithoutSysAdmin {
                NEEDS_SYS_ADMIN.into()
            } else if chrooted() == Some(true) {
                "this process runs in a chroot, and the kernel refuses new user namespaces to a \
                 chrooted process (whatever the sysctls say): run ioi-run outside the chroot, or \
                 in a container (which uses pivot_root, not chroot)"
                    .into()
            } else if !root
                && read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0")
            {
                "kernel.unprivileged_userns_clone is 0: set it to 1 (sysctl -w \
                 kernel.unprivileged_userns_clone=1), or run as root"
                    .into()
            } else if !root
                && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref()
                    == Some("1")
            {
                "AppArmor restricts unprivileged user namespaces \
                 (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10 and later): set it \
                 to 0, give ioi-run an AppArmor profile with `userns,`, or run as root"
                    .into()
            } else if seccomp_filtered() {
                "a seccomp filter on this process refuses it (e.g. Docker's default profile): run \
                 the container with --privileged, or --security-opt seccomp=unconfined \
                 --security-opt apparmor=unconfined"
                    .into()
            } else {
                format!(
                    "possible causes: a chroot that could not be detected, a security module \
                     (AppArmor, SELinux), or a uid without a mapping in the parent namespace \
                     (user.max_user_namespaces={}, kernel.unprivileged_userns_clone={})",
                    read("/proc/sys/user/max_user_namespaces").unwrap_or_else(|| "?".into()),
                    read("/proc/sys/kernel/unprivileged_userns_clone")
                        .unwrap_or_else(|| "n/a".into())
                )
            }
        }
        Errno::EINVAL => "the kernel lacks CONFIG_USER_NS or another namespace type".into(),
        _ => "unexpected error".into(),
    };
    format!("{head}; {cause}")
}

/// Whether this process is chrooted, that is its root is not the root of its mount namespace
/// (what the kernel checks): its `/` differs (mount or inode) from the root of PID 1 in the
/// same mount namespace, or, when PID 1 is out of reach (not root), no mount sits at `/`.
/// `None` when it cannot be told.
pub fn chrooted() -> Option<bool> {
    let same_ns = std::fs::read_link("/proc/self/ns/mnt").ok()?
        == std::fs::read_link("/proc/1/ns/mnt").ok()?;
    if same_ns {
        if let (Some(own), Some(init)) = (mount_and_inode("/"), mount_and_inode("/proc/1/root/")) {
            return Some(own != init);
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let root_mounted = mountinfo
        .lines()
        .any(|l| l.split_whitespace().nth(4) == Some("/"));
    (!root_mounted).then_some(true)
}

/// (mount id, device, inode) of a path.
fn mount_and_inode(path: &str) -> Option<(u64, u32, u32, u64)> {
    let c_path = std::ffi::CString::new(path).ok()?;
    // SAFETY: statx fills the zeroed struct; every field is plain data.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid NUL-terminated path and a pointer to a statx struct we own.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            0,
            libc::STATX_INO | libc::STATX_MNT_ID,
            &mut st,
        )
    };
    if rc != 0 {
        return None;
    }
    let mnt = if st.stx_mask & libc::STATX_MNT_ID != 0 {
        st.stx_mnt_id
    } else {
        0
    };
    Some((mnt, st.stx_dev_major, st.stx_dev_minor, st.stx_ino))
}

/// Whether a seccomp filter applies to this process (`Seccomp: 2` in /proc/self/status).
fn seccomp_filtered() -> bool {
    read("/proc/self/status").is_some_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Seccomp:") && l.split_whitespace().nth(1) == Some("2"))
    })
}

/// Whether the running kernel is at least `major.minor`.
fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// Entries of an `/etc/passwd`-like file whose id (third field) is in the range.
fn ids_in_range(file: &str, range: &crate::UidRange) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (range.first..=range.last)
                .contains(&id)
                .then(|| format!("{name} ({id})"))
        })
        .collect()
}

/// The box uid range: free of host users and groups, and its lock directory usable.
fn uid_check() -> Check {
    let name = "sandbox uids";
    let range = match crate::UidRange::from_env() {
        Ok(range) => range,
        Err(e) => {
            return Check {
                name,
                ok: false,
                detail: format!("{e:#}"),
            }
        }
    };
    if !nix::unistd::geteuid().is_root() {
        return Check {
            name,
            ok: true,
            detail: "not root: every box runs as your own uid (boxes stay apart by their namespaces, but share your per-user budgets); run as root for one uid per box".into(),
        };
    }
    let mut taken = ids_in_range("/etc/passwd", &range);
    taken.extend(
        ids_in_range("/etc/group", &range)
            .into_iter()
            .map(|g| format!("group {g}")),
    );
    if !taken.is_empty() {
        return Check {
            name,
            ok: false,
            detail: format!(
                "{}-{} is used on this host by {}: choose a free range with {}=FIRST-LAST",
                range.first,
                range.last,
                taken.join(", "),
                crate::uids::RANGE_VAR
            ),
        };
    }
    let dir = crate::uids::lock_dir();
    match crate::uids::prepare_lock_dir(&dir) {
        Ok(()) => Check {
            name,
            ok: true,
            detail: format!(
                "{}-{} free (box owner and group {}, one uid per running box), leases in {}",
                range.first,
                range.last,
                range.first,
                dir.display()
            ),
        },
        Err(e) => Check {
            name,
            ok: false,
            detail: format!("{e:#}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tioi-run\nUid:\t0\t0\t0\t0\nCapPrm:\t00000000a80425fb\n";

    /// `CapEff` decides between root and root without CAP_SYS_ADMIN (bit 21); a status without
    /// it leaves the kernel's error to speak; a normal user is a user whatever its caps.
    #[test]
    fn root_without_cap_sys_admin_is_told_apart_from_root() {
        // Docker's default capabilities: no CAP_SYS_ADMIN.
        let docker = format!("{STATUS}CapEff:\t00000000a80425fb\n");
        assert_eq!(Privilege::of(true, &docker), Privilege::RootWithoutSysAdmin);
        // The same with --cap-add SYS_ADMIN.
        let with_admin = format!("{STATUS}CapEff:\t00000000a82425fb\n");
        assert_eq!(Privilege::of(true, &with_admin), Privilege::Root);
        assert_eq!(Privilege::of(true, STATUS), Privilege::Root);
        assert_eq!(Privilege::of(false, &docker), Privilege::User);
        assert_eq!(Privilege::of(false, &with_admin), Privilege::User);
    }

    /// A `CapEff` that is not 16 hex digits (empty, too long, not hex, not text the kernel
    /// writes) never panics and counts as holding the capability, as a missing one does.
    #[test]
    fn an_odd_cap_eff_is_read_as_unknown_without_a_panic() {
        for odd in [
            "CapEff:\n",
            "CapEff:\t\n",
            "CapEff:\t00000000a80425fb00000000a80425fb\n",
            "CapEff:\tzz\n",
            "CapEff:\t-1\n",
            "CapEff:\t\u{fffd}\u{0}\n",
            "CapEff",
        ] {
            let status = format!("{STATUS}{odd}");
            assert_eq!(Privilege::of(true, &status), Privilege::Root, "{odd:?}");
        }
        // The first CapEff line is the one read.
        let twice = format!("{STATUS}CapEff:\t00000000a80425fb\nCapEff:\t00000000a82425fb\n");
        assert_eq!(Privilege::of(true, &twice), Privilege::RootWithoutSysAdmin);
    }
}
