//! One writer per results file. Two `evaluate` runs into the same results folder would both
//! judge every submission and append every line twice; the first run takes an exclusive
//! `flock` on `.<dataset>.jsonl.lock` next to the results, and writes who it is into it, so a
//! second run stops at once and says which process holds it (pid, host, command).
//!
//! The lock is on a separate file because `--override` renames the results file itself. The
//! lock file is never removed: unlinking it would let a waiting process lock a file nobody
//! else sees. The kernel releases a `flock` when its holder exits, even by `kill -9`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use nix::fcntl::{Flock, FlockArg};

/// An exclusive lock on a results file, held until dropped.
#[derive(Debug)]
pub struct ResultsLock {
    _lock: Flock<File>,
}

impl ResultsLock {
    /// Locks the results file `<dir>/<config_name>.jsonl` for this process, or fails naming
    /// the process that holds it.
    pub fn acquire(dir: &Path, config_name: &str) -> Result<ResultsLock> {
        let path = lock_path(dir, config_name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open the lock file {}", path.display()))?;
        let mut lock =
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    bail!(
                    "{}.jsonl is being written by another ioi-run ({}); wait for it to finish, \
                     or write to another results folder",
                    dir.join(config_name).display(),
                    if holder.is_empty() { "unknown process" } else { holder }
                );
                }
                Err((_, errno)) => {
                    return Err(errno).with_context(|| format!("cannot lock {}", path.display()))
                }
            };
        // Who holds it, for the message of a second run.
        let holder = format!("pid {} on {}: {}", std::process::id(), host(), command());
        let written = lock
            .set_len(0)
            .and_then(|_| lock.rewind())
            .and_then(|_| lock.write_all(holder.as_bytes()));
        if let Err(e) = written {
            tracing::debug!("cannot record the holder in {}: {e}", path.display());
        }
        Ok(ResultsLock { _lock: lock })
    }
}

/// A glob matching every lock file's name (and no results file), for the upload hint.
pub const LOCK_PATTERN: &str = ".*.jsonl.lock";

fn lock_path(dir: &Path, config_name: &str) -> PathBuf {
    dir.join(format!(".{config_name}.jsonl.lock"))
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".into())
}

fn command() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_fails_naming_the_holder_and_the_first_release_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = ResultsLock::acquire(dir.path(), "model").unwrap();
        // flock locks belong to open file descriptions: a second open conflicts even in one
        // process, as it does across processes.
        let err = format!(
            "{:#}",
            ResultsLock::acquire(dir.path(), "model").unwrap_err()
        );
        assert!(
            err.contains(&format!("pid {}", std::process::id())) && err.contains("model.jsonl"),
            "{err}"
        );
        drop(first);
        ResultsLock::acquire(dir.path(), "model").unwrap();
    }

    #[test]
    fn the_lock_pattern_matches_lock_files_and_no_results() {
        let pattern = glob::Pattern::new(LOCK_PATTERN).unwrap();
        let dir = Path::new("out");
        let lock = lock_path(dir, "model-v2.1");
        let name = lock.file_name().unwrap().to_str().unwrap();
        assert!(pattern.matches(name), "{name}");
        for results in [
            "model.jsonl",
            "model.jsonl.bak",
            "model/train-0.parquet",
            "README.md",
        ] {
            assert!(!pattern.matches(results), "{results}");
        }
    }
}
