//! Where compile results are kept: a folder of `<key>/` entries, safe to share between
//! processes and between hosts on a network filesystem (NFS, Lustre), so that the shards of a
//! Slurm array compile each distinct program once.
//!
//! - **Atomic publish.** An entry is written in a staging folder of a unique name
//!   (`.staging-<host>-<pid>-…`), its file synced, then a `manifest.json` giving the file's
//!   length and blake3 hash, synced, and the folder renamed to `<key>`. Another host sees the
//!   whole entry or none of it; two writers racing for a key both succeed (either copy is right).
//! - **Verified reads.** A reader trusts an entry only when its file matches the manifest: a
//!   partial or corrupt entry (a crash of an older version, a torn copy) is ignored and replaced.
//! - **Pins.** A program handed to the judge is first hard-linked into this process's pin folder
//!   (`.pins/<host>-<pid>-…/<key>.<n>`), and the judge runs the pin: when another process trims
//!   the entry, the pin keeps the file alive until this process is done with it. A pin lives as
//!   long as the [`Executable`] values that carry it (every holder of one program in this process
//!   shares one pin), so a server running for days holds the programs it is running, not every
//!   program it ever ran. A dead process's pins go too: those of the same host are swept, those
//!   of other hosts expire after [`PIN_EXPIRY`] without use.
//! - **Trimming.** Over the size bound, the least recently used entries go first, but never one
//!   used within the grace period (an hour), and an entry is renamed away (`.trash-<host>-<pid>-…`)
//!   before it is deleted, so a reader never sees half of one.
//! - **A writer killed midway** (SIGKILL, a crash) leaves a staging or trash folder, never an
//!   entry; the next store opened on this host removes those of dead processes, and their pins
//!   (folders of other hosts go after the grace period).
//!
//! Hand-written rather than a crate: the caches on crates.io (cacache, …) assume one host and do
//! not pin what they hand out.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::compiled::{CompileError, Compiled, Executable};

/// Entries used more recently than this are never trimmed.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3600);
/// Pins of processes on other hosts (whose liveness cannot be checked) are removed when their
/// folder has not changed for this long.
pub const PIN_EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);

const MANIFEST: &str = "manifest.json";
const PROGRAM: &str = "program";
const ERROR: &str = "error.json";
const PINS: &str = ".pins";

/// What a store holds on disk: its entries (programs, compilation errors, precompiled headers)
/// and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    pub bytes: u64,
    pub entries: u64,
}

impl Footprint {
    /// One entry of `bytes`.
    pub fn entry(bytes: u64) -> Footprint {
        Footprint { bytes, entries: 1 }
    }

    fn of(entries: &[(SystemTime, u64, PathBuf)]) -> Footprint {
        Footprint {
            bytes: entries.iter().map(|(_, bytes, _)| bytes).sum(),
            entries: entries.len() as u64,
        }
    }
}

/// The on-disk store of compile results.
pub struct CacheStore {
    dir: PathBuf,
    max_bytes: u64,
    grace: Duration,
    /// What the store holds, once known (scanned on first use, then kept up to date); held
    /// through a scan or a trim.
    size: Mutex<Option<Footprint>>,
    /// The last figure of `size`, copied out: read without waiting for a scan or a trim.
    last: Mutex<Option<Footprint>>,
    /// This process's pin folder, created on first use.
    pins: OnceLock<PathBuf>,
    /// The pins held now, by key: one link shared by every holder of the same program file.
    live: Arc<LivePins>,
    /// Numbers the pins' links, so that a pin never reuses the name of one still held.
    next_pin: AtomicU64,
}

type LivePins = Mutex<HashMap<String, Weak<Pin>>>;

/// A program's link in this process's pin folder, removed when its last holder drops it.
struct Pin {
    path: PathBuf,
    key: String,
    live: Arc<LivePins>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Ok(mut live) = self.live.lock() {
            // The key may name a newer pin by now (the entry was replaced): that one stays.
            if live
                .get(&self.key)
                .is_some_and(|pin| std::ptr::eq(pin.as_ptr(), self))
            {
                live.remove(&self.key);
            }
        }
        let _ = fs::remove_file(&self.path);
    }
}

impl CacheStore {
    /// A store in `dir`, trimmed to about `max_bytes`. What dead processes of this host left in
    /// it (their pins, and entries they were writing or removing when killed) is removed now.
    pub fn new(dir: PathBuf, max_bytes: u64) -> Result<CacheStore> {
        fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create the compile cache {}", dir.display()))?;
        let store = CacheStore {
            dir,
            max_bytes,
            grace: DEFAULT_GRACE,
            size: Mutex::new(None),
            last: Mutex::new(None),
            pins: OnceLock::new(),
            live: Arc::new(Mutex::new(HashMap::new())),
            next_pin: AtomicU64::new(0),
        };
        store.sweep_leftovers(&|_, _| false);
        Ok(store)
    }

    /// Changes the grace period (tests).
    pub fn with_grace(mut self, grace: Duration) -> CacheStore {
        self.grace = grace;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The verified entry `key`, its program pinned for this process, or `None`.
    pub fn lookup(&self, key: &str) -> Option<Compiled> {
        let entry = self.dir.join(key);
        let found = verify(&entry)?;
        touch(&entry);
        match found {
            Verified::Program => self.pin(key, &entry.join(PROGRAM)).ok(),
            Verified::Error(error) => Some(Compiled::Error(error)),
        }
    }

    /// Stores a program under `key` and returns it (pinned).
    pub fn publish_program(&self, key: &str, bytes: &[u8]) -> Result<Compiled> {
        // A trim, or a writer replacing a corrupt entry, may take ours away in between: publish
        // again (a few tries; each one leaves a verified entry).
        for _ in 0..3 {
            self.publish(key, PROGRAM, Content::Bytes(bytes), true)?;
            if let Some(found) = self.lookup(key) {
                return Ok(found);
            }
        }
        bail!("the compile cache entry {key} keeps vanishing after publishing")
    }

    /// Stores the program at `path` (copied by the kernel, never read whole into memory)
    /// under `key` and returns it (pinned).
    pub fn publish_program_file(&self, key: &str, path: &Path) -> Result<Compiled> {
        for _ in 0..3 {
            self.publish(key, PROGRAM, Content::File(path), true)?;
            if let Some(found) = self.lookup(key) {
                return Ok(found);
            }
        }
        bail!("the compile cache entry {key} keeps vanishing after publishing")
    }

    /// Stores a compilation error under `key` (`exit_code` null for a compiler stopped by a
    /// limit).
    pub fn publish_error(&self, key: &str, error: CompileError) -> Result<Compiled> {
        let text = json!({ "exit_code": error.exit_code, "stderr": error.stderr }).to_string();
        self.publish(key, ERROR, Content::Bytes(text.as_bytes()), false)?;
        Ok(Compiled::Error(error))
    }

    fn publish(&self, key: &str, name: &str, content: Content, executable: bool) -> Result<()> {
        let entry = self.dir.join(key);
        let staging = tempfile::Builder::new()
            .prefix(&format!(".staging-{}-{}-", host(), std::process::id()))
            .tempdir_in(&self.dir)
            .with_context(|| format!("cannot write to the compile cache {}", self.dir.display()))?;
        let file = staging.path().join(name);
        match content {
            Content::Bytes(bytes) => write_synced(&file, bytes, executable)?,
            Content::File(source) => {
                fs::copy(source, &file).with_context(|| {
                    format!("cannot copy {} into the compile cache", source.display())
                })?;
                use std::os::unix::fs::PermissionsExt;
                let mode = if executable { 0o755 } else { 0o644 };
                fs::set_permissions(&file, fs::Permissions::from_mode(mode))
                    .and_then(|_| fs::File::open(&file)?.sync_all())
                    .with_context(|| format!("cannot write {}", file.display()))?;
            }
        }
        // The hash of what was written, read back from the staged file.
        let (len, hash) =
            hash_file(&file).with_context(|| format!("cannot read back {}", file.display()))?;
        let manifest = json!({ "file": name, "len": len, "blake3": hash });
        write_synced(
            &staging.path().join(MANIFEST),
            manifest.to_string().as_bytes(),
            false,
        )?;
        fs::File::open(staging.path())
            .and_then(|d| d.sync_all())
            .ok();
        if fs::rename(staging.path(), &entry).is_err() {
            // Someone else published it first (fine), or what is there cannot be trusted:
            // move that aside and publish ours.
            if verify(&entry).is_some() {
                return Ok(());
            }
            self.discard(&entry);
            if fs::rename(staging.path(), &entry).is_err() && verify(&entry).is_none() {
                bail!("cannot store {} in the compile cache", entry.display());
            }
        }
        let _ = staging.keep();
        self.account(Footprint::entry(dir_size(&entry)));
        Ok(())
    }

    /// Hard-links `program` into this process's pin folder, or shares the pin held for it; the
    /// judge runs the pin, which goes when the last holder of the returned program drops it.
    fn pin(&self, key: &str, program: &Path) -> Result<Compiled> {
        let folder = match self.pins.get() {
            Some(folder) => folder.clone(),
            None => {
                let root = self.dir.join(PINS);
                fs::create_dir_all(&root)
                    .with_context(|| format!("cannot create {}", root.display()))?;
                let made = tempfile::Builder::new()
                    .prefix(&format!("{}-{}-", host(), std::process::id()))
                    .tempdir_in(&root)
                    .with_context(|| format!("cannot create a pin folder in {}", root.display()))?
                    .keep();
                self.pins.get_or_init(|| made).clone()
            }
        };
        use std::os::unix::fs::MetadataExt;
        let inode = |p: &Path| fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
        let mut live = self
            .live
            .lock()
            .map_err(|_| anyhow::anyhow!("the compile cache's pins are poisoned"))?;
        // The pin held for this key, unless the entry was replaced since (a newer copy).
        if let Some(pin) = live.get(key).and_then(Weak::upgrade) {
            if inode(&pin.path).is_some() && inode(&pin.path) == inode(program) {
                return Ok(Compiled::Binary(Executable::held(pin.path.clone(), pin)));
            }
        }
        let n = self.next_pin.fetch_add(1, Ordering::Relaxed);
        let pinned = folder.join(format!("{key}.{n}"));
        fs::hard_link(program, &pinned).with_context(|| {
            format!("cannot link {} to {}", program.display(), pinned.display())
        })?;
        let pin = Arc::new(Pin {
            path: pinned.clone(),
            key: key.to_string(),
            live: Arc::clone(&self.live),
        });
        live.insert(key.to_string(), Arc::downgrade(&pin));
        Ok(Compiled::Binary(Executable::held(pinned, pin)))
    }

    /// Renames an entry away (readers stop seeing it at once), then deletes it.
    fn discard(&self, entry: &Path) -> bool {
        let Ok(trash) = tempfile::Builder::new()
            .prefix(&format!(".trash-{}-{}-", host(), std::process::id()))
            .tempdir_in(&self.dir)
            .map(|t| t.keep())
        else {
            return false;
        };
        // Renaming onto the empty folder just made replaces it atomically.
        let moved = fs::rename(entry, &trash).is_ok();
        let _ = fs::remove_dir_all(&trash);
        moved
    }

    /// Adds an entry just stored to the running figure (a scan of the folder when there is none yet,
    /// which finds the entry), and trims when over the bound.
    pub(crate) fn account(&self, added: Footprint) {
        let Ok(mut size) = self.size.lock() else {
            return;
        };
        let total = match *size {
            Some(total) => Footprint {
                bytes: total.bytes + added.bytes,
                entries: total.entries + added.entries,
            },
            None => Footprint::of(&self.scan()),
        };
        let total = if total.bytes > self.max_bytes {
            self.trim()
        } else {
            total
        };
        *size = Some(total);
        self.publish_footprint(total);
    }

    /// The running figure of what the store holds. Once known it is read without waiting for
    /// a scan or a trim in progress (the figure before it); the first call without one scans
    /// the folder (one `stat` per file of every entry, the walk a first publish makes too).
    pub fn footprint(&self) -> Footprint {
        if let Some(known) = self.last.lock().ok().and_then(|last| *last) {
            return known;
        }
        let Ok(mut size) = self.size.lock() else {
            return Footprint::default();
        };
        let total = *size.get_or_insert_with(|| Footprint::of(&self.scan()));
        self.publish_footprint(total);
        total
    }

    fn publish_footprint(&self, total: Footprint) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(total);
        }
    }

    /// Every entry with its last use and size.
    fn scan(&self) -> Vec<(SystemTime, u64, PathBuf)> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| (modified(&e.path()), dir_size(&e.path()), e.path()))
            .collect()
    }

    /// Removes the least recently used entries until the store fits its bound, keeping those
    /// used within the grace period, and the leftovers of crashed writers; returns what is
    /// left.
    pub fn trim(&self) -> Footprint {
        let now = SystemTime::now();
        let old = |t: SystemTime, age: Duration| now.duration_since(t).is_ok_and(|d| d > age);
        self.sweep_leftovers(&old);
        let mut all = self.scan();
        let mut total = Footprint::of(&all);
        all.sort();
        for (used, size, path) in all {
            if total.bytes <= self.max_bytes || !old(used, self.grace) {
                break;
            }
            if self.discard(&path) {
                total.bytes -= size;
                total.entries -= 1;
            }
        }
        total
    }

    /// Staging and trash folders of dead writers of this host, or (from any host) older than
    /// the grace period by `old`, and pins of dead processes of this host, or unused for
    /// [`PIN_EXPIRY`] by `old`.
    fn sweep_leftovers(&self, old: &dyn Fn(SystemTime, Duration) -> bool) {
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(owner) = name
                    .strip_prefix(".staging-")
                    .or_else(|| name.strip_prefix(".trash-"))
                else {
                    continue;
                };
                if dead_here(owner) || old(modified(&e.path()), self.grace) {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        let Ok(pins) = fs::read_dir(self.dir.join(PINS)) else {
            return;
        };
        let own = self.pins.get();
        for e in pins.flatten() {
            let path = e.path();
            if own == Some(&path) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if dead_here(&name) || old(modified(&path), PIN_EXPIRY) {
                let _ = fs::remove_dir_all(&path);
            }
        }
    }
}

impl Drop for CacheStore {
    /// Removes this process's pin folder, unless a program handed out still holds a pin there
    /// (it outlives the store): that pin goes with its holder, the folder with the process (a
    /// dead process's pins are swept).
    fn drop(&mut self) {
        let held = self
            .live
            .lock()
            .map_or(true, |live| live.values().any(|pin| pin.strong_count() > 0));
        if let (Some(pins), false) = (self.pins.get(), held) {
            let _ = fs::remove_dir_all(pins);
        }
    }
}

/// What an entry is made of.
enum Content<'a> {
    Bytes(&'a [u8]),
    /// A file to copy (the compiled program, in its compile box).
    File(&'a Path),
}

/// Length and blake3 hash of a file, read in pieces.
fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut hasher = blake3::Hasher::new();
    let len = std::io::copy(&mut fs::File::open(path)?, &mut hasher)?;
    Ok((len, hasher.finalize().to_hex().to_string()))
}

enum Verified {
    Program,
    Error(CompileError),
}

/// Reads an entry's manifest and checks its file against it (length, then blake3).
fn verify(entry: &Path) -> Option<Verified> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(entry.join(MANIFEST)).ok()?).ok()?;
    let name = manifest["file"].as_str()?;
    if name != PROGRAM && name != ERROR {
        return None;
    }
    let bytes = fs::read(entry.join(name)).ok()?;
    if bytes.len() as u64 != manifest["len"].as_u64()?
        || blake3::hash(&bytes).to_hex().as_str() != manifest["blake3"].as_str()?
    {
        tracing::warn!(
            "{}: ignoring a corrupt compile cache entry",
            entry.display()
        );
        return None;
    }
    if name == PROGRAM {
        return Some(Verified::Program);
    }
    let error: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    // Entries written before `null` meant "stopped by a limit" hold -1 for it.
    let exit_code = match &error["exit_code"] {
        serde_json::Value::Null => None,
        code => Some(i32::try_from(code.as_i64()?).ok()?).filter(|c| *c >= 0),
    };
    Some(Verified::Error(CompileError {
        exit_code,
        stderr: error["stderr"].as_str()?.to_string(),
    }))
}

fn write_synced(path: &Path, bytes: &[u8], executable: bool) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if executable { 0o755 } else { 0o644 })
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|_| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn modified(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn touch(entry: &Path) {
    let _ = fs::File::open(entry).and_then(|f| f.set_modified(SystemTime::now()));
}

pub(crate) fn dir_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|f| f.file_type().is_file())
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Whether `<host>-<pid>-…` (the name of a pin, staging or trash folder without its prefix)
/// names a process of this host that no longer exists.
fn dead_here(name: &str) -> bool {
    name.strip_prefix(host())
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.split('-').next()?.parse::<i32>().ok())
        .is_some_and(|pid| {
            pid > 0
                && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                    == Err(nix::errno::Errno::ESRCH)
        })
}

/// This host's name, in the names of staging, trash and pin folders (pids repeat across
/// hosts).
fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| {
                h.trim()
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect()
            })
            .unwrap_or_else(|_| "host".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(key: &str) -> Vec<u8> {
        // Large enough that a torn write would show, and different for every key.
        key.bytes().cycle().take(300_000).collect()
    }

    fn entry(cache: &Path, name: &str, bytes: usize, age: Duration) {
        let store = CacheStore::new(cache.to_path_buf(), u64::MAX).unwrap();
        store
            .publish(name, PROGRAM, Content::Bytes(&vec![0u8; bytes]), true)
            .unwrap();
        fs::File::open(cache.join(name))
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
    }

    #[test]
    fn trimming_removes_least_recently_used_entries_but_not_recent_ones() {
        let dir = tempfile::tempdir().unwrap();
        entry(dir.path(), "old", 600, Duration::from_secs(3 * 3600));
        entry(dir.path(), "older", 600, Duration::from_secs(4 * 3600));
        entry(dir.path(), "fresh", 600, Duration::ZERO);
        let cache = CacheStore::new(dir.path().to_path_buf(), 1000).unwrap();
        let manifest = dir_size(&dir.path().join("fresh"));
        cache.account(Footprint::default());
        // Both old entries go; the fresh one stays.
        assert!(!dir.path().join("older").exists() && !dir.path().join("old").exists());
        assert!(dir.path().join("fresh").exists());
        assert_eq!(cache.footprint(), Footprint::entry(manifest));
        // Over the bound with only recent entries: nothing is removed.
        entry(dir.path(), "fresh2", 600, Duration::ZERO);
        cache.account(Footprint::entry(600));
        assert!(dir.path().join("fresh").exists() && dir.path().join("fresh2").exists());
    }

    #[test]
    fn the_footprint_counts_entries_found_on_disk_and_those_stored_since() {
        let dir = tempfile::tempdir().unwrap();
        entry(dir.path(), "found", 600, Duration::ZERO);
        let found = dir_size(&dir.path().join("found"));
        let store = CacheStore::new(dir.path().to_path_buf(), u64::MAX).unwrap();
        assert_eq!(store.footprint(), Footprint::entry(found));
        store
            .publish_error("error", CompileError::exited(1, "e"))
            .unwrap();
        let error = dir_size(&dir.path().join("error"));
        assert_eq!(
            store.footprint(),
            Footprint {
                bytes: found + error,
                entries: 2
            }
        );
        // Pins, staging and trash folders are not entries.
        store.lookup("found").expect("a verified entry");
        assert!(dir.path().join(PINS).is_dir());
        assert_eq!(store.trim().entries, 2);
    }

    #[test]
    fn a_stored_program_counts_against_the_bound_at_once() {
        let dir = tempfile::tempdir().unwrap();
        entry(dir.path(), "old", 800, Duration::from_secs(3 * 3600));
        let store = CacheStore::new(dir.path().to_path_buf(), 1000).unwrap();
        store.account(Footprint::default());
        let built = tempfile::tempdir().unwrap();
        let program = built.path().join("program");
        fs::write(&program, vec![7u8; 600]).unwrap();
        let Compiled::Binary(pinned) = store.publish_program_file("new", &program).unwrap() else {
            panic!("a program")
        };
        // Over the bound: the old entry went in the same call.
        assert!(!dir.path().join("old").exists());
        assert!(fs::read(pinned).unwrap() == vec![7u8; 600]);
        assert_eq!(
            store.footprint(),
            Footprint::entry(dir_size(&dir.path().join("new")))
        );
    }

    #[test]
    fn partial_or_corrupt_entries_are_never_trusted_and_get_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = CacheStore::new(dir.path().to_path_buf(), u64::MAX).unwrap();
        // An entry of an older layout, or a torn copy: a program and no manifest.
        fs::create_dir_all(dir.path().join("k1")).unwrap();
        fs::write(dir.path().join("k1/program"), b"half").unwrap();
        assert!(store.lookup("k1").is_none());
        // A manifest whose file was cut short.
        store.publish_program("k2", &content("k2")).unwrap();
        fs::write(dir.path().join("k2/program"), &content("k2")[..1000]).unwrap();
        assert!(store.lookup("k2").is_none());
        // Publishing replaces both.
        for key in ["k1", "k2"] {
            let Compiled::Binary(path) = store.publish_program(key, &content(key)).unwrap() else {
                panic!("a program")
            };
            assert!(
                fs::read(path).unwrap() == content(key),
                "{key}: the right bytes"
            );
        }
        let error = store
            .publish_error("k3", CompileError::exited(1, "oops"))
            .unwrap();
        assert_eq!(store.lookup("k3"), Some(error));
        let stopped = store
            .publish_error("k4", CompileError::stopped("killed"))
            .unwrap();
        assert_eq!(store.lookup("k4"), Some(stopped));
        // An entry of an earlier version, where -1 meant "stopped by a limit".
        let legacy = json!({ "exit_code": -1, "stderr": "old" }).to_string();
        store
            .publish("k5", ERROR, Content::Bytes(legacy.as_bytes()), false)
            .unwrap();
        assert_eq!(
            store.lookup("k5"),
            Some(Compiled::Error(CompileError::stopped("old")))
        );
    }

    #[test]
    fn a_trim_by_another_process_never_breaks_a_pinned_program() {
        let dir = tempfile::tempdir().unwrap();
        let user = CacheStore::new(dir.path().to_path_buf(), u64::MAX).unwrap();
        let Compiled::Binary(pinned) = user.publish_program("k", &content("k")).unwrap() else {
            panic!("a program")
        };
        // Another process with a zero bound and no grace trims everything.
        let trimmer = CacheStore::new(dir.path().to_path_buf(), 0)
            .unwrap()
            .with_grace(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(trimmer.trim(), Footprint::default());
        assert!(!dir.path().join("k").exists(), "the entry was trimmed");
        assert_eq!(
            fs::read(&pinned).unwrap(),
            content("k"),
            "the pin still runs"
        );
        drop(user);
        assert!(pinned.exists(), "a pin held outlives its store");
        let folder = pinned.parent().unwrap().to_path_buf();
        drop(pinned);
        assert_eq!(
            fs::read_dir(&folder).unwrap().count(),
            0,
            "and goes with its holder"
        );
    }

    /// Holders of one program share one pin; it goes with the last of them, while the process
    /// and its store live on, and the program trimmed meanwhile goes from the disk with it. A
    /// program replaced in the cache gets a pin of its own; the older one stays for its holder.
    #[test]
    fn a_pin_lives_as_long_as_its_holders() {
        let dir = tempfile::tempdir().unwrap();
        let store = CacheStore::new(dir.path().to_path_buf(), u64::MAX).unwrap();
        let pins_held = || {
            store
                .pins
                .get()
                .map_or(0, |folder| fs::read_dir(folder).unwrap().count())
        };
        let Compiled::Binary(first) = store.publish_program("k", &content("k")).unwrap() else {
            panic!("a program")
        };
        let Some(Compiled::Binary(second)) = store.lookup("k") else {
            panic!("a program")
        };
        assert_eq!(first.path(), second.path(), "one pin for both holders");
        assert_eq!(pins_held(), 1);
        drop(first);
        assert!(second.exists(), "the pin stays while one holder is left");
        let trimmer = CacheStore::new(dir.path().to_path_buf(), 0)
            .unwrap()
            .with_grace(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(20));
        trimmer.trim();
        assert_eq!(fs::read(second.path()).unwrap(), content("k"));
        let path = second.path().to_path_buf();
        drop(second);
        assert!(!path.exists(), "the last holder took the pin with it");
        assert_eq!(pins_held(), 0);

        // The entry stored again is a new file: its holder gets a new pin, the old one stays.
        let Compiled::Binary(old) = store.publish_program("j", &content("j")).unwrap() else {
            panic!("a program")
        };
        trimmer.trim();
        let Compiled::Binary(new) = store.publish_program("j", &content("j")).unwrap() else {
            panic!("a program")
        };
        assert_ne!(old.path(), new.path());
        assert_eq!(pins_held(), 2);
        let old_path = old.path().to_path_buf();
        drop(old);
        assert!(!old_path.exists());
        assert!(
            new.exists(),
            "the newer pin is not the older one's to remove"
        );
        let Some(Compiled::Binary(again)) = store.lookup("j") else {
            panic!("a program")
        };
        assert_eq!(again.path(), new.path(), "the newer pin is shared");
        let folder = store.pins.get().unwrap().clone();
        drop((new, again));
        drop(store);
        assert!(
            !folder.exists(),
            "a store whose pins all went takes its folder with it"
        );
    }

    #[test]
    fn what_a_killed_process_of_this_host_left_is_swept_when_a_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum (4194304) cannot be alive.
        let dead = format!("{}-9999999-x", host());
        let alive = format!("{}-{}-x", host(), std::process::id());
        let other_host = "elsewhere-9999999-x";
        let mut left = Vec::new();
        for prefix in [".staging-", ".trash-"] {
            for owner in [&dead, &alive, other_host] {
                let folder = dir.path().join(format!("{prefix}{owner}"));
                fs::create_dir_all(&folder).unwrap();
                fs::write(folder.join(PROGRAM), b"half").unwrap();
                left.push(folder);
            }
        }
        for owner in [&dead, &alive] {
            let pins = dir.path().join(PINS).join(owner);
            fs::create_dir_all(&pins).unwrap();
            left.push(pins);
        }
        let store = CacheStore::new(dir.path().to_path_buf(), u64::MAX).unwrap();
        let kept: Vec<_> = left.iter().filter(|f| f.exists()).collect();
        let name = |f: &&PathBuf| f.file_name().unwrap().to_string_lossy().into_owned();
        let mut kept: Vec<String> = kept.iter().map(name).collect();
        kept.sort();
        let mut expected = [
            format!(".staging-{alive}"),
            format!(".staging-{other_host}"),
            format!(".trash-{alive}"),
            format!(".trash-{other_host}"),
            alive.clone(),
        ];
        expected.sort();
        assert_eq!(
            kept, expected,
            "only a live process's, or another host's (until the grace period)"
        );
        assert_eq!(store.footprint(), Footprint::default());
    }

    /// Run by [`concurrent_processes_fill_one_cache_without_corruption`] in child processes.
    #[test]
    fn cache_writer_child() {
        let Some(dir) = std::env::var_os("IOI_RUN_CACHE_CHILD") else {
            return;
        };
        let store = CacheStore::new(PathBuf::from(dir), u64::MAX).unwrap();
        for round in 0..3 {
            for i in 0..24 {
                let key = format!("key{i:02}");
                let got = match store.lookup(&key) {
                    Some(found) => found,
                    None if i % 4 == 3 => store
                        .publish_error(&key, CompileError::exited(i, key.clone()))
                        .unwrap(),
                    None => store.publish_program(&key, &content(&key)).unwrap(),
                };
                match got {
                    Compiled::Binary(path) => {
                        assert!(
                            fs::read(&path).unwrap() == content(&key),
                            "{key} round {round}"
                        )
                    }
                    Compiled::Error(error) => {
                        assert_eq!(error, CompileError::exited(i, key.clone()))
                    }
                }
            }
        }
    }

    #[test]
    fn concurrent_processes_fill_one_cache_without_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..6)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "judge::cache::tests::cache_writer_child",
                        "--nocapture",
                    ])
                    .env("IOI_RUN_CACHE_CHILD", dir.path())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{text}");
            assert!(text.contains("1 passed"), "the child ran: {text}");
        }
        // Every entry is whole and right; no staging folder is left; the children's pins went.
        let store = CacheStore::new(dir.path().to_path_buf(), u64::MAX).unwrap();
        for i in 0..24 {
            let key = format!("key{i:02}");
            match store.lookup(&key).unwrap() {
                Compiled::Binary(path) => {
                    assert!(fs::read(path).unwrap() == content(&key), "{key}")
                }
                Compiled::Error(error) => assert_eq!(error.exit_code, Some(i)),
            }
        }
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with(".staging-")),
            "{names:?}"
        );
        assert_eq!(names.len(), 25, "24 entries and .pins: {names:?}");
        assert_eq!(fs::read_dir(dir.path().join(PINS)).unwrap().count(), 1);
    }
}
