//! Facts about the host for `doctor`: kernel, cgroups, user namespaces, seccomp.

use std::path::Path;

/// One check of the host and what to do when it fails.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

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

    let max_userns = read("/proc/sys/user/max_user_namespaces").and_then(|s| s.parse::<u64>().ok());
    let unpriv = read("/proc/sys/kernel/unprivileged_userns_clone");
    let userns_ok = max_userns.is_none_or(|n| n > 0);
    out.push(Check {
        name: "user namespaces",
        ok: userns_ok,
        detail: match (max_userns, unpriv) {
            (Some(0), _) => "user.max_user_namespaces is 0: set it to e.g. 10000 (sysctl -w user.max_user_namespaces=10000)".into(),
            (n, u) => format!("user.max_user_namespaces={}, kernel.unprivileged_userns_clone={}",
                n.map(|n| n.to_string()).unwrap_or_else(|| "?".into()), u.unwrap_or_else(|| "n/a".into())),
        },
    });

    let (cg_ok, cg_detail) = match crate::cgroup::CgroupRoot::detect() {
        Ok(root) => (
            true,
            match root.version() {
                crate::CgroupVersion::V1 => {
                    "cgroup v1 with memory, cpuacct and pids controllers".to_string()
                }
                crate::CgroupVersion::V2 => {
                    "cgroup v2 (unified) with memory and pids controllers".to_string()
                }
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
