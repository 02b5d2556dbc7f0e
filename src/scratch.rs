//! Temporary folders of ioi-run, named `ioi-<kind>-<pid>-XXXXXX` in the temp directory, so that
//! the folders of a process that was killed (SIGKILL, or an interrupt, which exits without
//! running destructors) are recognised by the next one and removed.

use std::path::Path;

use anyhow::{Context, Result};

/// The kinds of temporary folders; only these are ever swept.
const KINDS: &[&str] = &["box", "out", "fifos", "tests", "request"];

/// A new temporary folder of `kind` (one of [`KINDS`]), removed when dropped.
pub fn tempdir(kind: &str) -> Result<tempfile::TempDir> {
    debug_assert!(KINDS.contains(&kind), "unknown scratch kind {kind}");
    let base = match kind {
        // FIFOs hold no data in their folder: where it is changes nothing for a run.
        "fifos" => base(),
        _ => std::env::temp_dir(),
    };
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

/// A tmpfs chosen by [`prefer_memory`] for this process's FIFO folders.
static MEMORY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Where [`tempdir`] creates FIFO folders: the system's temporary folder, or the tmpfs
/// [`prefer_memory`] chose.
fn base() -> std::path::PathBuf {
    MEMORY.get().cloned().unwrap_or_else(std::env::temp_dir)
}

/// Puts this process's FIFO folders on `/dev/shm` when it is a tmpfs (and the system's
/// temporary folder is not one already), for a process that makes them for every run: on a
/// disk, each folder's and FIFO's creation and removal goes through the journal. A box's own
/// folder stays where it is without this (on a tmpfs, what a program writes there would count
/// against its memory limit). Returns the folder chosen.
pub fn prefer_memory() -> std::path::PathBuf {
    use nix::sys::statfs::{statfs, TMPFS_MAGIC};
    let on_tmpfs = |dir: &Path| statfs(dir).is_ok_and(|s| s.filesystem_type() == TMPFS_MAGIC);
    let shm = Path::new("/dev/shm");
    if !on_tmpfs(&std::env::temp_dir())
        && on_tmpfs(shm)
        && nix::unistd::access(shm, nix::unistd::AccessFlags::W_OK).is_ok()
    {
        let _ = MEMORY.set(shm.to_path_buf());
    }
    base()
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
        drop(dir);
        removals.removed();
    }
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
                    drop(dir);
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
    let mut dirs = bases();
    let shm = Path::new("/dev/shm");
    if !dirs.iter().any(|d| d == shm) {
        dirs.push(shm.to_path_buf());
    }
    for dir in dirs {
        sweep_in(&dir);
    }
}

/// Every folder this process's temporary folders may be in.
fn bases() -> Vec<std::path::PathBuf> {
    let mut dirs = vec![std::env::temp_dir()];
    if let Some(memory) = MEMORY.get() {
        dirs.push(memory.clone());
    }
    dirs
}

/// Removes this process's own temporary folders, and the files it was writing before a rename
/// (before exiting on an interrupt, which skips destructors).
pub fn remove_own() {
    let me = std::process::id() as i32;
    for dir in bases() {
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

/// Removes the folders in `dir` whose creating process passes `select`.
fn remove_where(dir: &Path, select: impl Fn(i32) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if owner(&entry.file_name().to_string_lossy()).is_some_and(&select) {
            let _ = std::fs::remove_dir_all(entry.path());
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
