//! Temporary folders of ioi-run, named `ioi-<kind>-<pid>-XXXXXX` in the temp directory, so that
//! the folders of a process that was killed (SIGKILL, or an interrupt, which exits without
//! running destructors) are recognised by the next one and removed.

use std::path::Path;

use anyhow::{Context, Result};

/// The kinds of temporary folders; only these are ever swept.
const KINDS: &[&str] = &["box", "out", "fifos", "tests", "request", "kept"];

/// A new temporary folder of `kind` (one of [`KINDS`]), removed when dropped.
pub fn tempdir(kind: &str) -> Result<tempfile::TempDir> {
    let base = match kind {
        "fifos" => memory_home(),
        _ => std::env::temp_dir(),
    };
    tempdir_in(kind, base)
}

/// A new temporary folder of `kind` on a tmpfs when this host has one the process can write
/// (see [`memory_home`]), removed when dropped: for a host folder that an untrusted program
/// writes in. What a program writes on a tmpfs is charged to its own memory cgroup, so its
/// memory limit bounds the files it leaves, as in a box of its own tmpfs; on a disk they would
/// be bounded by nothing but the disk.
pub fn tempdir_in_memory(kind: &str) -> Result<tempfile::TempDir> {
    tempdir_in(kind, box_home())
}

/// The smallest tmpfs that holds the host folders programs write in: a container engine's
/// default `/dev/shm` of 64 MiB, shared by every run at once, would make one program's files
/// another's "no space left". Below it, such folders stay in the temporary folder (docs/hosts.md).
const MIN_BOX_TMPFS: u64 = 1 << 30;

/// Where [`tempdir_in_memory`] makes its folders: [`memory_home`] when it is a tmpfs of at
/// least [`MIN_BOX_TMPFS`], else the temporary folder.
fn box_home() -> std::path::PathBuf {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        use nix::sys::statfs::{statfs, TMPFS_MAGIC};
        let home = memory_home();
        let large_tmpfs = statfs(&home).is_ok_and(|s| {
            s.filesystem_type() == TMPFS_MAGIC
                && s.blocks().saturating_mul(s.block_size() as u64) >= MIN_BOX_TMPFS
        });
        match large_tmpfs {
            true => home,
            false => std::env::temp_dir(),
        }
    })
    .clone()
}

fn tempdir_in(kind: &str, base: std::path::PathBuf) -> Result<tempfile::TempDir> {
    debug_assert!(KINDS.contains(&kind), "unknown scratch kind {kind}");
    tempfile::Builder::new()
        .prefix(&format!("ioi-{kind}-{}-", std::process::id()))
        .tempdir_in(&base)
        .with_context(|| {
            format!(
                "cannot create a temporary {kind} folder in {}",
                base.display()
            )
        })
}

/// A tmpfs for temporary folders: the system's temporary folder when it is one, else
/// `/dev/shm` when it is a tmpfs this process can write, else the temporary folder anyway.
/// FIFO folders go there: a FIFO holds no data in its folder, so where it is changes nothing
/// for a run, and on a disk the folder's and each FIFO's creation and removal go through the
/// journal, once per Communication test and once per keeper run. So do the host folders an
/// untrusted program writes in (see [`tempdir_in_memory`]). Every other kind stays in the
/// temporary folder: a compiler's box, whose outputs (a precompiled header of a hundred
/// megabytes) would otherwise count against the compile's memory limit.
fn memory_home() -> std::path::PathBuf {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        use nix::sys::statfs::{statfs, TMPFS_MAGIC};
        let on_tmpfs = |dir: &Path| statfs(dir).is_ok_and(|s| s.filesystem_type() == TMPFS_MAGIC);
        let temp = std::env::temp_dir();
        let shm = Path::new(SHM);
        let writable = nix::unistd::access(shm, nix::unistd::AccessFlags::W_OK).is_ok();
        match !on_tmpfs(&temp) && on_tmpfs(shm) && writable {
            true => shm.to_path_buf(),
            false => temp,
        }
    })
    .clone()
}

const SHM: &str = "/dev/shm";

/// Every folder temporary folders of any ioi-run process may be in.
fn homes() -> Vec<std::path::PathBuf> {
    let temp = std::env::temp_dir();
    let mut homes = vec![temp.clone()];
    if temp != Path::new(SHM) {
        homes.push(SHM.into());
    }
    homes
}

/// Removes `dir` on a thread of its own, off the caller's path: a test's folders are removed
/// while the next test runs (on a disk whose journal is busy, removing a folder can take
/// milliseconds). [`wait_for_removals`] waits until every folder given here is gone; an
/// interrupt's [`remove_own`] removes what is left.
pub fn remove_later(dir: tempfile::TempDir) {
    let removals = removals();
    if let Ok(mut pending) = removals.pending.lock() {
        *pending += 1;
    }
    let refused = match removals.sender.lock() {
        Ok(sender) => match sender.as_ref() {
            Some(sender) => sender.send(dir).err().map(|e| e.0),
            None => Some(dir),
        },
        Err(_) => Some(dir),
    };
    if let Some(dir) = refused {
        remove(dir);
        removals.removed();
    }
}

/// Removes a temporary folder whatever a program left in it ([`remove_tree`]); the folder's
/// own removal then finds it gone.
fn remove(dir: tempfile::TempDir) {
    let _ = remove_tree(dir.path());
    drop(dir);
}

/// Waits until every folder given to [`remove_later`] is removed.
pub fn wait_for_removals() {
    let Some(removals) = REMOVALS.get() else {
        return;
    };
    if let Ok(pending) = removals.pending.lock() {
        drop(removals.done.wait_while(pending, |p| *p > 0));
    }
}

/// The folders [`remove_later`] was given and has not removed yet, and its thread.
struct Removals {
    pending: std::sync::Mutex<usize>,
    done: std::sync::Condvar,
    sender: std::sync::Mutex<Option<std::sync::mpsc::Sender<tempfile::TempDir>>>,
}

impl Removals {
    fn removed(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            *pending = pending.saturating_sub(1);
        }
        self.done.notify_all();
    }
}

static REMOVALS: std::sync::OnceLock<Removals> = std::sync::OnceLock::new();

fn removals() -> &'static Removals {
    REMOVALS.get_or_init(|| {
        let (sender, inbox) = std::sync::mpsc::channel::<tempfile::TempDir>();
        // Without the thread, the sender is `None` and folders are removed inline.
        let started = std::thread::Builder::new()
            .name("ioi-run-removals".into())
            .spawn(move || {
                for dir in inbox {
                    remove(dir);
                    removals().removed();
                }
            })
            .is_ok();
        Removals {
            pending: std::sync::Mutex::new(0),
            done: std::sync::Condvar::new(),
            sender: std::sync::Mutex::new(started.then_some(sender)),
        }
    })
}

/// Removes the temporary folders left by ioi-run processes that no longer exist.
pub fn sweep_stale() {
    for dir in homes() {
        sweep_in(&dir);
    }
}

/// The temporary folders of process `pid` that exist now, in every folder they may be in
/// (`bench soak` counts a server's).
pub(crate) fn folders_of(pid: u32) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for dir in homes() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if owner(&entry.file_name().to_string_lossy()) == Some(pid as i32) {
                found.push(entry.path());
            }
        }
    }
    found
}

/// Removes this process's own temporary folders, and the files it was writing before a rename
/// (before exiting on an interrupt, which skips destructors).
pub fn remove_own() {
    let me = std::process::id() as i32;
    for dir in homes() {
        remove_where(&dir, |pid| pid == me);
    }
    if let Ok(files) = writing().lock() {
        for file in files.iter() {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Files being written under a temporary name before a rename (e.g. `.train-….parquet.tmp`
/// next to the results): an interrupt removes them instead of leaving them in the user's folder.
fn writing() -> &'static std::sync::Mutex<Vec<std::path::PathBuf>> {
    static WRITING: std::sync::OnceLock<std::sync::Mutex<Vec<std::path::PathBuf>>> =
        std::sync::OnceLock::new();
    WRITING.get_or_init(Default::default)
}

/// A file being written under a temporary name; [`remove_own`] deletes it until this guard is
/// dropped (after the rename, or on error, when the file is removed too).
pub struct TempFile(std::path::PathBuf);

impl TempFile {
    pub fn new(path: std::path::PathBuf) -> TempFile {
        if let Ok(mut files) = writing().lock() {
            files.push(path.clone());
        }
        TempFile(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Ok(mut files) = writing().lock() {
            files.retain(|f| f != &self.0);
        }
        // Gone already after a successful rename; a failed write leaves nothing behind either.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Removes the folder `root` and everything in it, however deep it goes. What a program left in
/// its box is as hostile as the program: `std::fs::remove_dir_all` descends with one call and
/// one open folder per level, so a box nested twenty thousand folders deep overflows a thread's
/// stack (a crash of the whole process) or runs out of open files (a folder left forever).
/// Here a folder's sub-folders are moved up into `root` itself before the folder is removed, so
/// the work never goes more than two levels down: two open folders and no recursion, however
/// deep the tree. Links are removed, never followed. Gone already is not an error.
pub fn remove_tree(root: &Path) -> std::io::Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::OFlag;
    use nix::unistd::{unlinkat, UnlinkatFlags};
    let mut top = match open_folder(None, root) {
        Ok(top) => top,
        Err(Errno::ENOENT) => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    let mut lifted = 0u64;
    loop {
        let entries = folder_entries(&mut top)?;
        if entries.is_empty() {
            break;
        }
        for (name, is_folder) in entries {
            if !is_folder {
                unlink(&top, &name, UnlinkatFlags::NoRemoveDir)?;
                continue;
            }
            let mut folder = open_folder(Some(&top), name.as_c_str())?;
            for (inner, inner_is_folder) in folder_entries(&mut folder)? {
                if inner_is_folder {
                    lift(&folder, &inner, &top, &mut lifted)?;
                } else {
                    unlink(&folder, &inner, UnlinkatFlags::NoRemoveDir)?;
                }
            }
            drop(folder);
            unlink(&top, &name, UnlinkatFlags::RemoveDir)?;
        }
    }
    drop(top);
    return match std::fs::remove_dir(root) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    };

    fn open_folder(
        at: Option<&nix::dir::Dir>,
        name: &(impl nix::NixPath + ?Sized),
    ) -> nix::Result<nix::dir::Dir> {
        use std::os::fd::AsFd;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = nix::sys::stat::Mode::empty();
        let open = || match at {
            Some(dir) => nix::dir::Dir::openat(dir.as_fd(), name, flags, mode),
            None => nix::dir::Dir::open(name, flags, mode),
        };
        match open() {
            // A folder its program made unreadable: its owner may open it again (root need not).
            Err(Errno::EACCES) => {
                let rwx = nix::sys::stat::Mode::S_IRWXU;
                match at {
                    Some(dir) => nix::sys::stat::fchmodat(
                        dir.as_fd(),
                        name,
                        rwx,
                        nix::sys::stat::FchmodatFlags::FollowSymlink,
                    )?,
                    None => nix::sys::stat::fchmodat(
                        nix::fcntl::AT_FDCWD,
                        name,
                        rwx,
                        nix::sys::stat::FchmodatFlags::FollowSymlink,
                    )?,
                }
                open()
            }
            other => other,
        }
    }

    /// The names in a folder but `.` and `..`, each with whether it is a folder (never a link
    /// to one).
    fn folder_entries(dir: &mut nix::dir::Dir) -> nix::Result<Vec<(std::ffi::CString, bool)>> {
        use nix::dir::Type;
        use std::os::fd::AsFd;
        let fd = dir
            .as_fd()
            .try_clone_to_owned()
            .map_err(|_| Errno::EMFILE)?;
        let mut entries = Vec::new();
        for entry in dir.iter() {
            let entry = entry?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let is_folder = match entry.file_type() {
                Some(kind) => kind == Type::Directory,
                None => {
                    let stat = nix::sys::stat::fstatat(
                        &fd,
                        name,
                        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                    )?;
                    stat.st_mode & libc::S_IFMT == libc::S_IFDIR
                }
            };
            entries.push((name.to_owned(), is_folder));
        }
        Ok(entries)
    }

    /// Moves the folder `name` of `from` up into `top`, under a name not taken there.
    fn lift(
        from: &nix::dir::Dir,
        name: &std::ffi::CStr,
        top: &nix::dir::Dir,
        lifted: &mut u64,
    ) -> nix::Result<()> {
        use nix::fcntl::{renameat2, RenameFlags};
        use std::os::fd::AsFd;
        loop {
            *lifted += 1;
            let to = format!(".ioi-removing-{lifted}");
            match renameat2(
                from.as_fd(),
                name,
                top.as_fd(),
                to.as_str(),
                RenameFlags::RENAME_NOREPLACE,
            ) {
                Err(Errno::EEXIST) => continue,
                other => return other,
            }
        }
    }

    fn unlink(dir: &nix::dir::Dir, name: &std::ffi::CStr, flags: UnlinkatFlags) -> nix::Result<()> {
        use std::os::fd::AsFd;
        match unlinkat(dir.as_fd(), name, flags) {
            Err(Errno::ENOENT) => Ok(()),
            other => other,
        }
    }
}

/// Removes the folders in `dir` whose creating process passes `select`.
fn remove_where(dir: &Path, select: impl Fn(i32) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if owner(&entry.file_name().to_string_lossy()).is_some_and(&select) {
            let _ = remove_tree(&entry.path());
        }
    }
}

fn sweep_in(dir: &Path) {
    remove_where(dir, |pid| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH)
    });
}

/// The pid that created the scratch folder `name` (`ioi-<kind>-<pid>-XXXXXX`), if it is one.
fn owner(name: &str) -> Option<i32> {
    let (kind, rest) = name.strip_prefix("ioi-")?.split_once('-')?;
    let pid: i32 = rest.split_once('-')?.0.parse().ok()?;
    (KINDS.contains(&kind) && pid > 0).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_of_any_depth_is_removed_without_recursion_and_links_are_not_followed() {
        use nix::fcntl::{openat, OFlag};
        use nix::sys::stat::{mkdirat, Mode};
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("kept"), b"host").unwrap();
        let root = tempfile::tempdir_in(memory_home()).unwrap();
        let tree = root.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.join("link")).unwrap();
        nix::unistd::mkfifo(&tree.join("fifo"), Mode::S_IRWXU).unwrap();
        // 3000 folders, one in the other, a file in each: past the depth a removal that
        // descends one call a level takes on a thread of 64 KiB.
        let mut at = nix::fcntl::open(&tree, OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        for depth in 0..3000 {
            mkdirat(&at, "d", Mode::S_IRWXU).unwrap();
            let file = openat(&at, "f", OFlag::O_CREAT | OFlag::O_WRONLY, Mode::S_IRUSR);
            drop(file.unwrap());
            if depth == 1500 {
                std::os::unix::fs::symlink(
                    outside.path(),
                    format!("/proc/self/fd/{}/up", {
                        use std::os::fd::AsRawFd;
                        at.as_raw_fd()
                    }),
                )
                .unwrap();
            }
            at = openat(&at, "d", OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        }
        // A folder its program closed to everyone.
        mkdirat(&at, "shut", Mode::empty()).unwrap();
        drop(at);
        let remover = std::thread::Builder::new().stack_size(64 << 10);
        let gone = tree.clone();
        let removed = remover.spawn(move || remove_tree(&gone)).unwrap().join();
        removed.expect("no stack overflow").unwrap();
        assert!(!tree.exists());
        assert_eq!(std::fs::read(outside.path().join("kept")).unwrap(), b"host");
        // Gone already is not an error.
        remove_tree(&tree).unwrap();
    }

    #[test]
    fn folders_of_dead_processes_are_swept_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum (4194304) cannot be alive.
        let dead = dir.path().join("ioi-box-9999999-abc");
        let alive = dir
            .path()
            .join(format!("ioi-box-{}-abc", std::process::id()));
        let foreign = dir.path().join("ioi-other-9999999-abc");
        for d in [&dead, &alive, &foreign] {
            std::fs::create_dir(d).unwrap();
        }
        sweep_in(dir.path());
        assert!(!dead.exists());
        assert!(alive.exists() && foreign.exists());
    }

    #[test]
    fn fifo_folders_of_dead_processes_are_swept_where_they_are_made() {
        let home = memory_home();
        let made = tempdir("fifos").unwrap();
        assert_eq!(made.path().parent(), Some(home.as_path()));
        // A pid above the kernel's maximum (4194304) cannot be alive.
        let dead = home.join(format!("ioi-fifos-9999999-{}", std::process::id()));
        std::fs::create_dir(&dead).unwrap();
        struct Gone(std::path::PathBuf);
        impl Drop for Gone {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let _gone = Gone(dead.clone());
        sweep_stale();
        assert!(!dead.exists(), "{} was not swept", dead.display());
        assert!(made.path().exists(), "a live process's folder was swept");
    }

    #[test]
    fn folders_removed_later_are_gone_once_waited_for() {
        let dirs: Vec<_> = (0..3).map(|_| tempdir("out").unwrap()).collect();
        let paths: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
        for (i, dir) in dirs.into_iter().enumerate() {
            std::fs::write(dir.path().join("output.txt"), i.to_string()).unwrap();
            remove_later(dir);
        }
        wait_for_removals();
        for path in paths {
            assert!(!path.exists(), "{} is left", path.display());
        }
    }

    #[test]
    fn tempdirs_carry_kind_and_pid() {
        let t = tempdir("out").unwrap();
        let name = t.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("ioi-out-{}-", std::process::id())),
            "{name}"
        );
        assert_eq!(owner(&name), Some(std::process::id() as i32));
        assert_eq!(owner("ioi-other-12-x"), None);
        assert_eq!(owner("ioi-box-notapid-x"), None);
    }
}
