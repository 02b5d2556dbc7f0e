//! Who this process is, as far as the sandbox's privileges go: root with `CAP_SYS_ADMIN`, root
//! without it (a container started without `--cap-add SYS_ADMIN`), or another user. The cgroup
//! and namespace errors and `doctor` name what is missing from it, never "run as root" to root.

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
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
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
