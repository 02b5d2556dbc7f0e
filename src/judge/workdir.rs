//! Box directories: temporary folders on the host that become `/box` in a sandbox, owned by
//! the sandbox user so the program can write there, removed when dropped. Each has a root-only
//! companion folder outside the box for the run's standard streams: what the caller reads back
//! of a run is never a name the program could have replaced (a link to a host file, a FIFO).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ioi_sandbox::Sandbox;

use crate::name::RelativePath;

pub struct BoxDir {
    dir: tempfile::TempDir,
    owner: (u32, u32),
    /// Root-only (0700), never bound into a box: see [`BoxDir::stream`].
    streams: tempfile::TempDir,
}

impl BoxDir {
    /// A box folder in the temporary folder, for programs whose outputs are bounded (a
    /// compiler's, under its limits).
    pub fn new(sandbox: &Sandbox) -> Result<BoxDir> {
        BoxDir::made(sandbox, crate::scratch::tempdir("box")?)
    }

    /// A box folder on a tmpfs, where an untrusted program writes: everything it leaves there
    /// is charged to its memory cgroup, so its memory limit bounds the files it can write in a
    /// host folder (see `scratch::tempdir_in_memory`).
    pub fn in_memory(sandbox: &Sandbox) -> Result<BoxDir> {
        BoxDir::made(sandbox, crate::scratch::tempdir_in_memory("box")?)
    }

    fn made(sandbox: &Sandbox, dir: tempfile::TempDir) -> Result<BoxDir> {
        let owner = sandbox.box_owner();
        chown(dir.path(), owner)?;
        let streams = crate::scratch::tempdir("out")?;
        Ok(BoxDir {
            dir,
            owner,
            streams,
        })
    }

    /// A host path outside the box for a standard stream of a run in it (e.g. a compiler's
    /// stderr): the sandbox opens it for the run, nothing in the box can reach or replace it.
    pub fn stream(&self, name: &str) -> PathBuf {
        self.streams.path().join(name)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a file (creating its folders, owned by the sandbox user) at a relative path. The
    /// path is checked as a [`RelativePath`] here, whoever built it (a grader file of a dataset
    /// row, a problem id): nothing is written outside the box (docs/data.md#names).
    pub fn write(&self, relative: &str, content: &[u8]) -> Result<PathBuf> {
        let relative = RelativePath::parse(relative)
            .with_context(|| format!("cannot write a file of the box at {relative:?}"))?;
        let path = self.dir.path().join(relative.as_path());
        if let Some(parent) = path.parent() {
            self.mkdirs(parent)?;
        }
        fs::write(&path, content).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// Creates a folder inside the box (and its parents), owned by the sandbox user.
    pub fn mkdirs(&self, path: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut p = path;
        while !p.exists() && p.starts_with(self.path()) {
            missing.push(p.to_path_buf());
            p = match p.parent() {
                Some(parent) => parent,
                None => break,
            };
        }
        for dir in missing.iter().rev() {
            fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            chown(dir, self.owner)?;
        }
        Ok(())
    }
}

/// Bytes of a program's output (stdout, stderr, a checker's or manager's messages) that the
/// judge and the server read: far more than any feedback, little enough to hold in memory.
pub const OUTPUT_CAP: u64 = 1 << 20;

/// The first [`OUTPUT_CAP`] bytes of a file a program wrote, as text (see [`read_prefix`]).
pub(crate) fn read_capped(path: &Path) -> Result<String> {
    read_prefix(path, OUTPUT_CAP)
}

/// The first `cap` bytes of a file a program wrote (the rest is never read), decoded lossily:
/// the one reader for output of untrusted programs, whose text need not be UTF-8. A missing
/// file is empty (the program wrote nothing); any other failure is an error naming the file,
/// never a silently empty output.
pub(crate) fn read_prefix(path: &Path, cap: u64) -> Result<String> {
    use std::io::Read;
    let mut text = Vec::new();
    match fs::File::open(path) {
        Ok(file) => {
            file.take(cap)
                .read_to_end(&mut text)
                .with_context(|| format!("cannot read {}", path.display()))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

impl Drop for BoxDir {
    /// The program that wrote in the box may have left a tree of any depth: removed without
    /// recursion (`scratch::remove_tree`) before the temporary folder's own removal finds it
    /// gone.
    fn drop(&mut self) {
        let _ = crate::scratch::remove_tree(self.dir.path());
    }
}

/// Gives a box folder to the sandbox: each run writes as its own uid in the box group, so
/// the folder is group-writable, set-group-id (see `ioi_sandbox::uids`).
fn chown(path: &Path, (uid, gid): (u32, u32)) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .with_context(|| format!("cannot give {} to the sandbox user {uid}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o2775))
        .with_context(|| format!("cannot open {} to the box group", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_output_is_capped_lossy_and_never_silently_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        fs::write(&path, b"ab\xffcd").unwrap();
        assert_eq!(read_prefix(&path, 3).unwrap(), "ab\u{fffd}");
        assert_eq!(read_capped(&path).unwrap(), "ab\u{fffd}cd");
        // Nothing written: empty output.
        assert_eq!(read_capped(&dir.path().join("missing")).unwrap(), "");
        // Something that cannot be read is an error naming it, not an empty output.
        let error = read_capped(dir.path()).unwrap_err();
        assert!(
            format!("{error:#}").contains(&dir.path().display().to_string()),
            "{error:#}"
        );
    }
}
