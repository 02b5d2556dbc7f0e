//! Reading the files of a package (a TPS or CMS task folder) that may be links
//! (docs/data.md#links-in-packages). A package is written by others: a link in it may point
//! at a host file its author cannot read (`/root/...`, `/etc/shadow`), and the judge runs as
//! root. A link that stays inside the package is followed, and so is one that stays inside the
//! git repository the package was cloned with (IOI 2022 links `testlib.h` into a submodule
//! beside the tasks, and a clone may sit in a folder others cannot enter, such as root's
//! home). Any other link is read with the rights of an unprivileged user (`nobody`), so it
//! gives only what anyone on the host could read anyway.
//!
//! The repository is the nearest folder above the package that holds `.git`, reached without
//! passing a folder owned by someone else or one others may write: in a world-writable `/tmp`
//! anyone could plant a `.git` above another's package and widen what its links may reach.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The unprivileged user (and group) that reads a link out of a package when ioi-run runs as
/// root: `nobody` on every Linux distribution.
const NOBODY: u32 = 65534;

/// The largest file of a package read into memory (a grader, a checker, a configuration):
/// IOI's are kilobytes, testlib.h a few hundred.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The content of `path`, a file of the package at `root` (see the module comment): a
/// regular file of at most [`MAX_FILE_BYTES`]. A FIFO would block the judge for ever and a
/// device (`/dev/zero`) never ends, so neither is opened.
pub fn read(root: &Path, path: &Path) -> Result<Vec<u8>> {
    let read = |p: &Path| read_regular_file(p, MAX_FILE_BYTES);
    match outside(root, path)? {
        None => read(path).with_context(|| format!("cannot read {}", path.display())),
        Some(target) => as_nobody(path, &target, read),
    }
}

/// [`read`] as text.
pub fn read_to_string(root: &Path, path: &Path) -> Result<String> {
    String::from_utf8(read(root, path)?)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))
}

/// The content of the file at `path` when it is a regular file of at most `max_bytes` (links
/// followed): a FIFO would block for ever and a device (`/dev/zero`) never end, so neither is
/// read, and it is opened without blocking to find out.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let too_large = || std::io::Error::other(format!("larger than {} MiB", max_bytes >> 20));
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, a device or a folder)",
        ));
    }
    if meta.len() > max_bytes {
        return Err(too_large());
    }
    let mut content = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1).read_to_end(&mut content)?;
    match content.len() as u64 > max_bytes {
        true => Err(too_large()),
        false => Ok(content),
    }
}

/// Checks that `path`, a file of the package at `root` that something else will open later
/// (a test input the sandbox opens as a program's stdin), is inside the package or readable by
/// an unprivileged user. Returns the path to open: the link's target when it leads out.
pub fn check_readable(root: &Path, path: &Path) -> Result<PathBuf> {
    match outside(root, path)? {
        None => Ok(path.to_path_buf()),
        Some(target) => {
            as_nobody(path, &target, |p| std::fs::File::open(p).map(drop))?;
            Ok(target)
        }
    }
}

/// Where `path` leads when that is outside `root` (`None` inside, or when `path` is no link
/// anywhere on its way).
fn outside(root: &Path, path: &Path) -> Result<Option<PathBuf>> {
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let target = match path.canonicalize() {
        Ok(target) => target,
        Err(e) => {
            let link = std::fs::read_link(path).ok();
            return Err(e).with_context(|| match link {
                // IOI 2022 links testlib.h and Makefiles into its `tps` submodule.
                Some(to) => format!(
                    "cannot read {} (a symbolic link to {}: is the `tps` submodule checked out? \
                     `git submodule update --init`)",
                    path.display(),
                    to.display()
                ),
                None => format!("cannot read {}", path.display()),
            });
        }
    };
    let inside = target.starts_with(&root)
        || repository_of(&root).is_some_and(|repository| target.starts_with(repository));
    Ok((!inside).then_some(target))
}

/// The git repository the (resolved) folder `root` belongs to, as the module comment says:
/// the nearest folder at or above it holding `.git` (a folder, or the file of a submodule or
/// worktree), where it and every folder on the way have the owner of `root` and let no one
/// else write.
fn repository_of(root: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let owner = root.symlink_metadata().ok()?.uid();
    let mut dir = root;
    loop {
        let meta = dir.symlink_metadata().ok()?;
        if meta.uid() != owner || meta.mode() & 0o022 != 0 {
            return None;
        }
        if dir
            .join(".git")
            .symlink_metadata()
            .is_ok_and(|git| git.uid() == owner && !git.file_type().is_symlink())
        {
            return Some(dir.to_path_buf());
        }
        dir = dir.parent()?;
    }
}

/// Runs `open` on `target` with the file-system rights of `nobody` when the process is root
/// (on a thread of its own: a thread's file-system user, group and supplementary groups are
/// its own on Linux, so nothing else of the process loses its rights).
fn as_nobody<T: Send>(
    path: &Path,
    target: &Path,
    open: impl FnOnce(&Path) -> std::io::Result<T> + Send,
) -> Result<T> {
    let refused = |e: std::io::Error| {
        anyhow::Error::new(e).context(format!(
            "{} is a link out of its package to {}, which an unprivileged user cannot read \
             (docs/data.md#links-in-packages)",
            path.display(),
            target.display()
        ))
    };
    if !nix::unistd::geteuid().is_root() {
        return open(target).map_err(refused);
    }
    let result = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: raw system calls on this thread's own credentials; glibc's wrappers
                // of setgroups would change every thread of the process. Dropping the
                // file-system uid from 0 also clears the thread's CAP_DAC_* capabilities.
                unsafe {
                    if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
                        || libc::syscall(libc::SYS_setfsgid, NOBODY) < 0
                        || libc::syscall(libc::SYS_setfsuid, NOBODY) < 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                open(target)
            })
            .join()
    });
    match result {
        Ok(result) => result.map_err(refused),
        Err(_) => bail!(
            "reading {} as an unprivileged user panicked",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn links_inside_the_package_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/real"), b"inside").unwrap();
        symlink("sub/real", dir.path().join("link")).unwrap();
        assert_eq!(
            read(dir.path(), &dir.path().join("link")).unwrap(),
            b"inside"
        );
        assert_eq!(
            check_readable(dir.path(), &dir.path().join("link")).unwrap(),
            dir.path().join("link")
        );
    }

    /// A clone of a repository in a folder others cannot enter (root's home, `mktemp -d`),
    /// whose task links `testlib.h` to a folder beside it: followed. A link from the same
    /// task to a root-only file outside the repository: refused.
    #[test]
    fn links_inside_the_packages_repository_are_followed_and_others_are_not() {
        let home = tempfile::tempdir().unwrap();
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let repository = home.path().join("ioi2022");
        let task = repository.join("prison");
        std::fs::create_dir_all(task.join("checker")).unwrap();
        std::fs::create_dir_all(repository.join("tps/problem-assets")).unwrap();
        std::fs::write(repository.join("tps/problem-assets/testlib.h"), b"testlib").unwrap();
        std::fs::write(home.path().join("secret"), b"root only").unwrap();
        std::fs::set_permissions(
            home.path().join("secret"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        symlink(
            "../../tps/problem-assets/testlib.h",
            task.join("checker/testlib.h"),
        )
        .unwrap();
        symlink("../../secret", task.join("secret.in")).unwrap();
        let (testlib, secret) = (task.join("checker/testlib.h"), task.join("secret.in"));

        if nix::unistd::geteuid().is_root() {
            // No repository yet: the link out is read as `nobody`, who cannot enter the home.
            assert!(read(&task, &testlib).is_err());
        }
        std::fs::create_dir(repository.join(".git")).unwrap();
        assert_eq!(read(&task, &testlib).unwrap(), b"testlib");
        assert_eq!(check_readable(&task, &testlib).unwrap(), testlib);
        if nix::unistd::geteuid().is_root() {
            let message = format!("{:#}", read(&task, &secret).unwrap_err());
            assert!(message.contains("link out of its package"), "{message}");
            assert!(check_readable(&task, &secret).is_err());
        }
        // A submodule's `.git` is a file: its checkout is a repository of its own.
        std::fs::remove_dir(repository.join(".git")).unwrap();
        std::fs::write(repository.join(".git"), b"gitdir: ../.git/modules/ioi2022").unwrap();
        assert_eq!(
            repository_of(&task.canonicalize().unwrap()),
            Some(repository.canonicalize().unwrap())
        );
    }

    /// A `.git` above the package counts only when nobody else could have put it there.
    #[test]
    fn a_repository_is_not_found_past_a_folder_others_may_write_or_own() {
        let shared = tempfile::tempdir().unwrap();
        std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        std::fs::create_dir(shared.path().join(".git")).unwrap();
        let task = shared.path().join("task");
        std::fs::create_dir(&task).unwrap();
        std::fs::set_permissions(&task, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(repository_of(&task.canonicalize().unwrap()), None);
        // The same folder writable by its owner only: the repository is found.
        std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(repository_of(&task.canonicalize().unwrap()).is_some());
        if nix::unistd::geteuid().is_root() {
            // Owned by someone else: not the package owner's repository.
            nix::unistd::chown(
                shared.path(),
                Some(nix::unistd::Uid::from_raw(NOBODY)),
                None,
            )
            .unwrap();
            assert_eq!(repository_of(&task.canonicalize().unwrap()), None);
        }
    }

    #[test]
    fn a_link_out_of_the_package_reads_only_what_anyone_may() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, b"root only").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let public = outside.path().join("public");
        std::fs::write(&public, b"anyone").unwrap();
        std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let package = tempfile::tempdir().unwrap();
        symlink(&secret, package.path().join("secret.in")).unwrap();
        symlink(&public, package.path().join("public.h")).unwrap();

        assert_eq!(
            read(package.path(), &package.path().join("public.h")).unwrap(),
            b"anyone"
        );
        if !nix::unistd::geteuid().is_root() {
            // Without root, the owner of the secret is the reader: nothing to take away.
            return;
        }
        let error = read(package.path(), &package.path().join("secret.in")).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("link out of its package"), "{message}");
        assert!(message.contains("secret.in"), "{message}");
        assert!(check_readable(package.path(), &package.path().join("secret.in")).is_err());
        // The calling thread keeps its rights.
        assert_eq!(std::fs::read(&secret).unwrap(), b"root only");
    }
}
