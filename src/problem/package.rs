//! Reading the files of a package (a TPS or CMS task folder) that may be links
//! (docs/data.md#links-in-packages). A package is written by others: a link in it may point
//! at a host file its author cannot read (`/root/...`, `/etc/shadow`), and the judge runs as
//! root. A link that stays inside the package is followed; one that leads out of it is read
//! with the rights of an unprivileged user (`nobody`), so it gives only what anyone on the
//! host could read anyway (IOI 2022 links `testlib.h` into a submodule beside the tasks).

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
    Ok((!target.starts_with(&root)).then_some(target))
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
